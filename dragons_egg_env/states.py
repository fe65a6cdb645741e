"""The state of a match: :class:`State`, its derived caches, a state built from the
information of a point in a match, and the check that a state is one the rules allow.

The rules engine (:mod:`dragons_egg_env.engine`) plays on a :class:`State`; this module holds
what it plays on, without the rules of play:

- :class:`State` (every field a match has), :class:`Phase`, :class:`RoundResult`, and the
  caches a state derives from its hands and its config: :func:`set_hands` (``th``, ``owner``),
  :func:`thermometer`, :func:`next_table` (R3), :func:`place_rewards` (R27), and the forced
  opening of a round, :func:`opener` and :func:`forced_opening` (R5, R6), which
  :func:`dragons_egg_env.engine.deal` starts a round with;
- :func:`state_from_info` builds a state from what a player could know (hands known or
  sampled, the pile, whose turn it is, the tribute record) and derives every cache;
  determinizing agents (ISMCTS) and tests use it; :func:`state_info` is its inverse;
- :func:`check_invariants` raises :class:`StateError` naming the first invariant a state
  breaks. :func:`dragons_egg_env.engine.check_state` is the whole check: these invariants
  and, with ``caches``, the legal-mask cache against the engine's
  :func:`~dragons_egg_env.engine.legal_mask` (the rules, which live in the engine).

Every public name here is also importable from :mod:`dragons_egg_env.engine` (``E.State``,
``E.state_from_info``, ``E.check_state``), where the project's code has always read them.

Pure Python: this module imports nothing outside the standard library and this package's
``cards``, ``config`` and ``actions`` tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import NamedTuple

from .actions import PASS, PLAY_BASE
from .cards import (
    ALL_CARDS,
    CARD_CODES,
    EGG,
    EGG_BIT,
    NUM_CARDS,
    NUM_NUMBERS,
    NUMBERED_MASK,
    RANK_MASK,
    TEN_OF_FIRE,
    codes,
)
from .config import RulesConfig


class Phase(IntEnum):
    """What the match waits for. The decision phases come first (``phase <= Phase.GIVE``
    means a seat must act); ``DEAL`` is the chance node between rounds, which the
    environment never shows."""

    PLAY = 0      # R8..R18: lead, follow or pass
    COMPLETE = 1  # R12: a completion offered out of turn
    ASK = 2       # R31: the Dragon asks for cards
    GIVE = 3      # R33: the Dragon gives cards back
    DEAL = 4      # R4: cards needed for the next round
    DONE = 5      # R26: the match is over

    @property
    def label(self) -> str:
        """The lower-case name shown to users (``"play"``, ``"complete"``, ...)."""
        return self.name.lower()


# Module-level aliases: plain names for the hot paths and for ``E.PLAY``-style reads.
PLAY, COMPLETE, ASK, GIVE, DEAL, DONE = Phase
PHASE_NAMES = tuple(ph.label for ph in Phase)

ASKABLE_MASK = ALL_CARDS & ~EGG_BIT  # R31: never the Egg
TEN_F_BIT = 1 << TEN_OF_FIRE
TENS_SHIFT = 4 * (NUM_NUMBERS - 1)  # card bit of the first 10 (the 10s' nibble of a hand)


class RoundResult(NamedTuple):
    """How a round ended (R25, R27, R29). Seats are ints."""

    round: int
    #: Full finishing order, the Dragon first and the Egg holder last.
    order: tuple[int, ...]
    deadlock: bool
    #: Reward of each seat for this round (R27), indexed by seat.
    rewards: tuple[float, ...]

    @property
    def dragon(self) -> int:
        return self.order[0]

    @property
    def egg(self) -> int:
        return self.order[-1]


# ---------------------------------------------------------------------------------------
# Tables and caches a state derives, built once from the card layout or per setting.

# THERMO_NIB[nib]: the low ``popcount(nib)`` bits, i.e. which play counts a number allows.
THERMO_NIB = tuple((1 << bin(nib).count("1")) - 1 for nib in range(16))

_NEXT_CACHE: dict[int, tuple[tuple[int, ...], ...]] = {}


def next_table(n: int) -> tuple[tuple[int, ...], ...]:
    """``next_table(n)[active][p]``: the first active seat to the left of ``p`` (seat + 1, ...;
    R3) among the seats of the bitmask ``active``, -1 if none. Built once per table size."""
    table = _NEXT_CACHE.get(n)
    if table is None:
        rows = []
        for active in range(1 << n):
            row = []
            for p in range(n):
                nxt = -1
                for d in range(1, n + 1):
                    q = (p + d) % n
                    if active >> q & 1:
                        nxt = q
                        break
                row.append(nxt)
            rows.append(tuple(row))
        table = _NEXT_CACHE[n] = tuple(rows)
    return table


# THERMO_BYTE[b]: THERMO_NIB of both nibbles of byte ``b`` (two numbers at a time).
THERMO_BYTE = tuple(THERMO_NIB[b & 15] | THERMO_NIB[b >> 4] << 4 for b in range(256))


def thermometer(hand: int) -> int:
    """Per number, the low ``count`` bits of its nibble: the play counts a hand allows."""
    t = THERMO_BYTE
    return (t[hand & 255] | t[hand >> 8 & 255] << 8 | t[hand >> 16 & 255] << 16
            | t[hand >> 24 & 255] << 24 | t[hand >> 32 & 255] << 32)


_REWARDS_CACHE: dict[tuple[int, str], tuple[float, ...]] = {}


def place_rewards(config: RulesConfig) -> tuple[float, ...]:
    """Reward of each finishing place 0..n-1 under the config's scheme (R27)."""
    n = config.num_players
    key = (n, config.reward_scheme)
    rewards = _REWARDS_CACHE.get(key)
    if rewards is None:
        if config.reward_scheme == "rank":
            rewards = tuple(1.0 - 2.0 * p / (n - 1) for p in range(n))
        else:
            rewards = tuple(1.0 if p == 0 else (-1.0 if p == n - 1 else 0.0) for p in range(n))
        _REWARDS_CACHE[key] = rewards
    return rewards


