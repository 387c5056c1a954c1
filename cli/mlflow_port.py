"""The port of MLflow's UI under ``reasonlab up``: the same one at every start, so a bookmark (and the
dashboard's "Open in MLflow" links copied elsewhere) keep working.

The order: ``--mlflow-port`` / REASONLAB_MLFLOW_PORT when given (``reasonlab up`` refuses one that is
taken, as it refuses a taken API port); else the port of this home's previous
start (HOME/mlflow.port), else 5000. A taken port is not replaced by a random one: the next free port
above it (up to SCAN ports) is used, so a lasting neighbour on 5000 gives 5001 every time; only when all
of those are taken does the OS pick one. The port used is written to HOME/mlflow.port for the next start.
"""

from __future__ import annotations

import socket
from pathlib import Path

DEFAULT_MLFLOW_PORT = 5000
PORT_FILE = "mlflow.port"
SCAN = 20  # ports tried above a taken one before any free port will do


def port_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``port``: SO_REUSEADDR, as uvicorn and MLflow's server bind, so a
    port whose last connections linger in TIME_WAIT counts as free and only a listener makes it taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _any_free(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def next_free_port(host: str, start: int) -> int:
    """The first free port from ``start`` up (up to SCAN ports), else any free port: what to suggest."""
    return next(
        (p for p in range(start, min(start + SCAN + 1, 65536)) if port_free(host, p)), None
    ) or _any_free(host)


def previous_port(home: Path) -> int | None:
    """The port of this home's previous start, None when there was none (or the file is not a port)."""
    try:
        port = int((home / PORT_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def mlflow_ui_port(
    host: str, home: Path, asked: int | None, default: int = DEFAULT_MLFLOW_PORT
) -> tuple[int, str]:
    """The port to serve MLflow's UI on and the banner's note (empty, or why it is not the one wanted);
    records it in HOME/mlflow.port."""
    wanted = asked if asked is not None else previous_port(home) or default
    port = next_free_port(host, wanted)
    note = "" if port == wanted else f" (port {wanted} is taken)"
    (home / PORT_FILE).write_text(f"{port}\n")
    return port, note
