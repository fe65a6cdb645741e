"""The batched self-play trainer (dragons_egg.experiments.training.selfplay) and its policy files (dragons_egg.agents.netpolicy)."""

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")

from support import tiny  # noqa: E402

from dragons_egg.agents import make_agent  # noqa: E402
from dragons_egg.agents.netpolicy import PolicyFileError, load_policy_file  # noqa: E402
from dragons_egg.agents.runner import play_match  # noqa: E402
from dragons_egg.experiments.common import runs  # noqa: E402
from dragons_egg.experiments.training import network, rollout, selfplay  # noqa: E402
from dragons_egg.experiments.training import search_targets as search_module  # noqa: E402
from dragons_egg.experiments.training.selfplay import Run, advantages  # noqa: E402
from dragons_egg_env.actions import ASK_BASE, NUM_ACTIONS  # noqa: E402
from dragons_egg_env.config import RulesConfig  # noqa: E402


def weights(run):
    return np.concatenate([p.detach().numpy().ravel() for p in run.learner.model.parameters()])


def test_seeded_runs_repeat_their_first_updates(tmp_path):
    a = Run(tiny(tmp_path, run_name="a", seed=3))
    b = Run(tiny(tmp_path, run_name="b", seed=3))
    c = Run(tiny(tmp_path, run_name="c", seed=4))
    for _ in range(2):
        sa, sb = a.iteration(), b.iteration()
        c.iteration()
        assert sa["policy_loss"] == sb["policy_loss"]
    assert np.array_equal(weights(a), weights(b))
    assert not np.array_equal(weights(a), weights(c))


def test_each_seat_is_credited_its_own_match_score(tmp_path, monkeypatch):
    """Along each seat's chain of decisions (next_index), the rewards add up to that seat's
    final score of the match, and the chain ends as terminal exactly at the match's end."""
    cfg = tiny(tmp_path, table_sizes=(2,), envs_per_size=3, rollout_steps=1500, num_rounds=1)
    run = Run(cfg)
    finals = {}
    eng = run.collector.engines[0]
    real_step = eng.step

    def recording_step(actions):
        st = real_step(actions)
        for b in np.flatnonzero(st.done):
            finals.setdefault(int(b), st.final_scores[b].copy())
        return st
    monkeypatch.setattr(eng, "step", recording_step)
    ro, _ = run.collector.collect(run.acting.act, [], run.acting.value)
    B = run.collector.num
    assert finals, "no match finished within the rollout"
    for b, score in finals.items():
        for seat in range(2):
            first = next(t * B + b for t in range(cfg.collection.rollout_steps)
                         if ro.learner[t * B + b] and ro.seat[t * B + b] == seat)
            total, i = 0.0, first
            while True:
                total += ro.reward[i]
                if ro.terminal[i]:
                    break
                i = ro.next_index[i]
                assert i >= 0, "a chain of the first match ended before the match"
            assert total == pytest.approx(score[seat])


def test_advantages_follow_each_seats_trajectory():
    # two matches, two steps: match 0: seat 0 then seat 1 (nobody decides twice), match 1:
    # the same seat twice, then a terminal step.
    T, B = 2, 2
    ro = rollout.Rollout(
        obs=np.zeros((4, 1), np.float32), mask=np.ones((4, 1), bool),
        action=np.zeros(4, np.int64), logp=np.zeros(4, np.float32),
        value=np.array([0.5, 0.2, 0.1, 0.4], np.float32), learner=np.ones(4, bool),
        reward=np.array([0.0, 0.0, 0.0, 1.0], np.float32),
        terminal=np.array([False, False, False, True]),
        next_index=np.array([-1, 3, -1, -1]), bootstrap=np.array([0.3, 0, 0.7, 0], np.float32),
        seat=np.zeros(4, np.int64))
    adv = advantages(ro, T, B, gamma=1.0, lam=0.5)
    # index 3 (t=1, match 1): terminal: 1.0 - 0.4
    assert adv[3] == pytest.approx(0.6)
    # index 1 (t=0, match 1): next is index 3: delta = 0 + 0.4 - 0.2, plus 0.5 * adv[3]
    assert adv[1] == pytest.approx(0.2 + 0.5 * 0.6)
    # index 0 and 2: open at the end: bootstrapped
    assert adv[0] == pytest.approx(0.3 - 0.5)
    assert adv[2] == pytest.approx(0.7 - 0.1)
    # a tribute decision with its own lambda: index 1 becomes a tribute decision (an ask is
    # legal there); with tribute_lam 0 it is credited with its one-step difference alone
    mask = np.zeros((4, NUM_ACTIONS), bool)
    mask[:, 0] = True
    mask[1, ASK_BASE] = True
    ro.mask = mask
    adv = advantages(ro, T, B, gamma=1.0, lam=0.5, tribute_lam=0.0)
    assert adv[1] == pytest.approx(0.2) and adv[3] == pytest.approx(0.6)
    assert advantages(ro, T, B, gamma=1.0, lam=0.5)[1] == pytest.approx(0.2 + 0.5 * 0.6)