class State:
    """The full state of a match. Seats are ints ``0..n-1``; card sets are int bitmasks.

    Read the fields freely; change them only through the engine's
    :func:`~dragons_egg_env.engine.step` and :func:`~dragons_egg_env.engine.deal`.
    """

    __slots__ = (
        "config", "n", "hands", "th", "owner", "pile", "plays", "top_rank", "top_count", "rem",
        "played", "last_player", "passed", "locked", "active", "finish", "egg_holder",
        "egg_known", "current", "turn", "phase", "opening_mask", "round_idx", "scores",
        "dragon", "victim", "asks_left", "asked", "hits", "given", "gives_left", "dealer",
        "results", "mask", "next_tbl", "oot", "locks", "any_dragons", "give_mask",
        "all_seats", "place_rewards",
    )

    def __init__(self, config: RulesConfig) -> None:
        n = config.num_players
        self.config = config
        self.n = n
        self.hands = [0] * n
        self.th = [0] * n
        self.owner = [-1] * NUM_CARDS
        self.pile = 0            # cards on the current pile
        self.plays: list[tuple[int, int]] = []  # (seat, cards) of each play on the pile
        self.top_rank = 0        # number of the top play, 0 when the pile is empty
        self.top_count = 0
        self.rem = 0             # cards of the top number not on the pile (R11)
        self.played = 0          # every card played this round (pile and cleared piles)
        self.last_player = -1    # who made the latest play
        self.passed = 0          # seats that passed since the latest play (R17)
        self.locked = 0          # seats locked out of the pile (R10)
        self.active = (1 << n) - 1
        self.finish: list[int] = []  # seats in the order they went out this round
        self.egg_holder = -1
        self.egg_known = 0       # seats that know where the Egg is (R19)
        self.current = -1        # seat to act
        self.turn = -1           # seat whose turn it is in play order (differs during R12 offers)
        self.phase = DEAL
        self.opening_mask = 0    # the forced opening of R5/R6, 0 once made
        self.round_idx = 0
        self.scores = [0.0] * n  # R28
        self.dragon = -1         # this round's Dragon (R6, R30), -1 in round 1
        self.victim = -1         # the previous round's Egg holder, who pays the tribute
        self.asks_left = 0
        self.asked = 0           # cards the Dragon asked for (R31)
        self.hits = 0            # cards it received (R32)
        self.given = 0           # cards it gave back (R33)
        self.gives_left = 0
        self.dealer = -1
        self.results: list[RoundResult] = []
        self.mask = -1           # cached legal mask, -1 when stale
        self.next_tbl = next_table(n)
        self.oot = config.completion_out_of_turn
        self.locks = config.pass_locks_out
        self.any_dragons = 1 if config.dragons_per_play == "any" else 0
        self.give_mask = ALL_CARDS if config.egg_in_tribute else ALL_CARDS & ~EGG_BIT
        self.all_seats = (1 << n) - 1
        self.place_rewards = place_rewards(config)

    def clone(self) -> State:
        """An independent copy (lists copied, immutable fields shared)."""
        new = State.__new__(State)
        for name in State.__slots__:
            setattr(new, name, getattr(self, name))
        new.hands = self.hands[:]
        new.th = self.th[:]
        new.owner = self.owner[:]
        new.plays = self.plays[:]
        new.finish = self.finish[:]
        new.scores = self.scores[:]
        new.results = self.results[:]
        return new

    @property
    def phase_name(self) -> str:
        return PHASE_NAMES[self.phase]

    @property
    def done(self) -> bool:
        return self.phase == DONE

    def __repr__(self) -> str:
        hands = ", ".join(f"{p}:{' '.join(codes(h))}" for p, h in enumerate(self.hands))
        return (f"State(round={self.round_idx}, phase={self.phase_name}, current={self.current}, "
                f"pile={[codes(c) for _, c in self.plays]}, hands=[{hands}])")


