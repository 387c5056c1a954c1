"""The kind registry: built from manifests by convention, plugins included, malformed ones refused."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from tests.kind_plugin import write_plugin
from worker.kinds import get_kind
from worker.specs import KindManifest, SpecBase, StrictModel, UnknownKind, manifests, result_class, spec_class
from worker.specs import registry as registry_module
from worker.specs.registry import PLUGINS_ENV


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    module = write_plugin(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(PLUGINS_ENV, module)
    registry_module.reload()
    yield module
    monkeypatch.delenv(PLUGINS_ENV)
    for name in [m for m in sys.modules if m.startswith("throwaway_kind")]:
        del sys.modules[name]
    registry_module.reload()


def test_every_kind_in_the_repository_is_found_by_convention(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REASONLAB_OUTBOUND_ALLOW", "api.openai.com")  # the paper examples' grader (GPT-4)
    assert {"diagnostic", "smoe_sraven"} <= set(manifests())
    for name, manifest in manifests().items():
        assert manifest.spec.model_fields["kind"].default == name
        assert get_kind(name).spec is manifest.spec
        for example in manifest.examples:  # every shipped example is a valid spec of its kind
            manifest.spec.model_validate(dict(example.spec))


def test_unknown_kind_names_the_known_ones() -> None:
    with pytest.raises(
        UnknownKind, match=r"unknown kind 'nope'; known: (\w+, )*diagnostic, (\w+, )*smoe_sraven"
    ):
        spec_class("nope")
    with pytest.raises(UnknownKind, match="unknown result kind 'nope'"):
        result_class("nope")
    with pytest.raises(UnknownKind):
        get_kind("nope")


def test_a_plugin_kind_is_registered_from_its_own_package(plugin: str) -> None:
    assert "throwaway" in manifests()
    assert result_class("square_sum").__name__ == "SquareSum"
    kind = get_kind("throwaway")
    spec = kind.spec.model_validate({"sizes": {"n": 3}})

    logged: list[object] = []

    class Ctx:
        def log_metrics(self, metrics: dict[str, float], step: int) -> None:
            pass

        def progress(self, done: int, total: int, message: str = "") -> None:
            pass

        def log_result(self, record: object) -> None:
            logged.append(record)

    kind.run(spec, Ctx())  # type: ignore[arg-type]
    assert [r.model_dump() for r in logged] == [{"kind": "square_sum", "n": 3, "total": 14}]  # type: ignore[attr-defined]


def test_a_plugin_module_without_manifest_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "not_a_kind.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(PLUGINS_ENV, "not_a_kind")
    try:
        with pytest.raises(ValueError, match="defines no MANIFEST"):
            registry_module.reload()
    finally:
        monkeypatch.delenv(PLUGINS_ENV)
        registry_module.reload()


FAMILIES = {
    "carma": {"carma"},
    "diagnostic": {"diagnostic"},
    "reasonformer": {"reasonformer_pretrain", "reasonformer_finetune"},
    "skillmix": {"skillmix"},
    "smoe": {"smoe_sraven", "topk_eval"},
}


def test_the_kinds_are_found_in_their_family_packages_and_run_from_the_mirror_module() -> None:
    found: dict[str, set[str]] = {}
    for name, manifest in manifests().items():
        package, family, module = manifest.spec.__module__.rsplit(".", 2)
        assert (package, module) == ("worker.specs", name)
        found.setdefault(family, set()).add(name)
        assert manifest.runner_path == (f"worker.kinds.{family}.{name}", "run")
    assert found == FAMILIES


def test_a_public_module_of_a_family_without_manifest_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import worker.specs.diagnostic as family

    (tmp_path / "stray.py").write_text("X = 1\n")
    (tmp_path / "_shared.py").write_text("Y = 2\n")  # a family's shared part: not read as a kind
    monkeypatch.setattr(family, "__path__", [*family.__path__, str(tmp_path)])
    try:
        with pytest.raises(
            registry_module.MissingManifest, match=r"'worker\.specs\.diagnostic\.stray'"
        ) as caught:
            registry_module.reload()
        assert caught.value.module_name == "worker.specs.diagnostic.stray"
        assert "_shared" not in str(caught.value)
        (tmp_path / "stray.py").unlink()
        sys.modules.pop("worker.specs.diagnostic.stray", None)
        assert "diagnostic" in registry_module.reload().kinds
        assert "worker.specs.diagnostic._shared" not in sys.modules
    finally:
        monkeypatch.undo()
        for name in ("worker.specs.diagnostic.stray", "worker.specs.diagnostic._shared"):
            sys.modules.pop(name, None)
        registry_module.reload()


def test_a_subpackage_of_a_family_holds_shared_code_and_is_not_read_as_a_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import worker.specs.diagnostic as family

    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "__init__.py").write_text('"""Shared."""\n')
    (tmp_path / "common" / "blocks.py").write_text("Y = 2\n")  # no MANIFEST: a family's shared module
    monkeypatch.setattr(family, "__path__", [*family.__path__, str(tmp_path)])
    try:
        assert "diagnostic" in registry_module.reload().kinds
        assert "worker.specs.diagnostic.common" not in sys.modules
        assert "worker.specs.diagnostic.common.blocks" not in sys.modules
    finally:
        monkeypatch.undo()
        for name in ("worker.specs.diagnostic.common", "worker.specs.diagnostic.common.blocks"):
            sys.modules.pop(name, None)
        registry_module.reload()
    # the repository's own: ReasonFormer's shared spec blocks, imported by its kinds, never a kind
    assert "worker.specs.reasonformer.common" in sys.modules
    assert not any(
        m.spec.__module__.startswith("worker.specs.reasonformer.common") for m in manifests().values()
    )


class _Spec(SpecBase):
    kind: Literal["mine"] = "mine"


class _NoKind(StrictModel):
    x: int = 1


def test_a_manifest_checks_its_discriminators() -> None:
    with pytest.raises(ValueError, match="not 'other'"):
        KindManifest(name="other", description="", spec=_Spec)
    with pytest.raises(TypeError, match="kind: Literal"):
        KindManifest(name="mine", description="", spec=_Spec, results=(_NoKind,))
    with pytest.raises(ValueError, match="module:function"):
        KindManifest(name="mine", description="", spec=_Spec, runner="no_colon")
    assert KindManifest(name="mine", description="", spec=_Spec).runner_path == ("worker.kinds.mine", "run")


def test_the_example_files_are_the_manifests_examples() -> None:
    """examples/*.yaml (for `reasonlab submit`) and the examples GET /kinds offers cannot drift apart."""
    import yaml

    files = sorted((Path(__file__).parents[3] / "examples").glob("*.yaml"))
    assert files
    for path in files:
        doc = yaml.safe_load(path.read_text())
        declared = [(dict(e.spec), e.sweep and dict(e.sweep)) for e in manifests()[doc["kind"]].examples]
        assert (doc.get("spec") or {}, doc.get("sweep")) in declared, f"{path.name} is no example of its kind"
