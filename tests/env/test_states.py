"""The state module (``dragons_egg_env.states``): states built from information
(``state_from_info``), the consistency check (``check_invariants``, and ``engine.check_state``,
which adds the legal-mask cache), the derived caches, the engine's re-exports of it, and the
determinization sampler that uses both."""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import random
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from dragons_egg.agents import sampling
from dragons_egg.agents.sampling import SamplingError, sample_world
from dragons_egg_env import engine as E
from dragons_egg_env import states as S
from dragons_egg_env.actions import PASS, play
from dragons_egg_env.cards import (
    ALL_CARDS,
    DRAGON_MASK,
    EGG_BIT,
    NUM_CARDS,
    RANK_MASK,
    TEN_OF_FIRE,
)
from dragons_egg_env.config import MAX_ASKS, TABLE_SIZES, RulesConfig
from dragons_egg_env.observation import Encoder, decode_observation

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASK_CHOICES = (0, 1, 2, 5, MAX_ASKS)


def random_config(rng: random.Random, n: int) -> RulesConfig:
    """A config for ``n`` seats with every other rule flag drawn at random (from the flags'
    own metadata, so a new flag is covered without touching this test)."""
    kwargs: dict[str, object] = {"num_players": n, "num_rounds": rng.randint(1, 3)}
    for name in RulesConfig.field_names():
        if name in kwargs:
            continue
        info = RulesConfig.flag_info(name)
        if info["kind"] == "bool":
            kwargs[name] = rng.random() < 0.5
        elif info["kind"] == "str":
            kwargs[name] = rng.choice(info["choices"])
        elif name == "tribute_asks":
            kwargs[name] = rng.choice(ASK_CHOICES)
        else:
            kwargs[name] = info["default"]
    return RulesConfig(**kwargs)


def played_states(config: RulesConfig, seed: int) -> Iterator[S.State]:
    """Every state of a random match (the state itself: clone it to keep it), the
    pre-deal state and the end included."""
    rng = random.Random(seed)
    s = E.new_match(config)
    yield s
    while s.phase != S.DONE:
        if s.phase == S.DEAL:
            E.deal(s, E.random_deal(s, rng))
        else:
            acts = E.legal_actions(s)
            E.step(s, acts[rng.randrange(len(acts))])
        yield s


def matches(num: int, seed: int) -> Iterator[tuple[RulesConfig, int]]:
    """``num`` (config, seed) pairs cycling through every table size."""
    rng = random.Random(seed)
    for k in range(num):
        yield random_config(rng, TABLE_SIZES[k % len(TABLE_SIZES)]), rng.randrange(1 << 30)


def find_state(pred: Callable[[S.State], bool], **flags: object) -> S.State:
    """A clone of the first state reached by random play for which ``pred`` holds."""
    for seed in range(500):
        for s in played_states(RulesConfig(**flags), seed):
            if pred(s):
                return s.clone()
    raise AssertionError("no such state reached")


def rebuild(s: S.State, **changes: object) -> S.State:
    return S.state_from_info(s.config, **{**S.state_info(s), **changes})


# ---------------------------------------------------------------------------------------
# check_state on every state reached by play.

def test_check_state_passes_on_every_state_reached_by_play():
    checked = 0
    seen_phases = set()
    sizes = set()
    for config, seed in matches(150, seed=1):
        for s in played_states(config, seed):
            E.check_state(s)
            E.legal_mask(s)  # a fresh cache must pass too
            E.check_state(s)
            seen_phases.add(s.phase)
            checked += 1
        sizes.add(config.num_players)
    assert checked > 20000
    assert seen_phases == set(S.Phase)
    assert sizes == set(TABLE_SIZES)


# ---------------------------------------------------------------------------------------
# The round trip: state_from_info(state_info(s)) behaves like s.