# ---------------------------------------------------------------------------------------
# The caches that follow from the hands, and the forced opening (R5, R6).

def set_hands(s: State, hands: Sequence[int]) -> list[int]:
    """Give the seats ``hands`` and derive the caches that follow from them (``th`` and
    ``owner``; cards nobody holds keep their owner); returns ``owner``."""
    s.hands = list(hands)
    s.th = [thermometer(h) for h in hands]
    owner = s.owner
    for seat, hand in enumerate(hands):
        while hand:
            low = hand & -hand
            owner[low.bit_length() - 1] = seat
            hand ^= low
    return owner


def opener(s: State) -> int:
    """The seat that opens the round: the holder of the 10 of Fire in round 1 (R5), the
    Dragon in later rounds (R6)."""
    return s.owner[TEN_OF_FIRE] if s.round_idx == 0 else s.dragon


def forced_opening(s: State, seat: int) -> int:
    """The legal actions of the forced opening by ``seat`` (the :func:`opener`), from its
    hand: the one place the rules of R5 and R6 are written (the engine's ``deal`` and
    :func:`state_from_info` set ``opening_mask`` with it, :func:`check_invariants` checks
    it). Round 1 (R5): ``play(10, 1)``, or ``play(10, 1..held)`` with
    ``opening_ten_of_fire_alone=False`` (each includes the 10 of Fire). Later rounds (R6):
    ``play(highest, 1)``, or ``PASS`` without a numbered card."""
    th = s.th[seat]
    if s.round_idx == 0:
        if s.config.opening_ten_of_fire_alone:
            return 1 << (PLAY_BASE + TENS_SHIFT)  # play(10, 1)
        return th >> TENS_SHIFT << (PLAY_BASE + TENS_SHIFT)  # play(10, k) for k <= tens held
    if not th:
        return 1 << PASS
    return 1 << (PLAY_BASE + ((th.bit_length() - 1) & ~3))  # play(highest, 1)


# ---------------------------------------------------------------------------------------
# States from information, and their consistency.
#
# A determinizing agent (ISMCTS) or a test builds a state from what a player could know:
# the hands (known or sampled), the pile, whose turn it is, the tribute record. The engine
# derives every cache from that (``th``, ``owner``, ``egg_holder``, ``rem``, ``active``,
# ``gives_left``, the forced opening, the legal-mask cache, the seat tables), and
# :func:`check_invariants` verifies that any state, built or played, is one the rules allow
# (``engine.check_state`` adds the legal-mask cache).


class StateError(ValueError):
    """A :class:`State`, or the information given to build one, breaks an invariant of the
    rules; the message names the invariant and the rule it comes from."""


def _seat_arg(name: str, seat: object, n: int) -> int:
    """``seat`` as an int in ``-1..n-1`` (``-1``: nobody), else a :class:`StateError`."""
    if isinstance(seat, bool) or not isinstance(seat, int) or not -1 <= seat < n:
        raise StateError(f"{name} must be a seat 0..{n - 1} or -1, got {seat!r}")
    return seat


