"""MLflow's UI keeps its port across `reasonlab up` restarts (it used to move on every restart when
5000 was taken, to a port the OS picked): the previous start's port, else the default, else the next free
port above the one wanted; never a random one while one of those is free."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cli.mlflow_port import PORT_FILE, mlflow_ui_port, port_free

HOST = "127.0.0.1"


def _free_run(n: int) -> int:
    """A port p with p..p+n-1 all free (a default stand-in: the real 5000 may be anyone's)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind((HOST, 0))
            p = int(s.getsockname()[1])
        if p + n < 65536 and all(port_free(HOST, p + i) for i in range(n)):
            return p
    raise AssertionError("no run of free ports")


@contextmanager
def _taken(port: int) -> Iterator[None]:
    """Another program listening on ``port``."""
    with socket.socket() as s:
        s.bind((HOST, port))
        s.listen()
        yield


def test_a_taken_default_gives_the_same_next_port_at_every_restart(tmp_path: Path) -> None:
    default = _free_run(4)
    with _taken(default):
        first = mlflow_ui_port(HOST, tmp_path, None, default)
        again = mlflow_ui_port(HOST, tmp_path, None, default)
    assert first == (default + 1, f" (port {default} is taken)")
    assert again == (default + 1, "")  # this home's port now: nothing to explain
    assert (tmp_path / PORT_FILE).read_text() == f"{default + 1}\n"


def test_the_previous_port_is_kept_when_the_default_frees_up(tmp_path: Path) -> None:
    default = _free_run(4)
    with _taken(default):
        assert mlflow_ui_port(HOST, tmp_path, None, default)[0] == default + 1
    # 5000 is free again: the UI stays where the bookmarks point
    assert mlflow_ui_port(HOST, tmp_path, None, default) == (default + 1, "")


def test_a_fresh_home_gets_the_default_and_a_taken_previous_port_the_next_above_it(tmp_path: Path) -> None:
    default = _free_run(4)
    assert mlflow_ui_port(HOST, tmp_path, None, default) == (default, "")
    with _taken(default):
        assert mlflow_ui_port(HOST, tmp_path, None, default) == (default + 1, f" (port {default} is taken)")


def test_an_asked_port_wins_over_the_previous_one(tmp_path: Path) -> None:
    base = _free_run(4)
    (tmp_path / PORT_FILE).write_text(f"{base}\n")
    assert mlflow_ui_port(HOST, tmp_path, base + 2, base) == (base + 2, "")
    with _taken(base + 2):  # taken: the next above it, said in the banner
        assert mlflow_ui_port(HOST, tmp_path, base + 2, base) == (base + 3, f" (port {base + 2} is taken)")
    (tmp_path / PORT_FILE).write_text("not a port\n")  # a spoilt file is no previous port
    assert mlflow_ui_port(HOST, tmp_path, None, base) == (base, "")
