"""The give-back table the self-play trainer learns (``tribute_table``,
dragons_egg.experiments.training.tribute_table): give-backs (R33) keyed by table size, card
group and count held, fitted to counterfactual values over the heuristic's give-back (H9),
played only where held-out decisions say it beats the network."""

import json

import numpy as np
import pytest

from dragons_egg.agents.heuristic import heuristic_actions
from dragons_egg.experiments.training import tribute_table as TT
from dragons_egg_env.actions import GIVE_BASE, NUM_ACTIONS
from dragons_egg_env.cards import BEAST
from dragons_egg_env.config import TABLE_SIZES
from dragons_egg_env.engine import Phase
from dragons_egg_env.observation import OBS_PHASES, layout

THREE, SEVEN, NINES = 2 * 4, 6 * 4, (8 * 4, 8 * 4 + 1)
HAND = (THREE, SEVEN, *NINES, BEAST)
#: The keys of HAND's cards: (group, count held) as group * 5 + count.
KEY = {THREE: 2 * 5 + 1, SEVEN: 6 * 5 + 1, NINES[0]: 8 * 5 + 2, NINES[1]: 8 * 5 + 2,
       BEAST: 10 * 5 + 1}
#: What giving each card back earns in the states below (the heuristic gives the 7).
VALUE = {THREE: 0.2, SEVEN: 0.0, NINES[0]: -0.1, NINES[1]: -0.1, BEAST: -0.5}


def give_states(n, players=4, value=VALUE):
    """``n`` give-back observations (padded to 8 seats) holding HAND, their masks, and the
    values of giving each card (NaN where not legal)."""
    lay = layout(8)
    obs = np.zeros((n, lay.size), np.float32)
    obs[:, list(HAND)] = 1.0
    obs[:, lay.field("phase").start + OBS_PHASES.index(Phase.GIVE)] = 1.0
    seats = lay.field("seat_present").start
    obs[:, seats:seats + players] = 1.0
    mask = np.zeros((n, NUM_ACTIONS), bool)
    mask[:, [GIVE_BASE + c for c in HAND]] = True
    q = np.full((n, NUM_ACTIONS), np.nan)
    for c, v in value.items():
        q[:, GIVE_BASE + c] = v
    return obs, mask, q


def test_keys_are_the_group_and_the_count_held():
    obs, mask, _ = give_states(1)
    keys = TT.column_keys(obs)[0]
    for c in HAND:
        assert keys[GIVE_BASE + c] == KEY[c]
    assert keys[GIVE_BASE + 9 * 4] == 9 * 5 + 0  # a 10, not held: count 0
    assert (keys[:GIVE_BASE] == -1).all()
    assert TT.give_rows(mask).all()


def test_the_fit_adds_each_keys_gain_over_the_heuristic_after_scoring_the_table():
    """Each decision adds, once per key, the value of that key's card minus the value of the
    heuristic's give-back; before that, the table as it stood is scored against the
    network's choice on it (held out)."""
    obs, mask, q = give_states(100)
    assert (heuristic_actions(obs, mask, 8) == GIVE_BASE + SEVEN).all()  # H9's baseline
    table = TT.GiveBackTable(8, shrink=50.0, window=150, min_decisions=100)
    beast = np.full(100, GIVE_BASE + BEAST)
    assert table.add(obs, mask, q, beast) == 100
    s4 = TABLE_SIZES.index(4)
    # an empty table scores every key 0 and gives the first legal column, the 3
    np.testing.assert_allclose(table.held_out[s4], VALUE[THREE] - VALUE[BEAST])
    want = np.zeros(TT.KEYS)
    for c in (THREE, SEVEN, NINES[0], BEAST):  # the two 9s share a key: counted once
        want[KEY[c]] = 100 * (VALUE[c] - VALUE[SEVEN])
    np.testing.assert_allclose(table.sums[s4], want)
    assert table.counts[s4].sum() == 400 and table.counts[s4, KEY[NINES[0]]] == 100
    assert not table.sums[np.arange(len(TABLE_SIZES)) != s4].any()
    np.testing.assert_allclose(table.scores()[s4, KEY[THREE]], 20.0 / 150.0)
    # the table now gives the 3; against a network that gives it too it gains nothing
    assert (table.choose(obs, mask) == GIVE_BASE + THREE).all()
    table.add(obs, mask, q, np.full(100, GIVE_BASE + THREE))
    assert len(table.held_out[s4]) == 150  # the window keeps the latest
    np.testing.assert_allclose(table.held_out[s4][-100:], 0.0)
    assert table.fitted == 200
    # decisions that are not give-backs are left out
    ask = mask.copy()
    ask[:, GIVE_BASE:] = False
    ask[:, 0] = True
    assert table.add(obs, ask, q, np.zeros(100, int)) == 0 and table.fitted == 200


