"""Text of a report in the export formats: markdown rendered to HTML with raw HTML off and only safe
link targets (no ``javascript:``, ``data:`` but images, ``vbscript:``, ``file:``), and escaping for HTML and
LaTeX."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

_SAFE_LINK = re.compile(r"^(https?:|mailto:|#|/(?!/)|\.{0,2}/|[^:/?#]*$)", re.IGNORECASE)


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    # links and images: http(s), mailto, fragments and relative targets only; an image from the network
    # would not load offline anyway, and the exported file's CSP refuses it
    md.validateLink = lambda url: bool(_SAFE_LINK.match(url.strip()))  # type: ignore[method-assign]
    return md


_MD = _markdown()


def markdown_html(text: str) -> str:
    """Markdown as sanitised HTML: raw HTML is shown as text, unsafe links stay plain text."""
    return _MD.render(text)


def esc(text: object) -> str:
    return html.escape("" if text is None else str(text), quote=True)


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: object) -> str:
    return "".join(_LATEX.get(c, c) for c in ("" if text is None else str(text)))


_MATH = re.compile(r"(\$\$.+?\$\$|\$[^$\n]+?\$)", re.DOTALL)


def latex_markdown(text: str) -> str:
    """Markdown as LaTeX, roughly: math (``$...$``, ``$$...$$``) kept as LaTeX math, headings as
    paragraphs in bold, everything else escaped text. A reader's LaTeX compiles it whatever it says:
    nothing outside math reaches LaTeX unescaped, and math cannot run ``\\input`` or ``\\write``."""
    out: list[str] = []
    for part in _MATH.split(text):
        if _MATH.fullmatch(part):
            out.append(
                re.sub(r"\\(input|include|write|openout|read|immediate|catcode|def|csname)\b", "", part)
            )
        else:
            out.append(latex_escape(part).replace("\n\n", "\n\n\\par "))
    return "".join(out)


def markdown_safe(text: str) -> str:
    """Markdown for the Markdown export: raw HTML defused (``<`` as ``&lt;`` outside math), since a
    Markdown viewer may render raw HTML that the dashboard shows as text."""
    return "".join(part if _MATH.fullmatch(part) else part.replace("<", "&lt;") for part in _MATH.split(text))


def markdown_label(text: str) -> str:
    """Text inside a Markdown link or image label, or emphasis: nothing in it opens markup."""
    return re.sub(r"([\\\[\]()*_`>])", r"\\\1", text.replace("\n", " ")).replace("<", "&lt;")