def comparable(s: S.State) -> dict[str, object]:
    """Every field that can matter for play, observations or renders. Left out: the
    legal-mask cache; ``owner`` of cards no one holds (never read); and, once a round is over,
    ``rem`` (possibly stale there, overwritten by the next deal)."""
    out = {name: getattr(s, name) for name in S.State.__slots__}
    del out["mask"]
    held = ALL_CARDS & ~s.played
    out["owner"] = [q if held >> c & 1 else None for c, q in enumerate(s.owner)]
    if s.phase >= S.DEAL:
        del out["rem"]
    return out


def encodings(s: S.State, encoders: list[Encoder], full: Encoder) -> list[np.ndarray]:
    return [enc.encode(s, q) for q, enc in enumerate(encoders)] + [full.encode(s, 0)]


def test_state_from_info_round_trip_behaves_identically():
    rng = random.Random(3)
    states = continued = 0
    phases = set()
    for config, seed in matches(35, seed=2):
        n, rounds = config.num_players, config.num_rounds
        encoders = [Encoder(n, n, rounds) for _ in range(n)]
        full = Encoder(n, n, rounds, state=True)
        for k, s in enumerate(played_states(config, seed)):
            if s.phase == S.DEAL and s.round_idx == 0:
                continue  # nothing dealt: no information to build from
            t = rebuild(s)
            E.check_state(t)
            assert comparable(t) == comparable(s)
            phases.add(s.phase)
            if s.phase != S.DONE and s.phase != S.DEAL:
                assert E.legal_mask(t) == E.legal_mask(s)
            if k % 2 == 0:
                for a, b in zip(encodings(t, encoders, full), encodings(s, encoders, full),
                                strict=True):
                    assert np.array_equal(a, b)
            states += 1
            if k % 53:
                continue
            # The continuation under the same actions (and the same deals) is the same.
            u, v = s.clone(), t
            cont = random.Random(rng.randrange(1 << 30))
            while u.phase != S.DONE:
                if u.phase == S.DEAL:
                    seed_deal = cont.randrange(1 << 30)
                    E.deal(u, E.random_deal(u, random.Random(seed_deal)))
                    E.deal(v, E.random_deal(v, random.Random(seed_deal)))
                else:
                    m = E.legal_mask(u)
                    assert E.legal_mask(v) == m
                    acts = E.bits_of(m)
                    a = acts[cont.randrange(len(acts))]
                    E.step(u, a)
                    E.step(v, a)
                assert comparable(v) == comparable(u)
                E.check_state(v)
            assert v.results == u.results and v.scores == u.scores
            continued += 1
    assert states > 3000 and continued > 50
    assert phases == set(S.Phase)


def test_derived_caches_match_the_engine():
    """Caches the engine keeps while playing equal the ones state_from_info derives."""
    s = find_state(lambda s: s.phase == S.PLAY and s.round_idx == 1 and bool(s.top_rank),
                   num_players=5)
    t = rebuild(s)
    for name in ("th", "egg_holder", "rem", "active", "gives_left", "opening_mask", "next_tbl",
                 "all_seats", "give_mask", "place_rewards"):
        assert getattr(t, name) == getattr(s, name), name


# ---------------------------------------------------------------------------------------
# The forced opening (R5, R6) comes from the one helper deal() uses.

@pytest.mark.parametrize("alone", [True, False])
def test_round_one_opening_is_derived(alone):
    s = find_state(lambda s: s.phase == S.PLAY and not s.played, opening_ten_of_fire_alone=alone)
    assert s.current == s.owner[TEN_OF_FIRE]
    t = rebuild(s)
    assert t.opening_mask == s.opening_mask != 0
    assert E.legal_mask(t) == E.legal_mask(s)
    if alone:
        assert E.legal_actions(t) == [play(10, 1)]
    else:
        tens = (t.hands[t.current] & RANK_MASK[10]).bit_count()
        assert E.legal_actions(t) == [play(10, k) for k in range(1, tens + 1)]


