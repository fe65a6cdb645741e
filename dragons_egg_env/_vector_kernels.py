"""Numba kernels of the batched engine (:mod:`dragons_egg_env.vector`); private.

A line-by-line port of :mod:`dragons_egg_env.engine` to arrays. Every per-match integer field
of ``engine.State`` is one column of the int64 matrix ``S`` (one row per match ``b``; hands and
the finishing order take ``n`` columns each), card sets are int64 bitmasks exactly as in the
engine, and each kernel is a plain loop over ``b``. The other arrays: ``OP`` (int16: the
``owner`` of each card, then the pile's plays), ``F`` (float64: scores, the step's rewards, the
final scores, those of the recorded matches), ``RES`` (int32: the round results), ``RNG``
(uint64: the two generators of each match and the seeds of its two recorded matches),
``HD``/``HL`` (the recorded deals and actions), ``obs`` and ``mask``. Functions take only the
arrays they need: numba passes every array as a dozen machine words, so few arrays keep the
calls cheap.

The functions keep the engine's names (``_play``, ``_clear``, ...) so that the two read side by
side; comments cite the rules. Only this module and :mod:`dragons_egg_env.vector` import numba.
Every function is ``@njit(cache=True, _nrt=False)`` (:data:`_jit`): the first call compiles and
writes the machine code to ``__pycache__``, later processes load it from there.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from . import engine as E
from .actions import ASK_BASE, DRAGON_BASE, GIVE_BASE, NUM_ACTIONS, PASS, PLAY_BASE
from .cards import (
    BEAST,
    DRAGON_MASK,
    EGG,
    EGG_BIT,
    NUM_CARDS,
    NUMBERED_MASK,
    RANK_MASK,
    TEN_OF_FIRE,
)
from .config import MAX_ASKS, MAX_PLAYERS

#: Every kernel: cached, and compiled without reference counting (``_nrt=False``): the
#: kernels never allocate, and the counting of the arrays passed between functions would cost
#: more than the game logic.
_jit = njit(cache=True, _nrt=False)

# ---------------------------------------------------------------------------------------
# Tables and counts, taken from the card tables and the engine (so that both read the same
# numbers; numba reads these module-level constants when it compiles, as literals).
THERMO_BYTE = np.array(E.THERMO_BYTE, dtype=np.int64)
LOWEST = np.array(E.LOWEST, dtype=np.int64)                  # (16, 5)
FOLLOW = np.array(E.FOLLOW, dtype=np.int64)                  # (11, 5)
DRAGON_ACTIONS = np.array(E.DRAGON_ACTIONS, dtype=np.int64)  # (2, 5)
RANK = np.array(RANK_MASK, dtype=np.int64)                   # (11,)
ASKABLE = E.ASKABLE_MASK
TEN_F_BIT = E.TEN_F_BIT
TENS_SHIFT = E.TENS_SHIFT
#: Card bit of the first dragon card (the dragons' nibble of a hand, R1).
DRAGONS_SHIFT = BEAST
#: Plays the pile can hold: each holds a card or more, and the Egg is never played.
MAX_PILE_PLAYS = NUM_CARDS - 1
PLAY, COMPLETE, ASK, GIVE, DEAL, DONE = (int(p) for p in E.Phase)

# Columns of ``S``. The engine's State first (same names, upper case), then the legal mask
# of the seat to act (the actions below ``ASK_BASE`` as bits, the cards of the ask or give
# actions), the outputs of the latest step, the history bookkeeping, and the per-seat columns.
(PH, CUR, TURN, TOP, CNT, LAST, EGGH, DRAG, VICT, DEALER, NFIN, NPLAYS, ASKL, GIVL, NRES,
 ROUND, PASSED, LOCKED, ACTIVE, EGGK, PILE, REM, PLAYED, OPEN, ASKED, HITS, GIVEN,
 LMLO, LMCARDS, SEAT, REND, RDEAD, DONE_, EPIS, HCUR, FORCED) = range(36)
HLEN, HOK, HFIN, HDEALT = range(FORCED + 1, FORCED + 9, 2)  # two each: history slots 0, 1
HAND = HDEALT + 2                             # MAX_PLAYERS columns: the hands
FIN = HAND + MAX_PLAYERS                      # the seats out, in order (R22, R25)
RORD = FIN + MAX_PLAYERS                      # output: the finishing order of a round
NUM_I = RORD + MAX_PLAYERS
# ``OP`` columns: owner of each card, then the plays on the pile (seat | nibble << 3 |
# bits << 7). ``F`` columns: scores (R28), rewards of the step (R27), final scores of a match
# that ended in the step, then the final scores of the matches in history slots 0 and 1.
PLAYS = NUM_CARDS
NUM_OP = PLAYS + MAX_PILE_PLAYS
SCORE, REW, FSCORE, HSCORE = 0, MAX_PLAYERS, 2 * MAX_PLAYERS, 3 * MAX_PLAYERS
NUM_F = 5 * MAX_PLAYERS
# ``RNG`` columns: the deal and action generators, the seeds of history slots 0 and 1.
R_DEAL, R_ACT, R_SEED = 0, 1, 2
NUM_RNG = 4

# Config vector indices (``cfg``, an int64 array). ``vector._CONFIG_COLUMNS`` maps every field
# of ``RulesConfig`` to its column (or, ``reward_scheme``, to the ``prew`` argument) and
# encoding; ``C_M``, ``C_RECORD`` and ``C_AUTO`` are the engine's own settings
# (``vector._ENGINE_COLUMNS``). ``tests/env/test_vector_config.py`` checks that every field
# has an entry and that the kernels read every column as ``cfg[C_...]``.
C_N, C_M, C_ROUNDS, C_ALONE, C_LOCKS, C_OOT, C_ANY, C_ASKS, C_GIVE, C_RECORD, C_AUTO = range(11)
NUM_CFG = C_AUTO + 1

# Observation layout indices (``offs``, an int64 array of field starts; -1: absent).
OBS_FIELDS = ("hand", "pile", "top_number", "top_count", "played", "out_place", "passed",
              "locked", "egg_holder", "to_act", "last_player", "dragon", "tribute_payer",
              "seat_present", "phase", "tribute_asked", "tribute_taken", "tribute_given",
              "all_hands")
(O_HAND, O_PILE, O_TOPN, O_TOPC, O_PLAYED, O_OUT, O_PASSED, O_LOCKED, O_EGG, O_TOACT, O_LAST,
 O_DRAGON, O_PAYER, O_PRESENT, O_PHASE, O_ASKED, O_TAKEN, O_GIVEN, O_ALL) = range(
    len(OBS_FIELDS))
O_NB, O_SIZE = O_ALL + 1, O_ALL + 2  # start of the scalar part, total size
NUM_OFFS = O_SIZE + 1

# splitmix64 (Steele, Lea, Flood 2014): a counter-based generator, one uint64 per stream.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S27, _S30, _S31, _S32 = np.uint64(27), np.uint64(30), np.uint64(31), np.uint64(32)

#: The arrays of a batch (``vector.VectorEngine._st``).
VState = namedtuple("VState", ("S", "OP", "F", "RES", "RNG", "HD", "HL", "obs", "mask"))


# ---------------------------------------------------------------------------------------
# Bit helpers and the generator.

@intrinsic
def _ctpop(typingctx, x):
    """LLVM ``ctpop`` on an int64 (one instruction on CPUs with POPCNT)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.int64(types.int64), codegen


