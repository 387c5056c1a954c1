"""Text of a report in the export formats: markdown rendered to HTML with raw HTML off and only safe
link targets (no ``javascript:``, ``data:`` but images, ``vbscript:``, ``file:``), LaTeX math typeset as
MathML (docs/reports.md, Math), and escaping for HTML and LaTeX."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any
from xml.etree import ElementTree

from latex2mathml.converter import convert as latex_to_mathml
from latex2mathml.symbols_parser import SYMBOLS
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

_SAFE_LINK = re.compile(r"^(https?:|mailto:|#|/(?!/)|\.{0,2}/|[^:/?#]*$)", re.IGNORECASE)

# Math in the HTML export: the syntax of the dashboard's remark-math (micromark-extension-math), so a
# block reads the same in both. Inline: a run of n dollars up to the next run of exactly n (``$x$``,
# ``$$x$$`` mid-line), its content literal like a code span's; ``\$`` is a dollar. Display: a line
# opening with two or more dollars (nothing after them but text without a dollar) up to a line of at
# least as many, or a ```math fence. Each formula goes through latex2mathml, then through an allow-list of
# MathML presentation elements and attributes (_clean): latex2mathml passes ``\href``'s target and
# ``\style``'s CSS through as attributes, and writes ``\text{...}``'s content unescaped, so its output is
# not trusted as it comes. What is refused, too long or over a block's budget shows as its TeX in <code>.
MATHML_NS = "http://www.w3.org/1998/Math/MathML"
MAX_FORMULA_CHARS = 1000  # a formula's TeX; latex2mathml takes ~0.07 ms a character
MAX_FORMULAS = 100  # per block (per markdown_html call)
MAX_MATH_CHARS = 10_000  # all formulas of a block together: at most ~0.7 s of conversion
# all formulas of one exported document (inside ``math_budget``): 200 blocks at their own budget would be
# 2,000,000 characters, ~140 s of one core for one request
MAX_DOCUMENT_FORMULAS = 1_000
MAX_DOCUMENT_MATH_CHARS = 50_000  # ~3.5 s
MAX_DEPTH = 64  # nesting of the MathML kept
_ELEMENT_NAMES = (
    "math mrow mi mn mo ms mtext mspace msub msup msubsup munder mover munderover mmultiscripts "
    "mprescripts none mfrac msqrt mroot mstyle merror mpadded mphantom menclose mfenced mtable mtr "
    "mtd mlabeledtr semantics"
)
_ATTRIBUTE_NAMES = (
    "display displaystyle scriptlevel mathvariant mathsize mathcolor mathbackground dir width height "
    "depth lspace rspace voffset form fence separator stretchy symmetric largeop movablelimits "
    "accent accentunder linethickness minsize maxsize notation open close separators columnalign "
    "rowalign columnspacing rowspacing columnlines rowlines columnspan rowspan frame framespacing "
    "equalrows equalcolumns align"
)
_ELEMENTS, _ATTRIBUTES = frozenset(_ELEMENT_NAMES.split()), frozenset(_ATTRIBUTE_NAMES.split())
# values of the kept attributes: names, numbers, lengths, colours; never a URL, a colon or parentheses
_VALUE = re.compile(r"^[A-Za-z0-9 .,#%+\-]{0,64}$")


class MathRefused(ValueError):
    """A formula that is not typeset: latex2mathml refused it or its MathML left the allow-list."""


def _clean(element: ElementTree.Element, depth: int = 0) -> str:
    """An element of latex2mathml's output as MathML text, only allowed elements and attributes."""
    if depth > MAX_DEPTH:
        raise MathRefused("nested too deeply")
    ns, _, name = element.tag.rpartition("}")
    if ns != "{" + MATHML_NS or name not in _ELEMENTS:
        raise MathRefused(f"<{name}> is not MathML this export keeps")
    attrs = "".join(
        f' {key}="{html.escape(value, quote=True)}"'
        for key, value in sorted(element.attrib.items())
        if key in _ATTRIBUTES and _VALUE.match(value)
    )
    if name == "math":
        attrs = f' xmlns="{MATHML_NS}"' + attrs
    inner = html.escape(element.text or "", quote=False)
    for child in element:
        inner += _clean(child, depth + 1) + html.escape(child.tail or "", quote=False)
    return f"<{name}{attrs}>{inner}</{name}>"


