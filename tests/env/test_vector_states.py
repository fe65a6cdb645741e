"""VectorEngine.from_states checks its states (issue 22): every state goes through the field
type checks and engine.check_state unless the caller passes trusted=True, and after the check
no input crashes the interpreter (a fuzz run in a subprocess, where a segfault is an exit
status rather than the end of pytest).

This file is also a script: ``python test_vector_states.py repro FIELD VALUE`` loads one
corrupt state and plays it, ``python test_vector_states.py fuzz N [SEED]`` runs N mutated states;
the tests below run both in subprocesses."""

from __future__ import annotations

import copy
import dataclasses
import faulthandler
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")

from dragons_egg_env import engine as E
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.vector import VectorEngine

HERE = Path(__file__).resolve()


def play_state(config: RulesConfig, seed: int, steps: int, *, pile: bool = False) -> E.State:
    """A state of random scalar play: ``steps`` random actions after the first deal (later
    rounds dealt as they come), then, with ``pile``, on until the pile holds a play."""
    rng = random.Random(seed)
    s = E.new_match(config)
    E.deal(s, E.random_deal(s, rng))
    k = 0
    while k < steps or (pile and not (s.phase == E.PLAY and s.top_rank)):
        acts = E.legal_actions(s)
        E.step(s, acts[rng.randrange(len(acts))])
        if s.phase == E.DONE:
            s = E.new_match(config)
        if s.phase == E.DEAL:
            E.deal(s, E.random_deal(s, rng))
        k += 1
    return s


def mid_pile_state() -> E.State:
    """Round 1 of a 4-seat match with cards on the pile: every field the issue corrupts is
    in use (the seat to act, the last player, the top number, the Egg holder)."""
    s = play_state(RulesConfig(), 3, 9, pile=True)
    assert s.phase == E.PLAY and s.top_rank and s.last_player >= 0
    return s


def run_script(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(HERE), *args], capture_output=True, text=True,
                          timeout=timeout)


# -- the reproductions -------------------------------------------------------------
#: Each of these killed the interpreter with SIGSEGV before from_states checked its states.
CRASHERS = [("current", 10**8), ("egg_holder", 10**8), ("last_player", 10**8),
            ("top_rank", 10**5)]


def repro(field: str, value: int) -> None:
    """The child of test_corrupt_state_that_crashed_is_refused: load and play one state."""
    faulthandler.enable()
    s = mid_pile_state()
    setattr(s, field, value)
    try:
        eng = VectorEngine.from_states([s], seed=0)
    except (ValueError, TypeError) as exc:
        print(f"REJECTED {type(exc).__name__}: {exc}")
        return
    stats = eng.random_steps(200)
    print(f"ACCEPTED {stats.steps} steps, rewards {stats.rewards.sum(axis=1).tolist()}")


@pytest.mark.parametrize("field,value", CRASHERS)
def test_corrupt_state_that_crashed_is_refused(field, value):
    proc = run_script("repro", field, str(value))
    assert proc.returncode == 0, (f"the child died (status {proc.returncode}): "
                                  f"{proc.stdout}{proc.stderr[-3000:]}")
    assert proc.stdout.startswith("REJECTED StateError: state 0: "), proc.stdout
    assert field in proc.stdout or str(value) in proc.stdout, proc.stdout


def test_an_egg_holder_past_the_table_is_refused():
    """egg_holder = 5 at 4 seats played on with rewards that summed to +1, not 0."""
    s = mid_pile_state()
    s.egg_holder = 5
    with pytest.raises(E.StateError, match=r"^state 0: egg_holder 5 disagrees with the hands"):
        VectorEngine.from_states([s], seed=0)


def test_a_phase_that_is_no_phase_is_refused():
    """phase = 17 gave a match that never moved while random_steps counted its steps."""
    s = mid_pile_state()
    s.phase = 17
    with pytest.raises(E.StateError, match=r"^state 0: phase 17 is not a Phase"):
        VectorEngine.from_states([s], seed=0)


