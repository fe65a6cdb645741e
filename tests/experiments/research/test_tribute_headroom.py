"""The cross-validated tribute headroom (``dragons_egg.experiments.research.tribute.headroom``) on planted values."""

import json

import numpy as np
import pytest

from dragons_egg.experiments.research.tribute import fit as T
from dragons_egg.experiments.research.tribute import headroom as H
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS, PASS
from dragons_egg_env.cards import BEAST, DARKLORD, EGG
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.engine import Phase
from dragons_egg_env.observation import OBS_PHASES, layout

# A Dragon's hand: the 3 of Earth alone, the 7 of Earth alone, a pair of 9s and the Beast.
THREE, SEVEN, NINES = 2 * 4, 6 * 4, (8 * 4, 8 * 4 + 1)
HAND = (THREE, SEVEN, *NINES, BEAST)


def give_data(n_states, gains, play_of=lambda i: i % 2, players=4):
    """Give-back states, all with :data:`HAND`, where the heuristic gives the 7 (H9: the
    highest number held alone) and ``gains[(card, play)]`` is what giving ``card`` earns
    over it under that play policy (0 where not given)."""
    size = layout(8).size
    obs = np.zeros((n_states, size), np.float32)
    obs[:, list(HAND)] = 1.0
    obs[:, layout(8).field("phase").start + OBS_PHASES.index(Phase.GIVE)] = 1.0
    seats = layout(8).field("seat_present").start
    obs[:, seats:seats + players] = 1.0
    mask = np.zeros((n_states, NUM_ACTIONS), bool)
    mask[:, [GIVE_BASE + c for c in HAND]] = True
    play = np.array([play_of(i) for i in range(n_states)])
    q = np.where(mask, 0.0, np.nan)
    for (card, p), g in gains.items():
        q[play == p, GIVE_BASE + card] = g
    return {"obs": obs, "mask": mask, "q": q, "heuristic": np.full(n_states, GIVE_BASE + SEVEN),
            "n": np.full(n_states, players), "play": play}


def test_rows_are_one_per_class_with_what_the_dragon_knows():
    r = H.rows(give_data(1, {}))
    by_action = {int(a): i for i, a in enumerate(r["action"])}
    assert sorted(by_action) == sorted(GIVE_BASE + c for c in (THREE, SEVEN, NINES[0], BEAST))
    row = {c: by_action[GIVE_BASE + c] for c in (THREE, SEVEN, NINES[0], BEAST)}
    # position: numbers held above (the 9s are the highest, the one R6 leads alone)
    assert [int(r["position"][row[c]]) for c in (NINES[0], SEVEN, THREE, BEAST)] == [0, 1, 2, -1]
    assert [int(r["count"][row[c]]) for c in (NINES[0], SEVEN, THREE, BEAST)] == [2, 1, 1, 1]
    assert [int(r["group"][row[c]]) for c in (NINES[0], SEVEN, THREE, BEAST)] == [8, 6, 2,
                                                                                H.DRAGONS]
    assert set(r["context"].tolist()) == {3} and r["give"].all()


def test_ask_rows_carry_the_context_and_the_pass():
    d = give_data(1, {})
    lay = layout(8)
    phase = lay.field("phase").start
    d["obs"][:, phase:phase + len(OBS_PHASES)] = 0.0
    d["obs"][:, phase + OBS_PHASES.index(Phase.ASK)] = 1.0
    d["mask"][:] = False
    d["mask"][0, [PASS, ASK_BASE + DARKLORD, ASK_BASE + 0, ASK_BASE + 1]] = True  # 1E, 1W
    d["q"] = np.where(d["mask"], 0.25, np.nan)
    d["heuristic"][:] = ASK_BASE + DARKLORD
    r = H.rows(d)
    assert sorted(r["group"].tolist()) == [0, H.DRAGONS, H.PASS_GROUP]  # the 1s are one class
    assert not r["give"].any() and set(r["context"].tolist()) == {0}
    assert (r["position"] == -1).all() and (r["gain"] == 0).all()