@lru_cache(maxsize=2048)
def mathml(tex: str, display: bool) -> str:
    """TeX as a MathML ``<math>`` element, or MathRefused with the reason."""
    if len(tex) > MAX_FORMULA_CHARS:
        raise MathRefused(f"longer than {MAX_FORMULA_CHARS} characters")
    try:
        out = latex_to_mathml(tex, display="block" if display else "inline")
    except Exception as e:  # latex2mathml raises many kinds for TeX it cannot read
        raise MathRefused(f"latex2mathml: {type(e).__name__}") from e
    if "<!" in out:  # no DOCTYPE, entity declaration or CDATA from a formula
        raise MathRefused("markup declaration in the output")
    try:
        root = ElementTree.fromstring(out)
    except ElementTree.ParseError as e:  # e.g. \text{<...>}, written into <mtext> unescaped
        raise MathRefused("latex2mathml wrote malformed MathML") from e
    return _clean(root)


_DOCUMENT: ContextVar[dict[str, int] | None] = ContextVar("math_document", default=None)


@contextmanager
def math_budget() -> Iterator[None]:
    """One document's math budget (MAX_DOCUMENT_*) for the ``markdown_html`` calls inside it."""
    token = _DOCUMENT.set({"count": 0, "chars": 0})
    try:
        yield
    finally:
        _DOCUMENT.reset(token)


def _formula(tex: str, display: bool, env: EnvType) -> str:
    count, chars = env.get("math_count", 0) + 1, env.get("math_chars", 0) + len(tex)
    env["math_count"], env["math_chars"] = count, chars
    document = _DOCUMENT.get()
    if document is not None:
        document["count"] += 1
        document["chars"] += len(tex)
    try:
        if count > MAX_FORMULAS:
            raise MathRefused(f"more than {MAX_FORMULAS} formulas in one block")
        if chars > MAX_MATH_CHARS:
            raise MathRefused(f"more than {MAX_MATH_CHARS} characters of math in one block")
        if document is not None and document["count"] > MAX_DOCUMENT_FORMULAS:
            raise MathRefused(f"more than {MAX_DOCUMENT_FORMULAS} formulas in one document")
        if document is not None and document["chars"] > MAX_DOCUMENT_MATH_CHARS:
            raise MathRefused(f"more than {MAX_DOCUMENT_MATH_CHARS} characters of math in one document")
        out = mathml(tex, display)
    except MathRefused as e:
        code = f'<code class="math-error" title="not typeset: {esc(e)}">{esc(tex)}</code>'
        return f"<pre>{code}</pre>\n" if display else code
    return f'<div class="math-display">{out}</div>\n' if display else out


def _last_runs(src: str) -> dict[int, int]:
    """Where the last run of dollars of each length starts in a text."""
    runs: dict[int, int] = {}
    for run in re.finditer(r"\$+", src):
        runs[len(run.group())] = run.start()
    return runs


def _math_inline(state: StateInline, silent: bool) -> bool:
    """``$...$``: a run of dollars up to the next run of as many, content literal (micromark's math text)."""
    src, start, maximum = state.src, state.pos, state.posMax
    if src[start] != "$":
        return False
    pos = start + 1
    while pos < maximum and src[pos] == "$":
        pos += 1
    # an opener with no run of its length after it is text at once, as markdown-it does for backticks: a
    # scan to the end for each of a block's openers would be quadratic (~6 s for 100 kB of dollar runs)
    cached = state.env.get("math_runs")
    if cached is None or cached[0] is not src:
        cached = state.env["math_runs"] = (src, _last_runs(src))
    search = pos if cached[1].get(pos - start, -1) >= pos else maximum
    while (close := src.find("$", search, maximum)) != -1:
        end = close + 1
        while end < maximum and src[end] == "$":
            end += 1
        if end - close == pos - start:
            if not silent:
                content = src[pos:close].replace("\n", " ")
                if content.startswith(" ") and content.endswith(" ") and content.strip(" "):
                    content = content[1:-1]
                token = state.push("math_inline", "math", 0)
                token.content, token.markup = content, src[start:pos]
            state.pos = end
            return True
        search = end
    if not silent:  # no closing run: the dollars are text
        state.append_pending(src[start:pos])
    state.pos = pos
    return True