def test_empty_hands_are_refused():
    """Empty hands (caches made to agree) gave a match that never moved."""
    s = mid_pile_state()
    s.hands = [0] * s.n
    s.th = [0] * s.n
    s.owner = [-1] * len(s.owner)
    with pytest.raises(E.StateError, match=r"^state 0: card\(s\) .* are neither held nor "
                                           r"played"):
        VectorEngine.from_states([s], seed=0)


# -- what the check says, and what it lets through ----------------------------------------
def test_the_error_names_the_state_index():
    good = mid_pile_state()
    bad = good.clone()
    bad.egg_known = 0
    with pytest.raises(E.StateError, match=r"^state 2: egg_known"):
        VectorEngine.from_states([good, good.clone(), bad, good.clone()])


@pytest.mark.parametrize("field,value,message", [
    ("current", 1.0, "current must be an int"),
    ("current", True, "current must be an int"),
    ("played", np.int64(3), "played must be an int"),
    ("top_rank", 2**64, "top_rank must be an int within int64"),
    ("phase", "play", "phase must be an int"),
    ("hands", "abcd", "hands must be a list of ints"),
    ("owner", [0.5] * 45, "owner must be a list of ints"),
    ("scores", [float("nan")] * 4, "scores must be a list of finite numbers"),
    ("scores", [1e400, 0.0, 0.0, 0.0], "scores must be a list of finite numbers"),
    ("plays", [(0, 1)] * 45, "45 plays on the pile"),
    ("plays", [(0, 1, 2)], "plays must be a list of"),
    ("results", [("round", 1)], "results must be a list of engine.RoundResult"),
    ("results", None, "results must be a list"),
    ("oot", 3, "oot must be a bool"),
])
def test_fields_of_the_wrong_type_are_refused(field, value, message):
    s = mid_pile_state()
    setattr(s, field, value)
    with pytest.raises((TypeError, E.StateError), match=rf"^state 0: {re.escape(message)}"):
        VectorEngine.from_states([s])


def test_a_state_without_fields_or_a_bad_batch_is_refused():
    with pytest.raises(TypeError, match="state 0: "):
        VectorEngine.from_states([E.State.__new__(E.State)])
    with pytest.raises(TypeError, match="sequence of engine.State, got State"):
        VectorEngine.from_states(mid_pile_state())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sequence of engine.State, got int"):
        VectorEngine.from_states(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="state 1 is a dict"):
        VectorEngine.from_states([mid_pile_state(), {}])  # type: ignore[list-item]
    s = mid_pile_state()
    s.config = "default"  # type: ignore[assignment]
    with pytest.raises(TypeError, match="state 0: config must be a RulesConfig"):
        VectorEngine.from_states([s])


def test_a_corrupt_config_is_refused():
    s = mid_pile_state()
    cfg = dataclasses.replace(s.config)
    object.__setattr__(cfg, "num_players", 100)  # a frozen dataclass, changed anyway
    s.config = cfg
    with pytest.raises(ConfigError, match="state 0: config: num_players must be 2..8"):
        VectorEngine.from_states([s])
    with pytest.raises(ConfigError, match="num_players must be 2..8"):
        VectorEngine(4, cfg)
    with pytest.raises(ValueError, match="max_players must be an int 4..8"):
        VectorEngine.from_states([mid_pile_state()], max_players=3)


