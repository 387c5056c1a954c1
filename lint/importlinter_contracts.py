"""Two contract types import-linter lacks: a whitelist (``allowed``) and no cycle among a package's parts
(``acyclic``); import-linter ships black-list style contracts, and its layers need an order written down.

``pyproject.toml`` registers both (``contract_types`` in ``[tool.importlinter]``; ``lint-imports`` puts its
working directory on ``sys.path``, so run it from the repository root). The whitelist::

    [[tool.importlinter.contracts]]
    name = "worker.specs imports pydantic only"
    type = "allowed"
    source_modules = ["worker.specs"]
    allowed_modules = ["pydantic", "pydantic_core", "typing_extensions"]
    allow_stdlib = true

Every direct import of every module in the source packages must be of the source packages themselves,
of an allowed module (as a package: the module and its descendants; an external package by its
top-level name), or, with ``allow_stdlib``, of the standard library. With ``scope`` (a list of packages)
only imports of modules inside those packages are checked: ``source_modules = ["backend"]``,
``scope = ["worker"]``, ``allowed_modules = ["worker.specs"]`` lets the backend import nothing of the
worker but its specs, without listing (and keeping up to date) every other worker module. With ``exempt``
(modules inside the source packages) those modules' own imports are not checked here: each one is then the
source of a contract of its own (``common.transport`` may import kombu; the rest of ``common`` may not).

Direct imports are enough for a whitelist: an indirect import goes through a direct one, which is
itself either refused here or allowed (and then under its own contract).

``acyclic`` (``containers = ["backend"]``) takes each container's children (its sub-packages and modules,
each with all its descendants) as the nodes of a graph, an edge wherever a module of one imports a module
of another, and is broken by every cycle in it (a strongly connected component of two nodes or more): no two
of backend's domains import each other, not even through a third. It needs no order of the layers written
down; lint/backend_layers.py draws the one the imports give.
"""

from __future__ import annotations

import sys
from typing import Any, cast

from grimp import ImportGraph
from importlinter import Contract, ContractCheck, fields, output
from importlinter.domain.helpers import module_expressions_to_modules
from importlinter.domain.imports import ModuleExpression

from lint.backend_layers import components


def _inside(module: str, packages: set[str]) -> bool:
    """Whether ``module`` is one of ``packages`` or a descendant of one."""
    return any(module == p or module.startswith(p + ".") for p in packages)


class AllowedImportsContract(Contract):
    type_name = "allowed"

    source_modules = fields.SetField(subfield=fields.ModuleExpressionField())
    allowed_modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)
    scope = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)
    allow_stdlib = fields.BooleanField(required=False, default=False)
    exempt = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)

    def _names(self, graph: ImportGraph, option: Any, *, must_exist: bool) -> set[str]:
        expressions = cast("set[ModuleExpression]", option or set())
        modules = module_expressions_to_modules(graph, expressions, raise_if_unmatched=must_exist)
        return {m.name for m in modules}

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        sources = self._names(graph, self.source_modules, must_exist=True)
        allowed = self._names(graph, self.allowed_modules, must_exist=False)
        scope = self._names(graph, self.scope, must_exist=False)
        exempt = self._names(graph, self.exempt, must_exist=True)
        allow_stdlib = str(self.allow_stdlib).lower() == "true"

        importers = set(sources)
        for source in sources:
            importers |= graph.find_descendants(source)

        violations: list[dict[str, Any]] = []
        for importer in sorted(importers):
            if _inside(importer, exempt):
                continue
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                if _inside(imported, sources) or _inside(imported, allowed):
                    continue
                if scope and not _inside(imported, scope):
                    continue
                if allow_stdlib and imported.split(".")[0] in sys.stdlib_module_names:
                    continue
                details = graph.get_import_details(importer=importer, imported=imported)
                violations.append(
                    {
                        "importer": importer,
                        "imported": imported,
                        "line_numbers": tuple(d["line_number"] for d in details),
                    }
                )
            output.verbose_print(verbose, f"Checked the imports of {importer}.")
        return ContractCheck(kept=not violations, metadata={"violations": violations})

    def render_broken_contract(self, check: ContractCheck) -> None:
        allowed = sorted(str(m) for m in cast("set[ModuleExpression]", self.allowed_modules or set()))
        if str(self.allow_stdlib).lower() == "true":
            allowed.append("the standard library")
        output.print_error(f"Only these may be imported: {', '.join(allowed) or 'nothing'}.")
        output.new_line()
        for v in check.metadata["violations"]:
            lines = ", ".join(f"l.{n}" for n in v["line_numbers"])
            output.print_error(f"-   {v['importer']} -> {v['imported']} ({lines})", bold=False)
        output.new_line()
        output.new_line()


class AcyclicContract(Contract):
    type_name = "acyclic"

    containers = fields.ListField(subfield=fields.ModuleField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        cycles: list[dict[str, Any]] = []
        for container in sorted(m.name for m in cast("list[Any]", self.containers)):
            children = sorted(graph.find_children(container))
            depth = container.count(".") + 2  # the parts of a child's name

            def child_of(module: str, container: str = container, depth: int = depth) -> str | None:
                inside = module.startswith(container + ".")
                return ".".join(module.split(".")[:depth]) if inside else None

            # (importer's child, imported's child) -> the imports behind it
            edges: dict[tuple[str, str], list[tuple[str, str, tuple[int, ...]]]] = {}
            for child in children:
                for importer in sorted({child} | graph.find_descendants(child)):
                    for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                        target = child_of(imported)
                        if target is None or target == child:
                            continue
                        details = graph.get_import_details(importer=importer, imported=imported)
                        lines = tuple(d["line_number"] for d in details)
                        edges.setdefault((child, target), []).append((importer, imported, lines))
            for component in components(children, edges):
                if len(component) < 2:
                    continue
                inside = set(component)
                imports = [
                    i for (a, b), found in sorted(edges.items()) if a in inside and b in inside for i in found
                ]
                cycles.append({"nodes": component, "imports": imports})
            output.verbose_print(verbose, f"Checked the {len(children)} parts of {container} for cycles.")
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for cycle in check.metadata["cycles"]:
            output.print_error(f"These import each other: {' <-> '.join(cycle['nodes'])}")
            output.new_line()
            for importer, imported, lines in cycle["imports"]:
                where = ", ".join(f"l.{n}" for n in lines)
                output.print_error(f"-   {importer} -> {imported} ({where})", bold=False)
            output.new_line()
        output.new_line()
