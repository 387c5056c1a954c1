"""What the data blocks' exports share: the caption saying what a block shows and as of when (and, for
a frozen block read again up to its cut-off instead of its kept data, that it is not exact and why)."""

from __future__ import annotations

from backend.reports.data import BlockData
from backend.reports.render.text import esc, latex_escape

NOT_VISIBLE = "not visible to you: the runs of this block belong to another project"


def caption(data: BlockData | None) -> str:
    if data is None:
        return "no data"
    when = data.as_of.strftime("%Y-%m-%d %H:%M UTC")
    state = f"live, as of {when}" if data.live else f"frozen at {when}"
    runs = ", ".join(f"run {r.run_id}" + (f" ({r.name})" if r.name else "") for r in data.runs) or "no runs"
    hidden = f"; {data.hidden_runs} run(s) not visible to you" if data.hidden_runs else ""
    inexact = "" if data.exact else f"; not exact: {data.exact_note or 'read again up to its cut-off'}"
    return f"{state}; {runs}{hidden}{inexact}"


def html_caption(data: BlockData | None) -> str:
    return f'<p class="caption">{esc(caption(data))}</p>'


def latex_caption(data: BlockData | None) -> str:
    return f"\\par\\small\\emph{{{latex_escape(caption(data))}}}\\normalsize"


def shown(data: BlockData | None) -> bool:
    return data is not None and data.visible
