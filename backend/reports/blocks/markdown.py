"""Markdown text, with LaTeX math between ``$`` (inline) or ``$$`` (display). Rendered sanitised: raw
HTML shows as text, and links go to http(s), mailto or relative targets only."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from backend.reports.blocks import BlockType
from backend.reports.blocks.base import BlockBase
from backend.reports.render.text import latex_markdown, markdown_html, markdown_safe


class MarkdownBlock(BlockBase):
    type: Literal["markdown"] = "markdown"
    text: str = Field(max_length=100_000, description="markdown; $...$ and $$...$$ are LaTeX math")


def _md(block: MarkdownBlock, _data: Any, _ctx: Any) -> str:
    return markdown_safe(block.text)


def _html(block: MarkdownBlock, _data: Any, _ctx: Any) -> str:
    return f'<div class="markdown">{markdown_html(block.text)}</div>'


def _latex(block: MarkdownBlock, _data: Any, _ctx: Any) -> str:
    return latex_markdown(block.text)


BLOCK = BlockType(name="markdown", model=MarkdownBlock, order=1, markdown=_md, html=_html, latex=_latex)