def state_from_info(
    config: RulesConfig,
    *,
    hands: Sequence[int],
    phase: Phase | int = PLAY,
    current: int = -1,
    turn: int | None = None,
    round_index: int = 0,
    played: int = 0,
    pile: int = 0,
    top_number: int = 0,
    top_count: int = 0,
    last_player: int = -1,
    passed: int = 0,
    locked: int = 0,
    finish: Sequence[int] = (),
    scores: Sequence[float] | None = None,
    dragon: int = -1,
    victim: int = -1,
    asked: int = 0,
    hits: int = 0,
    given: int = 0,
    asks_left: int = 0,
    egg_known: int | None = None,
    plays: Sequence[tuple[int, int]] | None = None,
    results: Sequence[RoundResult] = (),
    dealer: int = -1,
    check: bool = True,
) -> State:
    """A state built from the information of a point in a match (seats are ints, card sets
    int bitmasks); every cache is derived here. The inverse of :func:`state_info`.

    What is given:

    - ``hands``: one card set per seat (R1, R4); together with ``played`` they hold every
      card once. A seat that is out (R22) holds nothing.
    - ``phase``: a decision phase (R8..R18 ``PLAY``, R12 ``COMPLETE``, R31 ``ASK``, R33
      ``GIVE``), or ``DEAL``/``DONE`` once a round is over (R4, R26).
    - ``current``: the seat to act, the offered completer in ``COMPLETE`` (R12); ``turn``:
      the seat whose turn it is in play order, by default ``current``. Both ``-1`` in
      ``DEAL``/``DONE``.
    - ``round_index``: rounds finished so far, 0-based (R26); ``scores``: the match scores
      (R28), zeros by default; ``results``: the finished rounds (R29), needed only to deal
      the next round (R4 dealer, R30 Dragon) and empty by default; ``dealer``: this round's
      dealer (R4), ``-1`` when unknown.
    - ``played``: every card played this round; ``pile``: the cards on the current pile;
      ``top_number``/``top_count``: the top play, 0 for an empty pile (R8, R9);
      ``last_player``: who made the latest play (R17, R18).
    - ``passed``: seats that passed since the latest play (R17); ``locked``: seats locked
      out of the pile (R10). Bitmasks over seats.
    - ``finish``: the seats out this round, in the order they went out (R22, R25).
    - ``dragon``/``victim``: this round's Dragon and tribute payer, ``-1`` in round 1 (R30);
      ``asked``/``hits``/``given``: the cards asked for, handed over and given back (R31..R33);
      ``asks_left``: the asks the Dragon has left (R31). A record left blank (all zero, as
      for a player outside the tribute, R34) is allowed once the tribute is over.
    - ``egg_known``: the seats that know where the Egg is (R19), by default only its holder.
    - ``plays``: the ``(seat, cards)`` plays on the pile. The rules never read it, only
      renders and ``env.pile()`` do; by default the whole pile counts as one play by
      ``last_player``.

    What is derived: the thermometers ``th``, ``owner`` (``-1`` for cards not in a hand),
    ``egg_holder``, ``rem`` (R11), ``active`` (the seats not in ``finish``), ``gives_left``
    (R33: hits not yet paid back, in ``GIVE``), the forced opening of R5/R6 (by the same
    helper ``engine.deal`` uses: pending when nobody has played this round and the opener is
    to act), the legal-mask cache and the config's tables.

    With ``check`` (the default) the result goes through :func:`check_invariants`; a
    :class:`StateError` names what is inconsistent. Even without it, malformed arguments
    (wrong lengths, seats out of range) raise :class:`StateError`.
    """
    n = config.num_players
    if len(hands) != n:
        raise StateError(f"hands has {len(hands)} entries for {n} seats (R3)")
    for seat, hand in enumerate(hands):
        if isinstance(hand, bool) or not isinstance(hand, int) or not 0 <= hand <= ALL_CARDS:
            raise StateError(f"hand of seat {seat} is not a card bitmask: {hand!r} (R1)")
    try:
        ph = Phase(phase)
    except ValueError:
        raise StateError(f"phase must be one of {', '.join(PHASE_NAMES)}; got {phase!r}") \
            from None
    current = _seat_arg("current", current, n)
    turn = current if turn is None else _seat_arg("turn", turn, n)
    last_player = _seat_arg("last_player", last_player, n)
    dragon = _seat_arg("dragon", dragon, n)
    victim = _seat_arg("victim", victim, n)
    dealer = _seat_arg("dealer", dealer, n)
    out = 0
    for seat in finish:
        out |= 1 << _seat_arg("a seat in finish", seat, n)
    if isinstance(top_number, bool) or not isinstance(top_number, int) \
            or not 0 <= top_number <= NUM_NUMBERS:
        raise StateError(f"top_number must be 0..{NUM_NUMBERS}, got {top_number!r} (R8)")
    s = State(config)
    owner = set_hands(s, hands)
    holder = owner[EGG]
    s.egg_holder = holder
    if egg_known is None:
        egg_known = 1 << holder if holder >= 0 else 0  # R19: private after the deal
    s.egg_known = egg_known
    s.active = s.all_seats & ~out
    s.finish = list(finish)
    s.phase = ph
    s.current = current
    s.turn = turn
    s.round_idx = round_index
    s.scores = [0.0] * n if scores is None else list(scores)
    s.results = list(results)
    s.dealer = dealer
    s.played = played
    s.pile = pile
    s.top_rank = top_number
    s.top_count = top_count
    s.rem = RANK_MASK[top_number] & ~pile if top_number else 0  # R11
    s.last_player = last_player
    s.passed = passed
    s.locked = locked
    if plays is None:
        plays = [(last_player, pile)] if pile else []
    s.plays = [(p, c) for p, c in plays]
    s.dragon = dragon
    s.victim = victim
    s.asked = asked
    s.hits = hits
    s.given = given
    s.asks_left = asks_left
    s.gives_left = hits.bit_count() - given.bit_count() if ph == GIVE else 0  # R33
    if ph == PLAY and not played and current >= 0 and current == opener(s):  # R5, R6
        s.opening_mask = forced_opening(s, current)
    if check:
        check_invariants(s, caches=False)  # the caches are right by construction
    return s


def state_info(s: State) -> dict[str, object]:
    """The information :func:`state_from_info` takes, read from ``s``:
    ``state_from_info(s.config, **state_info(s))`` rebuilds an equivalent state (the same
    legal actions, observations and continuation)."""
    return {
        "hands": s.hands[:], "phase": Phase(s.phase), "current": s.current, "turn": s.turn,
        "round_index": s.round_idx, "played": s.played, "pile": s.pile,
        "top_number": s.top_rank, "top_count": s.top_count, "last_player": s.last_player,
        "passed": s.passed, "locked": s.locked, "finish": s.finish[:],
        "scores": s.scores[:], "dragon": s.dragon, "victim": s.victim, "asked": s.asked,
        "hits": s.hits, "given": s.given, "asks_left": s.asks_left,
        "egg_known": s.egg_known, "plays": s.plays[:], "results": s.results[:],
        "dealer": s.dealer,
    }


