"""The Dragon's Egg rules engine: every rule of ``docs/rules.md`` (R1..R34) on int bitmasks.

Pure Python: this module imports nothing outside the standard library and this package's
``cards``, ``config``, ``actions`` and ``states`` modules. A match is a :class:`State`;
:func:`step` applies one action to it in place (take a :meth:`State.clone` first to keep the
old one). Chance is explicit: when a round needs cards the state is in the ``deal`` phase and
the caller supplies them with :func:`deal` (any deal, for tests and replays) or
:func:`random_deal` (R4, from a ``random.Random`` passed in). The engine never touches a global
RNG.

Legal actions are an int bitmask over the action table of :mod:`dragons_egg_env.actions`
(bit ``a`` set means action ``a`` is legal), computed by :func:`legal_mask` and cached on the
state until the next step.

The state itself, :class:`State` with :class:`Phase`, :class:`RoundResult` and the caches it
derives, lives in :mod:`dragons_egg_env.states`, with :func:`state_from_info` (a state built
from the information of a point in a match: hands, pile, whose turn, tribute record, ...; every
cache derived; determinizing agents and tests use it), :func:`state_info` and the invariants a
state must keep. Those names are re-exported here, where the project's code reads them
(``E.State``, ``E.state_from_info``). :func:`check_state` verifies that a state is one the
rules allow, its legal-mask cache included, and raises :class:`StateError` naming the broken
invariant.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from .actions import ASK_BASE, DRAGON_BASE, GIVE_BASE, PASS, decode, describe
from .cards import (
    ALL_CARDS,
    CARD_CODES,
    DRAGON_MASK,
    EGG,
    EGG_BIT,
    NUM_CARDS,
    NUMBERED_MASK,
    RANK_MASK,
    codes,
)
from .config import RulesConfig
from .states import (
    ASK,
    ASKABLE_MASK,
    COMPLETE,
    DEAL,
    DONE,
    GIVE,
    PHASE_NAMES,
    PLAY,
    TEN_F_BIT,
    TENS_SHIFT,
    THERMO_BYTE,
    THERMO_NIB,
    Phase,
    RoundResult,
    State,
    StateError,
    check_invariants,
    forced_opening,
    next_table,
    opener,
    place_rewards,
    set_hands,
    state_from_info,
    state_info,
    thermometer,
)


class IllegalActionError(ValueError):
    """An action that is not legal in the current state (raised by :func:`step`)."""


class DealError(ValueError):
    """A deal that is not a partition of the 45 cards into one non-empty hand per seat."""


# ---------------------------------------------------------------------------------------
# Tables, built once from the card layout (not from any setting).


def _lowest_bits(x: int, k: int) -> int:
    out = 0
    for _ in range(k):
        if not x:
            break
        low = x & -x
        out |= low
        x ^= low
    return out


# LOWEST[nib][k]: the ``k`` lowest set bits of ``nib`` (R7: suits in the order E, W, F, L).
LOWEST = tuple(tuple(_lowest_bits(nib, k) for k in range(5)) for nib in range(16))
# FOLLOW[r][c]: action bits of every play of a number <= r with a count >= c (R9).
FOLLOW = tuple(
    tuple(
        sum(1 << (1 + (rr - 1) * 4 + (cc - 1)) for rr in range(1, r + 1) for cc in range(c, 5))
        if r and c else 0
        for c in range(5)
    )
    for r in range(11)
)
# DRAGON_ACTIONS[any][held]: the dragon plays allowed when ``held`` dragon cards are held (R16).
DRAGON_ACTIONS = (
    tuple(0 if h == 0 else 1 << DRAGON_BASE for h in range(5)),
    tuple(((1 << h) - 1) << DRAGON_BASE for h in range(5)),
)
def new_match(config: RulesConfig | None = None) -> State:
    """A match waiting for its first deal."""
    return State(config if config is not None else RulesConfig())


# ---------------------------------------------------------------------------------------
# Dealing (R4) and the start of a round (R5, R6, R30).

def deal_from_deck(deck: Sequence[int], n: int, dealer: int) -> list[int]:
    """Hands of ``n`` seats when ``deck`` (card indices, top first) is dealt one card at a
    time starting with the seat left of ``dealer`` (R4)."""
    hands = [0] * n
    seat = dealer
    for card in deck:
        seat = seat + 1 if seat + 1 < n else 0
        hands[seat] |= 1 << card
    return hands


def random_deal(state: State, rng: random.Random) -> list[int]:
    """Hands for the next round, dealt by R4 from ``rng``: one card at a time from the seat
    left of the dealer. Round 1's dealer is drawn from ``rng``; later, the last Egg holder deals.
    Sets ``state.dealer``; does not deal (pass the result to :func:`deal`)."""
    n = state.n
    if state.round_idx == 0:
        state.dealer = rng.randrange(n)
    else:
        state.dealer = state.results[-1].egg
    deck = list(range(NUM_CARDS))
    rng.shuffle(deck)
    return deal_from_deck(deck, n, state.dealer)


def check_deal(hands: Sequence[int], n: int) -> None:
    """Raise :class:`DealError` unless ``hands`` is one non-empty hand per seat that together
    hold each of the 45 cards exactly once."""
    if len(hands) != n:
        raise DealError(f"a deal needs {n} hands (one per seat), got {len(hands)}")
    seen = 0
    for seat, hand in enumerate(hands):
        if isinstance(hand, bool) or not isinstance(hand, int) or hand < 0 or hand > ALL_CARDS:
            raise DealError(f"hand of seat {seat} is not a card bitmask: {hand!r}")
        if hand == 0:
            raise DealError(f"hand of seat {seat} is empty (R4: every hand holds a card)")
        twice = seen & hand
        if twice:
            raise DealError(f"card(s) {', '.join(codes(twice))} dealt twice")
        seen |= hand
    if seen != ALL_CARDS:
        raise DealError(f"card(s) {', '.join(codes(ALL_CARDS & ~seen))} missing from the deal")


def deal(state: State, hands: Sequence[int]) -> None:
    """Start the next round with ``hands`` (one card bitmask per seat; R4)."""
    if state.phase != DEAL:
        raise DealError(f"cannot deal in phase {state.phase_name!r}: the round is not over")
    check_deal(hands, state.n)
    s = state
    owner = set_hands(s, hands)
    s.egg_holder = owner[EGG]
    s.egg_known = 1 << s.egg_holder  # R19: private after the deal
    s.active = s.all_seats
    s.finish = []
    s.pile = s.top_rank = s.top_count = s.rem = s.played = 0
    s.plays = []
    s.last_player = -1
    s.passed = s.locked = 0
    s.asked = s.hits = s.given = s.asks_left = s.gives_left = 0
    s.mask = -1
    if s.round_idx == 0:
        s.dragon = s.victim = -1
        _start_opening(s)  # R5: the holder of the 10 of Fire opens round 1
    else:
        prev = s.results[-1]
        s.dragon, s.victim = prev.order[0], prev.order[-1]  # R30
        if s.config.tribute_asks:
            s.phase = ASK
            s.current = s.turn = s.dragon
            s.asks_left = s.config.tribute_asks
            s.opening_mask = 0
        else:
            _start_opening(s)


def _start_opening(s: State) -> None:
    """The opening of a round (R5, R6): the :func:`opener` must make its forced play."""
    p = opener(s)
    s.phase = PLAY
    s.current = s.turn = p
    s.opening_mask = forced_opening(s, p)


# ---------------------------------------------------------------------------------------
# Legal actions.

def legal_mask(s: State) -> int:
    """Bitmask of the legal actions of the seat to act (``s.current``); 0 when none acts."""
    m = s.mask
    if m >= 0:
        return m
    ph = s.phase
    if ph == PLAY:
        m = s.opening_mask
        if not m:
            p = s.current
            r = s.top_rank
            if not r:
                th = s.th[p]
                m = th << 1 if th else 1  # R8: lead if you can, else pass
            else:
                hand = s.hands[p]
                if s.locked >> p & 1:
                    m = 1  # R10: locked out, but may still complete
                else:
                    m = 1 | ((s.th[p] << 1) & FOLLOW[r][s.top_count])  # R9
                    d = hand & DRAGON_MASK
                    if d:
                        m |= DRAGON_ACTIONS[s.any_dragons][d.bit_count()]  # R15, R16
                rem = s.rem
                if not rem & ~hand:  # R11: holds every card of the top number not on the pile
                    m |= 1 << (rem.bit_count() + 4 * (r - 1))
    elif ph == COMPLETE:
        m = 1 | 1 << (s.rem.bit_count() + 4 * (s.top_rank - 1))  # R12
    elif ph == ASK:
        m = 1 | ((ASKABLE_MASK & ~s.hands[s.dragon] & ~s.asked) << ASK_BASE)  # R31
    elif ph == GIVE:
        m = (s.hands[s.dragon] & s.give_mask) << GIVE_BASE  # R33
    else:
        m = 0
    s.mask = m
    return m


def bits_of(m: int) -> list[int]:
    """The set bits of a mask, ascending (the actions of an action mask)."""
    out = []
    while m:
        low = m & -m
        out.append(low.bit_length() - 1)
        m ^= low
    return out


def legal_actions(s: State) -> list[int]:
    """The legal actions of the seat to act, ascending."""
    return bits_of(legal_mask(s))


# ---------------------------------------------------------------------------------------
# Applying actions.

def step(s: State, action: int) -> None:
    """Apply ``action`` (an int) for the seat to act. Raises :class:`IllegalActionError`
    (a ``ValueError``) when it is not legal, leaving the state unchanged."""
    m = s.mask
    if m < 0:
        m = legal_mask(s)
    if action < 0 or not (m >> action) & 1:
        raise IllegalActionError(_illegal_message(s, action))
    s.mask = -1
    ph = s.phase
    if ph == PLAY:
        if action == PASS:
            _pass(s)
        elif action < DRAGON_BASE:
            _play(s, s.current, action)
        else:
            _dragons(s, action - DRAGON_BASE + 1)
    elif ph == COMPLETE:
        if action == PASS:  # decline: not a turn, not a pass towards the all-pass (R12)
            s.phase = PLAY
            s.current = s.turn
        else:
            _play(s, s.current, action)
    elif ph == ASK:
        if action == PASS:
            _finish_asks(s)
        else:
            _ask(s, action - ASK_BASE)
    else:  # GIVE
        _give(s, action - GIVE_BASE)


def _illegal_message(s: State, action: int) -> str:
    try:
        what = describe(int(action))
    except (ValueError, TypeError):
        what = "out of range"
    legal = ", ".join(f"{a} ({describe(a)})" for a in legal_actions(s))
    return (f"illegal action {action!r} ({what}) for seat {s.current} in phase "
            f"{s.phase_name!r}; legal: {legal or 'none'}")


def _play(s: State, p: int, action: int) -> None:
    x = action - 1
    r = (x >> 2) + 1
    k = (x & 3) + 1
    sh = x & ~3
    hand = s.hands[p]
    if s.opening_mask:
        s.opening_mask = 0
        if s.round_idx == 0:  # R5: the 10 of Fire is part of the opening play
            cards = TEN_F_BIT | (LOWEST[(hand & ~TEN_F_BIT) >> 36 & 15][k - 1] << 36)
        else:
            cards = LOWEST[(hand >> sh) & 15][k] << sh
    else:
        cards = LOWEST[(hand >> sh) & 15][k] << sh  # R7: suits E, W, F, L
    hand ^= cards
    s.hands[p] = hand
    th = s.th[p]
    s.th[p] = (th & ~(15 << sh)) | ((((th >> sh) & 15) >> k) << sh)
    pile = s.pile | cards
    s.pile = pile
    s.played |= cards
    s.plays.append((p, cards))
    s.top_rank = r
    s.top_count = k
    s.last_player = p
    s.passed = 0
    if not hand and _go_out(s, p):  # R22
        return
    rm = RANK_MASK[r]
    if pile & rm == rm:  # R13, R14: all four on the pile
        _clear(s, p)
        return
    rem = rm & ~pile
    s.rem = rem
    nxt = s.next_tbl[s.active][p]
    s.phase = PLAY
    s.current = s.turn = nxt
    if s.oot:  # R12: offer the completion out of turn
        c = s.owner[(rem & -rem).bit_length() - 1]
        if c != p and c != nxt and not rem & ~s.hands[c]:
            s.phase = COMPLETE
            s.current = c


def _dragons(s: State, k: int) -> None:
    p = s.current
    hand = s.hands[p]
    cards = LOWEST[hand >> 40 & 15][k] << 40  # R7: Beast, Darklord, Horseman, Executioner
    hand ^= cards
    s.hands[p] = hand
    s.played |= cards
    s.plays.append((p, cards))
    if not hand and _go_out(s, p):
        return
    _clear(s, p)  # R15


def _pass(s: State) -> None:
    p = s.current
    if not s.top_rank:  # R6/R8: nothing to lead with; the next active player is due to lead
        s.opening_mask = 0
        s.current = s.turn = s.next_tbl[s.active][p]
        return
    bit = 1 << p
    s.passed |= bit
    if s.locks:
        s.locked |= bit  # R10
    need = s.active & ~(1 << s.last_player)
    if s.passed & need == need:  # R17: all-pass
        _clear(s, s.last_player)
    else:
        s.current = s.turn = s.next_tbl[s.active][p]


def _clear(s: State, x: int) -> None:
    """The pile clears; ``x`` cleared it (R17) and leads next (R18)."""
    s.pile = s.top_rank = s.top_count = s.rem = s.passed = s.locked = 0
    s.plays = []
    s.phase = PLAY
    if s.egg_holder == x:  # R20: the Egg moves on at the clear
        y = s.next_tbl[s.active][x]
        s.hands[x] ^= EGG_BIT
        s.hands[y] |= EGG_BIT
        s.owner[EGG] = y
        s.egg_holder = y
        s.egg_known = s.all_seats
        if not s.hands[x] and _go_out(s, x):  # R21
            return
    leader = x if s.active >> x & 1 else s.next_tbl[s.active][x]
    if s.played & NUMBERED_MASK == NUMBERED_MASK:  # R24: nobody can ever lead again
        _end_round(s, True, leader)
        return
    s.current = s.turn = leader


def _go_out(s: State, p: int) -> bool:
    """Seat ``p`` is out (R22); returns True when that ended the round (R23)."""
    s.active &= ~(1 << p)
    s.finish.append(p)
    if not s.active & (s.active - 1):
        _end_round(s, False, -1)
        return True
    return False


def _end_round(s: State, deadlock: bool, due: int) -> None:
    order = list(s.finish)
    egg = s.egg_holder
    if deadlock:  # R24: fewer cards first, ties in seat order from the player due to lead
        rest = [(due + d) % s.n for d in range(s.n)]
        rest = [q for q in rest if s.active >> q & 1 and q != egg]
        rest.sort(key=lambda q: s.hands[q].bit_count())
        order += rest
    order.append(egg)  # R23, R25
    rewards = [0.0] * s.n
    for place, seat in enumerate(order):
        rewards[seat] = s.place_rewards[place]
        s.scores[seat] += rewards[seat]
    s.results.append(RoundResult(s.round_idx, tuple(order), deadlock, tuple(rewards)))
    s.round_idx += 1
    s.phase = DONE if s.round_idx >= s.config.num_rounds else DEAL
    s.current = s.turn = -1
    s.opening_mask = 0
    s.mask = -1


def _move(s: State, frm: int, to: int, card: int) -> None:
    bit = 1 << card
    s.hands[frm] ^= bit
    s.hands[to] |= bit
    s.owner[card] = to
    if card < 40:
        sh = card & ~3
        for q in (frm, to):
            s.th[q] = (s.th[q] & ~(15 << sh)) | (THERMO_NIB[(s.hands[q] >> sh) & 15] << sh)


def _ask(s: State, card: int) -> None:
    bit = 1 << card
    s.asked |= bit
    s.asks_left -= 1
    if s.hands[s.victim] & bit:  # R32: it must hand the card over
        _move(s, s.victim, s.dragon, card)
        s.hits |= bit
    if not s.asks_left:
        _finish_asks(s)


def _finish_asks(s: State) -> None:
    s.gives_left = s.hits.bit_count()
    if s.gives_left:
        s.phase = GIVE  # R33
    else:
        _start_opening(s)


def _give(s: State, card: int) -> None:
    _move(s, s.dragon, s.victim, card)
    s.given |= 1 << card
    if card == EGG:  # R19: the two players of the tribute know where it went
        s.egg_holder = s.victim
        s.egg_known = (1 << s.dragon) | (1 << s.victim)
    s.gives_left -= 1
    if not s.gives_left:
        _start_opening(s)


# ---------------------------------------------------------------------------------------
# Conveniences.

def action_cards(s: State, action: int) -> int:
    """The cards the seat to act would put down with ``action`` (0 for non-plays)."""
    kind, a, b = decode(action)
    hand = s.hands[s.current]
    if kind == "play":
        sh = (a - 1) * 4
        if s.opening_mask and s.round_idx == 0:
            return TEN_F_BIT | (LOWEST[(hand & ~TEN_F_BIT) >> 36 & 15][b - 1] << 36)
        return LOWEST[(hand >> sh) & 15][b] << sh
    if kind == "dragons":
        return LOWEST[hand >> 40 & 15][a] << 40
    return 0


def random_playout(s: State, rng: random.Random) -> State:
    """Play uniformly random legal actions (and random deals) until the match ends."""
    while s.phase != DONE:
        if s.phase == DEAL:
            deal(s, random_deal(s, rng))
            continue
        acts = legal_actions(s)
        step(s, acts[rng.randrange(len(acts))] if len(acts) > 1 else acts[0])
    return s


# ---------------------------------------------------------------------------------------
# The consistency of a state (the invariants are in states; the legal-mask cache is the rules').

def check_state(s: State, *, caches: bool = True) -> None:
    """Raise :class:`StateError` naming the first broken invariant of ``s``; return None when
    ``s`` is a state the rules can reach (given its hands), as every state reached by
    :func:`deal` and :func:`step` is.

    It checks the invariants of :func:`dragons_egg_env.states.check_invariants` (the config's
    caches; the cards, R1, R4, R19; the seats, R21..R23, R25; the rounds, R26, R28..R30; the
    tribute, R31..R33; the pile, R8..R18; the phase and the forced opening, R5, R6, R12; its
    docstring lists them) and then that the legal-mask cache is stale (``-1``) or equal to
    :func:`legal_mask`.

    ``caches=False`` skips what :func:`state_from_info` derives by construction (the config's
    caches, ``th``, ``owner`` and the legal-mask cache): about half the cost, for states it
    has just built.
    """
    check_invariants(s, caches=caches)
    if caches:
        _check_mask(s)


def _check_mask(s: State) -> None:
    """The legal-mask cache is stale or right (computed afresh, then the cache restored)."""
    cached = s.mask
    if cached < 0:
        return
    s.mask = -1
    try:
        fresh = legal_mask(s)
    finally:
        s.mask = cached
    if fresh != cached:
        raise StateError("the cached legal mask disagrees with legal_mask()")


__all__ = [
    "Phase", "PLAY", "COMPLETE", "ASK", "GIVE", "DEAL", "DONE", "PHASE_NAMES", "State",
    "RoundResult", "IllegalActionError", "DealError", "StateError", "new_match", "random_deal",
    "deal_from_deck", "deal", "check_deal", "legal_mask", "legal_actions", "bits_of", "step",
    "random_playout", "thermometer", "place_rewards", "state_from_info", "state_info",
    "check_state", "CARD_CODES", "action_cards",
    # tables and helpers that live in states (re-exported: the engine and its callers read them)
    "ASKABLE_MASK", "TEN_F_BIT", "TENS_SHIFT", "THERMO_NIB", "THERMO_BYTE", "LOWEST", "FOLLOW",
    "DRAGON_ACTIONS", "next_table", "set_hands", "opener", "forced_opening",
]
