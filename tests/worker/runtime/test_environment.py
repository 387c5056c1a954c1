"""The allow-list of the environment a run sees, and the sealed hand-over of the worker's settings
(worker/runtime/environment.py). The end-to-end check, from inside a real run, is
tests/integration/test_run_isolation.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from worker.runtime.environment import SEALED_FD, split_environment


def test_credentials_are_sealed_or_dropped_and_the_rest_kept() -> None:
    env = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "LC_ALL": "C.UTF-8",
        "CUDA_VISIBLE_DEVICES": "0",
        "OMP_NUM_THREADS": "4",
        "REASONLAB_API_URL": "http://api:8000",
        "REASONLAB_HOME": "/data",
        "REASONLAB_KIND_PLUGINS": "my_kinds.spec",
        "REASONLAB_WORKER_TOKEN": "wk-secret",
        "REASONLAB_BROKER_URL": "redis://:pw@redis:6379/0",
        "REASONLAB_MLFLOW_TRACKING_URI": "http://user:pw@mlflow",
        "REASONLAB_SECRET_KEY": "signing",
        "REASONLAB_DATABASE_URL": "postgresql://u:p@db/x",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "OPENAI_API_KEY": "sk",
        "HF_TOKEN": "hf",
        "CUDA_SOME_TOKEN": "looks like a credential whatever its prefix",
        "SOMETHING_ELSE": "not on the list",
    }
    kept, sealed = split_environment(env)
    assert set(kept) == {
        "PATH", "HOME", "LC_ALL", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
        "REASONLAB_API_URL", "REASONLAB_HOME", "REASONLAB_KIND_PLUGINS",
    }  # fmt: skip
    assert set(sealed) == {
        "REASONLAB_WORKER_TOKEN", "REASONLAB_BROKER_URL", "REASONLAB_MLFLOW_TRACKING_URI",
        "REASONLAB_SECRET_KEY", "REASONLAB_DATABASE_URL",
    }  # fmt: skip


def test_an_operator_passes_a_named_variable_on() -> None:
    kept, _ = split_environment(
        {"REASONLAB_RUN_ENV_ALLOW": "MY_SETTING, HF_TOKEN", "MY_SETTING": "1", "HF_TOKEN": "x"}
    )
    assert kept["MY_SETTING"] == "1" and kept["HF_TOKEN"] == "x"


def test_the_reexecuted_process_has_its_settings_in_memory_and_none_in_its_environment(
    tmp_path: Path,
) -> None:
    child = (
        "import json, os\n"
        "from worker.runtime.environment import sealed_start\n"
        "from common.settings import get_settings\n"
        "sealed_start(['-c', open(os.environ['PROBE_FILE']).read()])\n"
        "s = get_settings()\n"
        "print(json.dumps({'token': s.worker_token, 'broker': s.broker_url,\n"
        "  'env': sorted(os.environ), 'proc': open('/proc/self/environ', 'rb').read().decode(),\n"
        "  'fds': sorted(os.listdir('/proc/self/fd'))}))\n"
    )
    probe = tmp_path / "probe.py"
    probe.write_text(child)
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.getcwd(),
        "PROBE_FILE": str(probe),
        "REASONLAB_WORKER_TOKEN": "wk-sealed-token-0123456789",
        "REASONLAB_BROKER_URL": "redis://:pw@127.0.0.1:6379/9",
    }
    env["REASONLAB_RUN_ENV_ALLOW"] = "PROBE_FILE"
    out = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["token"] == "wk-sealed-token-0123456789" and seen["broker"].startswith("redis://:pw@")
    assert "REASONLAB_WORKER_TOKEN" not in seen["env"] and SEALED_FD not in seen["env"]
    assert "wk-sealed-token" not in seen["proc"] and ":pw@" not in seen["proc"]