def test_exported_policy_plays_as_the_net_agent(tmp_path):
    run = Run(tiny(tmp_path))
    run.iteration()
    path = network.export_policy(run.learner.model, run.cfg, tmp_path / "p.npz", {"x": 1})
    pol = load_policy_file(path)
    import torch

    obs = np.random.default_rng(0).random((5, pol.layers[0][0].shape[0]), np.float32)
    mask = np.ones((5, 134), bool)
    mask[:, 7] = False
    with torch.no_grad():
        logits, value = run.learner.model(torch.from_numpy(obs), torch.from_numpy(mask))
    np.testing.assert_allclose(pol.logits(obs, mask)[mask], logits.numpy()[mask], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(pol.value(obs), value.numpy(), rtol=1e-4, atol=1e-5)
    assert pol.meta["provenance"] == {"x": 1}
    rec = play_match([make_agent(f"net:path={path}", seed=q) for q in range(3)],
                     RulesConfig(num_players=3, num_rounds=1), seed=1)
    assert sum(rec.scores) == pytest.approx(0.0)


def test_bad_policy_files_are_clear_errors(tmp_path):
    with pytest.raises(PolicyFileError, match="does not exist"):
        load_policy_file(tmp_path / "none.npz")
    with pytest.raises(PolicyFileError, match="is a directory"):
        load_policy_file(tmp_path)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(PolicyFileError, match="not a readable"):
        load_policy_file(junk)
    other = tmp_path / "other.npz"
    np.savez(other, meta=np.frombuffer(json.dumps({"format": "x"}).encode(), np.uint8))
    with pytest.raises(PolicyFileError, match="not a Dragon's Egg policy"):
        load_policy_file(other)


def test_checkpoint_resume_and_corrupt_checkpoint(tmp_path):
    cfg = tiny(tmp_path, run_name="r")
    run = Run(cfg)
    run.iteration()
    path = run.save()
    again = Run(cfg, resume=str(path))
    assert (again.samples, again.updates) == (run.samples, run.updates)
    assert np.array_equal(weights(again), weights(run))
    again.iteration()
    assert again.updates == run.updates + 1
    bad = run.dir / "checkpoints" / "bad.pt"  # in the run's folder: resumed there
    bad.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="could not be read"):
        Run(cfg, resume=str(bad))
    with pytest.raises(ValueError, match="does not exist"):
        Run(cfg, resume=str(run.dir / "checkpoints" / "missing.pt"))
    # a checkpoint from elsewhere would continue in a folder that holds another run
    with pytest.raises(ValueError, match="already holds another run"):
        Run(cfg, resume=str(tmp_path / "elsewhere.pt"))


def test_short_run_with_league_and_evaluation(tmp_path):
    cfg = tiny(tmp_path, total_samples=600, snapshot_every=200, opponent_share=0.5,
               eval_every=400, eval_opponents=("random",), eval_players=2, eval_matches=4,
               num_rounds=1)
    run = Run(cfg)
    final = run.train()
    assert final.is_file() and run.league
    rows = (tmp_path / "selfplay-seed0" / "eval.csv").read_text().splitlines()
    assert rows[0].startswith("samples,seconds") and len(rows) >= 3
    summary = json.loads((tmp_path / "selfplay-seed0" / "summary.json").read_text())
    assert summary["samples"] == run.samples >= 600


