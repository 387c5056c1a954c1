"""Project secrets at rest: AES-256-GCM under a key only the API holds (workers never see it).

The key is ``REASONLAB_SECRETS_KEY`` (32 random bytes, urlsafe base64: ``reasonlab secrets keygen``), or,
where it is not set, one derived from the signing key with HKDF-SHA256 (a separate label, so the two keys
never coincide). Each value is sealed with a fresh 96-bit nonce and the project id and secret name as
associated data: a ciphertext copied to another row or project does not open. Stored as
``v1:<base64(nonce | ciphertext | tag)>``.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION = "v1"
NONCE = 12


class SecretKeyError(ValueError):
    """The configured secrets key is malformed, or a stored value does not open under it."""


def new_key() -> str:
    return base64.urlsafe_b64encode(os.urandom(32)).decode()


def derive_key(configured: str, signing_key: str) -> bytes:
    """The 32-byte key: the configured one (urlsafe base64 of 32 bytes), else HKDF of the signing key."""
    if configured:
        try:
            key = base64.urlsafe_b64decode(configured.encode())
        except (binascii.Error, ValueError) as exc:
            raise SecretKeyError("REASONLAB_SECRETS_KEY is not urlsafe base64") from exc
        if len(key) != 32:
            raise SecretKeyError("REASONLAB_SECRETS_KEY must be 32 bytes (urlsafe base64)")
        return key
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"reasonlab project secrets v1")
    return hkdf.derive(signing_key.encode())


def _aad(project_id: int, name: str) -> bytes:
    return f"reasonlab-secret:{project_id}:{name}".encode()


def seal(key: bytes, project_id: int, name: str, value: str) -> str:
    nonce = os.urandom(NONCE)
    sealed = AESGCM(key).encrypt(nonce, value.encode(), _aad(project_id, name))
    return f"{VERSION}:{base64.b64encode(nonce + sealed).decode()}"


def open_sealed(key: bytes, project_id: int, name: str, stored: str) -> str:
    version, _, body = stored.partition(":")
    if version != VERSION:
        raise SecretKeyError(f"unknown secret format {version!r}")
    raw = base64.b64decode(body.encode())
    try:
        return AESGCM(key).decrypt(raw[:NONCE], raw[NONCE:], _aad(project_id, name)).decode()
    except InvalidTag as exc:
        raise SecretKeyError(
            "a stored secret does not open with this key (was REASONLAB_SECRETS_KEY or the signing key changed?)"
        ) from exc
