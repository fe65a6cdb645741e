"""The counterfactual tribute fit (``dragons_egg.experiments.research.tribute.fit``); the policy-file
heads it writes are tested in tests/agents/test_heads.py."""

import functools
import json
import os
import signal
import time

import numpy as np
import pytest
from support import (
    small_policy,
    tribute_state,  # noqa: E402
)

from dragons_egg.agents import make_agent
from dragons_egg.agents.heads import TRIBUTE_FEATURES
from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg.agents.netpolicy import NetPolicy, load_policy_file
from dragons_egg.experiments.research.tribute import fit as T
from dragons_egg.experiments.training import counterfactual as cf
from dragons_egg_env import engine as E
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS, PASS
from dragons_egg_env.cards import BEAST, DRAGON_MASK
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import OBS_PHASES, Encoder, layout


def test_counterfactual_values_are_the_scalar_engine_played_out(tmp_path):
    """Q of every legal ask = the Dragon's round reward (R27) when that ask is played and the
    heuristic plays the rest of the round on the scalar engine (R31..R33 included)."""
    s = tribute_state(seed=3)
    n, dragon = s.config.num_players, s.current
    heur = HeuristicAgent(seed=0)
    heur.start_match(0, RulesConfig(num_players=8, num_rounds=2), 8)
    enc = Encoder(n, 8, 2)
    mask = np.zeros(NUM_ACTIONS, bool)
    mask[E.legal_actions(s)] = True
    policy = load_policy_file(small_policy(tmp_path / "p.npz"))
    q = T.counterfactual_values(policy, [s], [dragon], mask[None], "heuristic", seed=0)[0]
    assert np.isnan(q[~mask]).all() and not np.isnan(q[mask]).any()
    scalar = {}
    for a in np.flatnonzero(mask):
        t = s.clone()
        E.step(t, int(a))
        rounds = len(t.results)
        while len(t.results) == rounds:
            m = np.zeros(NUM_ACTIONS, bool)
            m[E.legal_actions(t)] = True
            E.step(t, heur.act(enc.encode(t, t.current), m))
        scalar[a] = t.results[-1].rewards[dragon]
        assert q[a] == scalar[a]
    assert len(set(scalar.values())) > 1  # the asks differ on this deal
    # per class: one card of each number (or the dragon cards) played out, its value shared
    legal = np.flatnonzero(mask)
    cls = cf.action_classes(legal)
    assert len(np.unique(cls)) < len(legal)
    for seed in range(3):
        qc = T.counterfactual_values(policy, [s], [dragon], mask[None], "heuristic", seed=seed,
                                     per_class=True)[0]
        assert np.isnan(qc[~mask]).all()
        for c in np.unique(cls):
            members = legal[cls == c]
            assert len(set(qc[members])) == 1
            assert any(qc[a] == scalar[a] for a in members)