def test_a_resume_says_which_league_snapshots_it_cannot_find(tmp_path, capsys):
    """A checkpoint names its league's snapshot files; resumed where one is gone, the run
    plays without it and says so on stderr, naming it."""
    cfg = tiny(tmp_path, total_samples=450, snapshot_every=150, opponent_share=0.5,
               checkpoint_every=150, num_rounds=1)
    run = Run(cfg)
    run.train()
    assert len(run.league) >= 2
    gone = Path(run.league[0])
    gone.unlink()
    capsys.readouterr()
    again = Run(dataclasses.replace(cfg, total_samples=600),
                resume=str(run.dir / "checkpoints" / "latest.pt"))
    err = capsys.readouterr().err
    assert "1 of its league's snapshots are not where its run kept them" in err
    assert str(gone) in err
    assert str(gone) not in again.league and len(again.league) == len(run.league) - 1


def test_the_evaluation_can_include_a_search_opponent_with_fewer_matches(tmp_path,
                                                                        monkeypatch):
    """``eval_search`` agents (ISMCTS) get a tournament of their own, of
    ``eval_search_matches``, whose difference joins the row, eval.csv and the curve."""
    from dragons_egg.experiments.evaluation import versus

    calls = []
    real = versus.evaluate_agent

    def recording(me, opponents, **kw):
        calls.append((list(opponents), kw["matches"], kw["seed"]))
        return real(me, opponents, **kw)
    monkeypatch.setattr(versus, "evaluate_agent", recording)
    cfg = tiny(tmp_path, total_samples=144, eval_opponents=("greedy",),
               eval_search=("ismcts:iterations=2",), eval_search_matches=4, eval_players=2,
               eval_matches=6, num_rounds=1)
    run = Run(cfg)
    run.train()
    assert [c[:2] for c in calls] == [(["greedy"], 6), (["ismcts:iterations=2"], 4)]
    assert calls[0][2] != calls[1][2]  # other deals
    row = run.history[-1]
    assert {"diff_greedy", "diff_ismcts:iterations=2"} <= set(row)
    assert "mean_score" in row  # the main evaluation's own figures stay
    header = (run.dir / "eval.csv").read_text().splitlines()[0].split(",")
    assert "diff_ismcts:iterations=2" in header
    with pytest.raises(ValueError, match="eval_search_matches"):
        tiny(tmp_path, eval_search_matches=0).validate()