@intrinsic
def _cttz(typingctx, x):
    """LLVM ``cttz`` on an int64 (one instruction on CPUs with BMI/TZCNT)."""
    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))
    return types.int64(types.int64), codegen


@_jit
def popcount(x):
    """Set bits of a non-negative int64."""
    return _ctpop(np.int64(x))


@_jit
def ctz(x):
    """Index of the lowest set bit of ``x > 0``."""
    return _cttz(np.int64(x))


@_jit
def bit_length(x):
    """``int.bit_length`` of a non-negative int64."""
    x |= x >> 1
    x |= x >> 2
    x |= x >> 4
    x |= x >> 8
    x |= x >> 16
    x |= x >> 32
    return popcount(x)


@_jit
def thermometer(hand):
    """engine.thermometer: per number, the low ``count`` bits of its nibble."""
    t = THERMO_BYTE
    return (t[hand & 255] | t[(hand >> 8) & 255] << 8 | t[(hand >> 16) & 255] << 16
            | t[(hand >> 24) & 255] << 24 | t[(hand >> 32) & 255] << 32)


@_jit
def next_seat(active, p, n):
    """states.next_table: the first active seat to the left of ``p`` (R3); -1 if none."""
    for d in range(1, n + 1):
        q = p + d
        if q >= n:
            q -= n
        if (active >> q) & 1:
            return q
    return -1


@_jit
def next_u64(RNG, b, k):
    """splitmix64 step of stream ``RNG[b, k]``."""
    z = RNG[b, k] + _GOLDEN
    RNG[b, k] = z
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@_jit
def below(RNG, b, k, m):
    """A uniform int in ``0..m-1`` from stream ``RNG[b, k]`` (``m < 2**31``; Lemire's
    multiply-shift on the high 32 bits)."""
    x = next_u64(RNG, b, k) >> _S32
    return np.int64((x * np.uint64(m)) >> _S32)


@_jit
def _kth_bit(x, k):
    """Index of the ``k``-th (0-based) set bit of ``x``."""
    for _ in range(k):
        x &= x - 1
    return ctz(x)


# ---------------------------------------------------------------------------------------
# Dealing (R4) and the start of a round (R5, R6, R30).