def test_the_fit_finds_a_planted_preference_and_leaves_play_alone(tmp_path):
    """Values that reward asking for a dragon card first, asking for a number held once after
    a hit (R32), and giving back the highest card: the fitted policy makes those choices in
    those contexts; play logits unchanged."""
    policy = load_policy_file(small_policy(tmp_path / "p.npz"))
    rng = np.random.default_rng(0)
    lay = layout(8)
    N = 600
    obs = rng.integers(0, 2, (N, lay.size)).astype(np.float32)
    for name in ("phase", "tribute_asked", "tribute_taken"):
        f = lay.field(name)
        obs[:, f.start:f.start + f.size] = 0
    phase, asked, taken = (lay.field(k).start for k in ("phase", "tribute_asked",
                                                         "tribute_taken"))
    ask = np.arange(N) < 2 * N // 3
    after_hit = np.arange(N) >= N // 3
    obs[ask, phase + OBS_PHASES.index(E.Phase.ASK)] = 1
    obs[~ask, phase + OBS_PHASES.index(E.Phase.GIVE)] = 1
    obs[after_hit, asked + BEAST] = obs[after_hit, taken + BEAST] = 1
    obs[after_hit, BEAST] = 1  # the hit is in the hand
    mask = np.zeros((N, NUM_ACTIONS), bool)
    hand = obs[:, :45] > 0
    mask[ask, PASS] = True
    mask[ask, ASK_BASE:GIVE_BASE] = ~hand[ask, :44]
    mask[~ask, GIVE_BASE:] = hand[~ask]
    q = np.where(mask, rng.normal(0, 0.05, mask.shape), np.nan)
    dragons = [ASK_BASE + c for c in range(44) if DRAGON_MASK >> c & 1]
    first = ask & ~after_hit
    second = ask & after_hit
    q[np.ix_(first, dragons)] += 1.0
    counts = hand[:, :40].reshape(N, 10, 4).sum(axis=2)
    single = np.repeat(counts == 1, 4, axis=1)  # asks of the numbers held once
    q[second, ASK_BASE:ASK_BASE + 40] += np.where(single[second], 1.0, 0.0)
    q[:, GIVE_BASE + 36:GIVE_BASE + 40] += 1.0  # the 10s
    theta = T.solve(obs, mask, q, policy.logits(obs, mask), scale=10.0, ridge=0.1,
                    max_players=8)
    new = T.fitted_policy(policy, theta, policy.meta)
    z = new.logits(obs, mask)
    choice = np.argmax(z, axis=1)
    can_dragon = mask[:, dragons].any(axis=1) & first
    assert can_dragon.sum() > 100 and np.isin(choice[can_dragon], dragons).all()
    can_single = (mask[:, ASK_BASE:ASK_BASE + 40] & single).any(axis=1) & second
    picked = choice[can_single] - ASK_BASE
    assert can_single.sum() > 100
    assert ((picked < 40) & single[can_single, np.clip(picked, 0, 39)]).all()
    has_ten = hand[:, 36:40].any(axis=1) & ~ask
    assert ((choice[has_ten] >= GIVE_BASE + 36) & (choice[has_ten] < GIVE_BASE + 40)).all()
    full = np.ones_like(mask)
    np.testing.assert_array_equal(new.logits(obs, full)[:, :ASK_BASE],
                                  policy.logits(obs, full)[:, :ASK_BASE])


