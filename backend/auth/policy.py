"""One policy for usernames and passwords, applied wherever a user is made (API, CLI, bootstrap).

Usernames: 2-64 characters of lowercase letters, digits, ``.``, ``_`` and ``-``, starting with a letter or
digit: no blanks, no look-alike capitals (``Admin`` beside ``admin``), nothing a page could render as
markup. Passwords: at least 10 characters (NIST SP 800-63B asks at least 8 and a check against known
passwords), not a well-known password, not containing the username, and not one character repeated or a
plain run (``aaaaaaaaaa``, ``1234567890``).

Well-known passwords are mostly a common word or a keyboard walk with digits or punctuation put around
it (``qwertyuiop0`` passed a check against exact list entries). So the check also takes the
password's *stem* (what is left once the leading and trailing runs of digits, symbols and ``_`` are
stripped: ``P@ssw0rd2024!`` -> ``p@ssw0rd``) and refuses a stem that is a common base word (``BASE_WORDS``
and the list above), once more with look-alike digits and symbols read as letters (``p@ssw0rd`` ->
``password``), or a base word repeated; and it refuses a password, or a stem of 4 or more characters,
that is a keyboard pattern: pieces of at least 3 keys, each key next to the one before on a US keyboard
(shifted symbols read as their keys): ``qwertyuiop``, ``1qaz2wsx``, ``zaq12wsx``, ``1q2w3e4r5t``,
``asdfjkl;``.
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


# Words people build passwords on: a stem equal to one of these (or to an entry above) is refused.
BASE_WORDS = frozenset(
    {
        "password",
        "pass",
        "passwd",
        "passcode",
        "qwerty",
        "qwertz",
        "azerty",
        "iloveyou",
        "letmein",
        "welcome",
        "admin",
        "administrator",
        "root",
        "user",
        "guest",
        "test",
        "testing",
        "temp",
        "default",
        "changeme",
        "login",
        "secret",
        "access",
        "master",
        "abc",
        "abcd",
        "abcde",
        "abcdef",
        "abcdefg",
        "football",
        "baseball",
        "soccer",
        "hockey",
        "superman",
        "batman",
        "princess",
        "sunshine",
        "trustno",
        "starwars",
        "dragon",
        "monkey",
        "shadow",
        "whatever",
        "freedom",
        "hello",
        "love",
        "lovely",
        "flower",
        "computer",
        "internet",
        "pokemon",
        "ninja",
        "michael",
        "jordan",
        "charlie",
        "mustang",
        "summer",
        "winter",
        "spring",
        "autumn",
        "reasonlab",
    }
)

# Look-alikes read as letters; "1" is tried both as "i" and as "l"
_LEET = str.maketrans(
    {"0": "o", "1": "i", "3": "e", "4": "a", "@": "a", "$": "s", "5": "s", "7": "t", "!": "i"}
)
_LEET_L = str.maketrans({"1": "l", "!": "l"})
_AFFIXES = re.compile(r"^[\W\d_]+|[\W\d_]+$")


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
    stem = _AFFIXES.sub("", lowered)
    if stem and _is_common_stem(stem):
        return "a well-known password with digits or symbols added"
    if is_keyboard_walk(lowered) or (len(stem) >= 4 and is_keyboard_walk(stem)):
        return "a keyboard pattern (keys next to each other, such as qwertyuiop or 1qaz2wsx)"
    return None


def _is_run(text: str) -> bool:
    """A plain ascending or descending run of characters (abcdef..., 98765...)."""
    steps = {ord(b) - ord(a) for a, b in itertools.pairwise(text)}
    return steps in ({1}, {-1})


def _is_common_stem(stem: str) -> bool:
    for candidate in {stem, stem.translate(_LEET), stem.translate(_LEET_L).translate(_LEET)}:
        if candidate in BASE_WORDS or candidate in COMMON_PASSWORDS:
            return True
        for word in BASE_WORDS:  # a base word repeated: passwordpassword, abcabcabc
            if len(candidate) % len(word) == 0 and candidate == word * (len(candidate) // len(word)):
                return True
    return False


# A US keyboard: each row's keys with the x position of the first (rows are staggered), shifted symbols
# read as their keys. Two keys are next to each other if they are neighbours in a row, or in adjacent
# rows less than a key's width apart (1 and q, q and 2, q and a, a and z).
_ROWS = (("`1234567890-=", 0.0), ("qwertyuiop[]\\", 1.5), ("asdfghjkl;'", 1.75), ("zxcvbnm,./", 2.25))
_SHIFTED = str.maketrans('~!@#$%^&*()_+{}|:"<>?', "`1234567890-=[]\\;',./")
_KEYS = {key: (row, start + i) for row, (keys, start) in enumerate(_ROWS) for i, key in enumerate(keys)}
MAX_WALK_CHECK = 64  # longer passwords are not checked for walks (and are not guessed as walks)


def _next_to(a: str, b: str) -> bool:
    if a == b:
        return True
    if a not in _KEYS or b not in _KEYS:
        return False
    (ra, xa), (rb, xb) = _KEYS[a], _KEYS[b]
    return (ra == rb and abs(xa - xb) == 1) or (abs(ra - rb) == 1 and abs(xa - xb) < 1)


def is_keyboard_walk(text: str, piece: int = 3) -> bool:
    """``text`` (lowercase) is made of pieces of at least ``piece`` keys, each key next to the one before
    it on the keyboard: ``qwertyuiop``, ``poiuy``, ``1qaz2wsx``, ``1q2w3e4r``, ``!QAZ@WSX`` lowered."""
    keys = text.translate(_SHIFTED)
    n = len(keys)
    if n < piece or n > MAX_WALK_CHECK:
        return False
    # walk_end[i]: the end of the longest walk starting at i
    walk_end = [0] * n
    for i in range(n - 1, -1, -1):
        walk_end[i] = walk_end[i + 1] if i + 1 < n and _next_to(keys[i], keys[i + 1]) else i + 1
    # split[i]: keys[i:] splits into walks of at least `piece` keys (a walk's part is a walk)
    split = [False] * (n + 1)
    split[n] = True
    for i in range(n - 1, -1, -1):
        split[i] = any(split[j] for j in range(i + piece, walk_end[i] + 1))
    return split[0]