@_jit
def _shuffle_deal(RNG, HD, b, n, dealer, r, slot):
    """R4: deal the ``NUM_CARDS`` cards in a random order (each next card drawn uniformly
    from those left, by the match's deal generator), one at a time from the seat left of
    ``dealer``, into ``HD[b, slot, r]``."""
    for q in range(n):
        HD[b, slot, r, q] = 0
    left = (np.int64(1) << NUM_CARDS) - 1
    seat = dealer
    for c in range(NUM_CARDS):
        card = _kth_bit(left, below(RNG, b, R_DEAL, NUM_CARDS - c))
        left ^= np.int64(1) << card
        seat = seat + 1 if seat + 1 < n else 0
        HD[b, slot, r, seat] |= np.int64(1) << card


@_jit
def _reset_round(S, b, n):
    """engine.deal: the per-round fields a deal resets."""
    S[b, ACTIVE] = (1 << n) - 1
    S[b, NFIN] = 0
    S[b, PILE] = 0
    S[b, TOP] = 0
    S[b, CNT] = 0
    S[b, REM] = 0
    S[b, PLAYED] = 0
    S[b, NPLAYS] = 0
    S[b, LAST] = -1
    S[b, PASSED] = 0
    S[b, LOCKED] = 0
    S[b, ASKED] = 0
    S[b, HITS] = 0
    S[b, GIVEN] = 0
    S[b, ASKL] = 0
    S[b, GIVL] = 0


@_jit
def deal(S, OP, RES, RNG, HD, cfg, b):
    """engine.random_deal + engine.deal for the round ``S[b, ROUND]``: a supplied deal for
    the first ``FORCED`` rounds, else a random one (R4: round 1's dealer drawn, later the last
    Egg holder deals)."""
    n = cfg[C_N]
    r = S[b, ROUND]
    slot = S[b, HCUR]
    if r >= S[b, FORCED]:
        if r == 0:
            dealer = below(RNG, b, R_DEAL, n)
        else:
            dealer = np.int64(RES[b, S[b, NRES] - 1, n - 1])
        S[b, DEALER] = dealer
        _shuffle_deal(RNG, HD, b, n, dealer, r, slot)
    S[b, HDEALT + slot] = r + 1
    for c in range(NUM_CARDS):
        OP[b, c] = -1
    for q in range(n):
        hand = HD[b, slot, r, q]
        S[b, HAND + q] = hand
        while hand:
            low = hand & -hand
            OP[b, ctz(low)] = q
            hand ^= low
    holder = np.int64(OP[b, EGG])
    S[b, EGGH] = holder
    S[b, EGGK] = 1 << holder  # R19: private after the deal
    _reset_round(S, b, n)
    if r == 0:
        S[b, DRAG] = -1
        S[b, VICT] = -1
        _start_opening(S, OP, cfg, b)  # R5
        return
    k = S[b, NRES] - 1
    S[b, DRAG] = RES[b, k, 0]  # R30
    S[b, VICT] = RES[b, k, n - 1]
    if cfg[C_ASKS]:
        S[b, PH] = ASK
        S[b, CUR] = S[b, DRAG]
        S[b, TURN] = S[b, DRAG]
        S[b, ASKL] = cfg[C_ASKS]
        S[b, OPEN] = 0
    else:
        _start_opening(S, OP, cfg, b)


@_jit
def _forced_opening(S, cfg, b, seat):
    """states.forced_opening: R5 in round 1, R6 later."""
    th = thermometer(S[b, HAND + seat])
    if S[b, ROUND] == 0:
        if cfg[C_ALONE]:
            return np.int64(1) << (PLAY_BASE + TENS_SHIFT)  # play(10, 1)
        return (th >> TENS_SHIFT) << (PLAY_BASE + TENS_SHIFT)  # play(10, k), k <= tens held
    if th == 0:
        return np.int64(1)  # PASS: no numbered card
    return np.int64(1) << (PLAY_BASE + ((bit_length(th) - 1) & ~3))  # play(highest, 1)


@_jit
def _start_opening(S, OP, cfg, b):
    """engine._start_opening: the opener (10 of Fire's holder in round 1, R5; the Dragon
    later, R6) must make its forced play."""
    if S[b, ROUND] == 0:
        p = np.int64(OP[b, TEN_OF_FIRE])
    else:
        p = S[b, DRAG]
    S[b, PH] = PLAY
    S[b, CUR] = p
    S[b, TURN] = p
    S[b, OPEN] = _forced_opening(S, cfg, b, p)


@_jit
def new_match(S, OP, F, RES, RNG, HD, cfg, b):
    """A fresh match in slot ``b`` (engine.new_match), then its first deal."""
    for q in range(MAX_PLAYERS):
        S[b, HAND + q] = 0
        S[b, FIN + q] = -1
        F[b, SCORE + q] = 0.0
    S[b, ROUND] = 0
    S[b, NRES] = 0
    S[b, DEALER] = -1
    S[b, PH] = DEAL
    S[b, CUR] = -1
    S[b, TURN] = -1
    S[b, OPEN] = 0
    slot = S[b, HCUR]
    S[b, HLEN + slot] = 0
    S[b, HOK + slot] = 1
    S[b, HFIN + slot] = 0
    RNG[b, R_SEED + slot] = RNG[b, R_DEAL]
    deal(S, OP, RES, RNG, HD, cfg, b)