def test_dragon_opening_is_derived_and_without_numbered_cards_is_a_pass():
    s = find_state(lambda s: s.phase == S.PLAY and s.round_idx == 1 and not s.played,
                   num_players=3)
    assert s.current == s.dragon
    t = rebuild(s)
    assert t.opening_mask == s.opening_mask != 0
    # R6: a Dragon with no numbered card passes; the next active player then leads freely.
    d = s.dragon
    hands = [0] * 3
    hands[d] = DRAGON_MASK
    others = [q for q in range(3) if q != d]
    hands[others[0]] = ALL_CARDS & ~DRAGON_MASK & ~RANK_MASK[1]
    hands[others[1]] = RANK_MASK[1]
    u = rebuild(s, hands=hands, asked=0, hits=0, given=0, asks_left=0, egg_known=None)
    assert E.legal_actions(u) == [PASS]
    E.step(u, PASS)
    assert u.current == (d + 1) % 3 and u.opening_mask == 0
    E.check_state(u)


def test_opening_is_not_due_once_someone_played():
    s = find_state(lambda s: s.phase == S.PLAY and s.round_idx == 0 and bool(s.played)
                   and s.current == s.owner[TEN_OF_FIRE] and not s.top_rank)
    assert rebuild(s).opening_mask == 0


# ---------------------------------------------------------------------------------------
# check_state rejects corrupted states, naming what is wrong.

def _pile_state() -> S.State:
    return find_state(lambda s: s.phase == S.PLAY and bool(s.top_rank) and s.top_rank < 10
                      and bool(s.finish) is False and s.round_idx == 0
                      and not s.hands[s.current] & EGG_BIT, num_players=4)


def _move_card(s: S.State) -> None:
    p = s.current
    q = (p + 1) % s.n
    low = s.hands[p] & -s.hands[p]
    s.hands[q] |= low  # now in two hands


def _drop_card(s: S.State) -> None:
    p = s.current
    s.hands[p] &= s.hands[p] - 1
    s.th[p] = S.thermometer(s.hands[p])


def _stale_th(s: S.State) -> None:
    s.th[s.current] ^= 1


def _wrong_owner(s: S.State) -> None:
    p = s.current
    card = (s.hands[p] & -s.hands[p]).bit_length() - 1
    s.owner[card] = (p + 1) % s.n


def _wrong_egg_holder(s: S.State) -> None:
    s.egg_holder = (s.egg_holder + 1) % s.n


def _active_without_finish(s: S.State) -> None:
    s.active &= ~(1 << s.current)


def _nobody_to_act(s: S.State) -> None:
    s.current = s.turn = -1


def _turn_differs(s: S.State) -> None:
    s.turn = s.next_tbl[s.active][s.current]


def _top_without_pile(s: S.State) -> None:
    s.top_rank = 0


def _wrong_rem(s: S.State) -> None:
    s.rem ^= RANK_MASK[s.top_rank]


def _pile_below_top(s: S.State) -> None:
    s.top_rank += 1
    s.rem = RANK_MASK[s.top_rank] & ~s.pile


def _locked_without_flag(s: S.State) -> None:
    s.locked = 1 << s.current


def _all_passed(s: S.State) -> None:
    s.passed = s.active & ~(1 << s.last_player)


def _short_scores(s: S.State) -> None:
    s.scores = s.scores[:-1]


def _stale_mask(s: S.State) -> None:
    s.mask = E.legal_mask(s) ^ (1 << PASS)


def _bad_egg_known(s: S.State) -> None:
    s.egg_known = 1 << ((s.egg_holder + 1) % s.n)


def _done_too_early(s: S.State) -> None:
    s.phase = S.DONE


def _fake_offer(s: S.State) -> None:
    s.phase = S.COMPLETE


def _gives_left_in_play(s: S.State) -> None:
    s.gives_left = 1


def _plays_not_pile(s: S.State) -> None:
    s.plays = s.plays[:-1]


def _egg_played(s: S.State) -> None:
    h = s.egg_holder
    s.hands[h] &= ~EGG_BIT
    s.th[h] = S.thermometer(s.hands[h])
    s.played |= EGG_BIT


def _wrong_config_cache(s: S.State) -> None:
    s.oot = not s.oot


