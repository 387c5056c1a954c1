"""The layer rules (import-linter contracts in pyproject.toml) hold, and each one fails when broken.

lint-imports runs on a copy of the Python packages: once as they are (every contract kept), once with
one violating import appended per contract (each contract reported broken, naming that import).
lint/backend_layers.py draws backend/ as layers on both copies: no cycle and at most one upward import in
the first, the cycle an appended import closes in the second.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
PACKAGES = ("backend", "worker", "common", "cli", "lint")

# contract name -> (file to append to, the import appended, what the report must name)
VIOLATIONS = {
    "backend never imports torch, transformers or cli": (
        "backend/health/routes.py",
        "import torch",
        "backend.health.routes -> torch",
    ),
    "backend imports of the worker: worker.specs only": (
        "backend/openapi.py",
        "import worker.jobs.pool",
        "backend.openapi -> worker.jobs.pool",
    ),
    "worker never imports backend or cli": ("worker/tasks.py", "import backend", "worker.tasks -> backend"),
    # kombu is allowed in common.transport only (its own contract): anywhere else in common it breaks this one
    "common imports the stdlib and pydantic only (no backend, worker, cli)": (
        "common/broker.py",
        "import kombu",
        "common.broker -> kombu",
    ),
    "common.transport imports kombu, the stdlib and common only": (
        "common/transport.py",
        "import httpx",
        "common.transport -> httpx",
    ),
    "worker.core is pure PyTorch: no service libraries": (
        "worker/core/train.py",
        "import celery",
        "worker.core.train -> celery",
    ),
    "worker.kinds never imports the client, executor, httpx or mlflow": (
        "worker/kinds/diagnostic/diagnostic.py",
        "import httpx",
        "worker.kinds.diagnostic.diagnostic -> httpx",
    ),
    "worker.tracking.context is light: no torch, httpx or mlflow": (
        "worker/tracking/context.py",
        "import torch",
        "worker.tracking.context -> torch",
    ),
    "worker.runtime never imports the worker's root modules (what an operator or Celery names)": (
        "worker/runtime/heartbeat.py",
        "import worker.executor",
        "worker.runtime.heartbeat -> worker.executor",
    ),
    "the confinement's path rules and its outbound policy are independent": (
        "worker/specs/confine/_paths.py",
        "import worker.specs.confine._network",
        "worker.specs.confine._paths -> worker.specs.confine._network",
    ),
    "worker.specs imports pydantic only (a whitelist)": (
        "worker/specs/base.py",
        "import yaml",
        "worker.specs.base -> yaml",
    ),
    "no route module imports another (routes import services, auth and http)": (
        "backend/reviews/routes.py",
        "import backend.experiments.routes",
        "backend.reviews.routes -> backend.experiments.routes",
    ),
    "no kind family imports another (worker.kinds.<a> and worker.specs.<a> never import <b>)": (
        "worker/kinds/carma/carma.py",
        "import worker.kinds.diagnostic.diagnostic",
        "worker.kinds.carma.carma -> worker.kinds.diagnostic.diagnostic",
    ),
    "the SDK (reasonlab_sdk) imports httpx and the stdlib only: pip install ./sdk suffices": (
        "reasonlab_sdk/client.py",
        "import mlflow",
        "reasonlab_sdk.client -> mlflow",
    ),
    "the SDK's integrations import their training library, the SDK and the stdlib only": (
        "reasonlab_sdk/integrations/torch.py",
        "import mlflow",
        "reasonlab_sdk.integrations.torch -> mlflow",
    ),
    "the request edge (backend.http) imports no domain: of the first-party code, backend.errors, settings "
    "and db only": (
        "backend/http/cursor.py",
        "import backend.auth.dependencies",
        "backend.http.cursor -> backend.auth.dependencies",
    ),
    "route modules never import a repository (a route parses, authorizes and calls a service)": (
        "backend/results/routes.py",
        "import backend.runs.repository",
        "backend.results.routes -> backend.runs.repository",
    ),
    # groups lies below runs (the runs list groups its runs): an import back up closes a cycle
    "no two parts of backend import each other (its packages and root modules form no cycle)": (
        "backend/groups/stats.py",
        "import backend.runs.service",
        "backend.groups.stats -> backend.runs.service",
    ),
}


def _contract_names() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return [c["name"] for c in config["tool"]["importlinter"]["contracts"]]


def _copy_tree(dest: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "static")
        )
    # the SDK's package lies in sdk/ (its own distribution); on the copy's path it goes at the top
    shutil.copytree(
        REPO / "sdk" / "reasonlab_sdk", dest / "reasonlab_sdk", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(REPO / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _lint_imports(root: Path) -> tuple[int, str]:
    # the copy comes first on the path (lint-imports also adds its working directory), ahead of the
    # editable install's finder for /work/main's packages
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200", "NO_COLOR": "1"}
    proc = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    return proc.returncode, re.sub(r"\s+", " ", proc.stdout + proc.stderr)


def _routers() -> set[str]:
    """Every module of backend/ that builds an APIRouter."""
    routers = {
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for path in (REPO / "backend").rglob("*.py")
        if path.name == "routes.py" or "APIRouter(" in path.read_text(encoding="utf-8")
    }
    routers.discard("backend.main")  # the app mounts every router: it is the one module that imports them
    return routers


def test_every_contract_has_a_violation_below() -> None:
    assert sorted(_contract_names()) == sorted(VIOLATIONS)


def test_every_route_module_is_in_the_routes_contract() -> None:
    """A new module with a router cannot escape "no route module imports another": each one is listed."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (contract,) = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"].startswith("no route module imports")
    ]
    routers = _routers()
    assert "backend.experiments.routes" in routers
    assert sorted(contract["modules"]) == sorted(routers)