# ---------------------------------------------------------------------------------------
# Legal actions (engine.legal_mask), as ``LMLO`` (the actions below ``ASK_BASE``) and
# ``LMCARDS`` (the cards of the ask actions in ASK, of the give actions in GIVE).

@_jit
def _play_mask(S, cfg, b):
    """Legal plays in the PLAY phase (R5..R16)."""
    m = S[b, OPEN]
    if m:
        return m  # R5, R6: the forced opening
    p = S[b, CUR]
    r = S[b, TOP]
    hand = S[b, HAND + p]
    th = thermometer(hand)
    if r == 0:
        return th << 1 if th else np.int64(1)  # R8: lead if you can, else pass
    if (S[b, LOCKED] >> p) & 1:
        m = np.int64(1)  # R10: locked out, but may still complete
    else:
        m = 1 | ((th << 1) & FOLLOW[r, S[b, CNT]])  # R9
        d = hand & DRAGON_MASK
        if d:
            m |= DRAGON_ACTIONS[cfg[C_ANY], popcount(d)]  # R15, R16
    rem = S[b, REM]
    if not rem & ~hand:  # R11: holds every card of the top number not on the pile
        m |= np.int64(1) << (popcount(rem) + 4 * (r - 1))
    return m


@_jit
def legal(S, cfg, b):
    """Set ``LMLO``/``LMCARDS`` of match ``b`` to the legal actions of the seat to act."""
    ph = S[b, PH]
    lo = np.int64(0)
    cards = np.int64(0)
    if ph == PLAY:
        lo = _play_mask(S, cfg, b)
    elif ph == COMPLETE:  # R12
        lo = 1 | (np.int64(1) << (popcount(S[b, REM]) + 4 * (S[b, TOP] - 1)))
    elif ph == ASK:  # R31
        lo = np.int64(1)
        cards = ASKABLE & ~S[b, HAND + S[b, DRAG]] & ~S[b, ASKED]
    elif ph == GIVE:  # R33
        cards = S[b, HAND + S[b, DRAG]] & cfg[C_GIVE]
    S[b, LMLO] = lo
    S[b, LMCARDS] = cards


@_jit
def is_legal(S, b, a):
    """Whether action ``a`` is in the legal mask of match ``b``."""
    if a < 0 or a >= NUM_ACTIONS:
        return False
    if a < ASK_BASE:
        return (S[b, LMLO] >> a) & 1 == 1
    if a < GIVE_BASE:
        return S[b, PH] == ASK and (S[b, LMCARDS] >> (a - ASK_BASE)) & 1 == 1
    return S[b, PH] == GIVE and (S[b, LMCARDS] >> (a - GIVE_BASE)) & 1 == 1


@_jit
def random_action(S, RNG, b):
    """A uniformly random legal action of match ``b``, from its action generator."""
    lo = S[b, LMLO]
    cards = S[b, LMCARDS]
    c_lo = popcount(lo)
    total = c_lo + popcount(cards)
    j = below(RNG, b, R_ACT, total) if total > 1 else 0
    if j < c_lo:
        return _kth_bit(lo, j)
    base = ASK_BASE if S[b, PH] == ASK else GIVE_BASE
    return base + _kth_bit(cards, j - c_lo)


# ---------------------------------------------------------------------------------------
# Applying actions (engine.step and its helpers).

@_jit
def _push_play(S, OP, b, p, cards):
    """engine: ``plays.append((p, cards))``, packed as seat | nibble << 3 | bits << 7."""
    nib = ctz(cards) >> 2
    k = S[b, NPLAYS]
    OP[b, PLAYS + k] = p | (nib << 3) | (((cards >> (4 * nib)) & 15) << 7)
    S[b, NPLAYS] = k + 1


@_jit
def _play(S, OP, F, RES, cfg, prew, b, action):
    """engine._play: the seat to act plays ``count`` cards of ``number`` (R7..R14)."""
    p = S[b, CUR]
    x = action - 1
    r = (x >> 2) + 1
    k = (x & 3) + 1
    sh = x & ~3
    hand = S[b, HAND + p]
    if S[b, OPEN] and S[b, ROUND] == 0:  # R5: the 10 of Fire is part of the opening
        cards = TEN_F_BIT | (LOWEST[((hand & ~TEN_F_BIT) >> TENS_SHIFT) & 15, k - 1]
                             << TENS_SHIFT)
    else:
        cards = LOWEST[(hand >> sh) & 15, k] << sh  # R7: suits E, W, F, L
    S[b, OPEN] = 0
    hand ^= cards
    S[b, HAND + p] = hand
    pile = S[b, PILE] | cards
    S[b, PILE] = pile
    S[b, PLAYED] |= cards
    _push_play(S, OP, b, p, cards)
    S[b, TOP] = r
    S[b, CNT] = k
    S[b, LAST] = p
    S[b, PASSED] = 0
    if not hand and _go_out(S, F, RES, cfg, prew, b, p):  # R22
        return
    rm = RANK[r]
    if pile & rm == rm:  # R13, R14: all four on the pile
        _clear(S, OP, F, RES, cfg, prew, b, p)
        return
    rem = rm & ~pile
    S[b, REM] = rem
    nxt = next_seat(S[b, ACTIVE], p, cfg[C_N])
    S[b, PH] = PLAY
    S[b, CUR] = nxt
    S[b, TURN] = nxt
    if cfg[C_OOT]:  # R12: offer the completion out of turn
        c = np.int64(OP[b, ctz(rem)])
        if c != p and c != nxt and not rem & ~S[b, HAND + c]:
            S[b, PH] = COMPLETE
            S[b, CUR] = c


