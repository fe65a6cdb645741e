"""Text rendering of a table (``render_mode="ansi"`` / ``"human"``)."""

from __future__ import annotations

from . import engine as E
from .cards import card_name, iter_cards


def cards_text(mask: int, deck_style: str = "dragon") -> str:
    """Cards, one after another: codes apart by spaces, Tarokka names (several words each)
    by commas; ``-`` for none."""
    names = [card_name(c, deck_style) for c in iter_cards(mask)]
    return (", " if deck_style == "tarokka" else " ").join(names) or "-"


def visible_turn(s: E.State, viewer: int | None) -> tuple[str, int]:
    """``(phase, seat to act)`` as ``viewer`` may see them (``None``: a spectator sees all).
    R12: an out-of-turn offer shows only to the offered player; the others see the turn."""
    if s.phase == E.COMPLETE and viewer is not None and viewer != s.current:
        return "play", s.turn
    return s.phase_name, s.current


def seat_tags(s: E.State, q: int, egg_known: bool) -> list[str]:
    """Public tags of seat ``q`` (the Egg only where the viewer knows where it is, R19)."""
    tags = []
    if q == s.dragon:
        tags.append("Dragon")
    if q == s.victim:
        tags.append("pays tribute")
    if egg_known and q == s.egg_holder and s.phase != E.DONE:
        tags.append("holds the Egg")
    if q in s.finish and s.phase != E.DONE:
        tags.append(f"out #{s.finish.index(q) + 1}")
    if s.passed >> q & 1:
        tags.append("passed")
    if s.locked >> q & 1 and s.phase != E.DONE:
        tags.append("locked out")
    return tags


def render_text(s: E.State, names: list[str], viewer: int | None = None,
                deck_style: str = "dragon") -> str:
    """A readable table. ``viewer`` is a seat whose own hand is shown (others: sizes only);
    ``None`` is a spectator view with every hand."""
    phase, acting = visible_turn(s, viewer)
    lines = [f"Dragon's Egg: round {min(s.round_idx + 1, s.config.num_rounds)}/"
             f"{s.config.num_rounds}, phase {phase}"
             + (f", to act: {names[acting]}" if acting >= 0 else "")]
    egg_known = viewer is None or bool(s.egg_known >> viewer & 1)
    for q in range(s.n):
        tags = seat_tags(s, q, egg_known)
        marker = ">" if q == acting else " "
        size = s.hands[q].bit_count()
        shown = cards_text(s.hands[q], deck_style) if viewer is None or viewer == q else "(hidden)"
        lines.append(f"{marker} {names[q]:<10} {size:>2} cards  score {s.scores[q]:+.2f}  "
                     f"{'[' + ', '.join(tags) + ']' if tags else ''}")
        lines.append(f"    {shown}")
    if s.plays:
        pile = " | ".join(f"{names[p]}: {cards_text(c, deck_style)}" for p, c in s.plays)
    else:
        pile = "(empty)"
    lines.append(f"  pile: {pile}")
    if s.results:
        last = s.results[-1]
        lines.append("  last round: " + " > ".join(names[q] for q in last.order)
                     + (" (deadlock)" if last.deadlock else ""))
    return "\n".join(lines)
