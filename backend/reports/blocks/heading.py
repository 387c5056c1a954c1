"""A heading (levels 1 to 3)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from backend.reports.blocks import BlockType
from backend.reports.blocks.base import BlockBase
from backend.reports.render.text import esc, latex_escape, markdown_label


class HeadingBlock(BlockBase):
    type: Literal["heading"] = "heading"
    text: str = Field(min_length=1, max_length=200)
    level: int = Field(default=2, ge=1, le=3)


def _md(block: HeadingBlock, _data: Any, _ctx: Any) -> str:
    return "#" * (block.level + 1) + " " + markdown_label(block.text)


def _html(block: HeadingBlock, _data: Any, _ctx: Any) -> str:
    return f"<h{block.level + 1}>{esc(block.text)}</h{block.level + 1}>"


def _latex(block: HeadingBlock, _data: Any, _ctx: Any) -> str:
    command = ("section", "subsection", "subsubsection")[block.level - 1]
    return f"\\{command}*{{{latex_escape(block.text)}}}"


BLOCK = BlockType(name="heading", model=HeadingBlock, order=0, markdown=_md, html=_html, latex=_latex)