@_jit
def _dragons(S, OP, F, RES, cfg, prew, b, k):
    """engine._dragons: play ``k`` dragon cards (R15, R16)."""
    p = S[b, CUR]
    hand = S[b, HAND + p]
    # R7: Beast, Darklord, Horseman, Executioner
    cards = LOWEST[(hand >> DRAGONS_SHIFT) & 15, k] << DRAGONS_SHIFT
    hand ^= cards
    S[b, HAND + p] = hand
    S[b, PLAYED] |= cards
    _push_play(S, OP, b, p, cards)
    if not hand and _go_out(S, F, RES, cfg, prew, b, p):
        return
    _clear(S, OP, F, RES, cfg, prew, b, p)  # R15


@_jit
def _pass(S, OP, F, RES, cfg, prew, b):
    """engine._pass: a pass (R8 lead pass, R10 lock, R17 all-pass)."""
    p = S[b, CUR]
    n = cfg[C_N]
    if not S[b, TOP]:  # R6/R8: nothing to lead with; the next active player leads
        S[b, OPEN] = 0
        nxt = next_seat(S[b, ACTIVE], p, n)
        S[b, CUR] = nxt
        S[b, TURN] = nxt
        return
    bit = np.int64(1) << p
    S[b, PASSED] |= bit
    if cfg[C_LOCKS]:
        S[b, LOCKED] |= bit  # R10
    need = S[b, ACTIVE] & ~(np.int64(1) << S[b, LAST])
    if S[b, PASSED] & need == need:  # R17: all-pass
        _clear(S, OP, F, RES, cfg, prew, b, S[b, LAST])
    else:
        nxt = next_seat(S[b, ACTIVE], p, n)
        S[b, CUR] = nxt
        S[b, TURN] = nxt


@_jit
def _clear(S, OP, F, RES, cfg, prew, b, x):
    """engine._clear: the pile clears; ``x`` cleared it (R17) and leads next (R18)."""
    n = cfg[C_N]
    S[b, PILE] = 0
    S[b, TOP] = 0
    S[b, CNT] = 0
    S[b, REM] = 0
    S[b, PASSED] = 0
    S[b, LOCKED] = 0
    S[b, NPLAYS] = 0
    S[b, PH] = PLAY
    if S[b, EGGH] == x:  # R20: the Egg moves on at the clear
        y = next_seat(S[b, ACTIVE], x, n)
        S[b, HAND + x] ^= EGG_BIT
        S[b, HAND + y] |= EGG_BIT
        OP[b, EGG] = y
        S[b, EGGH] = y
        S[b, EGGK] = (1 << n) - 1
        if not S[b, HAND + x] and _go_out(S, F, RES, cfg, prew, b, x):  # R21
            return
    active = S[b, ACTIVE]
    leader = x if (active >> x) & 1 else next_seat(active, x, n)
    if S[b, PLAYED] & NUMBERED_MASK == NUMBERED_MASK:  # R24: nobody can ever lead again
        _end_round(S, F, RES, cfg, prew, b, True, leader)
        return
    S[b, CUR] = leader
    S[b, TURN] = leader


@_jit
def _go_out(S, F, RES, cfg, prew, b, p):
    """engine._go_out: seat ``p`` is out (R22); True when that ended the round (R23)."""
    active = S[b, ACTIVE] & ~(np.int64(1) << p)
    S[b, ACTIVE] = active
    S[b, FIN + S[b, NFIN]] = p
    S[b, NFIN] += 1
    if not active & (active - 1):
        _end_round(S, F, RES, cfg, prew, b, False, -1)
        return True
    return False


@_jit
def _deadlock_order(S, RES, cfg, b, k, pos, due):
    """R24: the active players other than the Egg holder, fewer cards first, ties in seat
    order from the player due to lead (a stable insertion sort); returns the next place."""
    n = cfg[C_N]
    egg = S[b, EGGH]
    active = S[b, ACTIVE]
    start = pos
    for d in range(n):
        q = (due + d) % n
        if not (active >> q) & 1 or q == egg:
            continue
        cnt = popcount(S[b, HAND + q])
        j = pos
        while j > start and popcount(S[b, HAND + RES[b, k, j - 1]]) > cnt:
            RES[b, k, j] = RES[b, k, j - 1]
            j -= 1
        RES[b, k, j] = q
        pos += 1
    return pos


