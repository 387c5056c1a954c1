"""A kind's result view (an SRAVEN grid, CAP curves, a routing heatmap, a Skill-Mix table...): the result
records of one result kind posted by the runs the block selects. The dashboard draws them with the view
the kind's folder contributes (frontend/src/kinds); the exports show each record's fields as a table.
Frozen: the records posted up to the cut-off."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from backend.reports import repository, resolve
from backend.reports.blocks import BlockType
from backend.reports.blocks._common import NOT_VISIBLE, caption, html_caption, latex_caption, shown
from backend.reports.blocks.base import Cutoff, DataBlock
from backend.reports.data import BlockData, ResultData
from backend.reports.render.context import ExportContext, ResolveContext
from backend.reports.render.tables import html_table, latex_table, md_table
from backend.reports.render.text import esc, latex_escape, markdown_label
from worker.specs import UnknownKind, result_class

MAX_RESULTS = 200


class KindViewBlock(DataBlock):
    type: Literal["kind_view"] = "kind_view"
    result_kind: str = Field(min_length=1, max_length=100, description="a result kind a kind declares")
    view: str = Field(
        default="", max_length=100, description="which of the kind's views draws it (the dashboard's)"
    )

    @field_validator("result_kind")
    @classmethod
    def _known(cls, value: str) -> str:
        try:
            result_class(value)
        except UnknownKind as exc:
            raise ValueError(exc.message) from None
        return value


def freeze(ctx: ResolveContext, block: KindViewBlock) -> Cutoff:
    return resolve.take_cutoff(ctx, block, [])


def _resolve(ctx: ResolveContext, block: KindViewBlock) -> BlockData:
    data = resolve.empty(ctx, block)
    runs, data.hidden_runs = resolve.runs_of(ctx, block)
    data.visible = bool(runs) or not data.hidden_runs
    data.runs = [resolve.run_info(r, resolve.cutoff_of(block, r.id)) for r in runs]
    records = repository.results(ctx.session, [r.id for r in runs], block.result_kind, MAX_RESULTS)
    until = block.cutoff.at if block.mode == "frozen" and block.cutoff is not None else None
    data.results = [
        ResultData(run_id=r.run_id, kind=r.kind, payload=r.payload)
        for r in records
        if until is None or r.created_at <= until
    ]
    return data


def _table(data: BlockData) -> tuple[list[str], list[list[Any]]]:
    fields = list(dict.fromkeys(k for r in data.results for k in r.payload if k != "kind"))[:12]
    return ["run", *fields], [[r.run_id, *(r.payload.get(f) for f in fields)] for r in data.results]


def _title(block: KindViewBlock) -> str:
    return block.title or block.result_kind


def _md(block: KindViewBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    if not shown(data) or data is None:
        return f"**{markdown_label(_title(block))}**\n\n*{NOT_VISIBLE}*"
    columns, rows = _table(data)
    return f"**{markdown_label(_title(block))}**\n\n{md_table(columns, rows)}\n\n*{markdown_label(caption(data))}*"


def _html(block: KindViewBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    if not shown(data) or data is None:
        return f'<div class="not-visible"><h4>{esc(_title(block))}</h4><p>{esc(NOT_VISIBLE)}</p></div>'
    columns, rows = _table(data)
    return f'<div class="table"><h4>{esc(_title(block))}</h4>{html_table(columns, rows)}{html_caption(data)}</div>'


def _latex(block: KindViewBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    title = f"\\paragraph{{{latex_escape(_title(block))}}}\n"
    if not shown(data) or data is None:
        return f"{title}\\emph{{{latex_escape(NOT_VISIBLE)}}}"
    columns, rows = _table(data)
    return f"{title}{latex_table(columns, rows)}\n{latex_caption(data)}"


BLOCK = BlockType(
    name="kind_view",
    model=KindViewBlock,
    order=5,
    markdown=_md,
    html=_html,
    latex=_latex,
    resolve=_resolve,
    freeze=freeze,
    presentation=frozenset({"title", "view"}),
)