def _names(cards: int) -> str:
    """Card codes of a set, for messages (a value that is no card set: as it is)."""
    if not 0 <= cards <= ALL_CARDS:
        return f"{cards!r} (not a card set)"
    return " ".join(codes(cards))


def _seats(mask: int) -> str:
    """A set of seats, for messages (a value that is no set of seats: as it is)."""
    if not 0 <= mask < 1 << 8:
        return f"{mask!r} (not a set of seats)"
    return "{" + ", ".join(str(q) for q in range(8) if mask >> q & 1) + "}"


def check_invariants(s: State, *, caches: bool = True) -> None:
    """Raise :class:`StateError` naming the first broken invariant of ``s``; return None when
    ``s`` is a state the rules can reach (given its hands; its legal-mask cache aside), as
    every state reached by ``engine.deal`` and ``engine.step`` is. It checks:

    - the config's caches (seat count, seat tables, flags, place rewards);
    - cards (R1, R4, R19): the hands and the played cards partition the deck; the Egg is
      never played; the pile is played numbered cards; ``th``, ``owner`` and ``egg_holder``
      agree with the hands (the ``owner`` of a card nobody holds is a seat or ``-1``);
      ``egg_known`` is one of the sets R19 allows;
    - seats (R21..R23, R25): ``finish`` lists distinct seats, ``active`` is the others, seats
      out hold nothing, active seats hold something (the tribute payer may wait empty-handed
      for its gifts, R32, R33) and one of them has the Egg;
    - rounds (R26, R28..R30): the round index fits ``DONE``, scores have one entry per seat,
      ``results`` (when kept) one entry per finished round, each with its round number and a
      finishing order of every seat, and the Dragon and tribute payer are set from round 2
      on, matching the last result; ``dealer`` and ``last_player`` are seats or ``-1``;
    - the tribute (R31..R33): asks only for cards other than the Egg, hits among the asks,
      no more gifts than hits and only cards R33 allows, ``asks_left``/``gives_left`` in
      range;
    - the pile (R8..R18): ``top_rank``/``top_count``/``rem`` agree with the pile, which holds
      no number below the top and no complete set; ``plays`` make up the pile; ``passed`` and
      ``locked`` are active seats that cannot have triggered an all-pass;
    - the phase: a decision phase has a seat to act that is active (``COMPLETE``: an offered
      completer holding the rest of the set; ``ASK``/``GIVE``: the Dragon, before anything is
      played); the forced opening (R5, R6) is pending exactly when it should be; ``DEAL`` and
      ``DONE`` have nobody to act and agree with the last round's result.

    The legal-mask cache is the rules' (``legal_mask`` is in the engine):
    :func:`dragons_egg_env.engine.check_state` checks these invariants, then that cache.

    ``caches=False`` skips what :func:`state_from_info` derives by construction (the config's
    caches, ``th`` and ``owner``): about half the cost, for states it has just built.
    """
    if caches:
        _check_config_caches(s)
    _check_shapes(s)
    if s.phase == DEAL and s.round_idx == 0:  # before the first deal: nothing happened yet
        if any(s.hands) or s.played or s.finish or s.plays or s.current != -1 \
                or s.turn != -1:
            raise StateError("a match waiting for its first deal has cards, plays or a seat to "
                             "act (R4)")
        if caches and (any(s.th) or any(o != -1 for o in s.owner)):
            raise StateError("a match waiting for its first deal has th or owner caches of "
                             "cards nobody holds yet")
        return
    _check_cards(s, caches)
    _check_egg(s)
    _check_seats(s)
    _check_tribute(s)
    _check_pile(s)
    if s.phase <= GIVE:
        _check_round_goes_on(s)
        if s.phase == PLAY:
            _check_play_turn(s)
        elif s.phase == COMPLETE:
            _check_offer(s)
        else:
            _check_tribute_turn(s)
    else:
        _check_round_over(s)


def _check_config_caches(s: State) -> None:
    """The fields :class:`State` copies from its config (R3, R10, R12, R16, R27, R33)."""
    cfg = s.config
    n = cfg.num_players
    if s.n != n or s.all_seats != (1 << n) - 1 or s.next_tbl is not next_table(n):
        raise StateError(f"seat caches disagree with the config's {n} seats (R3)")
    if (s.oot != cfg.completion_out_of_turn or s.locks != cfg.pass_locks_out
            or s.any_dragons != (cfg.dragons_per_play == "any")
            or s.give_mask != (ALL_CARDS if cfg.egg_in_tribute else ASKABLE_MASK)
            or s.place_rewards != place_rewards(cfg)):
        raise StateError("rule caches (oot, locks, any_dragons, give_mask, place_rewards) "
                         "disagree with the config")


