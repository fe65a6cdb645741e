"""Cards of the Dragon Deck (R1) and their Tarokka aliases (R2).

A card is an index ``0..44`` and a set of cards is a Python int bitmask (bit ``i`` set means
card ``i`` is in the set). Numbered card ``(number, suit)`` is index ``(number - 1) * 4 + suit``
with suits in the order Earth, Water, Fire, Lightning, so the four cards of one number form one
nibble. Dragon cards are ``40..43`` (Beast, Darklord, Horseman, Executioner) and the Egg is ``44``.

This module is pure Python and imports nothing outside the standard library.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

NUM_CARDS = 45
NUM_NUMBERS = 10
SUITS = ("E", "W", "F", "L")
SUIT_NAMES = ("Earth", "Water", "Fire", "Lightning")
TAROKKA_SUITS = ("Swords", "Glyphs", "Coins", "Stars")  # R2: Earth, Water, Fire, Lightning
DRAGON_CODES = ("BEAST", "DARKLORD", "HORSEMAN", "EXECUTIONER")
EGG_CODE = "EGG"
#: R2: the names a deck may show, ``"dragon"`` (the codes of R1) or ``"tarokka"``.
DECK_STYLES = ("dragon", "tarokka")

BEAST, DARKLORD, HORSEMAN, EXECUTIONER = 40, 41, 42, 43
EGG = 44

#: Every card code of R1, indexed by card index.
CARD_CODES: tuple[str, ...] = tuple(
    [f"{n}{s}" for n in range(1, 11) for s in SUITS] + list(DRAGON_CODES) + [EGG_CODE]
)
CARD_INDEX: dict[str, int] = {code: i for i, code in enumerate(CARD_CODES)}

ALL_CARDS = (1 << NUM_CARDS) - 1
NUMBERED_MASK = (1 << 40) - 1
DRAGON_MASK = 0xF << 40
EGG_BIT = 1 << EGG
#: RANK_MASK[n] is the mask of the four cards of number ``n`` (index 0 unused).
RANK_MASK: tuple[int, ...] = (0,) + tuple(0xF << (4 * (n - 1)) for n in range(1, 11))
TEN_OF_FIRE = 9 * 4 + 2  # "10F", the Master of Coins


def card_index(code: str | int) -> int:
    """Return the index of a card given by its code (``"7F"``, ``"EGG"``) or index.

    Raises ``ValueError`` naming the code when it is not a card of R1.
    """
    if isinstance(code, bool):
        raise ValueError(f"not a card: {code!r}")
    if isinstance(code, int):
        if 0 <= code < NUM_CARDS:
            return code
        raise ValueError(f"card index {code} is out of range 0..{NUM_CARDS - 1}")
    if isinstance(code, str):
        idx = CARD_INDEX.get(code.strip().upper())
        if idx is not None:
            return idx
    raise ValueError(
        f"unknown card code {code!r}: expected one of 1E..10E, 1W..10W, 1F..10F, 1L..10L, "
        f"{', '.join(DRAGON_CODES)}, {EGG_CODE}"
    )


def card_number(card: int) -> int:
    """Number 1..10 of a numbered card, 0 for a dragon card or the Egg."""
    return card // 4 + 1 if card < 40 else 0


def iter_cards(mask: int) -> Iterator[int]:
    """Card indices of a bitmask, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def mask_of(cards: Iterable[str | int]) -> int:
    """Bitmask of an iterable of card codes or indices (duplicates are an error)."""
    mask = 0
    for c in cards:
        bit = 1 << card_index(c)
        if mask & bit:
            raise ValueError(f"card {CARD_CODES[card_index(c)]} appears twice")
        mask |= bit
    return mask


def codes(mask: int) -> list[str]:
    """Card codes of a bitmask, in card order."""
    return [CARD_CODES[i] for i in iter_cards(mask)]


def card_name(card: int, deck_style: str = "dragon") -> str:
    """Display name of a card in the ``"dragon"`` deck or the ``"tarokka"`` deck (R2)."""
    if deck_style == "dragon":
        return CARD_CODES[card]
    if deck_style not in DECK_STYLES:
        raise ValueError(f"unknown deck_style {deck_style!r}: expected one of "
                         f"{', '.join(map(repr, DECK_STYLES))}")
    if card == EGG:
        return "Artifact"
    if card >= 40:
        return ("Beast", "Darklord", "Horseman", "Executioner")[card - 40]
    number, suit = card // 4 + 1, TAROKKA_SUITS[card % 4]
    return f"Master of {suit}" if number == 10 else f"{number} of {suit}"