def test_a_gain_under_both_play_policies_is_found_and_one_under_one_only_is_not():
    # Giving a 9 (breaking the pair R6 leads from) earns +1 under both play policies.
    both = give_data(400, {(NINES[0], 0): 1.0, (NINES[1], 0): 1.0,
                           (NINES[0], 1): 1.0, (NINES[1], 1): 1.0})
    r = H.rows(both)
    for feats in (("position", "count"), ("group", "count")):
        for mode in H.MODES:
            res = H.cross_validate(r, both, "give", feats, mode, 4, 2, 50.0, 0)
            assert all(np.all(g == 1.0) for g in res.values())
            assert sum(len(g) for g in res.values()) == 400
    # Giving the 3 earns +1 under the agent's play and costs 0.5 under the heuristic's.
    one = give_data(400, {(THREE, 0): 1.0, (THREE, 1): -0.5})
    r = H.rows(one)
    pooled = H.cross_validate(r, one, "give", ("position", "count"), "pooled", 4, 2, 50.0, 0)
    robust = H.cross_validate(r, one, "give", ("position", "count"), "robust", 4, 2, 50.0, 0)
    assert np.all(pooled["self"] == 1.0) and np.all(pooled["heuristic"] == -0.5)
    assert all(np.all(g == 0.0) for g in robust.values())  # stays with the heuristic
    oracle = H.cross_validate(r, one, "give", None, "pooled", 4, 2, 50.0, 0)
    assert np.all(oracle["self"] == 1.0) and np.all(oracle["heuristic"] == 0.0)
    with pytest.raises(ValueError, match="unknown mode"):
        H.cross_validate(r, one, "give", ("count",), "best", 4, 2, 50.0, 0)


def write_data(tmp_path, data, policy=None):
    """``data`` as a tribute-fit data file, recording the hash of ``policy`` (default: a file
    of any bytes)."""
    chunks = []
    for p, name in enumerate(T.PLAY_POLICIES):
        sel = data["play"] == p
        chunks.append({**{k: data[k][sel] for k in ("obs", "mask", "q", "heuristic")},
                       "n": int(data["n"][0]), "play": name})
    if policy is None:
        policy = tmp_path / "any-policy.npz"
        policy.write_bytes(b"any bytes: only their hash is recorded")
    path = tmp_path / "data.npz"
    T.save_data(path, chunks, 1.0, T.TributeFitConfig(policy=str(policy)))
    return path


