"""A figure: a line chart of metric series over steps, of the runs a query or pinned ids select, lines
grouped (coloured and labelled) by fields; live or frozen at a cut-off."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from backend.reports import resolve
from backend.reports.blocks import BlockType
from backend.reports.blocks._common import NOT_VISIBLE, caption, html_caption, latex_caption, shown
from backend.reports.blocks.base import Cutoff, DataBlock
from backend.reports.data import BlockData, SeriesData
from backend.reports.render import charts
from backend.reports.render.context import ExportContext, ResolveContext
from backend.reports.render.text import esc, latex_escape, markdown_label
from backend.views.schemas import FieldName, MetricName


class FigureBlock(DataBlock):
    type: Literal["figure"] = "figure"
    metrics: list[MetricName] = Field(min_length=1, max_length=8)
    group_by: list[FieldName] = Field(default_factory=list, max_length=10)
    log_scale: bool = False

    @field_validator("metrics", "group_by")
    @classmethod
    def _each_once(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError("a name is given twice")
        return value


def freeze(ctx: ResolveContext, block: FigureBlock) -> Cutoff:
    return resolve.take_cutoff(ctx, block, block.metrics)


def _resolve(ctx: ResolveContext, block: FigureBlock) -> BlockData:
    data = resolve.empty(ctx, block)
    runs, data.hidden_runs = resolve.runs_of(ctx, block)
    data.visible = bool(runs) or not data.hidden_runs
    for run in runs:
        cut = resolve.cutoff_of(block, run.id)
        info = resolve.run_info(run, cut)
        group = ", ".join(f"{f}={resolve.field_value(ctx, run, f, cut)}" for f in block.group_by) or None
        for key in block.metrics:
            if cut is not None and key not in cut.steps:
                continue  # the series did not exist at the cut-off
            pts = resolve.points(ctx, run.id, key, cut.steps[key] if cut is not None else None)
            if not pts:
                continue
            info.steps[key] = [pts[0][0], pts[-1][0]]
            label = (
                (run.name or f"run {run.id}")
                + (f" [{group}]" if group else "")
                + (f" {key}" if len(block.metrics) > 1 else "")
            )
            data.series.append(SeriesData(run_id=run.id, key=key, label=label, group=group, points=pts))
        data.runs.append(info)
    return data


def _title(block: FigureBlock) -> str:
    return block.title or ", ".join(block.metrics)


def _md(block: FigureBlock, data: BlockData | None, ctx: ExportContext) -> str:
    if not shown(data) or data is None:
        return f"*{markdown_label(_title(block))}: {NOT_VISIBLE}*"
    name = ctx.figure_name("svg")
    ctx.files[name] = charts.svg(data.series, _title(block), block.log_scale).encode()
    return f"![{markdown_label(_title(block))}]({name})\n\n*{markdown_label(caption(data))}*"


def _html(block: FigureBlock, data: BlockData | None, _ctx: ExportContext) -> str:
    if not shown(data) or data is None:
        return f'<figure class="not-visible"><figcaption>{esc(_title(block))}: {esc(NOT_VISIBLE)}</figcaption></figure>'
    svg = charts.svg(data.series, _title(block), block.log_scale)
    return f"<figure><figcaption>{esc(_title(block))}</figcaption>{svg}{html_caption(data)}</figure>"


def _latex(block: FigureBlock, data: BlockData | None, ctx: ExportContext) -> str:
    if not shown(data) or data is None:
        return f"\\emph{{{latex_escape(_title(block))}: {latex_escape(NOT_VISIBLE)}}}"
    name = ctx.figure_name("tex")
    ctx.files[name] = charts.tikz(data.series, _title(block), block.log_scale).encode()
    svg_name = name[: -len(".tex")] + ".svg"
    ctx.files[svg_name] = charts.svg(data.series, _title(block), block.log_scale).encode()
    return (
        "\\begin{figure}[h]\\centering\n"
        f"\\input{{{name}}}\n"
        f"\\caption{{{latex_escape(_title(block))}}}\n{latex_caption(data)}\n\\end{{figure}}"
    )


BLOCK = BlockType(
    name="figure",
    model=FigureBlock,
    order=2,
    markdown=_md,
    html=_html,
    latex=_latex,
    resolve=_resolve,
    freeze=freeze,
    presentation=frozenset({"title", "log_scale"}),
)