def test_a_run_writes_a_playable_policy_reproducibly_within_its_budget(tmp_path, capsys):
    base = small_policy(tmp_path / "p.npz", seconds=100.0)
    args = ["--policy", str(base), "--chunks", "3", "--states-per-chunk", "3",
            "--workers", "1", "--table-sizes", "3", "4", "--size-weights", "1", "1",
            "--no-progress", "--holdout", "0.34"]
    assert T.main(args + ["--out", str(tmp_path / "a"), "--seed", "5"]) == 0
    assert T.main(args + ["--out", str(tmp_path / "b"), "--seed", "5"]) == 0
    a, b = (load_policy_file(tmp_path / d / "policy.npz") for d in "ab")
    for x, y in zip((a.pi[0], a.pi[1], a.pi_counts), (b.pi[0], b.pi[1], b.pi_counts),
                    strict=True):
        np.testing.assert_array_equal(x, y)
    prov = json.loads((tmp_path / "a" / "policy.json").read_text())
    info = prov["tribute_fit"]
    assert prov["seconds"] == pytest.approx(100.0 + info["seconds"], abs=0.1)
    assert info["states"] == 6 and info["held_out_states"] == 3
    report = (tmp_path / "a" / "report.md").read_text()
    assert report.startswith("# Tribute fit")
    by_size = info["held_out"]["by_size"]
    assert len(by_size) == 1 and set(by_size) <= {"3", "4"}  # the one held-out batch's size
    assert sum(r[3] for r in next(iter(by_size.values())).values()) == 3
    assert "by table size" in report
    # refitting from the saved states gives the same policy
    assert T.main(args + ["--out", str(tmp_path / "c"), "--seed", "5", "--data",
                          str(tmp_path / "a" / "data.npz")]) == 0
    np.testing.assert_array_equal(load_policy_file(tmp_path / "c" / "policy.npz").pi_counts,
                                  a.pi_counts)
    # a rerun into a folder holding a fit is refused before gathering, its files untouched;
    # with --overwrite it refits there (from that folder's own data.npz, which stays)
    before = (tmp_path / "a" / "policy.npz").read_bytes()
    assert T.main(args + ["--out", str(tmp_path / "a"), "--seed", "5"]) == 2
    assert "holds earlier tribute fit (policy.npz" in capsys.readouterr().err
    assert (tmp_path / "a" / "policy.npz").read_bytes() == before
    assert T.main(args + ["--out", str(tmp_path / "a"), "--seed", "5", "--overwrite", "--data",
                          str(tmp_path / "a" / "data.npz")]) == 0
    np.testing.assert_array_equal(load_policy_file(tmp_path / "a" / "policy.npz").pi_counts,
                                  a.pi_counts)
    # states gathered with one policy do not refit another (their values are its play's)
    other = small_policy(tmp_path / "other.npz", seed=9)
    assert T.main(["--policy", str(other), "--out", str(tmp_path / "d"), "--data",
                   str(tmp_path / "a" / "data.npz")]) == 2
    agent = make_agent(f"ppo:path={tmp_path / 'a' / 'policy.npz'}", seed=0)
    s = tribute_state(seed=1)
    agent.start_match(s.current, s.config)
    mask = np.zeros(NUM_ACTIONS, bool)
    mask[E.legal_actions(s)] = True
    assert mask[agent.act(Encoder(4, 4, 2).encode(s, s.current), mask)]


def test_bad_input_is_a_clear_error(tmp_path, capsys):
    base = small_policy(tmp_path / "p.npz", seconds=500.0)
    with pytest.raises(ValueError, match="whole budget"):
        T.fit(T.TributeFitConfig(policy=str(base), out=str(tmp_path / "o"), max_seconds=400))
    fitted = tmp_path / "f.npz"
    pol = load_policy_file(base)
    NetPolicy(pol.layers, pol.pi, pol.v, pol.meta,
              np.zeros((TRIBUTE_FEATURES, NUM_ACTIONS), np.float32),
              heads=["tribute"]).save(fitted)
    with pytest.raises(ValueError, match="already tribute-fitted"):
        T.fit(T.TributeFitConfig(policy=str(fitted), out=str(tmp_path / "o")))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    assert T.main(["--policy", str(base), "--out", str(tmp_path / "o"),
                   "--data", str(tmp_path / "junk.npz")]) == 2
    assert "not readable" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        T.main(["--policy", str(base), "--explore", "2"])
    assert exc.value.code == 2
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"policy": str(base), "scael": 3}))
    with pytest.raises(SystemExit):
        T.main(["--config", str(cfg)])
    assert "unknown setting(s) scael" in capsys.readouterr().err


def test_action_classes_join_suits_and_dragon_cards_only():
    asks = [PASS, ASK_BASE + 8, ASK_BASE + 11, ASK_BASE + 12, ASK_BASE + 40, ASK_BASE + 43]
    c = cf.action_classes(np.array(asks))
    assert c[1] == c[2] and c[4] == c[5]  # 3E, 3L; Beast, Executioner
    assert len({c[0], c[1], c[3], c[4]}) == 4  # pass, the 3s, a 4, the dragon cards
    gives = np.array([GIVE_BASE + 8, GIVE_BASE + 9, GIVE_BASE + 44, GIVE_BASE + 41])
    g = cf.action_classes(gives)
    assert g[0] == g[1] and len({g[0], g[2], g[3]}) == 3  # the Egg is a class of its own


