"""The Runs page's content: a tournament's ``report.md`` as HTML with its plots, and a training
run's ``eval.csv`` as a learning curve drawn as inline SVG. Read-only.

The report is rendered with the ``markdown`` package (the ``web`` extra; tables, code); its
images and links to files of the folder are pointed at the server's file route, which serves
only files under the root.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from .pages import esc

#: The columns drawn from ``eval.csv`` (with their intervals, where the file has them).
CURVES = (("mean_score", "score_low", "score_high", "mean match score", "#1c62c4"),
          ("diff_heuristic", "diff_heuristic_low", "diff_heuristic_high",
           "score - heuristic's", "#cc2a26"),
          ("diff_ismcts", "diff_ismcts_low", "diff_ismcts_high", "score - ismcts's",
           "#703090"))


def report_html(folder: Path, file_url: str) -> str:
    """``folder/report.md`` as HTML; image and link targets that are files of the folder go
    through ``file_url`` (a prefix the relative path is appended to, quoted)."""
    import markdown  # type: ignore[import-untyped]  # the web extra's; no stubs

    text = (folder / "report.md").read_text(encoding="utf-8")
    body = markdown.markdown(text, extensions=["tables", "fenced_code"],
                             output_format="html")

    def local(m: re.Match[str]) -> str:
        attr, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:|^#|^/", target):
            return m.group(0)
        return f'{attr}="{esc(file_url + target)}"'

    return re.sub(r'(src|href)="([^"]*)"', local, body)


def _float(x: str | None) -> float | None:
    try:
        v = float(x) if x not in (None, "") else None
    except ValueError:
        return None
    return v if v is not None and math.isfinite(v) else None


def read_eval_csv(path: Path) -> dict[str, list[float | None]]:
    """The columns of an ``eval.csv`` (empty cells as ``None``)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    keys = rows[0].keys() if rows else []
    return {k: [_float(r.get(k)) for r in rows] for k in keys}


def learning_curve_svg(columns: dict[str, list[float | None]], width: int = 720,
                       height: int = 300) -> str:
    """The evaluations against training samples as an SVG chart (95% intervals shaded)."""
    xs = columns.get("samples") or []
    series = [(c, lo, hi, label, colour) for c, lo, hi, label, colour in CURVES
              if c in columns and any(v is not None for v in columns[c])]
    if not xs or not series:
        return '<p class="muted">eval.csv holds no evaluations to draw.</p>'
    left, right, top, bottom = 58, 16, 14, 40
    values = [v for c, lo, hi, _, _ in series for k in (c, lo, hi)
              for v in columns.get(k, []) if v is not None]
    y0, y1 = min(values + [0.0]), max(values + [0.0])
    if y1 - y0 < 1e-9:
        y1 = y0 + 1
    pad = (y1 - y0) * 0.06
    y0, y1 = y0 - pad, y1 + pad
    xv = [x for x in xs if x is not None]
    x0, x1 = min(xv), max(xv)
    if x1 - x0 < 1e-9:
        x1 = x0 + 1

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def sy(y: float) -> float:
        return top + (y1 - y) / (y1 - y0) * (height - top - bottom)

    parts = [f'<svg class="chart" id="learning-curve" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" '
             'aria-label="learning curve" xmlns="http://www.w3.org/2000/svg">']
    for k in range(5):
        y = y0 + (y1 - y0) * k / 4
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{sy(y):.1f}" '
                     f'y2="{sy(y):.1f}" stroke="#ddd"/><text x="{left - 6}" y="{sy(y) + 4:.1f}" '
                     f'font-size="11" text-anchor="end">{y:.2f}</text>')
    parts.append(f'<line x1="{left}" x2="{width - right}" y1="{sy(0):.1f}" y2="{sy(0):.1f}" '
                 'stroke="#888"/>')
    for k in range(5):
        x = x0 + (x1 - x0) * k / 4
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" font-size="11" '
                     f'text-anchor="middle">{x / 1e6:.1f}M</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 6}" font-size="12" '
                 'text-anchor="middle">training samples</text>')
    for i, (c, lo, hi, label, colour) in enumerate(series):
        pts = [(x, v) for x, v in zip(xs, columns[c], strict=False)
               if x is not None and v is not None]
        band = [(x, a, b) for x, a, b in zip(xs, columns.get(lo, []), columns.get(hi, []),
                                             strict=False)
                if x is not None and a is not None and b is not None]
        if len(band) >= 2:
            ring = [f"{sx(x):.1f},{sy(b):.1f}" for x, _, b in band] + \
                   [f"{sx(x):.1f},{sy(a):.1f}" for x, a, _ in reversed(band)]
            parts.append(f'<polygon points="{" ".join(ring)}" fill="{colour}" '
                         'fill-opacity="0.15"/>')
        line = " ".join(f"{sx(x):.1f},{sy(v):.1f}" for x, v in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" '
                     f'stroke-width="2" data-series="{c}" data-points="{len(pts)}"/>')
        parts.append(f'<text x="{left + 8}" y="{top + 14 + 15 * i}" font-size="12" '
                     f'fill="{colour}">{esc(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["CURVES", "report_html", "read_eval_csv", "learning_curve_svg"]
