"""The report block types, found by convention: every module of this package but ``base`` defines
``BLOCK = BlockType(...)``, and the registry collects them at import. A new block type (a claim, a sweep)
is a new module here; nothing shared is edited: the API's union of blocks (``backend.reports.schemas``),
the data a block resolves to and its exports all come from its ``BlockType``."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from backend.reports.blocks.base import BlockBase

if TYPE_CHECKING:
    from backend.reports.render.context import ExportContext, ResolveContext
    from backend.reports.schemas import BlockData


@dataclass(frozen=True)
class BlockType:
    """One block type. ``resolve``: the data a block shows (None: a block of text alone); ``freeze``:
    the cut-off of a frozen block, taken when it is saved frozen without one. The exporters draw the
    block with the data its revision kept: ``markdown`` (SVG figures written through the context),
    ``html`` (inline SVG) and ``latex`` (TikZ figures). ``presentation``: the fields that change how the
    block draws its data and not the data (a frozen block edited in them keeps the data kept when it was
    frozen; an edit of any other field does not, backend/reports/kept.py)."""

    name: str
    model: type[BlockBase]
    order: int
    markdown: Callable[[Any, BlockData | None, ExportContext], str]
    html: Callable[[Any, BlockData | None, ExportContext], str]
    latex: Callable[[Any, BlockData | None, ExportContext], str]
    resolve: Callable[[ResolveContext, Any], BlockData] | None = None
    freeze: Callable[[ResolveContext, Any], Any] | None = None
    presentation: frozenset[str] = frozenset({"title"})
    extra: dict[str, Any] = field(default_factory=dict)


def _discover() -> dict[str, BlockType]:
    found: dict[str, BlockType] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base" or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        block: BlockType | None = getattr(module, "BLOCK", None)
        if block is None:
            raise RuntimeError(f"backend/reports/blocks/{info.name}.py defines no BLOCK")
        if block.name in found:
            raise RuntimeError(f"block type {block.name!r} is defined twice")
        found[block.name] = block
    return dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))


TYPES: dict[str, BlockType] = _discover()


def block_type(name: str) -> BlockType:
    return TYPES[name]