def test_check_state_catches_what_the_kernels_would_index_with():
    """The checks added to engine.check_state for from_states: round results, last_player
    and the owner of cards nobody holds are seats."""
    s = play_state(RulesConfig(num_players=3), 5, 150)
    assert s.results and s.phase != E.DEAL
    E.check_state(s)
    bad = s.clone()
    bad.results[-1] = bad.results[-1]._replace(order=(0, 1, 10**8))
    with pytest.raises(E.StateError, match="round result .* finishing order of every seat"):
        E.check_state(bad)
    bad = s.clone()
    bad.results[0] = bad.results[0]._replace(round=7)
    with pytest.raises(E.StateError, match="round result 0 is not round 1's"):
        E.check_state(bad)
    bad = s.clone()
    bad.top_rank = bad.top_count = bad.pile = 0
    bad.plays = []
    bad.last_player = 10**8
    with pytest.raises(E.StateError, match="last_player 100000000 is not a seat"):
        E.check_state(bad)
    bad = s.clone()
    if bad.played:
        card = (bad.played & -bad.played).bit_length() - 1
        bad.owner[card] = 3000
        with pytest.raises(E.StateError, match="owner cache names holders"):
            E.check_state(bad)


def test_states_from_state_from_info_load():
    """state_from_info leaves the owner of the played cards -1: still loadable, and it plays
    the round out as the engine's own state does (the next deals differ: two slots)."""
    s = mid_pile_state()
    t = E.state_from_info(s.config, **E.state_info(s))
    assert -1 in t.owner
    eng = VectorEngine.from_states([t, s], seed=0)
    assert eng.legal_actions(0) == eng.legal_actions(1) == E.legal_actions(s)
    rng = np.random.default_rng(0)
    while True:
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in eng.masks])
        acts[1] = acts[0]
        out = eng.step(acts)
        assert np.array_equal(out.rewards[0], out.rewards[1])
        assert np.allclose(out.rewards.sum(axis=1), 0)
        if out.round_ended[0]:
            break
        assert np.array_equal(out.obs[0], out.obs[1])
        E.check_state(eng.to_state(0))


def test_trusted_skips_the_check():
    """trusted=True loads what the check would refuse (here a harmless one: an Egg holder
    that nobody else should know of, known to nobody)."""
    s = mid_pile_state()
    s.egg_known = 0
    with pytest.raises(E.StateError, match="state 0: egg_known"):
        VectorEngine.from_states([s])
    eng = VectorEngine.from_states([s], trusted=True)
    assert eng.legal_actions(0) == E.legal_actions(s)
    with pytest.raises(TypeError):
        VectorEngine.from_states([s], None, None, True, True, True)  # type: ignore[misc]


def test_a_repeated_state_is_checked_once_and_loads_in_every_slot():
    s = mid_pile_state()
    eng = VectorEngine.from_states([s] * 5, seed=1)
    assert all(eng.legal_actions(b) == E.legal_actions(s) for b in range(5))


# -- the fuzz run --------------------------------------------------------------------------
#: Values a fuzzed int field takes besides small ints: around every bound the kernels and the
#: arrays have (int16, int32, the 45 cards, int64 and past it).
HUGE = [10**5, 10**8, 2**15, 2**31, 2**45 - 1, 2**45, 2**63 - 1, 2**63, 2**64, -2**63,
        -2**63 - 1, -10**8, 10**30, -1, -2]
FUZZ_CONFIGS = [
    RulesConfig(num_players=2, num_rounds=2),
    RulesConfig(),
    RulesConfig(num_players=4, pass_locks_out=True, tribute_asks=3, egg_in_tribute=True,
                dragons_per_play="any"),
    RulesConfig(num_players=5, num_rounds=2, completion_out_of_turn=True, tribute_asks=1),
    RulesConfig(num_players=8, tribute_asks=44, opening_ten_of_fire_alone=False),
]


