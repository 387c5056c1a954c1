#!/usr/bin/env bash
# Run one paper's findings experiment (examples/findings/PAPER.yaml: its sweep and its claims) the way the
# docs' "Findings" tables were measured: a platform of its own on a fresh home (embedded mode, 2 workers of
# one thread each), `reasonlab submit --wait` (the claims are created and locked before the runs: they are
# pre-registered), the wall time, every claim's card as text and JSON, and a screenshot of the claims page
# (docs/img/findings-PAPER-claims.png). Output in test-output/findings-PAPER/.
#
#   examples/findings/run.sh carma [PORT]       # after `make offline frontend-build chromium`
set -euo pipefail
paper=${1:?usage: examples/findings/run.sh PAPER [PORT]}
port=${2:-8130}
root=$(cd "$(dirname "$0")/../.." && pwd)
file=$root/examples/findings/$paper.yaml
[ -f "$file" ] || { echo "no findings file $file" >&2; exit 2; }
out=$root/test-output/findings-$paper
home=$(mktemp -d "/tmp/findings-$paper.XXXXXX")
mkdir -p "$out"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 REASONLAB_HOME=$home
rl=$root/.venv/bin/reasonlab
"$rl" up --home "$home" --port "$port" --workers "${WORKERS:-2}" > "$out/up.log" 2>&1 &
up=$!
stop() { kill -INT "$up" 2>/dev/null || true; wait "$up" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 240); do
  grep -q "password:" "$out/up.log" 2>/dev/null && curl -sf "http://127.0.0.1:$port/api/v1/health" > /dev/null && break
  kill -0 "$up" 2>/dev/null || { cat "$out/up.log" >&2; exit 1; }
  sleep 0.5
done
password=$(sed -n 's/^ *password: *//p' "$out/up.log" | head -n1)
cd "$root"
started=$(date +%s)
code=0
"$rl" submit "$file" --wait | tee "$out/submit.log" || code=$?
ended=$(date +%s)
{
  echo "paper $paper: submit --wait exit $code, wall $((ended - started)) s ($(( (ended - started + 30) / 60 )) min)"
  echo "machine: $(getconf _NPROCESSORS_ONLN) cores, load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/wall.txt"
"$rl" claims list | tee "$out/claims.txt"
for id in $("$rl" claims list | awk 'NR > 1 {print $1}'); do
  "$rl" claims show "$id" | tee -a "$out/claims.txt"
  echo | tee -a "$out/claims.txt"
  "$rl" claims show "$id" --json > "$out/claim-$id.json"
done
(cd frontend && node e2e/findings_screenshot.mjs "http://127.0.0.1:$port" admin "$password" "$paper")
exit "$code"