CORRUPTIONS = [
    (_move_card, r"also held by another seat or played \(R1\)"),
    (_drop_card, r"neither held nor played \(R1, R4\)"),
    (_stale_th, r"th cache of seat"),
    (_wrong_owner, r"owner cache says card"),
    (_wrong_egg_holder, r"egg_holder .* disagrees with the hands \(R19\)"),
    (_active_without_finish, r"is not the seats missing from finish"),
    (_nobody_to_act, r"must be active seats"),
    (_turn_differs, r"differs from turn"),
    (_top_without_pile, r"disagree with the pile"),
    (_wrong_rem, r"rem .* \(R11\)"),
    (_pile_below_top, r"does not have a top play"),
    (_locked_without_flag, r"pass_locks_out is off \(R10\)"),
    (_all_passed, r"all-pass \(R17\)"),
    (_short_scores, r"hands, th and scores need 4 entries"),
    (_stale_mask, r"cached legal mask"),
    (_bad_egg_known, r"egg_known .* R19"),
    (_done_too_early, r"round index 0 does not fit phase 'done'"),
    (_fake_offer, r"cannot be offered a completion"),
    (_gives_left_in_play, r"gives_left 1 outside the give phase \(R33\)"),
    (_plays_not_pile, r"plays do not make up the pile"),
    (_egg_played, r"Egg is among the played cards"),
    (_wrong_config_cache, r"rule caches"),
]


@pytest.mark.parametrize("corrupt,message", CORRUPTIONS, ids=[c.__name__ for c, _ in CORRUPTIONS])
def test_check_state_names_a_corruption(corrupt, message):
    s = _pile_state()
    E.check_state(s)
    corrupt(s)
    with pytest.raises(S.StateError, match=message):
        E.check_state(s)


def _tribute_state(phase: S.Phase) -> S.State:
    return find_state(lambda s: s.phase == phase and bool(s.hits), num_players=3,
                      tribute_asks=3)


def test_check_state_names_tribute_corruptions():
    s = _tribute_state(S.ASK)
    bad = s.clone()
    bad.asks_left += 1
    with pytest.raises(S.StateError, match=r"exceeds tribute_asks=3 \(R31\)"):
        E.check_state(bad)
    bad = s.clone()
    bad.asks_left -= 1
    with pytest.raises(S.StateError, match=r"do not add up to tribute_asks=3 \(R31\)"):
        E.check_state(bad)
    bad = s.clone()
    bad.dragon = bad.victim = -1
    with pytest.raises(S.StateError, match=r"lacks a Dragon"):
        E.check_state(bad)
    bad = s.clone()
    bad.asked |= EGG_BIT
    with pytest.raises(S.StateError, match=r"asked for the Egg"):
        E.check_state(bad)
    bad = s.clone()
    bad.current = bad.turn = bad.victim
    with pytest.raises(S.StateError, match=r"the tribute needs the Dragon to act"):
        E.check_state(bad)
    g = _tribute_state(S.GIVE)
    bad = g.clone()
    bad.gives_left += 1
    with pytest.raises(S.StateError, match=r"gives_left .* do not match the hits"):
        E.check_state(bad)
    # The same information given to state_from_info fails the same way.
    with pytest.raises(S.StateError, match=r"do not add up"):
        rebuild(s, asks_left=s.asks_left - 1)


def test_check_state_accepts_the_pre_deal_state_and_rejects_a_half_dealt_one():
    s = E.new_match(RulesConfig())
    E.check_state(s)
    s.hands[0] = 1
    with pytest.raises(S.StateError, match=r"waiting for its first deal"):
        E.check_state(s)


