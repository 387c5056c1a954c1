"""A worker's environment as its runs see it: an allow-list, with every credential held in memory only.

A spec is untrusted input (docs/operations.md, "Trust model"), and a run's process is a fork of its
worker. So ``reasonlab worker`` re-executes itself once at start (``reexec_sealed``) with an environment
that keeps only what a run needs (locale, paths, thread and GPU settings, ReasonLab's non-secret settings)
and hands the rest of ReasonLab's settings (the worker token, the broker URL, ...) to the new image over a
pipe (``unseal``): from then on they live in the worker's memory (``common.settings.seal``), and neither
``os.environ`` nor ``/proc/self/environ`` of the worker or of any run it forks holds one. Anything else
outside the allow-list (cloud keys, ``HF_TOKEN``, an ``OPENAI_API_KEY``...) is dropped; an operator who
wants a variable passed to runs names it in ``REASONLAB_RUN_ENV_ALLOW`` (never a credential: endpoint keys
are project secrets, handed to the run that names them).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence

from common.settings import seal

SEALED_FD = "REASONLAB_SEALED_FD"  # the pipe the re-executed worker reads its sealed settings from
EXTRA_ALLOW = "REASONLAB_RUN_ENV_ALLOW"  # comma-separated names an operator passes to runs

# Exact names a run may see.
ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "TMPDIR",
        "PWD",
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
        "PYTHONWARNINGS",
        "NLTK_DATA",
        "XDG_CACHE_HOME",
        "HF_HOME",
        "HF_HUB_OFFLINE",
        "HF_DATASETS_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "TOKENIZERS_PARALLELISM",
        "COVERAGE_PROCESS_START",
    }
)
# Prefixes of names a run may see: locale, thread pools, GPUs, torch's own switches.
ALLOWED_PREFIXES = ("LC_", "OMP_", "MKL_", "OPENBLAS_", "CUDA_", "NVIDIA_", "NCCL_", "TORCH_", "PYTORCH_")
# ReasonLab's own settings (REASONLAB_*) reach runs unless their names look like a credential (the worker
# token, the broker's and MLflow's URLs, which may hold passwords, the signing key...): those are sealed.
# Whatever its prefix, a name that looks like a credential never reaches a run.
CREDENTIAL_NAME = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|KEY|AUTH|COOKIE|SESSION|_URL$|_URI$|_DSN$", re.I)
# ...except these public settings whose names happen to match (URLs without credentials, by design)
PUBLIC_MATCHING = frozenset({"REASONLAB_API_URL"})


def is_allowed(name: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether a variable named ``name`` may stay in the environment a run sees."""
    if name in PUBLIC_MATCHING or name in extra:
        return True
    if CREDENTIAL_NAME.search(name):
        return False
    return name.startswith("REASONLAB_") or name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def split_environment(env: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(what runs may see, ReasonLab's settings to seal). Variables in neither are dropped."""
    extra = frozenset(n.strip() for n in env.get(EXTRA_ALLOW, "").split(",") if n.strip())
    kept = {k: v for k, v in env.items() if is_allowed(k, extra)}
    sealed = {k: v for k, v in env.items() if k.startswith("REASONLAB_") and k not in kept}
    return kept, sealed


def reexec_sealed(argv: Sequence[str]) -> None:
    """Start this program again as ``argv`` with the allow-listed environment; its sealed settings travel
    over an inherited pipe. Does not return. (Call ``unseal()`` first thing in the new image.)"""
    kept, sealed = split_environment(os.environ)
    payload = json.dumps(sealed).encode()
    read_fd, write_fd = os.pipe()
    if len(payload) >= 60_000:  # a pipe's buffer holds 64 KiB: a larger write would block before the exec
        raise ValueError("the worker's REASONLAB_ settings are too large to hand over a pipe")
    os.write(write_fd, payload)
    os.close(write_fd)
    os.set_inheritable(read_fd, True)
    kept[SEALED_FD] = str(read_fd)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *argv], kept)


def unseal() -> bool:
    """In a re-executed worker: read the sealed settings from the pipe into memory, close it, drop the
    pipe's variable and make the process undumpable (other processes of its user, its runs included,
    cannot read its memory through /proc). False when this process was not started sealed."""
    fd_text = os.environ.pop(SEALED_FD, None)
    if fd_text is None:
        return False
    fd = int(fd_text)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    seal(json.loads(b"".join(chunks) or b"{}"))
    make_undumpable()
    return True


def make_undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): /proc/<pid>/environ, mem and maps of this process and of the processes
    it forks are no longer readable by other processes of the same (non-root) user. Linux only."""
    pr_set_dumpable = 4
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)


def sealed_start(argv: Sequence[str]) -> None:
    """The worker's first step: re-execute sealed unless this process already is."""
    if not unseal():
        reexec_sealed(argv)
