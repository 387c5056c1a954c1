"""Logins and tokens as an attacker probes them: throttling, username timing, weak inputs, JWT claims."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta

import httpx
import jwt
import pytest
from fastapi.testclient import TestClient

from backend.auth import policy, security
from backend.auth import service as auth_service
from backend.auth.security import dummy_hash
from backend.auth.throttle import LoginThrottle
from backend.db import get_engine, session_factory, session_scope
from backend.errors import Invalid
from tests.backend.conftest import USER_PASSWORD, Api


def _login(api: Api, username: str, password: str, client: TestClient | None = None) -> int:
    r = (client or api.client).post("/api/v1/auth/login", json={"username": username, "password": password})
    return r.status_code


def _from(api: Api, address: str) -> TestClient:
    """A client of the same app whose requests come from ``address`` (the connection's peer)."""
    return TestClient(api.client.app, client=(address, 40000))


ATTACKER, OWNER = "203.0.113.7", "198.51.100.2"


@pytest.mark.heavy
def test_an_attacker_cannot_lock_the_owner_out(api: Api) -> None:
    """Five wrong passwords from anyone, anywhere, used to make the owner's right one a 429 for five
    minutes. Now the attacker's failures slow the attacker's own (account, address) pair only."""
    api.user("alice")
    # the throttle's clock stands still: on a loaded machine 40 logins (a password hash each) can outlast
    # the attacker's first delays (1 s, 2 s, ...), and a login after a delay has run out is a 401 again
    stopped = time.monotonic()
    api.client.app.state.login_throttle.clock = lambda: stopped
    attacker = _from(api, ATTACKER)
    codes = [_login(api, "alice", f"wrong-{i}", attacker) for i in range(40)]
    free = api.settings.login_failures_per_account
    assert codes[:free] == [401] * free and set(codes[free:]) == {429}  # the attacker is slowed
    r = attacker.post("/api/v1/auth/login", json={"username": "alice", "password": USER_PASSWORD})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1  # its pair waits, right or wrong
    # the owner, elsewhere, logs in at once, and again (a success clears nothing the attacker made)
    owner = _from(api, OWNER)
    assert _login(api, "alice", USER_PASSWORD, owner) == 200
    assert _login(api, "alice", USER_PASSWORD, owner) == 200
    assert _login(api, "admin", api.admin_password, attacker) == 200  # other accounts are not locked out
    # and the owner's own typos do not add to the attacker's count, nor the other way round
    assert _login(api, "alice", "my-own-typo-1", owner) == 401
    assert _login(api, "alice", USER_PASSWORD, owner) == 200


def test_a_pairs_delays_grow_exponentially_and_are_capped() -> None:
    now = [0.0]
    throttle = LoginThrottle(
        free_failures=3, per_address=1000, window=60, backoff=1.0, max_backoff=30.0, clock=lambda: now[0]
    )
    waits = []
    for _ in range(10):
        wait = throttle.wait("alice", ATTACKER)
        now[0] += wait  # the attacker waits exactly as long as told, then fails again
        assert throttle.wait("alice", ATTACKER) == 0
        throttle.failed("alice", ATTACKER)
        waits.append(throttle.wait("alice", ATTACKER))
    assert waits == [0, 0, 1, 2, 4, 8, 16, 30, 30, 30]
    assert throttle.wait("ALICE", ATTACKER) == 30  # account names are case-insensitive
    assert throttle.wait("alice", OWNER) == 0  # another address is another pair
    assert throttle.wait("bob", ATTACKER) == 0  # another account too (until the address limit)
    now[0] += 30 + 60 + 1  # quiet past the longest delay and the window: the pair is forgotten
    throttle.failed("alice", ATTACKER)
    assert throttle.wait("alice", ATTACKER) == 0


def test_an_address_spraying_many_accounts_waits_alone() -> None:
    now = [0.0]
    throttle = LoginThrottle(free_failures=100, per_address=3, window=60, clock=lambda: now[0])
    for name in ("a", "b", "c"):
        assert throttle.wait(name, "10.0.0.1") == 0
        throttle.failed(name, "10.0.0.1")
    assert throttle.wait("d", "10.0.0.1") == pytest.approx(60)
    assert throttle.wait("d", "10.0.0.2") == 0  # the owner of d, elsewhere
    assert throttle.wait("a", "10.0.0.2") == 0
    now[0] = 30.0
    assert throttle.wait("d", "10.0.0.1") == pytest.approx(30)
    now[0] = 60.5
    assert throttle.wait("d", "10.0.0.1") == 0  # the window slid past the failures


def test_a_success_clears_the_pair_only() -> None:
    throttle = LoginThrottle(free_failures=1, per_address=2, window=60, clock=lambda: 0.0)
    throttle.failed("Alice", "x")
    throttle.succeeded("alice", "y")  # a success elsewhere clears nothing here
    assert throttle.wait("alice", "x") > 0
    throttle.succeeded("alice", "x")
    assert throttle.wait("alice", "x") == 0
    throttle.failed("bob", "x")  # the address's count is kept: a guesser's own account cannot reset it
    assert throttle.wait("carol", "x") > 0


def test_the_throttles_maps_are_bounded() -> None:
    throttle = LoginThrottle(free_failures=1, per_address=1, clock=lambda: 0.0, max_keys=100)
    for i in range(1000):
        throttle.failed(f"user{i}", f"10.0.{i // 256}.{i % 256}")
    assert len(throttle._pairs) == 100 and len(throttle._addresses) == 100
    assert len(throttle._accounts) == 100
    for i in range(1000):
        throttle.succeeded(f"user{i}", "10.9.9.9")
    assert len(throttle._known) == 100
    assert throttle.wait("user999", "10.0.3.231") > 0  # the newest are kept


def test_guessing_one_account_from_many_addresses_is_slowed_but_its_owner_is_not_locked_out() -> None:
    """100 password checks on one account from 20 addresses, 5 each (within each pair's free failures),
    were all verified at once. Now past the account's free failures every address it never logged in
    from waits, together; the owner's own address does not, and a new one waits at most the cap."""
    now = [0.0]
    throttle = LoginThrottle(
        free_failures=5, per_address=30, window=300, max_backoff=900, clock=lambda: now[0]
    )  # the defaults: 20 free failures at an account, then up to 120 s
    throttle.succeeded("alice", OWNER)  # the owner logged in from home once
    checked = 0
    for i in range(100):
        address = f"203.0.113.{i % 20}"
        if throttle.wait("alice", address) == 0:
            throttle.failed("alice", address)
            checked += 1
    assert checked == 20 and throttle.account_failures("alice") == 20
    assert throttle.wait("alice", OWNER) == 0  # from home: at once
    assert 0 < throttle.wait("Alice", "192.0.2.99") <= 120  # from a new address: slowed, not locked out
    assert throttle.wait("bob", "192.0.2.99") == 0  # other accounts are not slowed
    for _ in range(3):  # the owner's typos at home count for the pair only
        throttle.failed("alice", OWNER)
    assert throttle.account_failures("alice") == 20 and throttle.wait("alice", OWNER) == 0
    waits = []  # the guessers go on, each waiting exactly as long as told: doubling delays, capped
    for i in range(9):
        address = f"198.18.0.{i}"
        now[0] += throttle.wait("alice", address)
        assert throttle.wait("alice", address) == 0
        throttle.failed("alice", address)
        waits.append(throttle.wait("alice", f"198.18.1.{i}"))
    assert waits == [2, 4, 8, 16, 32, 64, 120, 120, 120]
    now[0] += 900 + 300 + 1  # quiet past the pairs' longest delay and the window: forgotten
    assert throttle.wait("alice", "192.0.2.99") == 0 and throttle.account_failures("alice") == 0
    now[0] += 30 * 86400  # an address is known for 30 days after its last login
    for i in range(25):
        throttle.failed("alice", f"203.0.113.{i}")
    assert throttle.wait("alice", OWNER) > 0


def test_the_owner_logs_in_from_home_while_many_addresses_guess(api: Api) -> None:
    api.user("alice")
    stopped = time.monotonic()
    api.client.app.state.login_throttle = LoginThrottle(account_free=4, clock=lambda: stopped)
    assert _login(api, "alice", USER_PASSWORD, _from(api, OWNER)) == 200
    codes = [_login(api, "alice", f"wrong-{i}", _from(api, f"203.0.113.{i}")) for i in range(6)]
    assert codes == [401] * 4 + [429] * 2
    r = _from(api, "192.0.2.99").post(
        "/api/v1/auth/login", json={"username": "alice", "password": USER_PASSWORD}
    )
    assert r.status_code == 429 and 1 <= int(r.headers["Retry-After"]) <= 120
    assert _login(api, "alice", USER_PASSWORD, _from(api, OWNER)) == 200


def test_parallel_guesses_do_not_outrun_the_delays(api: Api) -> None:
    """Twenty guesses at once from one address: each checks the throttle again once it has a hashing
    slot, so only the free failures (and those already verifying then) are verified."""
    api.user("alice")
    stopped = time.monotonic()  # no delay runs out during the burst, however loaded the machine
    api.client.app.state.login_throttle.clock = lambda: stopped

    async def burst() -> list[int]:
        transport = httpx.ASGITransport(app=api.client.app, client=(ATTACKER, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            answers = await asyncio.gather(
                *(
                    client.post("/api/v1/auth/login", json={"username": "alice", "password": f"wrong-{i}"})
                    for i in range(20)
                )
            )
        return [r.status_code for r in answers]

    codes = asyncio.run(burst())
    verified = codes.count(401)
    assert set(codes) == {401, 429}
    assert verified <= api.settings.login_failures_per_account + api.settings.login_hash_slots, codes


def test_unknown_usernames_cost_a_password_verification(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unknown and known usernames both verify one argon2 hash, so timing does not tell them apart."""
    verified: list[str] = []
    import backend.auth.service as service_module

    real = service_module.verify_password

    def spy(password_hash: str, password: str) -> bool:
        verified.append(password_hash)
        return real(password_hash, password)

    monkeypatch.setattr(service_module, "verify_password", spy)
    assert _login(api, "nobody-here", "whatever-password") == 401
    assert verified == [dummy_hash()]
    assert _login(api, "admin", "wrong-password-x") == 401
    assert len(verified) == 2 and verified[1] != dummy_hash()


def test_unknown_and_known_usernames_take_alike_long(api: Api) -> None:
    """Not a timing assertion on the machine: the ratio of the two medians, measured side by side."""

    def median(username: str) -> float:
        times = []
        for i in range(3):
            start = time.perf_counter()
            _login(api, username, f"not-the-password-{i}")
            times.append(time.perf_counter() - start)
        return sorted(times)[1]

    # a cost whose hashing dominates a login (the suite's cheapest cost takes microseconds: the ratio would
    # be the HTTP's and the database's noise), put back afterwards
    before = security._hasher
    security.use_hash_cost(2, 8192, 1)
    try:
        api.user("bob")
        ratio = median("bob") / median("no-such-user")
    finally:
        security.use_hash_cost(before.time_cost, before.memory_cost, before.parallelism)
    assert 0.3 < ratio < 3.0, f"known/unknown login time ratio {ratio:.2f}"


@pytest.mark.parametrize(
    ("username", "ok"),
    [
        ("alice", True),
        ("a.b-c_9", True),
        ("", False),
        (" admin", False),
        ("Admin", False),
        ("<b>x</b>", False),
        ("a", False),
    ],
)
def test_one_username_policy(username: str, ok: bool) -> None:
    assert (policy.username_problem(username) is None) is ok


@pytest.mark.parametrize(
    ("password", "ok"),
    [
        ("password", False),
        ("12345678", False),
        ("1234567890", False),
        ("aaaaaaaaaaaa", False),
        ("abcdefghijkl", False),
        ("password123", False),
        ("alice-secret-99", False),  # contains the username
        (USER_PASSWORD, True),
        ("tr0ub4dor&3x", True),
    ],
)
def test_one_password_policy(password: str, ok: bool) -> None:
    assert (policy.password_problem(password, "alice") is None) is ok


@pytest.mark.parametrize(
    "password",
    [
        "qwertyuiop0",  # the probe's: a listed password with a digit added
        "qwertyuiop!!",
        "0qwertyuiop",
        "Password2024!",
        "P@ssw0rd2024",  # look-alikes read as letters
        "iloveyou!!!",
        "Summer2024!",
        "football#99",
        "letmein12345",
        "abc1234567",
        "passwordpassword",
        "poiuytrewq9",  # a keyboard row backwards
        "mnbvcxz123",
        "1qaz2wsx3edc4",  # columns
        "zaq12wsx!!",
        "!QAZ@WSX#EDC",  # the same keys shifted
        "1q2w3e4r5t6y",  # a zig-zag
        "asdfjkl;1234",
        "qwer9384756",  # a walk of four, then digits
    ],
)
def test_well_known_stems_and_keyboard_walks_are_refused(password: str) -> None:
    """``qwertyuiop0`` used to be accepted; a common word or keyboard walk with digits or symbols
    around it is as guessable as the list entry itself."""
    problem = policy.password_problem(password, "alice")
    assert problem is not None and ("well-known" in problem or "keyboard" in problem), (password, problem)


@pytest.mark.parametrize(
    "password",
    [
        "correct-horse-battery-42",
        "tr0ub4dor&3x",
        "BzUyQoRevyK9ElV5",
        "Tr1cky-Quokka-17",
        "weredrew99x",
        "7Kx#mq2Lp9",
    ],
)
def test_ordinary_passwords_still_pass(password: str) -> None:
    assert policy.password_problem(password, "alice") is None


def test_keyboard_walks() -> None:
    for walk in ("qwerty", "ytrewq", "1qaz", "zaq1", "1q2w3e", "asdfghjkl;'", "qazwsxedc", "`1234"):
        assert policy.is_keyboard_walk(walk), walk
    for not_walk in ("qw", "horse", "tr0ub4dor", "1qaz2", "qwertyuiop" * 7):  # the last: over 64 keys
        assert not policy.is_keyboard_walk(not_walk), not_walk


def test_weak_users_are_refused_where_users_are_made(api: Api) -> None:
    factory = session_factory(get_engine(api.settings.database_url))
    with session_scope(factory) as session, pytest.raises(Invalid) as bad:
        auth_service.create_user(session, "Admin", "12345678")
    assert [e["loc"] for e in bad.value.errors] == [["body", "username"], ["body", "password"]]


def _claims_token(api: Api, **claims: object) -> str:
    return jwt.encode(claims, api.settings.secret_key, algorithm="HS256")


def test_jwts_need_exp_and_the_access_type(api: Api) -> None:
    me = "/api/v1/auth/me"
    later = datetime.now(UTC) + timedelta(hours=1)

    def status(token: str) -> int:
        return api.client.get(me, headers={"Authorization": f"Bearer {token}"}).status_code

    assert status(_claims_token(api, sub="1", exp=later, typ="access")) == 200
    assert status(_claims_token(api, sub="1", typ="access")) == 401  # no exp: never expires
    assert status(_claims_token(api, sub="1", exp=later)) == 401  # no typ
    assert status(_claims_token(api, sub="1", exp=later, typ="stream", run=1)) == 401
    assert (
        status(_claims_token(api, sub="1", exp=datetime.now(UTC) - timedelta(seconds=5), typ="access")) == 401
    )


def test_credentials_never_reach_the_access_log(api: Api, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from backend.http.logredact import RedactCredentials, redact

    assert redact("GET /api/v1/runs/1/events?ticket=eyJabc.def&x=1 HTTP/1.1") == (
        "GET /api/v1/runs/1/events?ticket=[redacted]&x=1 HTTP/1.1"
    )
    assert redact("/x?token=rl_secret") == "/x?token=[redacted]"
    access = logging.getLogger("uvicorn.access")
    assert any(isinstance(f, RedactCredentials) for f in access.filters)  # installed by create_app
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        # uvicorn's own access-log call shape: format string and (client, method, path, version, status)
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:1", "GET", "/e?ticket=s3cret", "1.1", 200)
    assert "s3cret" not in caplog.text and "[redacted]" in caplog.text


def test_the_worker_token_claims_and_reads_nothing(api: Api) -> None:
    """docs/api.md: the worker token claims and releases runs only (it used to read and write runs of
    every project); what a claimed run does goes with its own token (tests/backend/test_run_tokens.py)."""
    run = api.submit({}).json()["runs"][0]
    refused = [
        f"/api/v1/runs/{run['id']}",
        f"/api/v1/runs/{run['id']}/results",
        f"/api/v1/runs/{run['id']}/logs",
        "/api/v1/projects",
        "/api/v1/experiments",
        f"/api/v1/experiments/{run['experiment_id']}",
        "/api/v1/runs",
        "/api/v1/kinds",
        f"/api/v1/runs/{run['id']}/comments",
        "/api/v1/projects/1/activity",
    ]
    for path in refused:
        assert api.client.get(path, headers=api.worker_token).status_code == 403, path


def test_a_project_admin_cannot_demote_the_site_admin_or_probe_usernames(api: Api) -> None:
    project_admin = api.user("pam", role="admin")
    api.user("sam")

    def put(username: str, token: str) -> tuple[int, str]:
        r = api.client.put(
            "/api/v1/projects/1/members", json={"username": username, "role": "viewer"}, headers=api.h(token)
        )
        return r.status_code, r.json().get("detail", "")

    demote = put("admin", project_admin)
    unknown = put("no-such-user", project_admin)
    assert demote[0] == unknown[0] == 403
    assert demote[1].replace("'admin'", "X") == unknown[1].replace("'no-such-user'", "X")  # alike
    assert put("sam", project_admin)[0] == 200
    assert put("no-such-user", api.admin_token)[0] == 404  # the site admin is told plainly
    me = api.client.get("/api/v1/auth/me", headers=api.h()).json()
    assert me["is_admin"] and {m["role"] for m in me["memberships"]} == {"admin"}
