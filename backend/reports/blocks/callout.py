"""A callout: a short markdown note set apart (a finding, a caveat)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from backend.reports.blocks import BlockType
from backend.reports.blocks.base import BlockBase
from backend.reports.render.text import latex_markdown, markdown_html, markdown_safe


class CalloutBlock(BlockBase):
    type: Literal["callout"] = "callout"
    tone: Literal["info", "success", "warning", "danger"] = "info"
    text: str = Field(min_length=1, max_length=10_000, description="markdown")


def _md(block: CalloutBlock, _data: Any, _ctx: Any) -> str:
    lines = markdown_safe(block.text).splitlines() or [""]
    return f"> **{block.tone.upper()}**\n>\n" + "\n".join(f"> {line}" for line in lines)


def _html(block: CalloutBlock, _data: Any, _ctx: Any) -> str:
    return f'<aside class="callout callout-{block.tone}">{markdown_html(block.text)}</aside>'


def _latex(block: CalloutBlock, _data: Any, _ctx: Any) -> str:
    return f"\\begin{{quote}}\\textbf{{{block.tone.upper()}}}: {latex_markdown(block.text)}\\end{{quote}}"


BLOCK = BlockType(name="callout", model=CalloutBlock, order=6, markdown=_md, html=_html, latex=_latex)
