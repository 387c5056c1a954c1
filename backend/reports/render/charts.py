"""Line charts of a figure block's series, drawn server-side: SVG (HTML and Markdown exports, every line
titled with its run and steps, so hovering it says what it shows) and TikZ (the LaTeX export: vector, with
no package beyond tikz)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from backend.reports.data import SeriesData
from backend.reports.render.text import esc, latex_escape

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 40
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


@dataclass
class Frame:
    x0: float
    x1: float
    y0: float
    y1: float
    log: bool

    def x(self, step: float) -> float:
        span = self.x1 - self.x0 or 1.0
        return LEFT + (step - self.x0) / span * (WIDTH - LEFT - RIGHT)

    def y(self, value: float) -> float:
        v, lo, hi = (
            (math.log10(value), math.log10(self.y0), math.log10(self.y1))
            if self.log
            else (value, self.y0, self.y1)
        )
        span = hi - lo or 1.0
        return HEIGHT - BOTTOM - (v - lo) / span * (HEIGHT - TOP - BOTTOM)


def _usable(value: float | None, log: bool) -> bool:
    return value is not None and math.isfinite(value) and (value > 0 or not log)


def frame(series: Sequence[SeriesData], log: bool) -> Frame | None:
    steps = [p[0] for s in series for p in s.points if _usable(p[1], log)]
    values = [p[1] for s in series for p in s.points if _usable(p[1], log) and p[1] is not None]
    if not steps:
        return None
    y0, y1 = min(values), max(values)
    if y0 == y1:
        y0, y1 = (y0 / 2, y1 * 2) if log else (y0 - 1, y1 + 1)
    return Frame(min(steps), max(steps), y0, y1, log)


def _segments(s: SeriesData, f: Frame) -> list[list[tuple[float, float]]]:
    """The series' lines in chart coordinates, broken at gaps."""
    out: list[list[tuple[float, float]]] = [[]]
    for step, value in s.points:
        if value is None or not _usable(value, f.log):
            if out[-1]:
                out.append([])
            continue
        out[-1].append((f.x(step), f.y(value)))
    return [seg for seg in out if seg]


def describe(s: SeriesData) -> str:
    """What a line shows: its run, series and steps."""
    steps = [p[0] for p in s.points]
    span = f"steps {min(steps)}-{max(steps)}" if steps else "no points"
    return f"{s.label}: run {s.run_id}, {s.key}, {span} ({len(steps)} points)"


def _tick(value: float) -> str:
    return f"{value:.4g}"


def svg(series: Sequence[SeriesData], title: str, log: bool = False) -> str:
    """A standalone SVG document: axes, a line per series (a ``<title>`` each: run and steps), a legend."""
    f = frame(series, log)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT + 18 * len(series)}" '
        f'width="{WIDTH}" height="{HEIGHT + 18 * len(series)}" role="img" font-family="sans-serif" font-size="11">',
        f"<title>{esc(title)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT + 18 * len(series)}" fill="#ffffff"/>',
    ]
    if f is None:
        parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">no points</text></svg>')
        return "".join(parts)
    bottom, right = HEIGHT - BOTTOM, WIDTH - RIGHT
    parts.append(f'<path d="M{LEFT},{TOP}V{bottom}H{right}" stroke="#444" fill="none"/>')
    for i in range(5):
        frac = i / 4
        vy = f.y0 * (f.y1 / f.y0) ** frac if log else f.y0 + (f.y1 - f.y0) * frac
        sx = f.x0 + (f.x1 - f.x0) * frac
        y, x = f.y(vy), f.x(sx)
        parts.append(f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{_tick(vy)}</text>')
        parts.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">{round(sx)}</text>')
    parts.append(f'<text x="{(LEFT + right) / 2}" y="{HEIGHT - 4}" text-anchor="middle">step</text>')
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        d = " ".join("M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in seg) for seg in _segments(s, f))
        parts.append(
            f'<g><title>{esc(describe(s))}</title><path d="{d}" stroke="{color}" stroke-width="1.5" fill="none"/></g>'
        )
        ly = HEIGHT + 14 + 18 * i
        parts.append(f'<rect x="{LEFT}" y="{ly - 9}" width="12" height="3" fill="{color}"/>')
        parts.append(f'<text x="{LEFT + 18}" y="{ly - 4}">{esc(describe(s))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def tikz(series: Sequence[SeriesData], title: str, log: bool = False) -> str:
    """The same chart as a tikzpicture (``\\input`` it), in a 12 cm x 6 cm box."""
    f = frame(series, log)
    scale_x, scale_y = 12.0 / WIDTH, 6.0 / HEIGHT
    lines = [f"% {latex_escape(title)}", "\\begin{tikzpicture}"]
    if f is None:
        lines += ["\\node at (6,3) {no points};", "\\end{tikzpicture}"]
        return "\n".join(lines) + "\n"

    def pt(x: float, y: float) -> str:
        return f"({x * scale_x:.3f},{(HEIGHT - y) * scale_y:.3f})"

    lines.append(
        f"\\draw {pt(LEFT, TOP)} -- {pt(LEFT, HEIGHT - BOTTOM)} -- {pt(WIDTH - RIGHT, HEIGHT - BOTTOM)};"
    )
    for i in range(5):
        frac = i / 4
        vy = f.y0 * (f.y1 / f.y0) ** frac if log else f.y0 + (f.y1 - f.y0) * frac
        sx = f.x0 + (f.x1 - f.x0) * frac
        lines.append(f"\\node[left,font=\\tiny] at {pt(LEFT, f.y(vy))} {{{_tick(vy)}}};")
        lines.append(f"\\node[below,font=\\tiny] at {pt(f.x(sx), HEIGHT - BOTTOM)} {{{round(sx)}}};")
    for i, s in enumerate(series):
        r, g, b = (int(PALETTE[i % len(PALETTE)][k : k + 2], 16) for k in (1, 3, 5))
        lines.append(f"\\definecolor{{series{i}}}{{RGB}}{{{r},{g},{b}}}")
        for seg in _segments(s, f):
            lines.append(f"\\draw[series{i},thin] " + " -- ".join(pt(x, y) for x, y in seg) + ";")
        lines.append(
            f"\\node[right,font=\\tiny,text=series{i}] at {pt(LEFT, HEIGHT + 14 + 18 * i)} {{{latex_escape(describe(s))}}};"
        )
    lines.append("\\end{tikzpicture}")
    return "\n".join(lines) + "\n"
