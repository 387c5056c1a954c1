"""Password hashing (argon2), JWTs and API-token hashing."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()
TOKEN_PREFIX = "rl_"


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def make_jwt(user_id: int, secret: str, ttl_seconds: int) -> tuple[str, datetime]:
    expires = datetime.now(UTC) + timedelta(seconds=ttl_seconds)
    token = jwt.encode({"sub": str(user_id), "exp": expires, "typ": "access"}, secret, algorithm="HS256")
    return token, expires


def read_jwt(token: str, secret: str) -> int | None:
    try:
        claims = jwt.decode(token, secret, algorithms=["HS256"])
        return int(claims["sub"])
    except (jwt.PyJWTError, KeyError, ValueError):
        return None


def new_api_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_api_token(token: str) -> str:
    # API tokens carry 256 bits of entropy, so a fast hash suffices (no brute force is possible).
    return hashlib.sha256(token.encode()).hexdigest()


def same_secret(a: str, b: str) -> bool:
    return bool(a) and bool(b) and hmac.compare_digest(a.encode(), b.encode())