def test_a_stopped_gather_keeps_its_batches_and_resumes_to_the_same_fit(tmp_path, capsys,
                                                                         monkeypatch):
    base = small_policy(tmp_path / "p.npz", seconds=100.0)
    args = ["--policy", str(base), "--chunks", "4", "--states-per-chunk", "3", "--seed", "5",
            "--workers", "1", "--table-sizes", "3", "4", "--size-weights", "1", "1",
            "--holdout", "0.25", "--no-progress"]
    assert T.main(args + ["--out", str(tmp_path / "whole")]) == 0
    whole = load_policy_file(tmp_path / "whole" / "policy.npz")
    assert not (tmp_path / "whole" / T.GATHER).exists()  # data.npz holds the batches
    # a scheduler's SIGTERM as the second batch is saved (as Ctrl-C): the two batches stay on
    # disk, nothing else is written, and the message says how to resume
    out = tmp_path / "stopped"
    save = T.save_batch

    def save_then_stop(folder, k, batch, seconds, cfg, sig=None):
        path = save(folder, k, batch, seconds, cfg)
        if k == 1:
            if sig is None:
                raise KeyboardInterrupt
            os.kill(os.getpid(), sig)
            time.sleep(5)  # the handler raises KeyboardInterrupt here
        return path

    monkeypatch.setattr(T, "save_batch", functools.partial(save_then_stop, sig=signal.SIGTERM))
    assert T.main(args + ["--out", str(out)]) == 130
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # given back
    err = capsys.readouterr().err
    assert "2 batch(es) of states are saved" in err and f"--resume {out}" in err
    monkeypatch.setattr(T, "save_batch", save)
    assert sorted(p.name for p in (out / T.GATHER).iterdir()) == [
        "batch_00000.npz", "batch_00001.npz", "settings.json"]
    assert not (out / "policy.npz").exists() and not (out / "data.npz").exists()
    first = (out / T.GATHER / "batch_00000.npz").read_bytes()
    # a rerun there is refused, naming --resume; so is a resume with other settings
    assert T.main(args + ["--out", str(out)]) == 2
    assert f"continue it with --resume {out}" in capsys.readouterr().err
    assert T.main(["--resume", str(out), "--seed", "6"]) == 2
    err = capsys.readouterr().err
    assert "cannot resume" in err and "--seed 6 (saved: 5)" in err
    assert (out / T.GATHER / "batch_00000.npz").read_bytes() == first
    # a damaged batch is refused by name, before any gathering
    (out / T.GATHER / "batch_00001.npz").write_bytes(b"not a zip")
    assert T.main(["--resume", str(out), "--no-progress"]) == 2
    assert "batch_00001.npz is not readable" in capsys.readouterr().err
    # the resume gathers batches 2 and 3 only and fits exactly what the whole run fitted
    monkeypatch.setattr(T, "save_batch", save_then_stop)
    assert T.main(args + ["--out", str(tmp_path / "again")]) == 130
    monkeypatch.setattr(T, "save_batch", save)
    capsys.readouterr()
    assert T.main(["--resume", str(tmp_path / "again"), "--workers", "1", "--no-progress"]) == 0
    again = load_policy_file(tmp_path / "again" / "policy.npz")
    np.testing.assert_array_equal(again.pi_counts, whole.pi_counts)
    info = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert info["states"] == 9 and info["held_out_states"] == 3
    assert not (tmp_path / "again" / T.GATHER).exists()
    prov = json.loads((tmp_path / "again" / "policy.json").read_text())
    assert "--seed 5" in prov["command"]  # the command that started the gather
    assert T.main(["--resume", str(tmp_path / "again")]) == 2
    assert "is finished" in capsys.readouterr().err
    assert T.main(["--resume", str(tmp_path / "nothing")]) == 2
    assert "holds no stopped tribute fit" in capsys.readouterr().err