def _math_block(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """``$$`` on a line of its own up to a line of at least as many dollars (micromark's math flow),
    read as markdown-it reads a code fence; unclosed, it runs to the end of its container."""
    if state.is_code_block(start_line):
        return False
    pos = state.bMarks[start_line] + state.tShift[start_line]
    maximum = state.eMarks[start_line]
    opening = state.skipCharsStr(pos, "$") - pos
    if opening < 2 or "$" in state.src[pos + opening : maximum]:
        return False
    if silent:
        return True
    line, closed = start_line, False
    while True:
        line += 1
        if line >= end_line:
            break
        first, last = state.bMarks[line] + state.tShift[line], state.eMarks[line]
        if first < last and state.sCount[line] < state.blkIndent:
            break
        if first >= last or state.src[first] != "$" or state.is_code_block(line):
            continue
        after = state.skipCharsStr(first, "$")
        if after - first >= opening and state.skipSpaces(after) >= last:
            closed = True
            break
    token = state.push("math_block", "math", 0)
    token.content = state.getLines(start_line + 1, line, state.sCount[start_line], True)
    token.markup = "$" * opening
    token.map = [start_line, line + 1 if closed else line]
    state.line = line + 1 if closed else line
    return True


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    # links and images: http(s), mailto, fragments and relative targets only; an image from the network
    # would not load offline anyway, and the exported file's CSP refuses it
    md.validateLink = lambda url: bool(_SAFE_LINK.match(url.strip()))  # type: ignore[method-assign]
    md.inline.ruler.after("escape", "math_inline", _math_inline)
    md.block.ruler.before(
        "fence", "math_block", _math_block, {"alt": ["paragraph", "reference", "blockquote", "list"]}
    )

    def render_fence(
        self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
    ) -> str:
        token = tokens[idx]
        if token.info.split(maxsplit=1)[:1] == ["math"]:  # ```math, as rehype-katex reads it
            return _formula(token.content.rstrip("\n"), True, env)
        return RendererHTML.fence(self, tokens, idx, options, env)

    def render_math(display: bool) -> Callable[..., str]:
        def render(_self: Any, tokens: Sequence[Token], idx: int, _options: OptionsDict, env: EnvType) -> str:
            content = tokens[idx].content
            return _formula(content.rstrip("\n") if display else content, display, env)

        return render

    md.add_render_rule("fence", render_fence)
    md.add_render_rule("math_inline", render_math(False))
    md.add_render_rule("math_block", render_math(True))
    return md


_MD = _markdown()


def markdown_html(text: str) -> str:
    """Markdown as sanitised HTML: raw HTML is shown as text, unsafe links stay plain text, and math is
    MathML of allowed elements and attributes only (or its TeX as code)."""
    return _MD.render(text, {})


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

# The LaTeX export's math reaches the reader's LaTeX as it is, so it is held to an allow-list rather than a
# list of what to refuse (which ``\\InputIfFileExists`` or ``^^5cinput``, TeX's hex notation for
# ``\\input``, walk past): every control word is a symbol latex2mathml knows (glyphs only) or one of the
# structural commands below, every environment one of _MATH_ENVIRONMENTS, no ``^^``, no bare ``%`` (it
# would comment out the closing ``$``), ``#`` or ``$``, no ``\\(``/``\\)``/``\\[``/``\\]``, and braces
# balanced. A formula that is not is printed as its escaped TeX in ``\\texttt``, as the HTML export
# shows one latex2mathml refuses.
_MATH_STRUCTURE = frozenset(
    [
        "frac",
        "dfrac",
        "tfrac",
        "cfrac",
        "sqrt",
        "binom",
        "dbinom",
        "tbinom",
        "text",
        "textrm",
        "textbf",
        "textit",
        "textsf",
        "texttt",
        "mathrm",
        "mathbf",
        "mathit",
        "mathsf",
        "mathtt",
        "mathcal",
        "mathbb",
        "mathfrak",
        "mathscr",
        "boldsymbol",
        "bm",
        "operatorname",
        "left",
        "right",
        "middle",
        "big",
        "Big",
        "bigg",
        "Bigg",
        "bigl",
        "bigr",
        "Bigl",
        "Bigr",
        "biggl",
        "biggr",
        "hat",
        "bar",
        "tilde",
        "vec",
        "dot",
        "ddot",
        "check",
        "breve",
        "acute",
        "grave",
        "overline",
        "underline",
        "overbrace",
        "underbrace",
        "widehat",
        "widetilde",
        "overrightarrow",
        "overleftarrow",
        "stackrel",
        "overset",
        "underset",
        "substack",
        "limits",
        "nolimits",
        "displaystyle",
        "textstyle",
        "scriptstyle",
        "scriptscriptstyle",
        "quad",
        "qquad",
        "begin",
        "end",
        "hline",
        "cdots",
        "ldots",
        "vdots",
        "ddots",
        "sum",
        "prod",
        "int",
        "iint",
        "oint",
        "lim",
        "limsup",
        "liminf",
        "log",
        "ln",
        "lg",
        "exp",
        "max",
        "min",
        "sup",
        "inf",
        "arg",
        "det",
        "dim",
        "gcd",
        "ker",
        "Pr",
        "sin",
        "cos",
        "tan",
        "sec",
        "csc",
        "cot",
        "sinh",
        "cosh",
        "tanh",
        "arcsin",
        "arccos",
        "arctan",
        "mod",
        "bmod",
        "pmod",
        "not",
        "neq",
        "leq",
        "geq",
        "le",
        "ge",
        "mathop",
    ]
)
_MATH_ENVIRONMENTS = frozenset(
    [
        "matrix",
        "pmatrix",
        "bmatrix",
        "Bmatrix",
        "vmatrix",
        "Vmatrix",
        "smallmatrix",
        "cases",
        "aligned",
        "gathered",
        "array",
        "split",
    ]
)
_MATH_SYMBOLS = r",;:! {}|\\&_#%$"  # control symbols allowed (\\, \\; \\{ \\\\ \\# ...): none ends math
_CONTROL = re.compile(r"\\([A-Za-z]+|.)|\^\^|[%#$]|\\$", re.DOTALL)
_ENVIRONMENT = re.compile(r"\\(?:begin|end)\s*\{([^{}]*)\}")


@lru_cache(maxsize=1)
def math_commands() -> frozenset[str]:
    """The control words a formula of the LaTeX export may use: latex2mathml's symbols and the structure."""
    names = {k[1:] for k in SYMBOLS if re.fullmatch(r"\\[A-Za-z]+", k)}
    return frozenset(names) | _MATH_STRUCTURE


def latex_math_allowed(tex: str) -> bool:
    """Whether a formula's TeX (between its dollars) uses only what the allow-list above lets through."""
    allowed = math_commands()
    for m in _CONTROL.finditer(tex):
        word = m.group(1)
        if word is None:  # ^^, a bare % # $, or a backslash at the end
            return False
        if word not in (allowed if word.isalpha() else _MATH_SYMBOLS):
            return False
    if any(env not in _MATH_ENVIRONMENTS for env in _ENVIRONMENT.findall(tex)):
        return False
    if len(_ENVIRONMENT.findall(tex)) != len(re.findall(r"\\(?:begin|end)\b", tex)):
        return False  # a \\begin whose name is not one plain {name}
    depth = 0
    for m in re.finditer(r"\\.|[{}]", tex, re.DOTALL):
        depth += {"{": 1, "}": -1}.get(m.group(), 0)
        if depth < 0:
            return False
    return depth == 0


def latex_markdown(text: str) -> str:
    """Markdown as LaTeX, roughly: math (``$...$``, ``$$...$$``) kept as LaTeX math when its TeX passes
    ``latex_math_allowed`` (else its escaped TeX in ``\\texttt``), headings as paragraphs in bold,
    everything else escaped text. A reader's LaTeX compiles it whatever it says: nothing reaches LaTeX
    unescaped but math of allowed glyphs and structure, which cannot read, write or define anything."""
    out: list[str] = []
    for part in _MATH.split(text):
        if _MATH.fullmatch(part):
            delimiter = 2 if part.startswith("$$") else 1
            if latex_math_allowed(part[delimiter:-delimiter]):
                out.append(part)
            else:
                out.append(f"\\texttt{{{latex_escape(part)}}}")
        else:
            out.append(latex_escape(part).replace("\n\n", "\n\n\\par "))
    return "".join(out)


def markdown_safe(text: str) -> str:
    """Markdown for the Markdown export: raw HTML defused, since a Markdown viewer may render raw HTML
    that the dashboard shows as text: ``<`` as ``&lt;`` outside math and as ``\\lt`` inside it (math stays
    ``$...$`` for a viewer that typesets it; one that does not shows ``$a\\lt b$`` rather than a tag)."""
    return "".join(
        part.replace("<", "\\lt ") if _MATH.fullmatch(part) else part.replace("<", "&lt;")
        for part in _MATH.split(text)
    )


def markdown_label(text: str) -> str:
    """Text inside a Markdown link or image label, or emphasis: nothing in it opens markup."""
    return re.sub(r"([\\\[\]()*_`>])", r"\\\1", text.replace("\n", " ")).replace("<", "&lt;")
