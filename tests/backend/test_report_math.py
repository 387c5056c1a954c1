"""Math in a report's exports: the HTML export typesets ``$...$`` and ``$$...$$`` as MathML of
allowed elements and attributes only, markdown leaves the TeX alone, a formula that cannot be typeset
shows as its TeX in <code>; the Markdown export keeps math as TeX with no tag in it; the LaTeX export keeps a
formula only when every control word, environment and character in it is allowed, else its escaped TeX
in \\texttt."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from html.parser import HTMLParser
from xml.etree import ElementTree

import pytest
from markdown_it import MarkdownIt

from backend.reports.blocks.callout import CalloutBlock
from backend.reports.blocks.markdown import MarkdownBlock
from backend.reports.render import export
from backend.reports.render import text as text_module
from backend.reports.render.text import (
    _ATTRIBUTES,
    _ELEMENTS,
    MATHML_NS,
    MAX_FORMULA_CHARS,
    MAX_FORMULAS,
    MAX_MATH_CHARS,
    latex_markdown,
    markdown_html,
    markdown_safe,
)

HOSTILE = [
    r"$\href{javascript:alert(1)}{x}$",
    r"$<script>alert(1)</script>$",
    r"$\text{<img src=x onerror=alert(1)>}$",
    r"$\text{<b onmouseover=alert(1)>x</b>}$",
    r"$\style{background:url(https://example.org/x)}{x}$",
    r"$\color{red;background:url(x)}{x}$",
    r"$$\href{javascript:alert(1)}{\text{<script>alert(1)</script>}}$$",
    "$$\n\\href{javascript:alert(1)}{x} \\style{background-image:url(x)}{y}\n$$",
    "```math\n\\href{javascript:alert(1)}{x}\n```",
    r"$\text{<!DOCTYPE x [<!ENTITY a 'b'>]>}$",
]


class Elements(HTMLParser):
    """Every start tag of an HTML text, with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(html_text: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(html_text)
    parser.close()
    return parser.tags


def maths(html_text: str) -> list[ElementTree.Element]:
    """The <math> elements of the output, parsed as XML (each must be well-formed)."""
    return [ElementTree.fromstring(m) for m in re.findall(r"<math\b.*?</math>", html_text, re.DOTALL)]


def test_inline_and_display_math_become_mathml() -> None:
    out = markdown_html("Loss falls as $L(t) \\propto t^{-1}$, and\n\n$$\n\\frac{a}{b}\n$$\n\nafter.")
    inline, display = maths(out)
    assert inline.tag == f"{{{MATHML_NS}}}math" and inline.get("display") == "inline"
    assert inline.find(f".//{{{MATHML_NS}}}msup") is not None
    assert display.get("display") == "block" and display.find(f".//{{{MATHML_NS}}}mfrac") is not None
    assert '<div class="math-display"><math' in out and "<p>after.</p>" in out
    # a ```math fence is display math too, as in the dashboard (rehype-katex)
    fenced = maths(markdown_html("```math\nx^2\n```"))
    assert [m.get("display") for m in fenced] == ["block"]


def test_underscores_and_stars_in_math_are_not_markdown() -> None:
    out = markdown_html("$a*b*c$ and $_{i}x$ or $y_{j}$ then _em_ and *strong*")
    assert out.count("<em>") == 2  # _em_ and *strong*, nothing from the math
    assert "<em>em</em>" in out and "<em>strong</em>" in out
    first, second, third = maths(out)
    assert [mo.text for mo in first.iter(f"{{{MATHML_NS}}}mo")] == ["*", "*"]
    assert (
        second.find(f".//{{{MATHML_NS}}}msub") is not None
        and third.find(f".//{{{MATHML_NS}}}msub") is not None
    )
    # the same text without the dollars is emphasis: markdown_html does read markdown around the math
    assert markdown_html("a*b*c and _{i}x or y_{j}").count("<em>") == 2


def test_what_is_not_math() -> None:
    out = markdown_html(r"costs \$5 or \$10; `$x$` in code; no $close")
    assert "<math" not in out and "<code>$x$</code>" in out and "$5 or $10" in out
    # a run of dollars closes only at a run of as many: $$x$ is no math, $$a$b$$ is one formula
    assert "<math" not in markdown_html("$$x$ here")
    (one,) = maths(markdown_html("and $$a$b$$ here"))
    assert [mi.text for mi in one.iter(f"{{{MATHML_NS}}}mi")] == ["a", "$", "b"]


def test_a_formula_latex2mathml_refuses_shows_as_escaped_tex_in_code() -> None:
    out = markdown_html(r"broken $\frac{a<b}{$ here")
    assert "<math" not in out
    assert '<code class="math-error" title="not typeset: latex2mathml: ' in out
    assert r"\frac{a&lt;b}{" in out
    display = markdown_html("$$\n\\frac{\n$$")
    assert display.startswith('<pre><code class="math-error"') and "\\frac{" in display


def test_formulas_are_bounded_in_length_and_count() -> None:
    long = "x" * (MAX_FORMULA_CHARS + 1)
    out = markdown_html(f"${long}$")
    assert "<math" not in out and f"longer than {MAX_FORMULA_CHARS}" in out
    many = " ".join(["$x$"] * (MAX_FORMULAS + 5))
    out = markdown_html(many)
    assert out.count("<math") == MAX_FORMULAS and out.count('class="math-error"') == 5
    # the count is per block: the next call starts afresh
    assert markdown_html("$y$").count("<math") == 1
    width = MAX_FORMULA_CHARS - 1
    budget = " ".join(["$" + "x" * width + "$"] * (MAX_MATH_CHARS // width + 2))
    out = markdown_html(budget)
    assert out.count("<math") == MAX_MATH_CHARS // width
    assert f"more than {MAX_MATH_CHARS} characters of math" in out


def test_an_exported_document_bounds_its_math_over_all_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    # shrunk so the test converts little: 3 blocks of 4 formulas of 10 characters, a document budget of
    # 10 formulas and 1,000 characters, then one of 100 characters
    monkeypatch.setattr(text_module, "MAX_DOCUMENT_FORMULAS", 10)
    formula = "$" + "+".join("abcde") + "a$"  # 10 characters of TeX
    blocks = [MarkdownBlock(id=f"b{i}", text=" ".join([formula] * 4)) for i in range(3)]
    page = export.html(_document(blocks))
    assert len(maths(page)) == 10 and page.count("more than 10 formulas in one document") == 2
    monkeypatch.setattr(text_module, "MAX_DOCUMENT_FORMULAS", 1_000)
    monkeypatch.setattr(text_module, "MAX_DOCUMENT_MATH_CHARS", 100)
    page = export.html(_document(blocks))
    assert len(maths(page)) == 10 and page.count("more than 100 characters of math in one document") == 2
    # outside an export's budget (a block rendered alone) only the block's own budget counts
    assert markdown_html(" ".join([formula] * 12)).count("<math") == 12


def test_dollar_runs_without_a_partner_cost_linear_time() -> None:
    # 440 runs of distinct lengths (97 kB): each opener finds no run of its length after it and is text;
    # scanning to the end for each took ~6 s, knowing where each length's last run is takes ~0.02 s
    text = " ".join("$" * k for k in range(1, 440))
    start = time.perf_counter()
    out = markdown_html(text)
    assert time.perf_counter() - start < 3
    assert "<math" not in out and out.count("$") == text.count("$")
    assert "<math" not in markdown_html("$$ a $ b") and "$$ a $ b" in markdown_html("$$ a $ b")


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_math_leaves_no_link_handler_script_or_style(text: str) -> None:
    out = markdown_html(f"before {text} after")
    seen = tags(out)
    names = {tag for tag, _ in seen}
    assert names <= {"p", "code", "pre", "div"} | _ELEMENTS, names
    for tag, attrs in seen:
        for key, value in attrs.items():
            assert key not in {"href", "src", "style", "xlink:href"} and not key.startswith("on"), (tag, key)
            assert "url(" not in (value or "") and "javascript:" not in (value or ""), (tag, key, value)
            if tag in _ELEMENTS:
                assert key in _ATTRIBUTES or (tag == "math" and key == "xmlns"), (tag, key)
    assert "<script" not in out and "<img" not in out and "<b " not in out and "<!" not in out
    for math in maths(out):
        for element in math.iter():
            assert element.tag.removeprefix(f"{{{MATHML_NS}}}") in _ELEMENTS


def test_hostile_href_keeps_its_text_but_not_its_target() -> None:
    (math,) = maths(markdown_html(r"$\href{javascript:alert(1)}{x}$"))
    assert [mi.text for mi in math.iter(f"{{{MATHML_NS}}}mi")] == ["x"]
    assert all("href" not in e.attrib for e in math.iter())


def _document(blocks: Sequence[MarkdownBlock | CalloutBlock]) -> export.Document:
    return export.Document(
        title="Math",
        number=1,
        content_hash="0" * 64,
        author=None,
        published_at=datetime(2026, 12, 1, tzinfo=UTC),
        blocks=list(blocks),
        data={},
    )


def test_the_exported_page_keeps_its_csp_with_math() -> None:
    doc = _document(
        [
            MarkdownBlock(
                id="m", text="Consistency $CS = \\frac{1}{n}\\sum_i s_i$.\n\n" + "\n\n".join(HOSTILE)
            ),
            CalloutBlock(id="c", tone="warning", text="$x^2$ " + HOSTILE[0]),
        ]
    )
    page = export.html(doc)
    head = page.split("</head>")[0]
    assert f'content="{export.HTML_CSP}"' in head and "script" not in head.lower().replace("noscript", "")
    body = page.split("<body>")[1]
    assert "<script" not in body and "<img" not in body
    attrs = [(k, v or "") for _, a in tags(body) for k, v in a.items()]
    assert not any(k.startswith("on") or k in {"href", "src", "style"} for k, _ in attrs)
    assert not any("javascript:" in v or "url(" in v for _, v in attrs)
    assert len(maths(body)) >= 3


def test_the_markdown_export_keeps_math_as_tex_without_tags() -> None:
    assert (
        markdown_safe("Loss $L(t) \\propto t^{-1}$ and $$a_1$$") == "Loss $L(t) \\propto t^{-1}$ and $$a_1$$"
    )
    out = markdown_safe("$a<b$ and $<img src=x onerror=alert(1)>$ and <b>x</b>")
    assert out == "$a\\lt b$ and $\\lt img src=x onerror=alert(1)>$ and &lt;b>x&lt;/b>"
    # a viewer that renders raw HTML finds no element in it
    rendered = MarkdownIt("commonmark", {"html": True}).render(out)
    assert [t for t, _ in tags(rendered)] == ["p"]


LATEX_KEPT = [
    r"$L(t) \propto t^{-1}$",
    r"$\alpha + \frac{1}{2}\,\mathbb{E}[x]$",
    r"$$\sum_{i=1}^{n} \lambda_i \le \infty$$",
    r"$\begin{pmatrix} a & b \\ c & d \end{pmatrix}$",
    r"$\text{acc}_{k=2} - \operatorname{acc}_{k=1} \geq 0.05$",
]

# each would read, write or define something, end the job or leave math for raw LaTeX if kept
LATEX_REFUSED = [
    r"$\InputIfFileExists{/etc/passwd}{}{}$",
    r"$^^5cinput{/etc/passwd}$",  # TeX's hex notation: ^^5c is a backslash
    r"$\input{/etc/passwd}$",
    r"$\csname input\endcsname{/etc/passwd}$",
    r"$\def\x{\immediate\write18{id}}\x$",
    r"$a \) \write18{id} \( b$",
    r"$\begin{filecontents}{x.tex}y\end{filecontents}$",
    r"$\end$",
    r"$a % $ text",
    r"$x}\input{y}{$",
    r"$$\newcommand{\x}{y}$$",
]

# what LaTeX reads as an instruction in the export (an independent reading: every control word, and ^^),
# outside \\texttt{...} that latex_escape wrote (inside it no backslash is left but \\textbackslash{} etc.)
_WORD = re.compile(r"\\\\([A-Za-z]+)|\\^\\^")


def _instructions(tex: str) -> list[str]:
    return [m.group(1) or "^^" for m in _WORD.finditer(tex)]


@pytest.mark.parametrize("formula", LATEX_KEPT)
def test_the_latex_export_keeps_ordinary_math(formula: str) -> None:
    assert latex_markdown(f"We see {formula} here.") == f"We see {formula} here."


@pytest.mark.parametrize("formula", LATEX_REFUSED)
def test_the_latex_export_prints_hostile_math_as_text(formula: str) -> None:
    out = latex_markdown(f"We see {formula} here.")
    assert "\\texttt{" in out
    # nothing but latex_escape's own commands and the \\texttt around it reaches LaTeX
    assert set(_instructions(out)) <= {"texttt", "textbackslash", "textasciicircum", "textasciitilde"}, out
    # and its groups are balanced: nothing closes a group LaTeX opened around it
    depth = 0
    for m in re.finditer(r"\\\\.|[{}]", out):
        depth += {"{": 1, "}": -1}.get(m.group(), 0)
        assert depth >= 0
    assert depth == 0