def test_the_table_plays_only_where_it_beat_the_network_on_held_out_decisions(tmp_path):
    from support import assert_play_logits_kept, small_policy

    from dragons_egg.agents.netpolicy import load_policy_file

    table = TT.GiveBackTable(8, shrink=0.0, window=5000, min_decisions=1000)
    rng = np.random.default_rng(0)
    s = {n: TABLE_SIZES.index(n) for n in TABLE_SIZES}
    table.held_out[s[4]] = 0.05 + 0.1 * rng.standard_normal(2000)   # ahead: plays
    table.held_out[s[2]] = -0.01 + 0.1 * rng.standard_normal(2000)  # behind: does not
    table.held_out[s[3]] = np.full(999, 0.5)                          # too few: does not
    table.held_out[s[5]] = 0.0 + 0.3 * rng.standard_normal(1000)    # level: does not
    assert table.sizes() == [4]
    v = table.validation()
    assert set(v) == {2, 3, 4, 5} and v[4]["low"] > 0 and v[2]["high"] < 0.01
    fig = table.figures()
    assert fig["table_sizes"] == 1.0 and fig["table_gain_4p"] == pytest.approx(v[4]["mean"])
    # its scores: at 4 (and at 2) players the 9s are the best give-back, the rule gives the 7
    for n in (2, 4):
        table.sums[s[n], KEY[NINES[0]]] = 1.0
        table.counts[s[n], KEY[NINES[0]]] = 10.0
    base = load_policy_file(small_policy(tmp_path / "base.npz", seed=3))
    pol = table.policy(base)
    assert pol.heads == ("tribute_by_size", "gate")
    assert pol.meta["provenance"]["tribute_table"]["sizes"] == [4]
    obs4, mask, _ = give_states(1, players=4)
    assert int(np.argmax(pol.logits(obs4, mask)[0])) in (GIVE_BASE + NINES[0],
                                                         GIVE_BASE + NINES[1])
    for n in (2, 3, 5, 8):  # every other size gives back by the network, exactly
        obs, mask, _ = give_states(1, players=n)
        np.testing.assert_array_equal(pol.logits(obs, mask), base.logits(obs, mask))
    assert_play_logits_kept(pol, base)  # play, the pass and the asks: untouched
    again = load_policy_file(pol.save(tmp_path / "t.npz"))
    assert again.meta["heads"] == ["tribute_by_size", "gate"]
    np.testing.assert_array_equal(again.logits(obs4, mask), pol.logits(obs4, mask))
    # where no size has earned it, the policy is the network's own
    assert TT.GiveBackTable(8).policy(base) is base
    with pytest.raises(ValueError, match="already has a tribute term"):
        table.policy(pol)


def test_the_table_survives_a_checkpoint_and_a_damaged_one_is_named():
    torch = pytest.importorskip("torch")
    obs, mask, q = give_states(30, players=3)
    table = TT.GiveBackTable(8, window=20)
    table.add(obs, mask, q, np.full(30, GIVE_BASE + BEAST))
    again = TT.GiveBackTable(8, window=10)  # a resume with a smaller window keeps the latest
    again.load(table.state())
    np.testing.assert_array_equal(again.sums, table.sums)
    np.testing.assert_array_equal(again.counts, table.counts)
    assert [len(h) for h in again.held_out] == [min(len(h), 10) for h in table.held_out]
    assert again.fitted == 30
    empty = TT.GiveBackTable(8)
    empty.load({})
    assert empty.fitted == 0 and not empty.counts.any()
    with pytest.raises(ValueError, match="give-back table is damaged"):
        again.load({**table.state(), "sums": torch.zeros((2, 2), dtype=torch.float64)})
    with pytest.raises(ValueError, match="give-back table is damaged"):
        again.load({"sums": 1})


def test_the_trainer_fits_the_table_keeps_it_in_its_checkpoint_and_ships_it(tmp_path):
    """With ``tribute_table`` every update adds the rollout's counterfactual give-backs;
    the table is in the checkpoint (a resumed run has the same one), and the policy written
    from the checkpoint gives back by it where it earned that."""
    pytest.importorskip("torch")
    pytest.importorskip("numba")
    from support import tiny

    from dragons_egg.agents.netpolicy import load_policy_file
    from dragons_egg.experiments.training import rollout, selfplay
    from dragons_egg.experiments.training.selfplay import Run

    cfg = tiny(tmp_path, run_name="tt", seed=4, rollout_steps=60, num_rounds=3,
               tribute_counterfactual=1.0, tribute_table=True, tribute_table_min=2)
    run = Run(cfg)
    ro, _ = run.collector.collect(run.acting.act, [], run.acting.value, run.acting)
    gives = int(TT.give_rows(ro.mask[ro.cf_index]).sum())
    assert gives > 0
    adv = rollout.advantages(ro, cfg.collection.rollout_steps, run.batch, 1.0, 0.95)
    stats = run.learner.update(ro, adv)
    table = run.learner.table
    assert table.fitted == gives == int(sum(len(h) for h in table.held_out))
    assert any(k.startswith("table_gain_") for k in stats) and "table_sizes" in stats
    # force a size to play (as if its held-out decisions had shown it ahead), then save
    table.held_out[TABLE_SIZES.index(3)] = np.full(5, 0.1)
    path = run.save()
    resumed = Run(cfg, resume=str(path))
    np.testing.assert_array_equal(resumed.learner.table.sums, table.sums)
    assert resumed.learner.table.sizes() == [3]
    dest = selfplay.export_checkpoint(path, tmp_path / "ship.npz", command="c", note="n")
    shipped = load_policy_file(dest)
    assert shipped.meta["heads"] == ["tribute_by_size", "gate"]
    prov = json.loads(dest.with_suffix(".json").read_text())
    assert prov["tribute_table"]["sizes"] == [3]
    assert prov["tribute_table"]["decisions"] == gives


@pytest.mark.parametrize("bad, message", [
    ({"tribute_table": True}, "tribute_counterfactual 0 makes none"),
    ({"tribute_table_shrink": -1.0}, "tribute_table_shrink"),
    ({"tribute_table_window": 1}, "tribute_table_window"),
    ({"tribute_table_min": 0}, "tribute_table_min"),
    ({"tribute_table_window": 100, "tribute_table_min": 101}, "tribute_table_min"),
])
def test_bad_table_settings_are_named(tmp_path, bad, message):
    pytest.importorskip("torch")
    from support import tiny

    with pytest.raises(ValueError, match=message):
        tiny(tmp_path, **bad).validate()