@_jit
def _end_round(S, F, RES, cfg, prew, b, deadlock, due):
    """engine._end_round: the finishing order (R23..R25), rewards and scores (R27, R28), the
    round result (R29); DEAL or DONE next (R26)."""
    n = cfg[C_N]
    k = S[b, NRES]
    nf = S[b, NFIN]
    for j in range(nf):
        RES[b, k, j] = S[b, FIN + j]
    pos = nf
    if deadlock:
        pos = _deadlock_order(S, RES, cfg, b, k, pos, due)
    RES[b, k, pos] = S[b, EGGH]  # R23, R25
    for place in range(n):
        seat = RES[b, k, place]
        reward = prew[place]
        F[b, REW + seat] = reward
        F[b, SCORE + seat] += reward
        S[b, RORD + place] = seat
    RES[b, k, n] = 1 if deadlock else 0
    RES[b, k, n + 1] = S[b, ROUND]
    S[b, NRES] = k + 1
    S[b, REND] = 1
    S[b, RDEAD] = 1 if deadlock else 0
    r = S[b, ROUND] + 1
    S[b, ROUND] = r
    S[b, PH] = DONE if r >= cfg[C_ROUNDS] else DEAL
    S[b, CUR] = -1
    S[b, TURN] = -1
    S[b, OPEN] = 0


@_jit
def _move(S, OP, b, frm, to, card):
    """engine._move: ``card`` goes from seat ``frm`` to seat ``to`` (the tribute)."""
    bit = np.int64(1) << card
    S[b, HAND + frm] ^= bit
    S[b, HAND + to] |= bit
    OP[b, card] = to


@_jit
def _finish_asks(S, OP, cfg, b):
    """engine._finish_asks: the gifts follow (R33), or the opening (R6)."""
    g = popcount(S[b, HITS])
    S[b, GIVL] = g
    if g:
        S[b, PH] = GIVE  # R33
    else:
        _start_opening(S, OP, cfg, b)


@_jit
def _ask(S, OP, cfg, b, card):
    """engine._ask: the Dragon asks for ``card`` (R31); a hit is handed over (R32)."""
    bit = np.int64(1) << card
    S[b, ASKED] |= bit
    S[b, ASKL] -= 1
    if S[b, HAND + S[b, VICT]] & bit:  # R32: it must hand the card over
        _move(S, OP, b, S[b, VICT], S[b, DRAG], card)
        S[b, HITS] |= bit
    if not S[b, ASKL]:
        _finish_asks(S, OP, cfg, b)


@_jit
def _give(S, OP, cfg, b, card):
    """engine._give: the Dragon gives ``card`` back (R33)."""
    _move(S, OP, b, S[b, DRAG], S[b, VICT], card)
    S[b, GIVEN] |= np.int64(1) << card
    if card == EGG:  # R19: the two players of the tribute know where it went
        S[b, EGGH] = S[b, VICT]
        S[b, EGGK] = (np.int64(1) << S[b, DRAG]) | (np.int64(1) << S[b, VICT])
    S[b, GIVL] -= 1
    if not S[b, GIVL]:
        _start_opening(S, OP, cfg, b)


@_jit
def apply(S, OP, F, RES, cfg, prew, b, a):
    """engine.step for a legal action ``a`` (the caller checked it)."""
    ph = S[b, PH]
    if ph == PLAY:
        if a == PASS:
            _pass(S, OP, F, RES, cfg, prew, b)
        elif a < DRAGON_BASE:
            _play(S, OP, F, RES, cfg, prew, b, a)
        else:
            _dragons(S, OP, F, RES, cfg, prew, b, a - DRAGON_BASE + 1)
    elif ph == COMPLETE:
        if a == PASS:  # decline: not a turn, not a pass towards the all-pass (R12)
            S[b, PH] = PLAY
            S[b, CUR] = S[b, TURN]
        else:
            _play(S, OP, F, RES, cfg, prew, b, a)
    elif ph == ASK:
        if a == PASS:
            _finish_asks(S, OP, cfg, b)
        else:
            _ask(S, OP, cfg, b, a - ASK_BASE)
    else:  # GIVE
        _give(S, OP, cfg, b, a - GIVE_BASE)


# ---------------------------------------------------------------------------------------
# One step of one match: log, apply, deal the next round or finish the match.

@_jit
def clear_outputs(S, F, b):
    """Zero the step outputs of match ``b``."""
    for q in range(MAX_PLAYERS):
        F[b, REW + q] = 0.0
        F[b, FSCORE + q] = 0.0
        S[b, RORD + q] = -1
    S[b, REND] = 0
    S[b, RDEAD] = 0
    S[b, DONE_] = 0