def test_state_from_info_rejects_malformed_arguments():
    s = _pile_state()
    with pytest.raises(S.StateError, match=r"hands has 3 entries for 4 seats"):
        rebuild(s, hands=s.hands[:3])
    with pytest.raises(S.StateError, match=r"current must be a seat 0..3 or -1"):
        rebuild(s, current=4)
    with pytest.raises(S.StateError, match=r"phase must be one of"):
        rebuild(s, phase=9)
    with pytest.raises(S.StateError, match=r"hand of seat 0 is not a card bitmask"):
        rebuild(s, hands=[-1] + s.hands[1:])
    with pytest.raises(S.StateError, match=r"top_number must be"):
        rebuild(s, top_number=11)
    bad = rebuild(s, check=False, top_count=0)  # built, not checked
    with pytest.raises(S.StateError, match=r"disagree with the pile"):
        E.check_state(bad)
    assert issubclass(S.StateError, ValueError)


def test_check_invariants_is_check_state_less_the_legal_mask_cache():
    """``states.check_invariants`` finds every corruption ``engine.check_state`` finds, with the
    same message, except a wrong legal-mask cache: that cache is the rules' (``legal_mask``
    lives in the engine), and only ``check_state`` recomputes it."""
    for corrupt, message in CORRUPTIONS:
        s = _pile_state()
        S.check_invariants(s)
        corrupt(s)
        if corrupt is _stale_mask:
            S.check_invariants(s)  # the invariants hold; the cache is wrong
            with pytest.raises(S.StateError, match=message):
                E.check_state(s)
            E.check_state(s, caches=False)  # caches=False skips it in both
            continue
        with pytest.raises(S.StateError, match=message) as inv:
            S.check_invariants(s)
        with pytest.raises(S.StateError) as full:
            E.check_state(s)
        assert str(full.value) == str(inv.value), corrupt.__name__


def test_the_engine_re_exports_the_state_module():
    """Every public name of ``states`` is the same object under ``engine`` (``E.State``,
    ``E.state_from_info``, ...), where the project's code and the docs read them; the engine
    defines ``check_state`` itself (the invariants plus the legal-mask cache)."""
    assert S.__all__ and set(S.__all__) - {"check_invariants"} <= set(E.__all__)
    for name in S.__all__:
        assert getattr(E, name) is getattr(S, name), name
        assert getattr(S, name) is not None
    assert not hasattr(S, "check_state") and E.check_state.__module__ == E.__name__
    assert E.State.__module__ == S.__name__ == "dragons_egg_env.states"


def test_thermometer_matches_its_definition():
    rng = random.Random(0)
    for _ in range(2000):
        hand = rng.getrandbits(NUM_CARDS)
        want = 0
        for number in range(1, 11):
            k = (hand & RANK_MASK[number]).bit_count()
            want |= ((1 << k) - 1) << (4 * (number - 1))
        assert S.thermometer(hand) == want


# ---------------------------------------------------------------------------------------
# The sampler builds its worlds through the engine.

def _views(num_matches: int, seed: int):
    """(view, config, true state, observer) at decision points of random matches, for the
    seat to act (the one a search samples for)."""
    rng = random.Random(seed)
    for config, mseed in matches(num_matches, seed):
        n = config.num_players
        enc = Encoder(n, n, config.num_rounds)
        for s in played_states(config, mseed):
            if s.phase > S.GIVE or rng.random() < 0.6:
                continue
            me = s.current
            yield decode_observation(enc.encode(s, me), num_rounds=config.num_rounds), config, s, me


def test_sampled_worlds_pass_check_state_and_keep_the_observers_view():
    rng = random.Random(5)
    count = 0
    for view, config, s, me in _views(35, seed=4):
        n = config.num_players
        state = rng.getstate()
        world = sample_world(view, config, rng, check=True)
        E.check_state(world)  # the full check, caches included
        assert np.array_equal(Encoder(n, n, config.num_rounds).encode(world, 0),
                              Encoder(n, n, config.num_rounds).encode(s, me))
        assert E.legal_mask(world) == E.legal_mask(s)
        # The check draws nothing: the same draws give the same world without it.
        rng2 = random.Random()
        rng2.setstate(state)
        assert sample_world(view, config, rng2, check=False).hands == world.hands
        count += 1
    assert count > 1000