def base_states() -> list[E.State]:
    """Valid states to mutate: every phase (a fresh match waiting for its first deal, one
    waiting for a later deal, the tribute, offers), from scalar play, from to_state and from
    state_from_info."""
    out = []
    for i, cfg in enumerate(FUZZ_CONFIGS):
        out.append(E.new_match(cfg))
        for k, steps in enumerate((0, 3, 20, 60, 110, 170)):
            out.append(play_state(cfg, 100 * i + k, steps))
        rng = random.Random(i)
        s = E.new_match(cfg)
        E.deal(s, E.random_deal(s, rng))
        while s.phase != E.DEAL and s.phase != E.DONE:
            acts = E.legal_actions(s)
            E.step(s, acts[rng.randrange(len(acts))])
        if s.phase == E.DEAL:
            out.append(s)
        eng = VectorEngine(2, cfg, seed=i)
        eng.reset()
        eng.random_steps(40 + 30 * i)
        out.append(eng.to_state(0))
        mid = play_state(cfg, i, 15, pile=True)
        out.append(E.state_from_info(cfg, **E.state_info(mid)))
        for phase in (E.COMPLETE, E.ASK, E.GIVE):
            found = first_in_phase(cfg, i, phase)
            if found is not None:
                out.append(found)
    phases = {s.phase for s in out}
    assert phases == {E.PLAY, E.COMPLETE, E.ASK, E.GIVE, E.DEAL}, phases
    for s in out:
        E.check_state(s)
    return out


def first_in_phase(config: RulesConfig, seed: int, phase: E.Phase) -> E.State | None:
    """The first state of random scalar play (up to 20 matches) in ``phase``, if any."""
    rng = random.Random(seed)
    for _ in range(20):
        s = E.new_match(config)
        while s.phase != E.DONE:
            if s.phase == E.DEAL:
                E.deal(s, E.random_deal(s, rng))
            if s.phase == phase:
                return s
            acts = E.legal_actions(s)
            E.step(s, acts[rng.randrange(len(acts))])
    return None


