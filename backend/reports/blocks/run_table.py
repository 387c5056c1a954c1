"""A table of runs: a row per run, a column per field (``name``, ``status``, ``params.<path>``,
``metrics.<key>``: the latest value, or a frozen block's value at its cut-off)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from backend.reports import resolve
from backend.reports.blocks import BlockType
from backend.reports.blocks._common import NOT_VISIBLE, caption, html_caption, latex_caption, shown
from backend.reports.blocks.base import Cutoff, DataBlock
from backend.reports.data import BlockData
from backend.reports.render.context import ExportContext, ResolveContext
from backend.reports.render.tables import html_table, latex_table, md_table
from backend.reports.render.text import esc, latex_escape, markdown_label
from backend.views.schemas import FieldName


class RunTableBlock(DataBlock):
    type: Literal["run_table"] = "run_table"
    columns: list[FieldName] = Field(min_length=1, max_length=30)

    @field_validator("columns")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("a column is named twice")
        return value


def _metric_keys(block: RunTableBlock) -> list[str]:
    return [c.split(".", 1)[1] for c in block.columns if c.startswith("metrics.") and "." in c]


def freeze(ctx: ResolveContext, block: RunTableBlock) -> Cutoff:
    return resolve.take_cutoff(ctx, block, _metric_keys(block))


def _resolve(ctx: ResolveContext, block: RunTableBlock) -> BlockData:
    data = resolve.empty(ctx, block)
    runs, data.hidden_runs = resolve.runs_of(ctx, block)
    data.visible = bool(runs) or not data.hidden_runs
    data.columns = ["run", *block.columns]
    for run in runs:
        cut = resolve.cutoff_of(block, run.id)
        data.runs.append(resolve.run_info(run, cut))
        data.rows.append([run.id, *(resolve.field_value(ctx, run, c, cut) for c in block.columns)])
    return data


def _md(block: RunTableBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    title = f"**{markdown_label(block.title)}**\n\n" if block.title else ""
    if not shown(data) or data is None:
        return f"{title}*{NOT_VISIBLE}*"
    return f"{title}{md_table(data.columns, data.rows)}\n\n*{markdown_label(caption(data))}*"


def _html(block: RunTableBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    title = f"<h4>{esc(block.title)}</h4>" if block.title else ""
    if not shown(data) or data is None:
        return f'<div class="not-visible">{title}<p>{esc(NOT_VISIBLE)}</p></div>'
    return f'<div class="table">{title}{html_table(data.columns, data.rows)}{html_caption(data)}</div>'


def _latex(block: RunTableBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    title = f"\\paragraph{{{latex_escape(block.title)}}}\n" if block.title else ""
    if not shown(data) or data is None:
        return f"{title}\\emph{{{latex_escape(NOT_VISIBLE)}}}"
    return f"{title}{latex_table(data.columns, data.rows)}\n{latex_caption(data)}"


BLOCK = BlockType(
    name="run_table",
    model=RunTableBlock,
    order=3,
    markdown=_md,
    html=_html,
    latex=_latex,
    resolve=_resolve,
    freeze=freeze,
)
