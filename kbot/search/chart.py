"""µs per size for eager, torch.compile and kbot, drawn two ways from the same numbers: a
Mermaid `xychart-beta` for the PR body (GitHub renders Mermaid) and an SVG written by hand for
the run report (no plotting dependency). The data is report.json's `by_size.chart`
(kbot.search.by_size.chart_data).
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

# One colour per series, in the order drawn; Mermaid's palette takes the same list, so the
# legend under the Mermaid chart can name the colours.
SERIES_COLOURS = {"eager": "#d62728", "torch.compile": "#1f77b4", "kbot": "#2ca02c"}
COLOUR_NAMES = {"#d62728": "red", "#1f77b4": "blue", "#2ca02c": "green"}


def _series(chart: dict[str, Any]) -> list[tuple[str, list[float | None]]]:
    """The series that have at least one number, in SERIES_COLOURS' order."""
    return [
        (name, list(chart["series"][name]))
        for name in SERIES_COLOURS
        if any(_finite(v) for v in chart["series"].get(name, []))
    ]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _axis_top(values: list[float]) -> float:
    """A round number at or above the largest value: 1, 2 or 5 times a power of ten."""
    largest = max(values, default=1.0) or 1.0
    power = 10 ** math.floor(math.log10(largest))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= largest)


def _number(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def mermaid(chart: dict[str, Any]) -> str:
    """A fenced Mermaid block; a missing figure (compile not measured) is drawn as 0 and
    named in the legend line."""
    series = _series(chart)
    values = [v for _, vs in series for v in vs if _finite(v)]
    palette = ", ".join(SERIES_COLOURS[name] for name, _ in series)
    labels = ", ".join(f'"{label}"' for label in chart["labels"])
    lines = [
        "```mermaid",
        "%%{init: {'themeVariables': {'xyChart': {'plotColorPalette': '" + palette + "'}}}}%%",
        "xychart-beta",
        f'    title "{chart["title"]}"',
        f'    x-axis "{chart["x_title"]}" [{labels}]',
        f'    y-axis "µs" 0 --> {_axis_top(values):g}',
    ]
    for _, vs in series:
        lines.append("    line [" + ", ".join(_number(v) if _finite(v) else "0" for v in vs) + "]")
    lines.append("```")
    return "\n".join(lines)


def legend(chart: dict[str, Any]) -> str:
    """The line under the Mermaid chart saying which colour is which (xychart has no legend)."""
    parts = []
    for name, vs in _series(chart):
        missing = "" if all(_finite(v) for v in vs) else " (0 where not measured)"
        parts.append(f"{COLOUR_NAMES[SERIES_COLOURS[name]]}: {name}{missing}")
    return "; ".join(parts)


def svg(chart: dict[str, Any], width: int = 640, height: int = 320) -> str:
    """The same chart as a small standalone SVG: linear µs axis, one polyline per series,
    a dot per measured size, a legend."""
    left, right, top, bottom = 56, 16, 36, 56
    plot_w, plot_h = width - left - right, height - top - bottom
    series = _series(chart)
    values = [v for _, vs in series for v in vs if _finite(v)]
    top_us = _axis_top(values)
    labels = chart["labels"]
    step = plot_w / max(len(labels) - 1, 1)

    def x(i: int) -> float:
        return left + (i * step if len(labels) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return top + plot_h * (1 - v / top_us)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2:.0f}" y="18" text-anchor="middle" font-size="13">'
        f"{escape(chart['title'])}</text>",
    ]
    for k in range(5):  # horizontal grid lines and µs ticks
        v = top_us * k / 4
        out.append(
            f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + plot_w}" y2="{y(v):.1f}" '
            'stroke="#ddd"/>'
        )
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    for i, label in enumerate(labels):
        out.append(
            f'<text x="{x(i):.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
            f"{escape(str(label))}</text>"
        )
    out.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 22}" text-anchor="middle">'
        f"{escape(chart['x_title'])}</text>"
    )
    out.append(
        f'<text x="14" y="{top + plot_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + plot_h / 2:.0f})">µs</text>'
    )
    for name, vs in series:
        colour = SERIES_COLOURS[name]
        points = [(x(i), y(v)) for i, v in enumerate(vs) if _finite(v)]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>' for px, py in points]
    for k, (name, _) in enumerate(series):
        lx = left + k * 130
        colour = SERIES_COLOURS[name]
        out.append(
            f'<rect x="{lx}" y="{height - 12}" width="12" height="4" fill="{colour}"/>'
            f'<text x="{lx + 16}" y="{height - 7}">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"