@pytest.mark.parametrize("argv,needle", [
    (["--total-samples", "0"], "total_samples must be >= 1"),
    (["--table-sizes", "9"], "table size 9"),
    (["--opponent-share", "1.5"], "opponent_share"),
    (["--tribute-cf-threshold", "0"], "tribute_cf_threshold"),
    (["--tribute-cf-update", "sideways"], "tribute-cf-update"),
])
def test_command_line_errors(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        selfplay.parse_args(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_time_budget_stops_the_run_and_counts_across_resumes(tmp_path, monkeypatch):
    cfg = tiny(tmp_path, run_name="t", total_samples=10**9, max_seconds=10.0)
    run = Run(cfg)
    clock = iter(np.arange(0.0, 1000.0, 1.5))  # every iteration takes 3 "seconds"
    monkeypatch.setattr(selfplay.time, "perf_counter", lambda: float(next(clock)))
    run.train()
    # 3 updates (9 s); a 4th would end past the budget, at 12 s
    assert run.updates == 3 and run.seconds == pytest.approx(9.0)
    assert run.seconds <= cfg.max_seconds
    again = Run(cfg, resume=str(run.dir / "checkpoints" / "latest.pt"))
    assert again.out_of_time()
    again.train()  # nothing left to do
    assert again.updates == 3


def test_time_budget_judges_the_next_update_by_the_slower_of_mean_and_last_pace(tmp_path,
                                                                             monkeypatch):
    # updates of 1, 1, 1 then 4 "seconds" (a resume with costlier settings): after the 4th
    # (7 s) the mean pace (1.75 s) would allow a 5th, which ends at 11 s, past the budget
    cfg = tiny(tmp_path, run_name="slow", total_samples=10**9, max_seconds=10.0)
    run = Run(cfg)
    times, t = [], 0.0
    for d in [1.0, 1.0, 1.0] + [4.0] * 10:  # perf_counter at t0, t1, t2 of each iteration
        times += [t, t + d / 2, t + d]
        t += d
    clock = iter(times)
    monkeypatch.setattr(selfplay.time, "perf_counter", lambda: float(next(clock)))
    run.train()
    assert run.updates == 4 and run.seconds == pytest.approx(7.0)


def test_without_the_bar_checkpoints_write_pace_lines_at_most_every_pace_every(
        tmp_path, monkeypatch, capsys):
    """With ``--no-progress`` a log still shows the run moving and at what pace: a line at a
    checkpoint, at most one every ``PACE_EVERY`` training seconds; with the bar, none."""
    monkeypatch.setattr(Run, "PACE_EVERY", 5.0)
    # 144 learner samples a rollout, a checkpoint after each; every iteration takes 3 "seconds"
    cfg = tiny(tmp_path, run_name="pace", total_samples=6 * 144, checkpoint_every=144,
               max_seconds=100.0)
    clock = iter(np.arange(0.0, 1000.0, 1.5))
    monkeypatch.setattr(selfplay.time, "perf_counter", lambda: float(next(clock)))
    Run(cfg).train()
    lines = [line for line in capsys.readouterr().err.splitlines() if "samples/s" in line]
    assert lines == [f"at {k * 288:,} samples ({k * 6} training s of 100): 48 samples/s since "
                     f"{(k - 1) * 288:,}" for k in (1, 2, 3)]
    Run(tiny(tmp_path, run_name="bar", total_samples=6 * 144, checkpoint_every=144,
             progress=True)).train()
    assert "samples/s since" not in capsys.readouterr().err


def test_linear_learning_rate_decays_with_progress(tmp_path):
    run = Run(tiny(tmp_path, lr_schedule="linear", total_samples=10_000, learning_rate=1e-3))
    first = run.iteration()
    assert first["learning_rate"] == pytest.approx(1e-3)
    second = run.iteration()
    assert second["learning_rate"] == pytest.approx(1e-3 * (1 - first["samples"] / 10_000))
    assert run.learner.opt.param_groups[0]["lr"] == pytest.approx(second["learning_rate"])
    const = Run(tiny(tmp_path, run_name="c", total_samples=10_000, learning_rate=1e-3))
    const.iteration()
    assert const.iteration()["learning_rate"] == pytest.approx(1e-3)


def test_a_checkpoint_ships_as_a_ppo_policy_with_provenance(tmp_path, capsys):
    from dragons_egg.experiments.training import ship

    run = Run(tiny(tmp_path, run_name="s"))
    run.iteration()
    ckpt = run.save()
    dest = tmp_path / "agent.npz"
    assert ship.main([str(ckpt), "--dest", str(dest), "--command", "train it",
                      "--note", "resumed once"]) == 0
    meta = json.loads(dest.with_suffix(".json").read_text())
    assert meta["command"] == "train it" and meta["samples"] == run.samples
    assert meta["note"] == "resumed once"
    assert meta["config"]["ppo"]["hidden"] == [16]
    assert load_policy_file(dest).meta["provenance"]["updates"] == 1
    agent = make_agent(f"ppo:path={dest}", seed=0)
    assert agent.format == "net" and agent.policy_players == run.cfg.max_players
    with pytest.raises(SystemExit) as exc:
        ship.main([str(tmp_path / "nope.pt"), "--dest", str(tmp_path / "x.npz")])
    assert exc.value.code == 2 and "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()
    # a league snapshot (a policy file) ships as it is, with the provenance it carries
    run._add_snapshot()
    snap = run.league[-1]
    dest2 = tmp_path / "snap_agent.npz"
    assert ship.main([snap, "--dest", str(dest2), "--command", "train it"]) == 0
    meta2 = json.loads(dest2.with_suffix(".json").read_text())
    assert meta2["samples"] == run.samples and meta2["checkpoint"] == snap
    assert meta2["command"] == "train it"
    np.testing.assert_array_equal(load_policy_file(dest2).pi[0], load_policy_file(snap).pi[0])
    assert load_policy_file(dest2).meta["provenance"]["command"] == "train it"
    # an existing --dest is refused, untouched, unless --overwrite
    before = dest2.read_bytes()
    with pytest.raises(SystemExit) as exc:
        ship.main([str(ckpt), "--dest", str(dest2)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"{dest2} and {dest2.with_suffix('.json')} exist" in err
    assert dest2.read_bytes() == before
    assert ship.main([str(ckpt), "--dest", str(dest2), "--overwrite"]) == 0
    assert load_policy_file(dest2).meta["provenance"]["checkpoint"] == str(ckpt)


def test_settings_comparison_reports_every_variant(tmp_path, capsys):
    from dragons_egg.experiments.training import compare as selfplay_compare

    out = tmp_path / "cmp"
    assert selfplay_compare.main(["--seconds", "0.5", "--matches", "4", "--variants",
                                  "selfplay-tribute4,sb3-vector", "--out", str(out)]) == 0
    data = json.loads((out / "compare.json").read_text())
    assert [r["variant"] for r in data["variants"]] == ["selfplay-tribute4", "sb3-vector"]
    for r in data["variants"]:
        assert r["samples"] > 0 and r["cpu_seconds"] >= 0.5
        # 4 matches at 4 players: one deal sequence, too few for an interval (the
        # tournament's rule): null in the JSON, said in the table
        assert -3 <= r["diff_heuristic"] <= 3
        assert r["diff_heuristic_low"] is None and r["diff_heuristic_high"] is None
    assert (out / "compare.png").stat().st_size > 0
    assert "| sb3-vector |" in (out / "compare.md").read_text()
    assert "| too few deal sequences |" in (out / "compare.md").read_text()
    with pytest.raises(SystemExit):
        selfplay_compare.main(["--variants", "nope", "--out", str(out)])
    before = (out / "compare.json").read_text()
    with pytest.raises(SystemExit) as exc:  # a rerun into the folder: refused before training
        selfplay_compare.main(["--seconds", "0.5", "--variants", "selfplay-tribute4", "--out",
                               str(out)])
    assert exc.value.code == 2 and "holds earlier comparison (compare.json" in capsys.readouterr().err
    assert (out / "compare.json").read_text() == before


def test_a_stopped_comparison_keeps_its_variants_and_resumes(tmp_path, capsys, monkeypatch):
    """Ctrl-C (or SIGTERM) during the second variant: the first stays in the report, one line
    says how to resume, and --resume plays only the rest, with the saved settings."""
    from dragons_egg.experiments.training import compare as selfplay_compare

    out = tmp_path / "cmp"
    real = selfplay_compare.run_variant
    played = []

    def run_variant(name, seconds, where):
        played.append(name)
        if name == "selfplay-epochs4" and len(played) == 2:
            raise KeyboardInterrupt
        return real(name, seconds, where)

    monkeypatch.setattr(selfplay_compare, "run_variant", run_variant)
    args = ["--seconds", "0.3", "--matches", "4", "--seed", "3", "--variants",
            "selfplay-tribute4,selfplay-epochs4", "--out", str(out)]
    assert selfplay_compare.main(args) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].endswith(
        f"interrupted; 1 of 2 variants are in {out / 'compare.json'}; resume with: "
        f"python -m dragons_egg.experiments.training.compare --resume {out}")
    first = json.loads((out / "compare.json").read_text())
    assert [r["variant"] for r in first["variants"]] == ["selfplay-tribute4"]
    assert first["planned"] == ["selfplay-tribute4", "selfplay-epochs4"]
    with pytest.raises(SystemExit) as exc:  # its settings are the saved ones
        selfplay_compare.main(["--resume", str(out), "--seconds", "1"])
    assert exc.value.code == 2 and "drop --seconds" in capsys.readouterr().err
    assert selfplay_compare.main(["--resume", str(out)]) == 0
    assert played == ["selfplay-tribute4", "selfplay-epochs4", "selfplay-epochs4"]
    data = json.loads((out / "compare.json").read_text())
    assert [r["variant"] for r in data["variants"]] == ["selfplay-tribute4", "selfplay-epochs4"]
    assert data["variants"][0] == first["variants"][0]
    assert (data["seconds"], data["matches"], data["seed"]) == (0.3, 4, 3)
    assert data["command"] == first["command"] and "--seed 3" in data["command"]
    with pytest.raises(SystemExit) as exc:
        selfplay_compare.main(["--resume", str(out)])
    assert exc.value.code == 2 and "is finished" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        selfplay_compare.main(["--resume", str(tmp_path / "none")])
    assert exc.value.code == 2 and "no comparison to resume" in capsys.readouterr().err
    # stopped in its first variant: the plan is on disk, and the resume plays it all
    played.clear()
    monkeypatch.setattr(selfplay_compare, "run_variant",
                        lambda name, seconds, where: (_ for _ in ()).throw(KeyboardInterrupt))
    early = tmp_path / "early"
    assert selfplay_compare.main(["--seconds", "0.3", "--matches", "4", "--variants",
                                  "selfplay-tribute4", "--out", str(early)]) == 130
    assert "0 of 1 variants" in capsys.readouterr().err
    assert json.loads((early / "compare.json").read_text())["variants"] == []
    monkeypatch.setattr(selfplay_compare, "run_variant", real)
    assert selfplay_compare.main(["--resume", str(early)]) == 0
    assert [r["variant"] for r in json.loads((early / "compare.json").read_text())["variants"]
            ] == ["selfplay-tribute4"]


def test_saved_policies_are_evaluated_afterwards_once_each(tmp_path, capsys):
    from dragons_egg.experiments.training import evaluate_run as selfplay_eval

    cfg = tiny(tmp_path, total_samples=600, eval_every=300, eval_opponents=("random",),
               eval_players=2, eval_matches=4, num_rounds=1, run_name="e", max_players=3)
    run = Run(cfg)
    run.train()
    saved = selfplay_eval.saved_policies(run.dir)
    assert [s for s, _ in saved] == [r["samples"] for r in run.history]
    assert selfplay_eval.main([str(run.dir), "--opponent", "greedy", "--matches", "4"]) == 0
    rows = runs.read_eval_csv(run.dir / "eval_greedy.csv")
    assert [r["samples"] for r in rows] == [s for s, _ in saved]
    assert [r["seconds"] for r in rows] == [r["seconds"] for r in run.history]
    # 4 matches at 2 players: 2 deal sequences, too few for intervals (empty cells, NaN)
    assert all(math.isnan(r["diff_greedy_low"]) and math.isnan(r["diff_greedy_high"])
               and not math.isnan(r["diff_greedy"]) for r in rows)
    assert selfplay_eval.evaluate_run(run.dir, "greedy", 4, 1, 0) == []  # nothing left to do
    assert (run.dir / "learning_curve.png").stat().st_size > 0
    # at another table size: its own file and figures, drawn beside the run's size
    assert selfplay_eval.main([str(run.dir), "--opponent", "greedy", "--matches", "6",
                               "--players", "3"]) == 0
    rows3 = runs.read_eval_csv(run.dir / "eval_greedy-3p.csv")
    assert [r["samples"] for r in rows3] == [s for s, _ in saved]
    assert {"diff_greedy@3p", "diff_greedy@3p_low", "mean_score@3p"} <= set(rows3[0])
    assert "diff_greedy" not in rows3[0]
    assert [r["diff_greedy@3p"] for r in rows3] != [r["diff_greedy"] for r in rows]
    merged = runs.merged_evals(run.dir)
    assert all({"diff_greedy", "diff_greedy@3p"} <= set(r) for r in merged)
    assert runs.read_eval_csv(run.dir / "eval_greedy.csv") == rows  # untouched
    assert selfplay_eval.evaluate_run(run.dir, "greedy", 6, 1, 0, players=3) == []
    with pytest.raises(ValueError, match="play 2 to 3 players"):  # the run's max_players
        selfplay_eval.evaluate_run(run.dir, "greedy", 6, 1, 0, players=4)
    assert selfplay_eval.label("ismcts:iterations=400") == "ismcts-iterations-400"
    for argv, needle in (([str(tmp_path)], "not a self-play run folder"),
                         ([str(run.dir), "--opponent", "nobody"], "unknown agent"),
                         ([str(run.dir), "--players", "9"], "--players"),
                         ([str(run.dir), "--seed", "-1"], "--seed")):
        with pytest.raises(SystemExit) as exc:
            selfplay_eval.main(argv)
        assert exc.value.code == 2 and needle in capsys.readouterr().err


def test_a_rollout_one_decision_past_whole_minibatches_keeps_the_weights_finite(tmp_path):
    """144 decisions in minibatches of at most 143: two minibatches of 72, not 143 and a lone
    decision (whose advantage has no standard deviation: it made the loss NaN)."""
    run = Run(tiny(tmp_path, minibatch=143))
    stats = run.iteration()
    assert stats["samples"] == 144
    assert np.isfinite(weights(run)).all() and np.isfinite(stats["policy_loss"])


def test_a_non_finite_loss_stops_before_touching_the_weights(tmp_path, monkeypatch):
    run = Run(tiny(tmp_path))
    before = weights(run)
    real = selfplay.advantages
    monkeypatch.setattr(selfplay, "advantages",
                        lambda *a, **k: np.full_like(real(*a, **k), np.nan))
    with pytest.raises(FloatingPointError, match="not finite"):
        run.iteration()
    assert np.array_equal(weights(run), before)


def test_league_agents_play_their_seats_and_are_not_trained_on(tmp_path):
    """A ``greedy`` league member plays exactly the greedy rule at its seats; those decisions
    are not the learner's; a stateful agent cannot join the league."""
    from dragons_egg.agents.heuristic import mask_to_int
    from dragons_egg.agents.simple import greedy_mask

    run = Run(tiny(tmp_path, opponent_share=0.6, league_agents=("greedy",)))
    col = run.collector
    assert col.league_size == 1  # no snapshots yet: the greedy agent alone
    ro, _ = col.collect(run.acting.act, run._snapshot_fns(), run.acting.value)
    league = ~ro.learner
    assert 0.2 < league.mean() < 0.8
    for i in np.flatnonzero(league):
        assert ro.action[i] == greedy_mask(mask_to_int(ro.mask[i]))
    adv = advantages(ro, col.cfg.collection.rollout_steps, col.num, 1.0, 0.95)
    assert not adv[league].any()
    with pytest.raises(ValueError, match="not memoryless"):
        tiny(tmp_path, league_agents=("ismcts:iterations=5",)).validate()
    with pytest.raises(ValueError, match="nosuch"):
        tiny(tmp_path, league_agents=("nosuch",)).validate()


def test_the_entropy_term_is_the_policys_entropy_over_legal_actions(tmp_path):
    """The minibatch's entropy is the weighted mean of -sum p log p over each row's legal
    actions (torch's Categorical on the legal logits), whatever the illegal logits were."""
    import torch

    run = Run(tiny(tmp_path))
    learner = run.learner
    rng = np.random.default_rng(0)
    n, obs_size = 64, learner.model.trunk[0].in_features
    mask = rng.random((n, NUM_ACTIONS)) < 0.2
    mask[:, 0] = True
    b = {"obs": torch.from_numpy(rng.standard_normal((n, obs_size)).astype(np.float32)),
         "mask": torch.from_numpy(mask), "act": torch.zeros(n, dtype=torch.int64),
         "logp": torch.zeros(n), "adv": torch.from_numpy(rng.standard_normal(n).astype(
             np.float32)), "ret": torch.zeros(n), "v": torch.zeros(n),
         "w": torch.from_numpy(rng.uniform(0.5, 2.0, n).astype(np.float32))}
    with torch.no_grad():
        logits, _ = learner.model(b["obs"], b["mask"])
        ent = torch.stack([torch.distributions.Categorical(logits=row[m]).entropy()
                           for row, m in zip(logits, b["mask"], strict=True)])
        want = float((ent * b["w"]).sum() / b["w"].sum())
    got = learner._minibatch(b)["entropy"]
    assert got == pytest.approx(want, rel=1e-5) and got > 0.1


def _targets(tmp_path):
    """A small search-targets folder searched with the shipped policy (8 seats, tiny
    budget): 4 batches, of 2 and 3 players in turn."""
    from dragons_egg.experiments.training import search_targets

    out = tmp_path / "targets"
    assert search_targets.main(["--iterations", "8", "--rounds", "1", "--matches-per-batch",
                                "2", "--players", "2", "3", "--batches", "4", "--no-progress",
                                "--out", str(out)]) == 0
    return out


def test_search_targets_pull_the_policy_towards_the_search(tmp_path, monkeypatch, capsys):
    """With ``search_targets`` every minibatch also fits the visit distributions: their
    cross-entropy falls over a few updates, the update reports it, the evaluations measure
    it on the held-out batches (here every second one), and the exported policy's provenance
    names the folder and its gathering seconds."""
    folder = _targets(tmp_path)
    monkeypatch.setattr(search_module, "HELD_OUT", 2)
    run = Run(tiny(tmp_path, search_targets=str(folder), search_coef=20.0, search_batch=256,
                   max_players=8, epochs=2, learning_rate=3e-3))
    hook = run.learner.hook(search_module.SearchTargetLoss)
    search, held = hook.search, hook.search_held
    assert search is not None and held is not None
    assert run.search_info["decisions"] == len(search["obs"])
    assert run.search_info["held_out"] == len(held["obs"]) > 0
    fitted, held_out = len(search["obs"]), len(held["obs"])
    line = next(ln for ln in capsys.readouterr().err.splitlines()
                if ln.startswith("search targets: "))
    assert line.startswith(f"search targets: {fitted + held_out:,} decisions of ismcts-net")
    assert line.endswith(f"{fitted:,} fitted, {held_out:,} held out for the evaluations")
    first = run.run_eval()
    assert 0 <= first["search_agree"] <= 1 and first["search_ce"] > 0
    # a whole cycle of table sizes is held out: both sizes are measured
    assert 0 <= first["search_agree_2p"] <= 1 and 0 <= first["search_agree_3p"] <= 1
    # split by whether the search overruled its guide: the guide is the shipped policy, and
    # this fresh network plays its own moves, so the two shares are the policy's, row by row
    torch = run.learner.torch
    with torch.no_grad():
        same = run.learner.model(held["obs"], held["mask"])[0].argmax(-1) == held["played"]
    over = held["overruled"]
    assert 0 < int(over.sum()) < len(over)  # a budget of 8 iterations overrules often
    assert first["search_agree_overruled"] == round(same[over].float().mean().item(), 4)
    assert first["search_agree_kept"] == round(same[~over].float().mean().item(), 4)
    assert first["search_agree"] == round(same.float().mean().item(), 4)

    def cross_entropy():
        torch = run.learner.torch
        with torch.no_grad():
            return hook.loss(run.learner, search).item()

    before = cross_entropy()
    stats = [run.iteration() for _ in range(3)]
    assert all("search_loss" in s for s in stats)
    after = cross_entropy()
    assert after < before - 0.1
    assert run.run_eval()["search_ce"] < first["search_ce"]  # the held-out rows too
    final = run.finish()
    prov = load_policy_file(final).meta["provenance"]
    assert prov["search_targets"]["folder"] == str(folder)
    assert prov["search_targets"]["gathered_seconds"] > 0
    assert prov["search_targets"]["decisions_by_players"].keys() == {"2", "3"}


def test_search_targets_that_do_not_fit_are_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="is not a search-targets folder"):
        tiny(tmp_path, search_targets=str(tmp_path)).validate()
    folder = _targets(tmp_path)
    with pytest.raises(ValueError, match="its observations have 435 values, this network "
                                         "reads .* \\(max_players 4\\)"):
        Run(tiny(tmp_path, search_targets=str(folder), max_players=4))
    with pytest.raises(ValueError, match="search_coef"):
        tiny(tmp_path, search_coef=-1.0).validate()