def _check_shapes(s: State) -> None:
    """Lengths, the phase and the round counters (R3, R4, R26, R29)."""
    n = s.n
    if len(s.hands) != n or len(s.th) != n or len(s.scores) != n:
        raise StateError(f"hands, th and scores need {n} entries each (one per seat), got "
                         f"{len(s.hands)}, {len(s.th)}, {len(s.scores)}")
    if len(s.owner) != NUM_CARDS:
        raise StateError(f"owner needs {NUM_CARDS} entries (one per card), got "
                         f"{len(s.owner)}")
    ph = s.phase
    if not isinstance(ph, int) or not PLAY <= ph <= DONE:
        raise StateError(f"phase {ph!r} is not a Phase")
    rounds = s.config.num_rounds
    r = s.round_idx
    if not 0 <= r <= rounds or (ph == DONE) != (r == rounds):
        raise StateError(f"round index {r} does not fit phase {PHASE_NAMES[ph]!r} in a match "
                         f"of {rounds} rounds (R26)")
    if s.results and len(s.results) != r:
        raise StateError(f"{len(s.results)} round results kept after {r} finished rounds "
                         f"(R29)")
    if not -1 <= s.dealer < n:
        raise StateError(f"dealer {s.dealer} is not a seat (R4)")
    if not -1 <= s.last_player < n:
        raise StateError(f"last_player {s.last_player} is not a seat or -1 (R17)")
    seats = list(range(n))
    for k, res in enumerate(s.results):
        if res.round != k or sorted(res.order) != seats:
            raise StateError(f"round result {k} is not round {k + 1}'s with a finishing order of "
                             f"every seat: {res!r} (R25, R29)")


def _check_cards(s: State, caches: bool) -> None:
    """The hands and the played cards partition the deck (R1, R4); ``th`` and ``owner``
    agree with the hands (with ``caches``); the pile is played numbered cards (R8, R15)."""
    seen = s.played
    owner = s.owner
    for q, hand in enumerate(s.hands):
        if not 0 <= hand <= ALL_CARDS:
            raise StateError(f"hand of seat {q} is not a card bitmask: {hand!r} (R1)")
        if seen & hand:
            raise StateError(f"card(s) {_names(seen & hand)} in the hand of seat {q} are also "
                             f"held by another seat or played (R1)")
        seen |= hand
        if not caches:
            continue
        if s.th[q] != thermometer(hand):
            raise StateError(f"th cache of seat {q} disagrees with its hand")
        while hand:
            low = hand & -hand
            card = low.bit_length() - 1
            if owner[card] != q:
                raise StateError(f"owner cache says card {CARD_CODES[card]} is with seat "
                                 f"{owner[card]}, but seat {q} holds it")
            hand ^= low
    if seen != ALL_CARDS:
        raise StateError(f"card(s) {_names(ALL_CARDS & ~seen)} are neither held nor played "
                         f"(R1, R4)")
    if caches and (min(owner) < -1 or max(owner) >= s.n):
        raise StateError(f"owner cache names holders {sorted(set(owner))} that are not seats "
                         f"(or -1)")
    if s.played & EGG_BIT:
        raise StateError("the Egg is among the played cards; it can never be played (R19)")
    stray = s.pile & ~(s.played & NUMBERED_MASK)
    if stray:
        raise StateError(f"pile card(s) {_names(stray)} are not played numbered cards "
                         f"(R8, R15)")


def _check_egg(s: State) -> None:
    """``egg_holder`` holds the Egg and ``egg_known`` is a set R19 allows: the holder alone
    (after the deal), everyone (once passed on, R20), or the two tribute players (R33)."""
    h = s.egg_holder
    if not 0 <= h < s.n or s.owner[EGG] != h or not s.hands[h] & EGG_BIT:
        raise StateError(f"egg_holder {h} disagrees with the hands (R19)")
    known = s.egg_known
    if known == s.all_seats or known == 1 << h:
        return
    if s.config.egg_in_tribute and 0 <= s.dragon < s.n and h == s.victim \
            and known == (1 << s.dragon | 1 << s.victim):
        return
    raise StateError(f"egg_known {_seats(known)} is not a set R19 allows for holder {h}: the "
                     f"holder, everyone, or the two tribute players")


def _check_seats(s: State) -> None:
    """``finish`` and ``active`` (R22, R25); who holds cards (R21, R22)."""
    n = s.n
    out = 0
    for q in s.finish:
        if not 0 <= q < n or out >> q & 1:
            raise StateError(f"finish {s.finish} is not a list of distinct seats (R25)")
        out |= 1 << q
    active = s.active
    if active != s.all_seats & ~out:
        raise StateError(f"active {_seats(active)} is not the seats missing from finish "
                         f"{s.finish} (R22)")
    tribute = s.phase == ASK or s.phase == GIVE
    for q, hand in enumerate(s.hands):
        if (active >> q & 1) != (hand != 0):
            # The payer may hand over its whole hand and wait for the gifts (R32, R33).
            if not hand and tribute and q == s.victim:
                continue
            state = "active" if active >> q & 1 else "out"
            raise StateError(f"seat {q} is {state} but holds {hand.bit_count()} card(s) (R22)")
    if not active >> s.egg_holder & 1:
        raise StateError(f"the Egg holder {s.egg_holder} has gone out; it cannot (R21)")