def test_sampler_reports_an_inconsistent_view():
    view, config, s, me = next(v for v in _views(20, seed=6) if 0 < v[0].top_number < 10)
    wrong = dataclasses.replace(view, top_number=view.top_number + 1)  # not the pile's top
    with pytest.raises(SamplingError, match=r"no consistent state: .*\(R9\)"):
        sample_world(wrong, config, random.Random(0))
    sample_world(wrong, config, random.Random(0), check=False)  # unchecked: built anyway


def test_sampler_knows_the_round_one_opener_holds_the_ten_of_fire():
    s = find_state(lambda s: s.phase == S.PLAY and not s.played, num_players=5)
    rng = random.Random(0)
    enc = Encoder(5, 5, s.config.num_rounds)
    for me in range(5):
        if me == s.current:
            continue
        view = decode_observation(enc.encode(s, me), num_rounds=s.config.num_rounds)
        for _ in range(20):
            world = sample_world(view, s.config, rng)
            assert world.owner[TEN_OF_FIRE] == (s.current - me) % 5 == world.current


def test_sampler_knows_a_dragon_that_passed_the_opening_holds_no_numbered_card():
    """R6: a Dragon without numbered cards passes; the next seats see that it has none."""
    n = 4
    hands = [DRAGON_MASK | EGG_BIT, RANK_MASK[1] | RANK_MASK[2], 0, 0]
    rest = ALL_CARDS & ~hands[0] & ~hands[1]
    hands[2] = rest & sum(RANK_MASK[k] for k in range(3, 7))
    hands[3] = rest & ~hands[2]
    config = RulesConfig(num_players=n, num_rounds=2, tribute_asks=0)
    s = S.state_from_info(config, hands=hands, current=0, round_index=1, dragon=0, victim=3,
                          scores=[1.0, -1 / 3, 1 / 3, -1.0])
    assert E.legal_actions(s) == [PASS]
    E.step(s, PASS)  # the lead moves to seat 1, nothing played yet
    view = decode_observation(Encoder(n, n, 2).encode(s, 1), num_rounds=2)
    rng = random.Random(1)
    for _ in range(50):
        world = sample_world(view, config, rng)  # checked: consistent with R6
        assert not world.hands[n - 1] & ~(DRAGON_MASK | EGG_BIT)  # the Dragon, relative seat 3
        assert E.legal_mask(world) == E.legal_mask(s)


def test_sampler_cannot_build_the_tribute_for_a_player_outside_it():
    """R34: a third player sees an ask phase but none of its record; there is no consistent
    state to build from that, and the sampler says so (searches sample for the seat to act,
    which in the tribute is the Dragon)."""
    s = find_state(lambda s: s.phase == S.ASK, num_players=3)
    me = next(q for q in range(3) if q not in (s.dragon, s.victim))
    view = decode_observation(Encoder(3, 3, s.config.num_rounds).encode(s, me),
                              num_rounds=s.config.num_rounds)
    with pytest.raises(SamplingError, match=r"asks made .* do not add up"):
        sample_world(view, s.config, random.Random(0))


def _assigned_attribute(target: ast.expr) -> bool:
    """Whether an assignment target writes an attribute (``s.x = ...``, ``s.x[i] = ...``)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_assigned_attribute(t) for t in target.elts)
    while isinstance(target, ast.Subscript):
        target = target.value
    return isinstance(target, ast.Attribute)


def test_sampler_writes_no_state_field_and_leaves_the_opening_to_the_engine():
    tree = ast.parse((ROOT / "agents" / "sampling.py").read_text())
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        assert not any(_assigned_attribute(t) for t in targets), \
            f"agents/sampling.py line {node.lineno} assigns an attribute"
        if isinstance(node, ast.ImportFrom):
            names = {a.name for a in node.names}
            assert not names & {"RANK_MASK", "thermometer", "PLAY_BASE"}, names
    assert "opening_mask" not in (ROOT / "agents" / "sampling.py").read_text()
    assert sampling.sample_world.__kwdefaults__ == {"check": True}
