"""Password hashing (argon2), JWTs and API-token hashing."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from backend.settings import Settings

# The process's argon2id cost for new hashes (the settings' password_hash_*; argon2-cffi's defaults until
# use_hash_cost is called). A verification reads the cost from the hash it checks.
_hasher = PasswordHasher()
TOKEN_PREFIX = "rl_"


def use_hash_cost(time_cost: int, memory_kib: int, parallelism: int) -> None:
    """Hash new passwords at this cost from now on (``use_settings_cost``)."""
    global _hasher
    if (_hasher.time_cost, _hasher.memory_cost, _hasher.parallelism) == (time_cost, memory_kib, parallelism):
        return
    _hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_kib, parallelism=parallelism)
    dummy_hash.cache_clear()


def use_settings_cost(settings: Settings) -> None:
    """The settings' password_hash_* for this process: create_app, the bootstrap and the CLI's user
    commands call it before they hash or verify."""
    use_hash_cost(
        settings.password_hash_time_cost,
        settings.password_hash_memory_kib,
        settings.password_hash_parallelism,
    )


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    """Whether a verified hash was made at another cost than the current one."""
    return _hasher.check_needs_rehash(password_hash)


@functools.cache
def dummy_hash() -> str:
    """A hash to verify against when the username is unknown (same cost as a real login)."""
    return _hasher.hash(secrets.token_urlsafe(16))


ACCESS = "access"  # a login's bearer token
# a run read ticket: one minute, one run, its event stream and artifact downloads (EventSource and a plain
# download link cannot send headers); the claim's value is still "stream", its earlier name, so a
# ticket handed out by an API replica of the previous version still opens on an upgraded one
RUN_READ = "stream"
RUN = "run"  # a run's own token: one run, one attempt (handed out by the claim, docs/operations.md)
RUN_TOKEN_PREFIX = "rlrun."  # tells a run token from a login's JWT before any signature check


def make_jwt(
    user_id: int, secret: str, ttl_seconds: int, typ: str = ACCESS, **claims: Any
) -> tuple[str, datetime]:
    expires = datetime.now(UTC) + timedelta(seconds=ttl_seconds)
    payload = {**claims, "sub": str(user_id), "exp": expires, "typ": typ}
    return jwt.encode(payload, secret, algorithm="HS256"), expires


def read_jwt(token: str, secret: str, typ: str = ACCESS) -> dict[str, Any] | None:
    """The claims of a valid token of type ``typ``; None for a bad signature, a missing or past ``exp``,
    a missing ``sub`` or another type (a run read ticket is no login)."""
    try:
        claims: dict[str, Any] = jwt.decode(
            token, secret, algorithms=["HS256"], options={"require": ["exp", "sub", "typ"]}
        )
        int(claims["sub"])
    except (jwt.PyJWTError, KeyError, ValueError):
        return None
    return claims if claims.get("typ") == typ else None


def make_run_token(run_id: int, attempt: int, secret: str, ttl_seconds: int) -> tuple[str, datetime]:
    """The token a claimed attempt's process works with: it names one run and one attempt, and the API
    accepts it only while that attempt is the run's running one (``backend.auth.dependencies``), so it
    expires with the attempt whatever ``exp`` says; ``exp`` bounds a token that leaked from a run that never
    ended."""
    expires = datetime.now(UTC) + timedelta(seconds=ttl_seconds)
    payload = {"run": run_id, "attempt": attempt, "exp": expires, "typ": RUN}
    return RUN_TOKEN_PREFIX + jwt.encode(payload, secret, algorithm="HS256"), expires


def read_run_token(token: str, secret: str) -> tuple[int, int] | None:
    """(run id, attempt) of a valid run token; None for anything else."""
    if not token.startswith(RUN_TOKEN_PREFIX):
        return None
    try:
        claims = jwt.decode(
            token[len(RUN_TOKEN_PREFIX) :],
            secret,
            algorithms=["HS256"],
            options={"require": ["exp", "run", "attempt", "typ"]},
        )
        if claims.get("typ") != RUN:
            return None
        return int(claims["run"]), int(claims["attempt"])
    except (jwt.PyJWTError, KeyError, ValueError, TypeError):
        return None


def new_api_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_api_token(token: str) -> str:
    # API tokens carry 256 bits of entropy, so a fast hash suffices (no brute force is possible).
    return hashlib.sha256(token.encode()).hexdigest()


def same_secret(a: str, b: str) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(a.encode(), b.encode())