def _check_tribute(s: State) -> None:
    """The Dragon and the payer (R30) and the record of the tribute (R31..R33)."""
    n = s.n
    d, v = s.dragon, s.victim
    if (d < 0) != (v < 0) or not -1 <= d < n or not -1 <= v < n or (d >= 0 and d == v):
        raise StateError(f"dragon {d} and victim {v} must be two seats, or both -1 (R30)")
    if s.phase <= GIVE:
        r = s.round_idx
        if (r == 0) != (d < 0):
            raise StateError(f"round {r + 1} {'has' if d >= 0 else 'lacks'} a Dragon; rounds "
                             f"2+ have one, round 1 none (R30)")
        if d >= 0 and s.results:
            order = s.results[-1].order
            if d != order[0] or v != order[-1]:
                raise StateError(f"dragon {d} / victim {v} are not first / last of the last "
                                 f"round {list(order)} (R30)")
    asks = s.config.tribute_asks
    asked, hits, given = s.asked, s.hits, s.given
    if asked & ~ASKABLE_MASK or hits & ~asked:
        raise StateError("the tribute asked for the Egg or took a card it did not ask for "
                         "(R31, R32)")
    if given & ~s.give_mask or given.bit_count() > hits.bit_count():
        raise StateError(f"the tribute gave back {_names(given)}: more than it took "
                         f"({_names(hits)}) or a card it may not give (R33)")
    left = s.asks_left
    if not 0 <= left <= asks or asked.bit_count() + left > asks:
        raise StateError(f"asks_left {left} with {asked.bit_count()} asks made exceeds "
                         f"tribute_asks={asks} (R31)")
    if d < 0 and (asked or left):
        raise StateError("a tribute record without a Dragon (R30)")
    if (s.gives_left != 0) != (s.phase == GIVE):
        raise StateError(f"gives_left {s.gives_left} outside the give phase (R33)")


def _check_pile(s: State) -> None:
    """The top play agrees with the pile (R8, R9); locks need their flag (R10); ``plays``
    are plays of played cards; the forced opening is only pending in ``PLAY`` (R5, R6)."""
    top, count, pile = s.top_rank, s.top_count, s.pile
    if not 0 <= top <= NUM_NUMBERS or (pile == 0) != (top == 0) \
            or (count == 0) != (top == 0) or not 0 <= count <= 4:
        raise StateError(f"top_rank {top} / top_count {count} disagree with the pile "
                         f"{_names(pile)} (R8)")
    if top and (pile & ((1 << (4 * (top - 1))) - 1)
                or (pile & RANK_MASK[top]).bit_count() < count):
        raise StateError(f"the pile {_names(pile)} does not have a top play of {count} x "
                         f"{top} (R9)")
    if not s.locks and s.locked:
        raise StateError("seats are locked out while pass_locks_out is off (R10)")
    if (s.passed | s.locked) & ~s.all_seats:
        raise StateError("passed/locked name seats that do not exist")
    for q, cards in s.plays:
        if not 0 <= q < s.n or not cards or cards & ~s.played:
            raise StateError(f"plays holds ({q}, {_names(cards)}), not a seat's play of "
                             f"played cards")
    if s.opening_mask and s.phase != PLAY:
        raise StateError(f"a forced opening (R5, R6) is pending in phase "
                         f"{PHASE_NAMES[s.phase]!r}")


def _check_round_goes_on(s: State) -> None:
    """A decision phase: the round is not over (R23, R24), the pile is live (R11, R13, R17)
    and the seats to act are active."""
    active, top, pile = s.active, s.top_rank, s.pile
    if active & (active - 1) == 0:
        raise StateError(f"only seat(s) {_seats(active)} are active; the round is over (R23)")
    rank = RANK_MASK[top]
    if s.rem != rank & ~pile:
        raise StateError(f"rem {_names(s.rem)} is not the top number's cards off the pile "
                         f"(R11)")
    if top and pile & rank == rank:
        raise StateError(f"all four {top}s are on the pile; it should have cleared (R13)")
    if top and not 0 <= s.last_player < s.n:
        raise StateError(f"the pile has cards but last_player is {s.last_player} (R17)")
    if not top and s.played & NUMBERED_MASK == NUMBERED_MASK:
        raise StateError("every numbered card is played and the pile is empty: deadlock (R24)")
    union = 0
    for _, cards in s.plays:
        if union & cards:
            raise StateError(f"plays repeat card(s) {_names(union & cards)}")
        union |= cards
    if union != pile or (s.plays and s.plays[-1][0] != s.last_player):
        raise StateError("plays do not make up the pile, ending with last_player's play")
    passed, locked = s.passed, s.locked
    if (passed | locked) & ~active:
        raise StateError(f"passed {_seats(passed)} / locked {_seats(locked)} include seats "
                         f"that are out (R17, R10)")
    if not top and (passed or locked):
        raise StateError("seats passed or are locked out on an empty pile (R10, R17)")
    if top:
        need = active & ~(1 << s.last_player)
        if passed >> s.last_player & 1 or passed & need == need:
            raise StateError(f"passed {_seats(passed)} would have cleared the pile by an "
                             f"all-pass (R17)")
    p, t = s.current, s.turn
    if not 0 <= p < s.n or not active >> p & 1 or not 0 <= t < s.n or not active >> t & 1:
        raise StateError(f"current {p} / turn {t} must be active seats in phase "
                         f"{PHASE_NAMES[s.phase]!r}")


