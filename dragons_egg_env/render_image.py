"""Image rendering of a table (``render_mode="rgb_array"``, :mod:`dragons_egg.experiments.cli.gif`).

:func:`render_rgb` draws the table as an RGB ``numpy.uint8`` array of shape ``(H, W, 3)`` with
Pillow: the seats around a table (name, hand size, score and tags), the viewer's hand (or every
hand in the spectator view), the plays on the pile oldest first, the phase and the round. It
shows exactly what :func:`dragons_egg_env.render.render_text` shows: a viewer sees its own hand
only, the Egg's holder only where it knows it (R19), an R12 completion offer only when it is the
offered player, and the tribute exchange only when it is one of the two tribute players (R34).

Pillow is an optional dependency (``pip install 'dragons-egg[render]'``) imported only when an
image is drawn, so this module imports without it. The output is deterministic: the same state,
viewer and deck style always give the same pixels, and the image size depends only on the table
size, the ``tribute_asks`` setting and whether there is a viewer, so every frame of one match has
the same shape.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import engine as E
from .cards import (
    DECK_STYLES,
    EGG,
    NUM_CARDS,
    SUIT_NAMES,
    TAROKKA_SUITS,
    card_name,
    card_number,
    iter_cards,
)
from .extras import explain
from .render import seat_tags, visible_turn

# -- colours ---------------------------------------------------------------------------------
#: An RGB colour.
RGB = tuple[int, ...]

BG = (236, 232, 222)
INK = (30, 30, 34)
MUTED = (110, 110, 118)
FELT = (38, 110, 70)
FELT_EDGE = (24, 74, 46)
FELT_INK = (236, 244, 236)
SEAT_BG = (250, 249, 245)
SEAT_EDGE = (150, 146, 136)
ACT_EDGE = (214, 40, 40)
PANEL_BG = (246, 243, 236)
PANEL_EDGE = (200, 194, 182)

#: Suit colours, in card order Earth, Water, Fire, Lightning.
SUIT_COLOURS = ((128, 86, 40), (28, 98, 196), (204, 42, 38), (206, 156, 0))
DRAGON_FILL = (48, 26, 66)
DRAGON_INK = (244, 204, 92)
EGG_FILL = (252, 247, 228)
EGG_EDGE = (0, 140, 130)
EGG_SHELL = (238, 214, 150)

TAG_COLOURS = {
    "Dragon": (112, 48, 160),
    "pays tribute": (222, 112, 16),
    "holds the Egg": (0, 140, 130),
    "out": (40, 136, 60),
    "passed": (128, 128, 128),
    "locked out": (72, 72, 80),
    "to act": ACT_EDGE,
}

# -- layout (pixels) ---------------------------------------------------------------------
W = 960
MARGIN = 16
HEADER_H = 46
SEAT_W, SEAT_H = 188, 86
RX, RY = 334, 142
TABLE_H = 2 * RY + SEAT_H + 26
CARD_W, CARD_H, CARD_GAP = 44, 60, 4
PILE_GAP = 20            # between two plays on the pile
LABEL_W = 124            # name column of the spectator's hand rows
SECTION_TITLE_H = 24
PILE_ROWS = 2
PILE_ROW_H = CARD_H + 20
FOOTER_H = 54


def _hand_capacity(s: E.State) -> int:
    """Most cards one hand can hold in this match (a deal plus the tribute's hits)."""
    return min(NUM_CARDS, -(-NUM_CARDS // s.n) + s.config.tribute_asks)


def _per_row(width: int, card_w: int, gap: int) -> int:
    return max(1, (width + gap) // (card_w + gap))


def _card_lines(card: int, deck_style: str) -> tuple[str, list[str]]:
    """Big text and small label lines on the face of a card."""
    if card == EGG:
        return "", [card_name(card, deck_style).title()]
    if card >= 40:
        return "", [card_name(card, deck_style).title()]
    number, suit = card_number(card), card % 4
    if deck_style == "tarokka":
        if number == 10:
            return "10", ["Master of", TAROKKA_SUITS[suit]]
        return str(number), [TAROKKA_SUITS[suit]]
    return str(number), [SUIT_NAMES[suit]]


class _Painter:
    """Pillow drawing helpers with a font cache (built inside :func:`render_rgb`)."""

    _fonts: dict[int, Any] = {}

    def __init__(self, image_font: Any, draw: Any) -> None:
        self.IF = image_font
        self.d = draw

    def font(self, size: int) -> Any:
        f = self._fonts.get(size)
        if f is None:
            try:
                f = self.IF.load_default(size=size)  # Pillow >= 10.1 with FreeType
            except (TypeError, AttributeError, OSError, ImportError):
                f = self.IF.load_default()
            self._fonts[size] = f
        return f

    def width(self, text: str, size: int) -> float:
        return float(self.d.textlength(text, font=self.font(size)))

    def fit(self, text: str, size: int, max_w: float, min_size: int = 6) -> int:
        while size > min_size and self.width(text, size) > max_w:
            size -= 1
        return size

    def text(self, xy: tuple[float, float], text: str, size: int, fill: RGB = INK,
             anchor: str = "la") -> None:
        self.d.text(xy, text, font=self.font(size), fill=fill, anchor=anchor)

    def clipped(self, xy: tuple[float, float], text: str, size: int, max_w: float,
                fill: RGB = INK, anchor: str = "la") -> None:
        """Text shrunk to fit ``max_w`` (down to 8 px), then cut with "..." if still wider."""
        size = self.fit(text, size, max_w, min_size=8)
        if self.width(text, size) > max_w:
            while text and self.width(text + "...", size) > max_w:
                text = text[:-1]
            text += "..."
        self.text(xy, text, size, fill, anchor)

    def pill(self, x: float, y: float, label: str, colour: tuple[int, int, int],
             size: int = 11) -> float:
        """A rounded tag at (x, y); returns its width."""
        w = self.width(label, size) + 12
        self.d.rounded_rectangle((x, y, x + w, y + 16), radius=8, fill=colour)
        self.text((x + w / 2, y + 8), label, size, fill=(255, 255, 255), anchor="mm")
        return w

    def card(self, x: float, y: float, card: int, deck_style: str, w: int = CARD_W,
             h: int = CARD_H) -> None:
        d = self.d
        big, lines = _card_lines(card, deck_style)
        box = (x, y, x + w - 1, y + h - 1)
        small = 9 if w >= CARD_W else 8
        ink: RGB
        if card == EGG:
            d.rounded_rectangle(box, radius=5, fill=EGG_FILL, outline=EGG_EDGE, width=3)
            cx, top = x + w / 2, y + 6
            ew, eh = w * 0.42, h * 0.42
            d.ellipse((cx - ew / 2, top, cx + ew / 2, top + eh), fill=EGG_SHELL,
                      outline=(150, 110, 30), width=2)
            ink = EGG_EDGE
        elif card >= 40:
            d.rounded_rectangle(box, radius=5, fill=DRAGON_FILL, outline=DRAGON_INK, width=2)
            cx, top = x + w / 2, y + 6
            s = h * 0.2
            # a gold flame: a diamond with a notch
            d.polygon([(cx, top), (cx + s * 0.8, top + s * 1.2), (cx, top + s * 2.1),
                       (cx - s * 0.8, top + s * 1.2)], fill=DRAGON_INK)
            d.polygon([(cx, top + s * 0.9), (cx + s * 0.3, top + s * 1.4), (cx, top + s * 1.8),
                       (cx - s * 0.3, top + s * 1.4)], fill=DRAGON_FILL)
            ink = DRAGON_INK
        else:
            colour = SUIT_COLOURS[card % 4]
            tint = tuple(int(c + (255 - c) * 0.84) for c in colour)
            d.rounded_rectangle(box, radius=5, fill=tint, outline=colour, width=2)
            d.rounded_rectangle((x, y, x + w - 1, y + 8), radius=5, fill=colour)
            d.rectangle((x, y + 5, x + w - 1, y + 8), fill=colour)
            self.text((x + w / 2, y + h * (0.42 if len(lines) == 1 else 0.36)), big,
                      22 if w >= CARD_W else 17,
                      fill=tuple(int(c * 0.8) for c in colour), anchor="mm")
            ink = tuple(int(c * 0.7) for c in colour)
        n = len(lines)
        for k, line in enumerate(lines):
            cy = y + h - 7 - (n - 1 - k) * (small + 2)
            size = self.fit(line, small, w - 4)
            self.text((x + w / 2, cy), line, size, fill=ink, anchor="mb")


def _resolve_viewer(viewer: int | str | None, names: Sequence[str], n: int) -> int | None:
    if viewer is None:
        return None
    if isinstance(viewer, str):
        if viewer not in names:
            raise ValueError(f"unknown viewer {viewer!r}: expected one of {list(names)} or None")
        return list(names).index(viewer)
    if isinstance(viewer, bool) or not isinstance(viewer, (int, np.integer)) \
            or not 0 <= int(viewer) < n:
        raise ValueError(f"viewer must be a seat 0..{n - 1}, an agent name or None, "
                         f"got {viewer!r}")
    return int(viewer)


def image_size(s: E.State, viewer: int | None) -> tuple[int, int]:
    """``(height, width)`` of the image :func:`render_rgb` draws for this match and viewer."""
    return _layout(s, viewer)["H"], W


def _layout(s: E.State, viewer: int | None) -> dict[str, int]:
    cap = _hand_capacity(s)
    if viewer is None:
        per = _per_row(W - 2 * MARGIN - LABEL_W, CARD_W, CARD_GAP)
        rows = -(-cap // per)
        hands_h = SECTION_TITLE_H + s.n * (rows * (CARD_H + CARD_GAP) + 8)
    else:
        per = _per_row(W - 2 * MARGIN, CARD_W, CARD_GAP)
        rows = -(-cap // per)
        hands_h = SECTION_TITLE_H + rows * (CARD_H + CARD_GAP) + 8
    pile_h = SECTION_TITLE_H + PILE_ROWS * PILE_ROW_H + 6
    y_table = HEADER_H
    y_pile = y_table + TABLE_H
    y_hands = y_pile + pile_h + 8
    y_footer = y_hands + hands_h + 8
    return {"per": per, "rows": rows, "y_table": y_table, "y_pile": y_pile,
            "y_hands": y_hands, "y_footer": y_footer, "H": y_footer + FOOTER_H}


@dataclass(frozen=True)
class _View:
    """One picture's drawing context: the painter, the state, who looks at it and what that
    viewer may know (as :func:`dragons_egg_env.render.render_text`)."""

    p: _Painter
    s: E.State
    names: Sequence[str]
    #: The viewer's seat, or ``None`` for the spectator view.
    seat: int | None
    deck_style: str
    #: Row count, cards per row and section tops (:func:`_layout`).
    lay: dict[str, int]
    #: The phase name and the acting seat as the viewer sees them (:func:`visible_turn`).
    phase: str
    acting: int
    #: Whether the viewer knows who holds the Egg (R19).
    egg_known: bool
    #: Whether the viewer may see the tribute exchange (R34).
    party: bool
    #: The round shown, 1-based.
    rnd: int


def render_rgb(state: E.State, names: Sequence[str], viewer: int | str | None = None,
               deck_style: str = "dragon") -> npt.NDArray[np.uint8]:
    """The table as an RGB image, a ``numpy.uint8`` array of shape ``(H, W, 3)``.

    ``viewer`` is a seat (or an agent name from ``names``) whose own hand is shown, with only
    what that player may know; ``None`` is the spectator view with every hand. ``deck_style``
    is ``"dragon"`` or ``"tarokka"`` (R2) for the card names.
    """
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as exc:  # a MissingExtraError naming the render extra
        raise explain(exc, "drawing the table (render_rgb)", "render") from None
    if deck_style not in DECK_STYLES:
        raise ValueError(f"deck_style must be one of {', '.join(map(repr, DECK_STYLES))}, "
                         f"got {deck_style!r}")
    s = state
    if len(names) != s.n:
        raise ValueError(f"names has {len(names)} entries; the table has {s.n} seats")
    seat = _resolve_viewer(viewer, names, s.n)
    lay = _layout(s, seat)
    img = Image.new("RGB", (W, lay["H"]), BG)
    phase, acting = visible_turn(s, seat)
    v = _View(p=_Painter(ImageFont, ImageDraw.Draw(img)), s=s, names=names, seat=seat,
              deck_style=deck_style, lay=lay, phase=phase, acting=acting,
              egg_known=seat is None or bool(s.egg_known >> seat & 1),
              party=seat is None or seat in (s.dragon, s.victim),
              rnd=min(s.round_idx + 1, s.config.num_rounds))
    _draw_header(v)
    _draw_table(v)
    _draw_pile(v)
    _draw_hands(v)
    _draw_footer(v)
    return np.asarray(img, dtype=np.uint8).copy()


def _plural(count: int, word: str) -> str:
    """``"1 card"``, ``"2 cards"``."""
    return f"{count} {word}{'s' if count != 1 else ''}"


def _cards_text(mask: int, deck_style: str) -> str:
    """The cards of ``mask`` by name, comma-separated ("" for none)."""
    return ", ".join(card_name(c, deck_style) for c in iter_cards(mask))


# -- header ------------------------------------------------------------------------------
def _draw_header(v: _View) -> None:
    """The title bar: the round, the phase, who is to act and whose view this is."""
    p, mid = v.p, (HEADER_H - 6) / 2
    p.d.rectangle((0, 0, W, HEADER_H - 6), fill=(52, 40, 64))
    p.text((MARGIN, mid), "Dragon's Egg", 20, fill=DRAGON_INK, anchor="lm")
    info = f"round {v.rnd}/{v.s.config.num_rounds}   phase: {v.phase}"
    if v.acting >= 0:
        info += f"   to act: {v.names[v.acting]}"
    p.text((MARGIN + 150, mid), info, 15, fill=(240, 236, 246), anchor="lm")
    who = "spectator view" if v.seat is None else f"view of {v.names[v.seat]}"
    p.text((W - MARGIN, mid), f"{who} · {v.deck_style} deck", 12, fill=(200, 190, 214),
           anchor="rm")


# -- the table -----------------------------------------------------------------------------
def _draw_table(v: _View) -> None:
    """The felt with the round's status in its middle, and the seats around it (the viewer's
    seat at the bottom)."""
    cx, cy = W / 2, v.lay["y_table"] + TABLE_H / 2
    v.p.d.ellipse((cx - RX + 40, cy - RY + 24, cx + RX - 40, cy + RY - 24), fill=FELT,
                  outline=FELT_EDGE, width=6)
    centre = _centre_lines(v)
    y0 = cy - (len(centre) - 1) * 10
    for k, line in enumerate(centre):
        v.p.clipped((cx, y0 + k * 20), line, 17 if k == 0 else 14, 400,
                    fill=FELT_INK if k else (255, 236, 150), anchor="mm")
    bottom = 0 if v.seat is None else v.seat
    n = v.s.n
    for q in range(n):
        theta = 2 * math.pi * ((q - bottom) % n) / n
        _draw_seat(v, q, cx - RX * math.sin(theta), cy + RY * math.cos(theta))


_PHASE_TITLES = {"play": "Play", "complete": "Completion offer (R12)",
                 "give": "Tribute: the Dragon gives back", "deal": "Dealing",
                 "done": "Match over"}


def _centre_lines(v: _View) -> list[str]:
    """The text in the middle of the table: the round, the phase, then the tribute exchange
    (for its two players only), the winners, the top of the pile or an empty pile."""
    s, phase = v.s, v.phase
    lines = [f"Round {v.rnd} of {s.config.num_rounds}"]
    if phase == "ask":
        lines.append(f"Tribute: the Dragon asks ({_plural(s.asks_left, 'ask')} left)"
                     if v.party else "Tribute: the Dragon asks")
    else:
        lines.append(_PHASE_TITLES[phase])
    if phase in ("ask", "give"):
        if v.party:  # R34: the exchange is private to the two players
            asked, hits, given = (_cards_text(m, v.deck_style) or "-"
                                  for m in (s.asked, s.hits, s.given))
            lines.append(f"asked: {asked}")
            lines.append(f"received: {hits}; given back: {given}")
    elif s.phase == E.DONE:
        best = max(s.scores)
        top = [v.names[q] for q in range(s.n) if s.scores[q] == best]
        lines.append(f"{'winner' if len(top) == 1 else 'winners'}: {', '.join(top)} "
                     f"({best:+.2f})")
    elif s.plays:
        q, top_cards = s.plays[-1]
        lines.append(f"top: {v.names[q]} - " + _cards_text(top_cards, v.deck_style))
    else:
        lines.append("the pile is empty")
    return lines


def _draw_seat(v: _View, q: int, sx: float, sy: float) -> None:
    """Seat ``q``'s box centred at (sx, sy): name, hand size, score and tags."""
    p, s = v.p, v.s
    x0, y0 = sx - SEAT_W / 2, sy - SEAT_H / 2
    is_acting = q == v.acting
    p.d.rounded_rectangle((x0, y0, x0 + SEAT_W, y0 + SEAT_H), radius=8, fill=SEAT_BG,
                          outline=ACT_EDGE if is_acting else SEAT_EDGE,
                          width=4 if is_acting else 2)
    p.clipped((x0 + 10, y0 + 8), v.names[q] + ("  (you)" if q == v.seat else ""), 15,
              SEAT_W - 20)
    p.text((x0 + 10, y0 + 28), _plural(s.hands[q].bit_count(), "card"), 12, fill=MUTED)
    p.text((x0 + SEAT_W - 10, y0 + 28), f"score {s.scores[q]:+.2f}", 12, fill=MUTED,
           anchor="ra")
    tx, ty = x0 + 8, y0 + 48
    for tag in seat_tags(s, q, v.egg_known) + (["to act"] if is_acting else []):
        colour = TAG_COLOURS["out" if tag.startswith("out #") else tag]
        w = p.width(tag, 11) + 12
        if tx + w > x0 + SEAT_W - 6:  # wrap onto the next line of tags
            tx, ty = x0 + 8, ty + 18
        tx += p.pill(tx, ty, tag, colour) + 4


# -- the pile, oldest first ------------------------------------------------------------------
#: One play laid out on the pile: (seat, its cards, the width it takes).
_PileItem = tuple[int, list[int], float]


def _flow_pile(v: _View, plays: list[tuple[int, list[int]]],
               lead: float) -> list[list[_PileItem]]:
    """``plays`` laid out left to right in rows of the pile panel, the first row starting
    ``lead`` pixels in."""
    rows: list[list[_PileItem]] = [[]]
    x = MARGIN + lead
    for q, cs in plays:
        w = max(len(cs) * (CARD_W + CARD_GAP) - CARD_GAP, v.p.width(v.names[q], 11))
        if x + w > W - MARGIN and rows[-1]:
            rows.append([])
            x = MARGIN
        rows[-1].append((q, cs, w))
        x += w + PILE_GAP
    return rows


def _pile_rows(v: _View) -> tuple[list[list[_PileItem]], int]:
    """The rows of plays that fit the panel and how many of the oldest plays are left out
    (they show as a count)."""
    plays = [(q, list(iter_cards(c))) for q, c in v.s.plays]
    skipped = 0
    rows = _flow_pile(v, plays, 0)
    while len(rows) > PILE_ROWS:  # show the newest plays, with a count of the hidden ones
        skipped += 1
        rows = _flow_pile(v, plays[skipped:], 96)
    return rows, skipped


def _draw_pile(v: _View) -> None:
    """The pile panel: every play on the pile, oldest first, each with its player's name."""
    p, y = v.p, v.lay["y_pile"]
    p.d.rounded_rectangle((MARGIN / 2, y, W - MARGIN / 2, v.lay["y_hands"] - 8), radius=8,
                          fill=PANEL_BG, outline=PANEL_EDGE)
    count = len(v.s.plays)
    p.text((MARGIN, y + 6), "Pile (oldest to newest)"
           + (f": {_plural(count, 'play')}" if count else ": empty"), 13)
    rows, skipped = _pile_rows(v)
    for r, row in enumerate(rows):
        x: float = MARGIN
        ry = y + SECTION_TITLE_H + r * PILE_ROW_H
        if r == 0 and skipped:
            p.text((x, ry + CARD_H / 2), f"+{skipped} earlier", 12, fill=MUTED, anchor="lm")
            x += 96
        for k, (q, cs, w) in enumerate(row):
            for j, c in enumerate(cs):
                p.card(x + j * (CARD_W + CARD_GAP), ry, c, v.deck_style)
            last = r == len(rows) - 1 and k == len(row) - 1
            p.text((x, ry + CARD_H + 3), v.names[q], 11, fill=INK if last else MUTED)
            x += w + PILE_GAP
            if not last:
                p.text((x - PILE_GAP / 2, ry + CARD_H / 2), ">", 13, fill=MUTED, anchor="mm")


# -- hands -----------------------------------------------------------------------------------
def _draw_hands(v: _View) -> None:
    """Every hand, one per row, in the spectator view; the viewer's own hand otherwise."""
    p, y, s = v.p, v.lay["y_hands"], v.s
    if v.seat is not None:
        p.text((MARGIN, y + 4), f"Hand of {v.names[v.seat]} "
               f"({_plural(s.hands[v.seat].bit_count(), 'card')})", 13)
        _draw_hand_cards(v, MARGIN, y + SECTION_TITLE_H, s.hands[v.seat])
        return
    p.text((MARGIN, y + 4), "Hands", 13)
    top = y + SECTION_TITLE_H
    row_h = v.lay["rows"] * (CARD_H + CARD_GAP) + 8
    for q in range(s.n):
        if q:
            p.d.line((MARGIN, top - 5, W - MARGIN, top - 5), fill=PANEL_EDGE, width=1)
        p.clipped((MARGIN, top + 6), v.names[q], 13, LABEL_W - 10,
                  fill=ACT_EDGE if q == v.acting else INK)
        p.text((MARGIN, top + 24), _plural(s.hands[q].bit_count(), "card"), 11, fill=MUTED)
        _draw_hand_cards(v, MARGIN + LABEL_W, top, s.hands[q])
        top += row_h


def _draw_hand_cards(v: _View, x: float, top: float, hand: int) -> None:
    """The cards of ``hand`` in rows of ``lay["per"]`` from (x, top), or "(no cards)"."""
    per = v.lay["per"]
    cards = list(iter_cards(hand))
    cap = per * v.lay["rows"]
    if len(cards) > cap:  # cannot happen within the rules; keep the shape anyway
        cards = cards[:cap - 1]
    for k, c in enumerate(cards):
        r, i = divmod(k, per)
        v.p.card(x + i * (CARD_W + CARD_GAP), top + r * (CARD_H + CARD_GAP), c, v.deck_style)
    if not cards:
        v.p.text((x, top + CARD_H / 2), "(no cards)", 12, fill=MUTED, anchor="lm")


# -- footer: legend and the last round -------------------------------------------------------
def _draw_footer(v: _View) -> None:
    """A rule, the colour legend and the result of the last round played."""
    p, y, s = v.p, v.lay["y_footer"], v.s
    p.d.line((MARGIN, y, W - MARGIN, y), fill=PANEL_EDGE, width=1)
    _draw_legend(v, y)
    if s.results:
        last = s.results[-1]
        text = (f"last round ({last.round + 1}): "
                + " > ".join(v.names[q] for q in last.order)
                + ("  (deadlock)" if last.deadlock else "")
                + f"   - Dragon {v.names[last.dragon]}, Egg {v.names[last.egg]}")
        p.clipped((MARGIN, y + 38), text, 12, W - 2 * MARGIN, fill=MUTED, anchor="lm")


def _draw_legend(v: _View, y: float) -> None:
    """One swatch and label per suit, then the dragon cards and the Egg."""
    p, d = v.p, v.p.d
    x: float = MARGIN
    for k, colour in enumerate(SUIT_COLOURS):
        label = SUIT_NAMES[k] if v.deck_style == "dragon" \
            else f"{TAROKKA_SUITS[k]} ({SUIT_NAMES[k]})"
        d.rounded_rectangle((x, y + 9, x + 14, y + 23), radius=3, fill=colour)
        p.text((x + 19, y + 16), label, 11, anchor="lm")
        x += 19 + p.width(label, 11) + 16
    d.rounded_rectangle((x, y + 9, x + 14, y + 23), radius=3, fill=DRAGON_FILL,
                        outline=DRAGON_INK)
    p.text((x + 19, y + 16), "dragon card", 11, anchor="lm")
    x += 19 + p.width("dragon card", 11) + 16
    d.rounded_rectangle((x, y + 9, x + 14, y + 23), radius=3, fill=EGG_SHELL, outline=EGG_EDGE,
                        width=2)
    p.text((x + 19, y + 16), card_name(EGG, v.deck_style).title(), 11, anchor="lm")


__all__ = ["render_rgb", "image_size", "SUIT_COLOURS"]