@_jit
def _finish_match(S, OP, F, RES, RNG, HD, cfg, b):
    """R26: the match is over. Report it, keep its history in the other slot and (with
    autoreset) start a new match in slot ``b``."""
    S[b, DONE_] = 1
    slot = S[b, HCUR]
    for q in range(cfg[C_N]):
        F[b, FSCORE + q] = F[b, SCORE + q]
        F[b, HSCORE + slot * MAX_PLAYERS + q] = F[b, SCORE + q]
    S[b, EPIS] += 1
    S[b, HFIN + slot] = 1
    if not cfg[C_AUTO]:
        return
    if cfg[C_RECORD]:
        S[b, HCUR] = 1 - slot
    S[b, FORCED] = 0
    new_match(S, OP, F, RES, RNG, HD, cfg, b)


@_jit
def step_one(st, cfg, prew, b, a):
    """Apply the legal action ``a`` in match ``b`` (after clearing its outputs)."""
    S = st.S
    clear_outputs(S, st.F, b)
    if cfg[C_RECORD]:
        slot = S[b, HCUR]
        k = S[b, HLEN + slot]
        st.HL[b, slot, k] = (S[b, CUR] << 8) | a
        S[b, HLEN + slot] = k + 1
    apply(S, st.OP, st.F, st.RES, cfg, prew, b, a)
    ph = S[b, PH]
    if ph == DEAL:
        deal(S, st.OP, st.RES, st.RNG, st.HD, cfg, b)  # R4: the next round, same step
    elif ph == DONE:
        _finish_match(S, st.OP, st.F, st.RES, st.RNG, st.HD, cfg, b)


# ---------------------------------------------------------------------------------------
# Observations (observation.Encoder.encode) and masks.

@_jit
def _set_bits(out, row, base, x):
    while x:
        low = x & -x
        out[row, base + ctz(low)] = 1.0
        x ^= low


@_jit
def _rot(q, i, n):
    """Relative slot of seat ``q`` seen from seat ``i``."""
    return q - i if q >= i else q - i + n


@_jit
def _encode_seats(S, cfg, offs, b, i, full, out, row):
    """The per-seat binary slices of the encoding."""
    n = cfg[C_N]
    m = cfg[C_M]
    if S[b, TOP]:
        out[row, offs[O_TOPN] + S[b, TOP] - 1] = 1.0
        out[row, offs[O_TOPC] + S[b, CNT] - 1] = 1.0
        out[row, offs[O_LAST] + _rot(S[b, LAST], i, n)] = 1.0
    for place in range(S[b, NFIN]):
        out[row, offs[O_OUT] + _rot(S[b, FIN + place], i, n) * m + place] = 1.0
    passed = S[b, PASSED]
    locked = S[b, LOCKED]
    for q in range(n):
        if (passed >> q) & 1:
            out[row, offs[O_PASSED] + _rot(q, i, n)] = 1.0
        if (locked >> q) & 1:
            out[row, offs[O_LOCKED] + _rot(q, i, n)] = 1.0
    if full or (S[b, EGGK] >> i) & 1:  # R19
        out[row, offs[O_EGG] + _rot(S[b, EGGH], i, n)] = 1.0
    if S[b, TURN] >= 0:
        out[row, offs[O_TOACT] + _rot(S[b, TURN], i, n)] = 1.0
    if S[b, DRAG] >= 0:
        out[row, offs[O_DRAGON] + _rot(S[b, DRAG], i, n)] = 1.0
        out[row, offs[O_PAYER] + _rot(S[b, VICT], i, n)] = 1.0
    for j in range(n):
        out[row, offs[O_PRESENT] + j] = 1.0


@_jit
def encode(S, F, cfg, offs, b, i, full, out, row):
    """observation.Encoder.encode of match ``b`` for seat ``i`` into ``out[row]`` (``full``:
    the ``state=True`` encoder, from seat 0)."""
    n = cfg[C_N]
    m = cfg[C_M]
    for j in range(offs[O_SIZE]):
        out[row, j] = 0.0
    _set_bits(out, row, offs[O_HAND], S[b, HAND + i])
    _set_bits(out, row, offs[O_PILE], S[b, PILE])
    _set_bits(out, row, offs[O_PLAYED], S[b, PLAYED])
    _encode_seats(S, cfg, offs, b, i, full, out, row)
    ph = S[b, PH]
    if ph == COMPLETE and not full and S[b, CUR] != i:
        ph = PLAY  # R12: the offer is in no other observation
    out[row, offs[O_PHASE] + (ph if ph < DEAL else DEAL)] = 1.0
    party = full or i == S[b, DRAG] or i == S[b, VICT]
    if party and S[b, ASKED]:  # R34: the exchange is private to the two players
        _set_bits(out, row, offs[O_ASKED], S[b, ASKED])
        _set_bits(out, row, offs[O_TAKEN], S[b, HITS])
        _set_bits(out, row, offs[O_GIVEN], S[b, GIVEN])
    if full:
        for q in range(n):
            _set_bits(out, row, offs[O_ALL] + q * NUM_CARDS, S[b, HAND + q])
    nb = offs[O_NB]
    inv = 1.0 / cfg[C_ROUNDS]
    for j in range(n):
        q = i + j if i + j < n else i + j - n
        out[row, nb + j] = np.float32(popcount(S[b, HAND + q]) / NUM_CARDS)
        out[row, nb + m + j] = np.float32(F[b, SCORE + q] * inv)
    out[row, nb + 2 * m] = np.float32(S[b, ROUND] * inv)
    if party:
        out[row, nb + 2 * m + 1] = np.float32(S[b, ASKL] / MAX_ASKS)


