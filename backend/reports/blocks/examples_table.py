"""A per-example table: rows of a run's example table (a Skill-Mix grading, a CARMA synonym flip), a
column per ``data.<path>`` field, for each run the block selects. Frozen: the rows the table held at the
cut-off (its row count then, kept in the cut-off's ``steps`` under ``rows:<table>``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from backend.examples import repository as examples
from backend.models import RunExample
from backend.reports import resolve
from backend.reports.blocks import BlockType
from backend.reports.blocks._common import NOT_VISIBLE, caption, html_caption, latex_caption, shown
from backend.reports.blocks.base import Cutoff, DataBlock, RunCutoff
from backend.reports.data import BlockData
from backend.reports.render.context import ExportContext, ResolveContext
from backend.reports.render.tables import html_table, latex_table, md_table
from backend.reports.render.text import esc, latex_escape, markdown_label

TableName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]
DataPath = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$", max_length=200)]


class ExamplesTableBlock(DataBlock):
    type: Literal["examples_table"] = "examples_table"
    table: TableName
    columns: list[DataPath] = Field(
        default_factory=list, max_length=20, description="paths in each row's data; none: all"
    )
    limit: int = Field(default=50, ge=1, le=200, description="rows per run")


def _rows_key(block: ExamplesTableBlock) -> str:
    return f"rows:{block.table}"


def freeze(ctx: ResolveContext, block: ExamplesTableBlock) -> Cutoff:
    cut = resolve.take_cutoff(ctx, block, [])
    for run in cut.runs:
        run.steps[_rows_key(block)] = examples.count(ctx.session, run.run_id, block.table) or 0
    return cut


def _value(data: dict[str, Any], path: str) -> Any:
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _rows(
    ctx: ResolveContext, block: ExamplesTableBlock, run_id: int, cut: RunCutoff | None
) -> list[tuple[int, str, dict[str, Any]]]:
    conditions = []
    if cut is not None:
        conditions.append(RunExample.idx < cut.steps.get(_rows_key(block), 0))
    return examples.page(ctx.session, run_id, block.table, None, block.limit, conditions)


def _resolve(ctx: ResolveContext, block: ExamplesTableBlock) -> BlockData:
    data = resolve.empty(ctx, block)
    runs, data.hidden_runs = resolve.runs_of(ctx, block)
    data.visible = bool(runs) or not data.hidden_runs
    found: list[tuple[int, list[tuple[int, str, dict[str, Any]]]]] = []
    for run in runs:
        cut = resolve.cutoff_of(block, run.id)
        data.runs.append(resolve.run_info(run, cut))
        found.append((run.id, _rows(ctx, block, run.id, cut)))
    columns = list(block.columns)
    if not columns:  # every top-level field of the rows, in their first appearance's order
        columns = list(dict.fromkeys(k for _, rows in found for _, _, d in rows for k in d))[:20]
    data.columns = ["run", "key", *columns]
    for run_id, rows in found:
        for _, key, row in rows:
            data.rows.append([run_id, key, *(_value(row, c) for c in columns)])
    return data


def _title(block: ExamplesTableBlock) -> str:
    return block.title or block.table


def _md(block: ExamplesTableBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    if not shown(data) or data is None:
        return f"**{markdown_label(_title(block))}**\n\n*{NOT_VISIBLE}*"
    return f"**{markdown_label(_title(block))}**\n\n{md_table(data.columns, data.rows)}\n\n*{markdown_label(caption(data))}*"


def _html(block: ExamplesTableBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    if not shown(data) or data is None:
        return f'<div class="not-visible"><h4>{esc(_title(block))}</h4><p>{esc(NOT_VISIBLE)}</p></div>'
    return f'<div class="table"><h4>{esc(_title(block))}</h4>{html_table(data.columns, data.rows)}{html_caption(data)}</div>'


def _latex(block: ExamplesTableBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    title = f"\\paragraph{{{latex_escape(_title(block))}}}\n"
    if not shown(data) or data is None:
        return f"{title}\\emph{{{latex_escape(NOT_VISIBLE)}}}"
    return f"{title}{latex_table(data.columns, data.rows)}\n{latex_caption(data)}"


BLOCK = BlockType(
    name="examples_table",
    model=ExamplesTableBlock,
    order=4,
    markdown=_md,
    html=_html,
    latex=_latex,
    resolve=_resolve,
    freeze=freeze,
)
