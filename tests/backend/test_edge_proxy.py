"""Whose X-Forwarded-For the API believes. Uvicorn, left to itself, believes it from
127.0.0.1 and ::1, so a spoofed header named a new client address at each request and got a fresh login
throttle count each time. Now ``reasonlab api`` and ``reasonlab up`` start uvicorn believing only
REASONLAB_TRUSTED_PROXIES, which is empty by default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from click.testing import CliRunner

from backend.settings import Settings
from tests.backend.conftest import make_settings
from tests.backend.test_edge_slow_clients import Live, request, serve

SPOOFED = [f"198.51.100.{i}" for i in range(1, 4)]


def _api_command_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> dict[str, Any]:
    """What ``reasonlab api`` hands uvicorn (uvicorn.run is replaced: nothing is served), less the app,
    the address and the log level."""
    from cli.server import api

    for key in ("REASONLAB_TRUSTED_PROXIES", "FORWARDED_ALLOW_IPS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("REASONLAB_HOME", str(tmp_path / "cli-home"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    captured: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: captured.update(kwargs))
    result = CliRunner().invoke(api, ["--no-migrate"])
    assert result.exit_code == 0, result.output
    assert captured, "reasonlab api did not start uvicorn"
    return {k: v for k, v in captured.items() if k not in ("factory", "host", "port", "log_level")}


def _fail_logins(live: Live, spoofed: list[str]) -> None:
    for address in spoofed:
        body = json.dumps({"username": "nobody", "password": "not-the-password"}).encode()
        status, _, _ = request(live, "POST", "/api/v1/auth/login", body, {"X-Forwarded-For": address})
        assert status == 401


def test_the_api_command_believes_no_forwarded_for_by_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, home: Path
) -> None:
    options = _api_command_options(monkeypatch, tmp_path)
    settings = make_settings(f"sqlite:///{tmp_path / 'edge.db'}", home)
    assert settings.trusted_proxies == []
    with serve(settings, **options) as live:
        _fail_logins(live, SPOOFED)
        throttle = live.app.state.login_throttle
        # every failure counted against the connection's real peer, none against the spoofed addresses
        assert throttle.failures("nobody", "127.0.0.1") == len(SPOOFED)
        assert all(throttle.failures("nobody", address) == 0 for address in SPOOFED)


def test_a_configured_proxy_is_believed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, home: Path) -> None:
    options = _api_command_options(monkeypatch, tmp_path, REASONLAB_TRUSTED_PROXIES="127.0.0.1")
    settings = make_settings(f"sqlite:///{tmp_path / 'edge.db'}", home, trusted_proxies=["127.0.0.1"])
    with serve(settings, **options) as live:
        _fail_logins(live, SPOOFED)
        throttle = live.app.state.login_throttle
        assert throttle.failures("nobody", "127.0.0.1") == 0
        assert all(throttle.failures("nobody", address) == 1 for address in SPOOFED)


def test_reasonlab_up_starts_uvicorn_with_the_same_trust(tmp_path: Path) -> None:
    """``reasonlab up`` runs ``python -m uvicorn``: its flags, parsed by uvicorn's own command line."""
    from cli.server import api_argv

    def parsed(settings: Settings) -> dict[str, Any]:
        argv = api_argv("python", "127.0.0.1", 8000, settings)
        assert argv[:3] == ["python", "-m", "uvicorn"]
        return dict(uvicorn.main.make_context("uvicorn", argv[3:]).params)

    default = parsed(Settings(home=tmp_path))
    assert default["proxy_headers"] is False
    trusted = parsed(Settings(home=tmp_path, trusted_proxies="10.0.0.5, 172.31.250.0/24"))
    assert trusted["proxy_headers"] is True
    assert trusted["forwarded_allow_ips"] == "10.0.0.5,172.31.250.0/24"


@pytest.mark.parametrize("bad", ["*", "proxy.example", "10.0.0.256", "127.0.0.1, *"])
def test_trusted_proxies_are_addresses_or_networks(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="trusted_proxies"):
        Settings(home=tmp_path, trusted_proxies=bad)
    assert Settings(home=tmp_path, trusted_proxies="10.1.2.3/8, ::1").trusted_proxies == ["10.0.0.0/8", "::1"]
