"""The argon2id cost of password hashes (settings ``password_hash_*``): its defaults, a hash made at the
configured cost, a login rehashing a password made at another cost, and the settings' own check.

The rest of the suite hashes at the cheapest cost (tests/conftest.py, PASSWORD_HASH_COST); these tests set
the cost they check and put the process's back afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher, extract_parameters
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select

from backend.auth import security
from backend.db import get_engine, session_factory, session_scope
from backend.main import create_app
from backend.models import User
from backend.settings import Settings
from tests.backend.conftest import USER_PASSWORD, Api, make_settings
from tests.conftest import PASSWORD_HASH_COST


@pytest.fixture(autouse=True)
def restore_cost(tmp_path: Path) -> Iterator[None]:
    yield
    security.use_settings_cost(Settings(home=tmp_path))  # the suite's cost, from the environment


def _stored_hash(api: Api, username: str) -> str:
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session:
        return session.scalars(select(User.password_hash).where(User.username == username)).one()


def _cost(password_hash: str) -> tuple[int, int, int]:
    params = extract_parameters(password_hash)
    return params.time_cost, params.memory_cost, params.parallelism


def test_the_defaults_are_argon2_cffis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in PASSWORD_HASH_COST:
        monkeypatch.delenv(name, raising=False)
    settings = Settings(home=tmp_path)
    library = PasswordHasher()
    assert (
        (
            settings.password_hash_time_cost,
            settings.password_hash_memory_kib,
            settings.password_hash_parallelism,
        )
        == (library.time_cost, library.memory_cost, library.parallelism)
        == (3, 65536, 4)
    )


def test_the_environment_sets_the_cost_and_new_hashes_carry_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("REASONLAB_PASSWORD_HASH_TIME_COST", "2")
    monkeypatch.setenv("REASONLAB_PASSWORD_HASH_MEMORY_KIB", "256")
    monkeypatch.setenv("REASONLAB_PASSWORD_HASH_PARALLELISM", "2")
    security.use_settings_cost(Settings(home=tmp_path))
    made = security.hash_password(USER_PASSWORD)
    assert _cost(made) == (2, 256, 2)
    assert security.verify_password(made, USER_PASSWORD)
    assert not security.verify_password(made, USER_PASSWORD + "x")
    assert _cost(security.dummy_hash()) == (2, 256, 2)  # an unknown user's login costs the same


def test_a_login_rehashes_a_password_made_at_another_cost(api: Api) -> None:
    api.user("alice")
    before = _stored_hash(api, "alice")
    assert _cost(before) == (1, 64, 1)  # the suite's cost, from the environment
    # the operator raises the cost and restarts the API: alice's stored hash still verifies, and her next
    # successful login stores it again at the new cost
    raised = make_settings(
        api.settings.database_url,
        api.settings.home,
        password_hash_time_cost=2,
        password_hash_memory_kib=1024,
        password_hash_parallelism=2,
    )
    with TestClient(create_app(raised, background=False)) as client:
        wrong = client.post("/api/v1/auth/login", json={"username": "alice", "password": "wrong-pass-12345"})
        assert wrong.status_code == 401
        assert _stored_hash(api, "alice") == before  # a failed login changes nothing
        ok = client.post("/api/v1/auth/login", json={"username": "alice", "password": USER_PASSWORD})
        assert ok.status_code == 200, ok.text
        after = _stored_hash(api, "alice")
        assert _cost(after) == (2, 1024, 2) and after != before
        again = client.post("/api/v1/auth/login", json={"username": "alice", "password": USER_PASSWORD})
        assert again.status_code == 200
        assert _stored_hash(api, "alice") == after  # at the current cost: not rehashed again


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"password_hash_memory_kib": 64, "password_hash_parallelism": 16}, "password_hash_memory_kib"),
        ({"password_hash_time_cost": 0}, "password_hash_time_cost"),
        ({"password_hash_parallelism": 0}, "password_hash_parallelism"),
    ],
)
def test_a_cost_argon2_cannot_use_is_refused_naming_the_field(
    tmp_path: Path, overrides: dict[str, int], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        Settings(home=tmp_path, **overrides)
    assert field in str(info.value)