def fuzz(examples: int, seed: int | None = None) -> None:
    """Mutate valid states (random fields, list entries, plays and results set to random
    ints, huge and negative ones included, and to values of the wrong type; bad arguments)
    and load each with from_states: it is refused with a ValueError or TypeError that names
    the state or the argument, or it plays on normally (zero-sum rewards, check_state after
    every step). ``seed``: another sequence of cases than the fixed one the test runs."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    faulthandler.enable()
    bases = base_states()
    ints = st.one_of(st.integers(-3, 50), st.sampled_from(HUGE), st.integers(-2**70, 2**70))
    anything = st.one_of(
        ints, ints, ints, st.booleans(), st.floats(), st.none(), st.text(max_size=3),
        st.lists(ints, max_size=50), st.tuples(ints, ints), st.just(np.int64(2)),
        st.sampled_from([RulesConfig(num_players=3), RulesConfig(num_rounds=9), object()]))
    fields = st.sampled_from(E.State.__slots__)
    listed = st.sampled_from(("hands", "th", "owner", "finish", "scores"))
    result = st.builds(E.RoundResult, ints, st.lists(ints, max_size=9).map(tuple),
                       st.booleans(), st.lists(st.floats(), max_size=9).map(tuple))
    mutation = st.one_of(
        st.tuples(st.just("set"), fields, anything),
        st.tuples(st.just("entry"), listed, st.integers(0, 60), st.one_of(ints, anything)),
        st.tuples(st.just("plays"), st.lists(st.tuples(ints, ints), max_size=60)),
        st.tuples(st.just("play"), st.integers(0, 10), st.tuples(ints, ints)),
        st.tuples(st.just("result"), st.integers(0, 4), result),
        st.tuples(st.just("recache")),  # th/owner made to agree with the hands
        st.tuples(st.just("config"), st.sampled_from(RulesConfig.field_names()), anything),
    )
    args = st.fixed_dictionaries({
        "max_players": st.one_of(st.none(), st.none(), st.integers(-2, 10), st.just(10**30),
                                 st.just(2.0)),
        "seed": st.one_of(st.none(), st.integers(-5, 2**70)),
        "record": st.booleans(),
    })
    counts = {"rejected": 0, "accepted": 0, "steps": 0}

    @settings(max_examples=examples, deadline=None, database=None,
              derandomize=seed is None, suppress_health_check=list(HealthCheck))
    @hypothesis_seed(seed or 0)
    @given(st.integers(0, len(bases) - 1), st.lists(mutation, min_size=1, max_size=3), args,
           st.booleans(), st.integers(0, 2**32 - 1))
    def case(base, mutations, kwargs, alone, play_seed):
        good = bases[base]
        s = good.clone()
        for m in mutations:
            apply_mutation(s, m)
        batch = [s] if alone else [good, s]
        index = len(batch) - 1
        print("case", base, mutations, kwargs, alone, flush=True)  # the last line on a crash
        try:
            eng = VectorEngine.from_states(batch, **kwargs)
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            assert re.search(rf"\bstate {index}\b", msg) or any(
                name in msg for name in ("max_players", "seed", "state 0: config",
                                         "do not fit in memory", "too many for the "
                                         "batched engine")), msg
            counts["rejected"] += 1
            return
        counts["accepted"] += 1
        counts["steps"] += play_on(eng, s, index, play_seed)

    case()
    print(f"fuzz: {examples} cases, {counts['rejected']} rejected, {counts['accepted']} "
          f"accepted and played {counts['steps']} steps")
    assert counts["rejected"] and counts["accepted"], counts


def apply_mutation(s: E.State, m: tuple) -> None:
    kind = m[0]
    if kind == "set":
        setattr(s, m[1], m[2])
    elif kind == "entry":
        seq = getattr(s, m[1])
        if isinstance(seq, list) and seq:
            seq[m[2] % len(seq)] = m[3]
    elif kind == "plays":
        s.plays = m[1]
    elif kind == "play":
        if isinstance(s.plays, list):
            s.plays.insert(m[1], m[2])
    elif kind == "result":
        if isinstance(s.results, list) and s.results:
            s.results[m[1] % len(s.results)] = m[2]
    elif kind == "recache":
        try:
            s.th = [E.thermometer(h) for h in s.hands]
            owner = [-1] * 45
            for q, h in enumerate(s.hands):
                for c in range(45):
                    if h >> c & 1:
                        owner[c] = q
            s.owner = owner
        except Exception:
            pass
    else:  # config
        # (copy.copy: dataclasses.replace would check the values of a corrupted one)
        cfg = copy.copy(s.config) if isinstance(s.config, RulesConfig) else RulesConfig()
        object.__setattr__(cfg, m[1], m[2])
        s.config = cfg


def play_on(eng: VectorEngine, s: E.State, index: int, seed: int) -> int:
    """An accepted batch plays on normally: random legal actions, zero-sum rewards, and
    every match a state the rules allow after every step."""
    rng = np.random.default_rng(seed)
    # A state that keeps no round results (allowed in a decision phase) gets the results
    # of the rounds it finishes here only; check the rest of it.
    partial = not s.results and s.round_idx > 0
    steps = 0
    for _ in range(40):
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in eng.masks])
        out = eng.step(acts)
        steps += eng.num_envs
        assert np.allclose(out.rewards.sum(axis=1), 0.0), out.rewards
        assert out.mask.any(axis=1).all()
        for b in range(eng.num_envs):
            t = eng.to_state(b)
            if b == index and partial and not out.done[b]:
                t.results = []
            E.check_state(t)
    stats = eng.random_steps(150)
    assert np.allclose(stats.rewards.sum(axis=1), 0.0)
    return steps + stats.steps


def test_fuzzed_states_are_refused_or_play_on():
    """A few hundred mutated states, in a subprocess (a segfault is an exit status there)."""
    proc = run_script("fuzz", "300", timeout=600)
    tail = "\n".join(proc.stdout.splitlines()[-5:])
    assert proc.returncode == 0, (f"the fuzz child exited with {proc.returncode}; last "
                                  f"lines:\n{tail}\n{proc.stderr[-4000:]}")
    assert "fuzz: 300 cases" in proc.stdout, tail


if __name__ == "__main__":
    if sys.argv[1] == "repro":
        repro(sys.argv[2], int(sys.argv[3]))
    else:
        fuzz(int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
