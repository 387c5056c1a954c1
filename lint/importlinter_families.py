"""An import-linter contract that finds the kind families in the tree: no family imports another.

``pyproject.toml`` registers it as ``families`` (``contract_types`` in ``[tool.importlinter]``)::

    [[tool.importlinter.contracts]]
    name = "no kind family imports another"
    type = "families"
    containers = ["worker.kinds", "worker.specs"]

A family is a name that is a package in one of the containers (``worker/kinds/carma/``,
``worker/specs/carma/``): the families are read from the folders each time the contract is checked, so a
new family is under the contract without an edit. A container's plain modules (``worker/specs/suite.py``)
are no family: they are what families share; nor is a package whose modules are all ``_``-prefixed
(``worker/specs/confine/``): the kind registry finds kinds in a family's unprefixed modules, so such a
package holds no kind and is shared, like a plain module. The packages of one family, across the containers, may
import each other (a family's kinds import its own specs); no chain of imports, direct or through any
other module, may lead from one family's packages to another's (import-linter's ``independence`` check,
over every family package, with the imports inside each family set aside).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import cast

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields
from importlinter.contracts.independence import IndependenceContract


def package_dir(module: str) -> Path | None:
    """The folder of package ``module``, found on ``sys.path`` as import-linter finds it (nothing is
    imported: only the top-level package's location is looked up)."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)), *rest)


def families(graph: ImportGraph, containers: list[str]) -> dict[str, list[str]]:
    """Family name -> its packages (``{"carma": ["worker.kinds.carma", "worker.specs.carma"]}``), from
    the subpackages of each container."""
    found: dict[str, list[str]] = {}
    for container in containers:
        folder = package_dir(container)
        for child in sorted(graph.find_children(container)):
            name = child.rsplit(".", 1)[1]
            is_package = folder is not None and (folder / name / "__init__.py").is_file()
            if (is_package or graph.find_children(child)) and _holds_public(graph, child):
                found.setdefault(name, []).append(child)
    return found


def _holds_public(graph: ImportGraph, package: str) -> bool:
    """Whether ``package`` has a module or subpackage whose name is not ``_``-prefixed (a kind, or a
    family's ``common/``): the registry's mark of a family."""
    return any(not child.rsplit(".", 1)[1].startswith("_") for child in graph.find_children(package))


def _family_of(module: str, packages: dict[str, str]) -> str | None:
    for package, family in packages.items():
        if module == package or module.startswith(package + "."):
            return family
    return None


class FamiliesContract(Contract):
    type_name = "families"

    containers = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        containers = [str(c) for c in cast("list[object]", self.containers)]
        for container in containers:
            if container not in graph.modules:
                raise ValueError(f"Module '{container}' does not exist.")
        found = families(graph, containers)
        packages = {p: family for family, members in found.items() for p in members}
        # a family's imports of itself (its kinds of its specs) are allowed: set aside, on this contract's
        # copy of the graph
        for importer in sorted(graph.modules):
            mine = _family_of(importer, packages)
            if mine is None:
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if _family_of(imported, packages) == mine:
                    graph.remove_import(importer=importer, imported=imported)
        self._independence = IndependenceContract(
            name=self.name,
            session_options=self.session_options,
            contract_options={"modules": sorted(packages)},
        )
        check = self._independence.check(graph, verbose)
        check.metadata["families"] = sorted(found)
        return check

    def render_broken_contract(self, check: ContractCheck) -> None:
        self._independence.render_broken_contract(check)
