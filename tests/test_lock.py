"""requirements.lock pins every dependency of pyproject.toml within its range, so `make up` and `make test`
(which install the lock with --no-deps) install exactly what the project declares, on every machine."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"requirements.lock: {line!r} is not an exact pin (name==version)"
        pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_declared_dependency_is_pinned_within_its_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project["dependencies"]) + [
        d for ds in project["optional-dependencies"].values() for d in ds
    ]
    pins = _pins()
    problems = []
    for text in declared:
        req = Requirement(text)
        pinned = pins.get(canonicalize_name(req.name))
        if pinned is None:
            problems.append(f"{req.name} is not in requirements.lock (run make lock)")
        elif not req.specifier.contains(pinned, prereleases=True):
            problems.append(f"{req.name}=={pinned} in the lock is outside {req.specifier}")
    assert not problems, "\n".join(problems)


def test_the_installed_versions_are_the_locked_ones() -> None:
    """The venv the tests run in was installed from the lock (a stale venv would hide a bad lock)."""
    from importlib.metadata import PackageNotFoundError, version

    drift = []
    for name, pinned in _pins().items():
        try:
            installed = Version(version(name))
        except PackageNotFoundError:
            drift.append(f"{name} is locked but not installed")
            continue
        if Version(installed.public) != pinned:
            drift.append(f"{name}: installed {installed}, locked {pinned}")
    assert not drift, "\n".join(drift)
