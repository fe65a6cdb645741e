"""The action table: one ``Discrete(NUM_ACTIONS)`` space shared by every agent.

| range   | action                  | meaning                                                    |
|---------|-------------------------|------------------------------------------------------------|
| 0       | ``PASS``                | pass; decline an offered completion; stop asking (tribute) |
| 1..40   | ``play(number, count)`` | play ``count`` cards of ``number`` (completing a set too)  |
| 41..44  | ``play_dragons(count)`` | play ``count`` dragon cards                                |
| 45..88  | ``ask(card)``           | the Dragon asks for a card (numbered or dragon, never Egg) |
| 89..133 | ``give(card)``          | the Dragon gives a card back                               |

The layout is built here and ``ACTION_RANGES`` is the table the docs are generated from.
``play(number, count)`` sits at bit ``(number - 1) * 4 + count`` so that the plays a hand
allows line up with the card bits of that hand shifted left by one.
"""

from __future__ import annotations

from .cards import CARD_CODES, EGG, card_index

PASS = 0
PLAY_BASE = 1
DRAGON_BASE = 41
ASK_BASE = 45
GIVE_BASE = 89
NUM_ACTIONS = 134

#: (first, last, name, meaning) of each block of actions; the docs table is generated from it.
ACTION_RANGES: tuple[tuple[int, int, str, str], ...] = (
    (PASS, PASS, "PASS", "pass; decline an offered completion (R12); stop asking (R31)"),
    (PLAY_BASE, DRAGON_BASE - 1, "play(number, count)",
     "play count 1..4 cards of one number 1..10 (R7..R9), completing a set too (R11)"),
    (DRAGON_BASE, ASK_BASE - 1, "play_dragons(count)", "play count dragon cards (R15, R16)"),
    (ASK_BASE, GIVE_BASE - 1, "ask(card)", "the Dragon asks for a card, never the Egg (R31)"),
    (GIVE_BASE, NUM_ACTIONS - 1, "give(card)", "the Dragon gives a card back (R33)"),
)


def play(number: int, count: int) -> int:
    """Action that plays ``count`` (1..4) cards of ``number`` (1..10)."""
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 10:
        raise ValueError(f"number must be 1..10, got {number!r}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 4:
        raise ValueError(f"count must be 1..4, got {count!r}")
    return PLAY_BASE + (number - 1) * 4 + (count - 1)


def play_dragons(count: int = 1) -> int:
    """Action that plays ``count`` (1..4) dragon cards."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 4:
        raise ValueError(f"count must be 1..4, got {count!r}")
    return DRAGON_BASE + count - 1


def ask(card: str | int) -> int:
    """Action by which the Dragon asks for ``card`` (a code such as ``"1F"``; never the Egg)."""
    idx = card_index(card)
    if idx == EGG:
        raise ValueError("the Egg can never be asked for (R31)")
    return ASK_BASE + idx


def give(card: str | int) -> int:
    """Action by which the Dragon gives ``card`` back in the tribute."""
    return GIVE_BASE + card_index(card)


def decode(action: int) -> tuple[str, int, int]:
    """``(kind, a, b)``: ``("pass",0,0)``, ``("play",number,count)``, ``("dragons",count,0)``,
    ``("ask",card,0)`` or ``("give",card,0)``. Raises ``ValueError`` when out of range."""
    if isinstance(action, bool) or not isinstance(action, int):
        try:
            action = int(action)  # numpy integers
        except (TypeError, ValueError):
            raise ValueError(f"action must be an int, got {action!r}") from None
    if action == PASS:
        return ("pass", 0, 0)
    if PLAY_BASE <= action < DRAGON_BASE:
        x = action - PLAY_BASE
        return ("play", x // 4 + 1, x % 4 + 1)
    if DRAGON_BASE <= action < ASK_BASE:
        return ("dragons", action - DRAGON_BASE + 1, 0)
    if ASK_BASE <= action < GIVE_BASE:
        return ("ask", action - ASK_BASE, 0)
    if GIVE_BASE <= action < NUM_ACTIONS:
        return ("give", action - GIVE_BASE, 0)
    raise ValueError(f"action {action} is out of range 0..{NUM_ACTIONS - 1}")


def describe(action: int) -> str:
    """Plain words for an action, e.g. ``"play 3 x 7"`` or ``"ask for 1F"``."""
    kind, a, b = decode(action)
    if kind == "pass":
        return "pass"
    if kind == "play":
        return f"play {b} x {a}"
    if kind == "dragons":
        return "play a dragon card" if a == 1 else f"play {a} dragon cards"
    if kind == "ask":
        return f"ask for {CARD_CODES[a]}"
    return f"give {CARD_CODES[a]}"
