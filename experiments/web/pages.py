"""The HTML of the web pages: one shell (the three pages' navigation, the style, the
colours), the replay viewer page (also written as one self-contained file by
``dragons-egg replay FILE --html OUT.html``) and the small markup helpers the pages share.

Every page carries its script and style inline (read from this package's ``static/``), so a
page works with networking off and a single-file replay needs nothing beside it. The colours
are those of :mod:`dragons_egg_env.render_image`, written as CSS variables
(:func:`palette_css`), so the browser draws the suits and the Dragon and Egg cards as the
image renderer does.
"""

from __future__ import annotations

import html
import json
from functools import cache
from importlib import resources
from typing import Any

from dragons_egg_env import render_image as R
from dragons_egg_env.cards import SUITS

#: The pages of the navigation bar: path, title.
NAV = (("/replays", "Replays"), ("/play", "Play"), ("/runs", "Runs"))


def _rgb(c: tuple[int, ...]) -> str:
    return f"rgb({c[0]}, {c[1]}, {c[2]})"


def palette_css() -> str:
    """The colours of :mod:`dragons_egg_env.render_image` as CSS custom properties: per suit
    its colour, the tint of its face, its number and its label ink (as ``_Painter.card``
    mixes them), the dragon and Egg cards' fill and ink, the felt, the seat tags."""
    out: dict[str, tuple[int, ...]] = {
           "bg": R.BG, "ink": R.INK, "muted": R.MUTED, "felt": R.FELT, "felt-edge": R.FELT_EDGE,
           "felt-ink": R.FELT_INK, "seat-bg": R.SEAT_BG, "seat-edge": R.SEAT_EDGE,
           "act-edge": R.ACT_EDGE, "panel-bg": R.PANEL_BG, "panel-edge": R.PANEL_EDGE,
           "dragon-fill": R.DRAGON_FILL, "dragon-ink": R.DRAGON_INK, "egg-fill": R.EGG_FILL,
           "egg-edge": R.EGG_EDGE, "egg-shell": R.EGG_SHELL, "egg-stroke": (150, 110, 30)}
    for suit, colour in zip(SUITS, R.SUIT_COLOURS, strict=True):
        out[f"suit-{suit}"] = colour
        out[f"suit-{suit}-tint"] = tuple(int(c + (255 - c) * 0.84) for c in colour)
        out[f"suit-{suit}-num"] = tuple(int(c * 0.8) for c in colour)
        out[f"suit-{suit}-ink"] = tuple(int(c * 0.7) for c in colour)
    tags = {"dragon": "Dragon", "payer": "pays tribute", "egg": "holds the Egg", "out": "out",
            "passed": "passed", "locked": "locked out"}
    for key, tag in tags.items():
        out[f"tag-{key}"] = R.TAG_COLOURS[tag]
    body = "".join(f"--{k}: {_rgb(v)}; " for k, v in out.items())
    return f":root {{ {body}}}"


@cache
def static_text(name: str) -> str:
    """A file of this package's ``static/`` folder (``viewer.js``, ``play.js``,
    ``style.css``)."""
    return (resources.files("dragons_egg.experiments.web") / "static" / name).read_text(
        encoding="utf-8")


def script_json(data: Any) -> str:
    """``data`` as JSON safe inside a ``<script>`` element (no ``</`` in it)."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/")


def esc(text: object) -> str:
    """Text escaped for HTML."""
    return html.escape(str(text), quote=True)


def shell(title: str, body: str, *, here: str | None = None, scripts: tuple[str, ...] = (),
          nav: bool = True) -> str:
    """A whole page: the navigation (``here``: the current page's path), the style and the
    colours inline, ``body``, then the named static scripts inline."""
    here_cls = ' class="here"'
    links = "".join(f'<a href="{path}"{here_cls if path == here else ""}>{name}</a>'
                    for path, name in NAV) if nav else ""
    js = "".join(f"<script>{static_text(s)}</script>" for s in scripts)
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{esc(title)}</title><style>{palette_css()}\n{static_text('style.css')}"
        "</style></head><body>"
        f"<header class=\"top\"><span class=\"brand\">Dragon's Egg</span><nav>{links}</nav>"
        f"</header><main>{body}</main>{js}</body></html>\n")


def viewer_page(frames: dict[str, Any], title: str, *, nav: bool = True,
                back: str | None = None) -> str:
    """The replay viewer with its frames inline (the server's replay page, and the
    single-file replay with ``nav=False``)."""
    meta = frames["meta"]
    back_link = f'<p><a href="{esc(back)}">&larr; back</a></p>' if back else ""
    scores = ", ".join(f"{name} {score}" for name, score in zip(meta["names"], meta["scores"],
                                                                strict=False))
    final = " ".join(meta["scores"])
    body = (f"{back_link}<h1>{esc(title)}</h1>"
            f"<p class=\"muted\" id=\"final-scores\" data-scores=\"{esc(final)}\">"
            f"{meta['num_players']} players, {meta['num_rounds']} rounds, seed {meta['seed']}; "
            f"final scores (the replay's): {esc(scores) or '-'}</p>"
            "<div id=\"viewer\"></div>"
            f"<script id=\"replay-data\" type=\"application/json\">{script_json(frames)}"
            "</script>")
    start = ("<script>DE.startReplay(document.getElementById('viewer'), JSON.parse("
             "document.getElementById('replay-data').textContent));</script>")
    page = shell(title, body, here="/replays", scripts=("viewer.js",), nav=nav)
    return page.replace("</body>", start + "</body>")


def error_page(title: str, message: str, *, here: str | None = None,
               back: str | None = None) -> str:
    """A page that shows an error (a replay the checker rejects: its message, never a
    drawing)."""
    back_link = f'<p><a href="{esc(back)}">&larr; back</a></p>' if back else ""
    return shell(title, f"{back_link}<h1>{esc(title)}</h1>"
                 f"<div class=\"replay-error\" id=\"error\">{esc(message)}</div>", here=here)


def table(headers: list[str], rows: list[list[str]], *, cls: str = "list",
          numeric: tuple[int, ...] = ()) -> str:
    """An HTML table; cells are HTML already (escape text with :func:`esc`)."""
    num = ' class="num"'

    def cell(tag: str, i: int, x: str) -> str:
        return f"<{tag}{num if i in numeric else ''}>{x}</{tag}>"
    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(cell("td", i, x) for i, x in enumerate(r)) + "</tr>"
                   for r in rows)
    return f'<table class="{cls}"><tr>{head}</tr>{body}</table>'


__all__ = ["NAV", "palette_css", "static_text", "script_json", "esc", "shell", "viewer_page",
           "error_page", "table"]