def _check_play_turn(s: State) -> None:
    """``PLAY``: the seat to act is the one whose turn it is (R12), has not passed since
    the latest play (R17), and makes the forced opening exactly when it is due (R5, R6)."""
    p = s.current
    if p != s.turn:
        raise StateError(f"current {p} differs from turn {s.turn} outside an offered "
                         f"completion (R12)")
    if s.top_rank and (p == s.last_player or s.passed >> p & 1):
        raise StateError(f"seat {p} made the latest play or passed since; it cannot be to "
                         f"act (R17)")
    if s.played:
        if s.opening_mask:
            raise StateError(f"the forced opening (R5, R6) of seat {p} is set but not due")
        return
    first = opener(s)
    if p == first:
        if s.opening_mask != forced_opening(s, p):
            raise StateError(f"the forced opening (R5, R6) of seat {p} is missing or wrong")
    elif s.opening_mask:
        raise StateError(f"the forced opening (R5, R6) of seat {p} is set but not due")
    elif s.round_idx == 0 or s.th[s.dragon]:
        raise StateError(f"nothing is played yet but seat {p} is not the opener {first} "
                         f"(R5, R6)")


def _check_offer(s: State) -> None:
    """``COMPLETE``: the offered seat holds the rest of the top number and is neither the
    one who played it nor the next to play (R12)."""
    p, t = s.current, s.turn
    if not s.oot or not s.top_rank or p == t or p == s.last_player or s.rem & ~s.hands[p] \
            or s.passed or t != s.next_tbl[s.active][s.last_player]:
        raise StateError(f"seat {p} cannot be offered a completion of the {s.top_rank}s here "
                         f"(R12)")


def _check_tribute_turn(s: State) -> None:
    """``ASK``/``GIVE``: the Dragon acts before anything is played (R30), the asks add up
    (R31), hits moved to the Dragon (R32) and gifts to the payer (R33)."""
    d, v = s.dragon, s.victim
    if d < 0 or s.current != d or s.turn != d or s.played:
        raise StateError(f"the tribute needs the Dragon to act before any play; dragon {d}, "
                         f"current {s.current} (R30, R31)")
    asks, asked, hits, given = s.config.tribute_asks, s.asked, s.hits, s.given
    if asked.bit_count() + s.asks_left != asks:
        raise StateError(f"{asked.bit_count()} asks made and {s.asks_left} left do not add up "
                         f"to tribute_asks={asks} (R31)")
    kept = asked & ~given & s.hands[v]
    if kept:
        raise StateError(f"the payer {v} still holds asked card(s) {_names(kept)} (R32)")
    if s.phase == ASK:
        if s.asks_left < 1 or given or hits & ~s.hands[d]:
            raise StateError(f"the ask phase needs asks left ({s.asks_left}), no gifts, and "
                             f"the hits in the Dragon's hand (R31, R32)")
    elif given.bit_count() + s.gives_left != hits.bit_count() or given & ~s.hands[v]:
        raise StateError(f"gives_left {s.gives_left} and gifts {_names(given)} do not match "
                         f"the hits {_names(hits)} (R33)")


def _check_round_over(s: State) -> None:
    """``DEAL``/``DONE``: nobody acts, and the last result agrees with ``finish`` and the
    Egg holder (R25)."""
    if s.current != -1 or s.turn != -1:
        raise StateError(f"seat {s.current} is to act in phase {PHASE_NAMES[s.phase]!r}")
    if s.results:
        order = list(s.results[-1].order)
        if order[:len(s.finish)] != s.finish or order[-1] != s.egg_holder:
            raise StateError(f"the last round's order {order} disagrees with finish "
                             f"{s.finish} and the Egg holder {s.egg_holder} (R25)")


__all__ = [
    "Phase", "PLAY", "COMPLETE", "ASK", "GIVE", "DEAL", "DONE", "PHASE_NAMES", "ASKABLE_MASK",
    "TEN_F_BIT", "TENS_SHIFT", "THERMO_NIB", "THERMO_BYTE", "RoundResult", "State",
    "StateError", "thermometer", "place_rewards", "next_table", "set_hands", "opener",
    "forced_opening", "state_from_info", "state_info", "check_invariants",
]