@_jit
def _write_mask(S, mask, b):
    for j in range(NUM_ACTIONS):
        mask[b, j] = False
    lo = S[b, LMLO]
    while lo:
        low = lo & -lo
        mask[b, ctz(low)] = True
        lo ^= low
    cards = S[b, LMCARDS]
    base = ASK_BASE if S[b, PH] == ASK else GIVE_BASE
    while cards:
        low = cards & -cards
        mask[b, base + ctz(low)] = True
        cards ^= low


@_jit
def refresh(S, F, obs, mask, cfg, offs, b):
    """Legal mask, mask row, acting seat and observation row of match ``b``."""
    legal(S, cfg, b)
    _write_mask(S, mask, b)
    p = S[b, CUR]
    S[b, SEAT] = p
    if p >= 0:
        encode(S, F, cfg, offs, b, p, False, obs, b)
    else:
        for j in range(offs[O_SIZE]):
            obs[b, j] = 0.0


# ---------------------------------------------------------------------------------------
# Kernels: loops over the batch.

@_jit
def k_reset(st, cfg, offs, which):
    """Start a new match in every slot ``b`` with ``which[b]`` (outputs cleared)."""
    S, F = st.S, st.F
    for b in range(S.shape[0]):
        if not which[b]:
            continue
        clear_outputs(S, F, b)
        new_match(S, st.OP, F, st.RES, st.RNG, st.HD, cfg, b)
        refresh(S, F, st.obs, st.mask, cfg, offs, b)


@_jit
def k_refresh(st, cfg, offs):
    """Deal the slots waiting for cards (``from_states``), then refresh every slot."""
    S, F = st.S, st.F
    for b in range(S.shape[0]):
        clear_outputs(S, F, b)
        if S[b, PH] == DEAL:
            deal(S, st.OP, st.RES, st.RNG, st.HD, cfg, b)
        refresh(S, F, st.obs, st.mask, cfg, offs, b)


@_jit
def k_check(S, actions):
    """Index of the first match whose action is illegal, -1 when all are legal."""
    for b in range(S.shape[0]):
        if not is_legal(S, b, actions[b]):
            return b
    return -1


@_jit
def k_step(st, cfg, prew, offs, actions):
    """One step of every match (actions checked by :func:`k_check`). Returns True when a
    history log is full (the caller grows it before the next step)."""
    S, F = st.S, st.F
    full = False
    cap = st.HL.shape[2]
    for b in range(S.shape[0]):
        step_one(st, cfg, prew, b, actions[b])
        refresh(S, F, st.obs, st.mask, cfg, offs, b)
        if cfg[C_RECORD] and S[b, HLEN + S[b, HCUR]] >= cap:
            full = True
    return full


@_jit
def _random_match(st, cfg, prew, offs, b, steps_left, acc, counts):
    """Up to ``steps_left[b]`` random steps of match ``b`` (see :func:`k_random`)."""
    S, F = st.S, st.F
    cap = st.HL.shape[2]
    record = cfg[C_RECORD]
    n = cfg[C_N]
    while steps_left[b] > 0:
        if S[b, PH] == DONE:
            steps_left[b] = 0
            break
        if record and S[b, HLEN + S[b, HCUR]] >= cap:
            return True
        a = random_action(S, st.RNG, b)
        step_one(st, cfg, prew, b, a)
        refresh(S, F, st.obs, st.mask, cfg, offs, b)
        for q in range(n):
            acc[b, q] += F[b, REW + q]
        counts[b, 0] += 1
        counts[b, 1] += S[b, REND]
        counts[b, 2] += S[b, DONE_]
        steps_left[b] -= 1
    return record != 0 and S[b, HLEN + S[b, HCUR]] >= cap


@_jit
def k_random(st, cfg, prew, offs, steps_left, acc, counts):
    """Play up to ``steps_left[b]`` uniformly random legal steps in each match, with the
    observation and mask of every step written. ``acc[b]`` sums the rewards, ``counts[b]``
    counts (steps, rounds ended, matches finished). Without autoreset a finished match stops
    (its ``steps_left`` set to 0). A match whose history log is full stops early; returns
    True when a log is full (the caller grows it and calls again)."""
    full = False
    for b in range(st.S.shape[0]):
        if _random_match(st, cfg, prew, offs, b, steps_left, acc, counts):
            full = True
    return full


@_jit
def k_encode_all(S, F, cfg, offs, full, seat, out):
    """Encode every match for ``seat[b]`` (``full``: the state encoding) into ``out``."""
    for b in range(S.shape[0]):
        encode(S, F, cfg, offs, b, seat[b], full, out, b)