def test_main_writes_the_report_and_names_bad_input(tmp_path, capsys):
    path = write_data(tmp_path, give_data(200, {(NINES[0], 0): 0.5, (NINES[1], 0): 0.5,
                                                 (NINES[0], 1): 0.5, (NINES[1], 1): 0.5}))
    out = tmp_path / "out"
    assert H.main(["--data", str(path), "--out", str(out)]) == 0
    s = json.loads((out / "summary.json").read_text())
    row = next(x for x in s["results"] if (x["phase"], x["features"], x["mode"])
               == ("give", "position", "robust"))
    assert row["self"][:3] == [0.5, 0.5, 0.5] and row["self"][3] + row["heuristic"][3] == 200
    report = (out / "report.md").read_text()
    assert "| give | position | robust |" in report and "holds no ask states" in report
    assert (out / "headroom.png").stat().st_size > 0
    assert s["command"].startswith("python -m dragons_egg.experiments.research.tribute.headroom --data")
    assert H.main(["--data", str(path), "--players", "5", "--out", str(tmp_path / "o5")]) == 2
    assert "holds no 5-player states" in capsys.readouterr().err
    assert H.main(["--data", str(tmp_path / "missing.npz"), "--out", str(tmp_path / "om")]) == 2
    assert "not readable" in capsys.readouterr().err
    before = (out / "summary.json").read_text()
    with pytest.raises(SystemExit) as exc:  # a rerun into the folder: refused before the work
        H.main(["--data", str(path), "--out", str(out)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "holds earlier headroom analysis (summary.json" in err
    assert (out / "summary.json").read_text() == before
    assert H.main(["--data", str(path), "--out", str(out), "--overwrite"]) == 0
    for bad in (["--folds", "1"], ["--shrink", "-1"], ["--players", "9"]):
        with pytest.raises(SystemExit):
            H.main(["--data", str(path), *bad])


def test_table_tribute_gives_back_the_best_key_and_otherwise_plays_the_heuristic():
    from dragons_egg.agents.heuristic import HeuristicAgent
    from dragons_egg_env.config import RulesConfig

    d = give_data(1, {})
    obs, mask = d["obs"][0], d["mask"][0]
    config = RulesConfig()
    heur = HeuristicAgent(seed=0)
    heur.start_match(0, config, 8)
    assert heur.act(obs, mask) == GIVE_BASE + SEVEN  # H9: the highest number held alone
    feats = ("position", "count")
    for table, want in (({(0, 2): 0.2, (1, 1): 0.0}, GIVE_BASE + NINES[0]),  # the 9s' key
                        ({(0, 2): -0.1, (1, 1): 0.0, (2, 1): 0.0}, GIVE_BASE + SEVEN),  # tie
                        ({(2, 1): 0.3}, GIVE_BASE + THREE),  # a key missing scores 0
                        ({(1, 1): 0.1}, GIVE_BASE + SEVEN)):
        agent = H.TableTribute(table, feats, seed=0)
        agent.start_match(0, config, 8)
        assert agent.act(obs, mask) == want
    ask_obs = obs.copy()
    phase = layout(8).field("phase").start
    ask_obs[phase:phase + len(OBS_PHASES)] = 0.0
    ask_obs[phase + OBS_PHASES.index(Phase.ASK)] = 1.0
    ask = np.zeros(NUM_ACTIONS, bool)
    ask[[PASS, ASK_BASE + DARKLORD, ASK_BASE + 0]] = True
    agent = H.TableTribute({(0, 2): 9.0}, feats, seed=0)
    agent.start_match(0, config, 8)
    assert agent.act(ask_obs, ask) == heur.act(ask_obs, ask) == ASK_BASE + DARKLORD  # H8


def test_validation_plays_the_table_in_the_tribute_analysis(tmp_path):
    # A planted table that only ever leaves the heuristic where the data says so.
    path = write_data(tmp_path, give_data(100, {(NINES[0], 0): 0.5, (NINES[1], 0): 0.5,
                                                (NINES[0], 1): 0.5, (NINES[1], 1): 0.5}))
    s = H.run(path, validate_features=("position",), validate_play=("heuristic",),
              validate_deals=3, validate_seed=4, validate_modes=("robust", "pooled"))
    v, pooled = s["validation"]
    assert v["play"] == "heuristic" and v["deals"] == 3 and 0 <= v["changed_share"] <= 1
    assert (v["mode"], pooled["mode"]) == ("robust", "pooled")
    assert pooled["difference"] == v["difference"]  # both plays agree, so do the tables
    table = {tuple(k[:-1]): k[-1] for k in v["table"]}
    assert table[(0, 2)] == pytest.approx(0.5 * 50 / 100)  # 50 rows of 0.5 per play, shrink 50
    assert "**Played**" in H.report(s)
    with pytest.raises(ValueError, match="unknown give-back feature set"):
        H.run(path, validate_features=("colour",), validate_deals=1)
    with pytest.raises(ValueError, match="unknown mode 'best'"):
        H.run(path, validate_features=("position",), validate_deals=1, validate_modes=("best",))
    for bad in (["--validate-play", "nobody"], ["--validate-features", "position,colour"],
                ["--validate-modes", "robust,best"]):
        with pytest.raises(SystemExit):
            H.main(["--data", str(path), "--validate-deals", "1", *bad])


def test_the_egg_given_back_is_a_class_of_its_own_in_every_state():
    d = give_data(5, {})
    d["obs"][:, EGG] = 1.0
    d["mask"][:, GIVE_BASE + EGG] = True  # egg_in_tribute (R33)
    d["q"][:, GIVE_BASE + EGG] = 0.0
    r = H.rows(d)
    assert np.bincount(r["state"]).tolist() == [5] * 5  # 3, 7, the 9s, the Beast, the Egg
    egg = r["group"] == H.EGG_GROUP
    assert egg.sum() == 5 and (r["count"][egg] == 0).all() and (r["position"][egg] == -1).all()


def test_an_exported_policy_gives_back_by_the_table_and_plays_as_before(tmp_path):
    from support import assert_play_logits_kept, small_policy

    from dragons_egg.agents.heads import SIZED_TRIBUTE_FEATURES
    from dragons_egg.agents.netpolicy import load_policy_file

    base = load_policy_file(small_policy(tmp_path / "base.npz", seed=3))
    table = {(8, 2): 0.05, (6, 1): -0.01, (2, 1): 0.02, (H.DRAGONS, 1): -0.3}
    pol = H.table_policy(base, table, dict(base.meta), 4)
    assert pol.pi_counts.shape == (SIZED_TRIBUTE_FEATURES, NUM_ACTIONS)
    d = give_data(1, {})
    obs, mask = d["obs"], d["mask"]
    assert int(np.argmax(pol.logits(obs, mask)[0])) == GIVE_BASE + NINES[0]  # key (8, 2)
    egg_obs, egg_mask = obs.copy(), mask.copy()
    egg_obs[:, EGG] = 1.0
    egg_mask[:, GIVE_BASE + EGG] = True  # egg_in_tribute (R33): the Egg goes first (H9)
    assert int(np.argmax(pol.logits(egg_obs, egg_mask)[0])) == GIVE_BASE + EGG
    again = load_policy_file(pol.save(tmp_path / "table.npz"))
    assert again.meta["heads"] == ["tribute_by_size", "gate"]
    np.testing.assert_array_equal(again.logits(obs, mask), pol.logits(obs, mask))
    for table2, want in (({(2, 1): 0.3}, THREE), ({(6, 1): 0.1, (8, 2): -0.2}, SEVEN)):
        p2 = H.table_policy(base, table2, dict(base.meta), 4)
        agent = H.TableTribute(table2, ("group", "count"), seed=0)
        agent.start_match(0, RulesConfig(), 8)
        assert int(np.argmax(p2.logits(obs, mask)[0])) == GIVE_BASE + want
        assert agent.act(obs[0], mask[0]) == GIVE_BASE + want
    # At every other table size the give-back, and at every size every other column (play,
    # the pass, the asks), keep the base policy's logits exactly.
    for n in (2, 3, 5, 8):
        other = give_data(1, {}, players=n)["obs"]
        np.testing.assert_array_equal(pol.logits(other, mask), base.logits(other, mask))
    assert_play_logits_kept(pol, base)
    with pytest.raises(ValueError, match="already has a tribute term"):
        H.table_policy(pol, table, dict(base.meta), 4)
    with pytest.raises(ValueError, match="players must be one of"):
        H.table_policy(base, table, dict(base.meta), 9)


def test_export_checks_the_data_came_from_the_policy_and_counts_its_seconds(tmp_path):
    from support import small_policy

    from dragons_egg.agents.netpolicy import load_policy_file

    base = small_policy(tmp_path / "policy.npz", seed=1, seconds=250.0)
    data = give_data(100, {(NINES[0], 0): 0.5, (NINES[1], 0): 0.5})
    with pytest.raises(ValueError, match="gathered with another policy"):
        H.export(write_data(tmp_path, data), base, tmp_path / "out", 4, 50.0)
    path = write_data(tmp_path, data, policy=base)
    with pytest.raises(ValueError, match="holds no 5-player states"):
        H.export(path, base, tmp_path / "out", 5, 50.0)
    with pytest.raises(ValueError, match="missing.npz"):
        H.export(path, tmp_path / "missing.npz", tmp_path / "out", 4, 50.0)
    out = H.export(path, base, tmp_path / "out", 4, 50.0, command="cmd")
    pol = load_policy_file(out)
    prov = pol.meta["provenance"]
    assert prov["seconds"] == 251.0 and prov["command"] == "cmd"  # 250 s + 1 s of gathering
    assert prov["tribute_table"]["mode"] == "pooled"
    assert {tuple(k[:-1]): k[-1] for k in prov["tribute_table"]["table"]}[(8, 2)] > 0
    d = give_data(1, {})
    assert int(np.argmax(pol.logits(d["obs"], d["mask"])[0])) == GIVE_BASE + NINES[0]
