"""The data a draft's frozen data blocks showed when the server took their cut-offs, kept server-side
(``report_frozen_data``), so the draft shows exactly that whatever the runs do later. Reading a block again
up to its cut-off leaves out the steps a run adds after it, but not a retry (a requeued or resumed run),
whose next attempt writes the steps the cut-off covers again. A published revision keeps every block's
data itself; this is the draft's side.

A block's kept data is found by its report, its id and a hash of its cut-off and of the fields that decide
its data (not its title or other ``presentation`` fields), so it is served only while the block is what it
was frozen as. A frozen block without kept data (a draft saved before data was kept, a cut-off the client
supplied, an edit of its data fields since, data over the bound) is read again up to its cut-off and says
so: ``exact`` false and a one-line ``exact_note``, which also names a run that changed since freezing.

Bound: a block's data is what it shows, already bounded by its type (a figure at most 50 runs x 8 keys x
500 points, about 7 MiB as JSON with the longest names; a run table 50 rows of at most 31 cells; an
examples table 50 runs x 200 rows of at most 64 KiB; a kind view 200 result records). On top of that a
block keeps at most ``MAX_BLOCK_BYTES`` and a report at most ``MAX_REPORT_BYTES`` (its blocks in order);
past either the row records only the size, and the block is read again, saying so."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from typing import Any

from backend.models import ReportFrozenData
from backend.reports import repository, resolve
from backend.reports.blocks import TYPES
from backend.reports.blocks.base import BlockBase, DataBlock
from backend.reports.data import BlockData
from backend.reports.render.context import ResolveContext

MAX_BLOCK_BYTES = 8 * 2**20
MAX_REPORT_BYTES = 64 * 2**20

NOT_KEPT = (
    "read again up to its cut-off: no data was kept when it was frozen (a draft saved before drafts kept "
    "it, a cut-off the server did not take, or a block edited since)"
)
LEFT = "read again up to its cut-off: a run it kept is no longer the report's project's"


def _too_large(size: int) -> str:
    return (
        f"read again up to its cut-off: its data when frozen ({size / 2**20:.1f} MiB) was over what a "
        f"draft keeps ({MAX_BLOCK_BYTES // 2**20} MiB a block, {MAX_REPORT_BYTES // 2**20} MiB a report)"
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def key_hash(block: DataBlock) -> str:
    """sha256 of the canonical JSON of the block's cut-off and data fields (all but its id and its
    type's presentation fields)."""
    fields = block.model_dump(mode="json", exclude={"id", *TYPES[block.type].presentation})
    return hashlib.sha256(_canonical(fields).encode()).hexdigest()


def _frozen(block: BlockBase) -> DataBlock | None:
    """The block when it is a frozen block over runs with a cut-off: the blocks whose data is kept."""
    if isinstance(block, DataBlock) and block.mode == "frozen" and block.cutoff is not None:
        return block
    return None


def keep(ctx: ResolveContext, report_id: int, blocks: list[BlockBase], frozen_now: Collection[str]) -> None:
    """After a save of the draft: keep the data of each block whose cut-off the server took in this
    save (``frozen_now``), read in its transaction right after the cut-off, and drop every kept row its
    block no longer matches (a new cut-off, an edit of its data fields, a block now live, or gone)."""
    frozen_blocks = [f for f in (_frozen(b) for b in blocks) if f is not None]
    wanted = {f.id: key_hash(f) for f in frozen_blocks}
    stale: list[int] = []
    total = 0
    for row_id, block_id, digest, size, has_data in repository.frozen_data_keys(ctx.session, report_id):
        if wanted.get(block_id) != digest or block_id in frozen_now:
            stale.append(row_id)
        elif has_data:
            total += size
    repository.delete_frozen_data(ctx.session, stale)
    for block in blocks:
        frozen = _frozen(block)
        resolver = TYPES[block.type].resolve
        if frozen is None or block.id not in frozen_now or resolver is None:
            continue
        data = resolver(ctx, frozen).model_dump(mode="json")
        size = len(_canonical(data).encode())
        fits = size <= MAX_BLOCK_BYTES and total + size <= MAX_REPORT_BYTES
        total += size if fits else 0
        ctx.session.add(
            ReportFrozenData(
                report_id=report_id,
                block_id=block.id,
                key_hash=wanted[block.id],
                data=data if fits else None,
                size=size,
                created_at=ctx.now,
            )
        )
    ctx.session.flush()


def _kept_runs_visible(ctx: ResolveContext, data: BlockData) -> bool:
    """Every run the kept data shows is still the report's project's (runs never move between projects
    today; kept data would otherwise show one its reader may not see)."""
    ids = sorted({r.run_id for r in data.runs})
    found = repository.runs_by_id(ctx.session, ids)
    return all(i in found and found[i].project_id == ctx.project_id for i in ids)


def block_data(
    ctx: ResolveContext, report_id: int, blocks: list[BlockBase], fresh: Collection[str] = ()
) -> dict[str, BlockData]:
    """Every data block's data by block id: a live block's as the runs are now; a frozen block over runs
    as kept when it was frozen, or read again up to its cut-off (``exact`` false) when nothing matching
    was kept; a claim block's from its sealed cut-off. A block in ``fresh`` took its cut-off in this
    transaction: read now, it is exact."""
    frozen_ids = [b.id for b in blocks if _frozen(b) is not None and b.id not in fresh]
    rows = repository.frozen_data(ctx.session, report_id, frozen_ids)
    out: dict[str, BlockData] = {}
    for block in blocks:
        resolver = TYPES[block.type].resolve
        if resolver is None:
            continue
        frozen = _frozen(block)
        if frozen is None or block.id in fresh:
            out[block.id] = resolver(ctx, block)
            continue
        row = rows.get(block.id)
        note = NOT_KEPT
        if row is not None and row.key_hash == key_hash(frozen):
            if row.data is None:
                note = _too_large(row.size)
            else:
                kept = BlockData.model_validate(row.data)
                if _kept_runs_visible(ctx, kept):
                    out[block.id] = kept
                    continue
                note = LEFT
        data = resolver(ctx, frozen)
        changed = resolve.changed_since(ctx, frozen)
        data.exact = False
        data.exact_note = note + (f"; the run changed since freezing ({changed})" if changed else "")
        out[block.id] = data
    return out