def test_every_route_module_is_a_source_of_the_repositories_contract() -> None:
    """A module with a router that is not ``backend.<domain>.routes`` (the runs' event stream) is named in
    "route modules never import a repository"; the others match its ``backend.*.routes``."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    (contract,) = [
        c for c in config["tool"]["importlinter"]["contracts"] if c["name"].startswith("route modules never")
    ]
    patterns = [
        re.compile("^" + re.escape(s).replace(r"\*", r"[^.]+") + "$") for s in contract["source_modules"]
    ]
    routers = _routers()
    assert "backend.runs.events" in routers
    assert [r for r in sorted(routers) if not any(p.match(r) for p in patterns)] == []


def _layers(root: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run(
        [sys.executable, str(REPO / "lint" / "backend_layers.py"), "--root", str(root), "--check"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_backend_is_drawn_as_layers_without_a_cycle(copies: tuple[Path, Path]) -> None:
    """lint/backend_layers.py: backend's packages and root modules in layers, no cycle and at most
    MAX_UPWARD imports back up (none today); with the imports appended above, it fails and names them."""
    code, report = _layers(copies[0])
    assert code == 0, report
    assert "cycles: 0" in report, report
    upward = int(re.search(r"upward imports: (\d+)", report).group(1))  # type: ignore[union-attr]
    assert upward <= 1, report
    code, report = _layers(copies[1])
    assert code == 1, report
    assert re.search(r"cycles: [1-9]", report), report
    assert "groups <-> " in report or " <-> groups" in report, report
    assert "backend.groups.stats:" in report and "imports backend.runs.service" in report, report


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    clean = _copy_tree(tmp_path_factory.mktemp("clean"))
    broken = _copy_tree(tmp_path_factory.mktemp("broken"))
    for path, statement, _ in VIOLATIONS.values():
        with open(broken / path, "a", encoding="utf-8") as fh:
            fh.write(f"\n{statement}  # noqa\n")
    return clean, broken


def test_the_tree_keeps_every_contract(copies: tuple[Path, Path]) -> None:
    code, report = _lint_imports(copies[0])
    assert code == 0, report
    for name in VIOLATIONS:
        assert f"{name} KEPT" in report, report


def test_each_contract_fails_on_its_violation(copies: tuple[Path, Path]) -> None:
    code, report = _lint_imports(copies[1])
    assert code != 0, report
    for name, (_, _, offending) in VIOLATIONS.items():
        assert f"{name} BROKEN" in report, f"{name!r} not reported broken:\n{report}"
        assert offending in report, f"{offending!r} not named:\n{report}"
    assert f"Contracts: 0 kept, {len(VIOLATIONS)} broken" in report, report


def test_a_new_kind_family_is_under_the_families_contract_without_an_edit(tmp_path: Path) -> None:
    """The families are the folders: a sixth one, on a copy of the tree with pyproject.toml as it is, may
    import its own specs and is reported when it imports another family."""
    root = _copy_tree(tmp_path)
    for side in ("kinds", "specs"):
        (root / "worker" / side / "sixth").mkdir()
        (root / "worker" / side / "sixth" / "__init__.py").write_text('"""A sixth family."""\n')
    (root / "worker" / "specs" / "sixth" / "sixth.py").write_text('"""Its spec."""\n')
    (root / "worker" / "kinds" / "sixth" / "sixth.py").write_text(
        '"""Its kind."""\nimport worker.specs.sixth.sixth  # noqa\nimport worker.kinds.carma.carma  # noqa\n'
    )
    assert (root / "pyproject.toml").read_text() == (REPO / "pyproject.toml").read_text()
    name = "no kind family imports another (worker.kinds.<a> and worker.specs.<a> never import <b>)"
    code, report = _lint_imports(root)
    assert code != 0, report
    assert f"{name} BROKEN" in report, report
    assert "worker.kinds.sixth.sixth -> worker.kinds.carma.carma" in report, report
    assert "-> worker.specs.sixth" not in report, report  # its own specs: allowed
    assert f"Contracts: {len(VIOLATIONS) - 1} kept, 1 broken" in report, report


def test_the_run_context_module_stays_light_at_run_time() -> None:
    """Importing the contract kinds use loads neither torch, httpx nor mlflow (the package's
    re-exports are lazy), so a kind's tests and tools can use it cheaply."""
    code = (
        "import sys, worker.tracking.context; "
        "print(sorted(m for m in ('torch', 'httpx', 'mlflow') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_the_families_are_the_kind_folders_and_shared_packages_are_none() -> None:
    """worker/specs/confine/ (its modules all ``_``-prefixed, as the kind registry skips them) is shared by
    every family, not a family of its own; the five paper families are."""
    import grimp

    from lint.importlinter_families import families

    graph = grimp.build_graph("worker", include_external_packages=False)
    found = families(graph, ["worker.kinds", "worker.specs"])
    assert sorted(found) == ["carma", "diagnostic", "reasonformer", "skillmix", "smoe"], sorted(found)
    assert found["carma"] == ["worker.kinds.carma", "worker.specs.carma"]


def test_the_worker_root_holds_at_most_six_modules() -> None:
    """The worker's root holds what an operator or Celery names (its app, tasks, the executor, the local
    run, the deprecated client alias); what a run's processes are made of lives in packages below it
    (``jobs``, ``runtime``, ``tracking``...), so the root does not grow back into a folder of loose modules."""
    root = sorted(p.name for p in (REPO / "worker").glob("*.py") if p.name != "__init__.py")
    assert len(root) <= 6, f"worker/ holds {len(root)} modules at its root: {root}"
