"""One policy for usernames and passwords, applied wherever a user is made (API, CLI, bootstrap).

Usernames: 2-64 characters of lowercase letters, digits, ``.``, ``_`` and ``-``, starting with a letter or
digit: no blanks, no look-alike capitals (``Admin`` beside ``admin``), nothing a page could render as
markup. Passwords: at least 10 characters (NIST SP 800-63B asks at least 8 and a check against known
passwords), not a well-known password, not containing the username, and not one character repeated or a
plain run (``aaaaaaaaaa``, ``1234567890``).
"""

from __future__ import annotations

import itertools
import re

MIN_PASSWORD = 10
MAX_PASSWORD = 1000
USERNAME = re.compile(r"[a-z0-9][a-z0-9._-]{1,63}")

# The most common passwords of public breach corpora that are 10+ characters long or become so with a
# digit suffix; the length rule already refuses the shorter ones (password, 12345678, qwerty...).
COMMON_PASSWORDS = frozenset(
    {
        "1234567890",
        "0123456789",
        "0987654321",
        "1111111111",
        "1q2w3e4r5t",
        "1qaz2wsx3edc",
        "qwertyuiop",
        "asdfghjkl;",
        "zxcvbnm,./",
        "qwerty1234",
        "qwerty12345",
        "password12",
        "password123",
        "password1234",
        "password!!",
        "passw0rd12",
        "iloveyou12",
        "letmein123",
        "welcome123",
        "admin12345",
        "administrator",
        "changeme123",
        "abc1234567",
        "abcdefghij",
        "football12",
        "baseball12",
        "superman12",
        "princess12",
        "sunshine12",
        "trustno1234",
        "starwars12",
        "dragon1234",
        "monkey1234",
        "master1234",
        "whatever12",
        "reasonlab123",
    }
)


def username_problem(username: str) -> str | None:
    """Why ``username`` is refused, or None."""
    if not USERNAME.fullmatch(username):
        return "2-64 characters: lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"
    return None


def password_problem(password: str, username: str = "") -> str | None:
    """Why ``password`` is refused, or None."""
    if len(password) < MIN_PASSWORD:
        return f"at least {MIN_PASSWORD} characters"
    if len(password) > MAX_PASSWORD:
        return f"at most {MAX_PASSWORD} characters"
    lowered = password.lower()
    if lowered in COMMON_PASSWORDS:
        return "a well-known password"
    if username and username.lower() in lowered:
        return "contains the username"
    if len(set(password)) < 4 or _is_run(lowered):
        return "too simple (repeated characters or a plain sequence)"
    return None


def _is_run(text: str) -> bool:
    """A plain ascending or descending run of characters (abcdef..., 98765...)."""
    steps = {ord(b) - ord(a) for a, b in itertools.pairwise(text)}
    return steps in ({1}, {-1})
