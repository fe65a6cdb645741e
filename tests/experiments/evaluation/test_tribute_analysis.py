"""The tribute analysis (dragons_egg.experiments.evaluation.tribute): the play policy and the learned
tribute policy are chosen separately."""

import json

import numpy as np
import pytest

from dragons_egg.agents import make_agent
from dragons_egg.agents.base import Agent
from dragons_egg.experiments.evaluation import tribute as ta
from dragons_egg.experiments.evaluation import tribute_report as tr
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS


def test_a_tribute_spec_equal_to_the_heuristic_gives_the_heuristic_results():
    """With --tribute heuristic the 'learned' variant is the heuristic's tribute: the same
    rewards deal for deal; round 1 is shared by every variant (checked inside run)."""
    res = ta.run("heuristic", deals=6, num_players=4, seed=3, tribute_spec="heuristic")
    for t in ("learned", "learned-ask", "learned-give"):
        assert np.array_equal(res["rewards"][t], res["rewards"]["heuristic"])
    assert res["play"] == res["tribute"] == "heuristic"
    assert res["asked"].sum() > 0  # the Dragon asked for cards in every sequence


def test_results_do_not_depend_on_the_number_of_processes():
    """Deal sequences split among 2 processes (tasks of DEALS_PER_TASK) give the results of
    one process, deal for deal and card for card."""
    deals = ta.DEALS_PER_TASK + 3
    one = ta.run("heuristic", deals=deals, num_players=3, seed=5, tribute_spec="greedy")
    two = ta.run("heuristic", deals=deals, num_players=3, seed=5, tribute_spec="greedy",
                 workers=2)
    for t in ta.TRIBUTE_POLICIES:
        assert len(two["rewards"][t]) == deals
        np.testing.assert_array_equal(one["rewards"][t], two["rewards"][t])
    assert one["dragons"] == two["dragons"]
    np.testing.assert_array_equal(one["asked"], two["asked"])
    np.testing.assert_array_equal(one["given"], two["given"])
    assert not np.array_equal(one["rewards"]["learned"], one["rewards"]["none"])


def test_the_learned_tribute_comes_from_the_tribute_agent_only_in_ask_and_give():
    class Recorder(Agent):
        name = "recorder"
        calls: list[int] = []

        def act(self, observation, action_mask):
            legal = np.flatnonzero(action_mask)
            Recorder.calls.append(int(legal[-1]))
            return int(legal[-1])

    play = make_agent("heuristic", seed=0)

    def until_tribute_agent_acts(tribute: str) -> ta.TributeMix:
        """Play matches with the mix at seat 0 until the tribute agent has been called."""
        from dragons_egg.agents.runner import play_match
        from dragons_egg_env.config import RulesConfig

        Recorder.calls = []
        mix = ta.TributeMix(play, tribute, seed=1, learner=Recorder(seed=2))
        for seed in range(40):  # until seat 0 has been the Dragon (and so paid a tribute)
            others = [make_agent("heuristic", seed=k) for k in range(1, 4)]
            play_match([mix, *others], RulesConfig(num_players=4, num_rounds=3), seed=seed)
            if Recorder.calls:
                break
        assert Recorder.calls, "seat 0 was never the Dragon"
        return mix

    mix = until_tribute_agent_acts("learned")
    assert all(a >= ASK_BASE for a in Recorder.calls)  # only tribute actions (ask, give)
    assert len(mix.asked) + len(mix.given) <= len(Recorder.calls)
    # the split variants take only their half (asks or give-back) from the tribute agent
    for t, lo, hi in (("learned-ask", ASK_BASE, GIVE_BASE),
                      ("learned-give", GIVE_BASE, NUM_ACTIONS)):
        mix = until_tribute_agent_acts(t)
        assert all(lo <= a < hi for a in Recorder.calls)
        if t == "learned-ask":  # every ask recorded is the tribute agent's
            assert mix.asked == [a - ASK_BASE for a in Recorder.calls]
        else:  # the asks that came before its give-back were the heuristic's
            assert mix.asked and len(mix.given) == len(Recorder.calls)
    with pytest.raises(ValueError, match="unknown tribute policy"):
        ta.TributeMix(play, "clever")


def test_command_line_takes_play_and_tribute_apart(tmp_path, capsys):
    out = tmp_path / "t"
    assert ta.main(["--play", "heuristic", "--tribute", "ppo", "--deals", "3", "--seed", "2",
                    "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [p["play"] for p in summary["plays"]] == ["heuristic"] and summary["tribute"] == "ppo"
    assert summary["deals"] == 3 and summary["command"].endswith("--out " + str(out))
    report = (out / "report.md").read_text()
    assert "play policy at every seat: `heuristic`; learned tribute policy: `ppo`" in report
    assert (out / "tribute_heatmaps_play1.png").stat().st_size > 0
    for argv, needle in ((["--tribute", "nobody"], "--tribute: "),
                         (["--play", "ppo:path=/nope.npz"], "--play: "),
                         (["--play", f"ppo:path={_previous()}", "--players", "5"], "--play: ")):
        with pytest.raises(SystemExit) as exc:
            ta.main([*argv, "--deals", "1", "--out", str(tmp_path / "x")])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert needle in err and "Traceback" not in err


def _previous():
    from dragons_egg.agents.ppo import PREVIOUS

    return PREVIOUS


def test_a_subset_of_policies_plays_the_same_deals_and_a_factory_is_a_learner():
    """``policies`` plays only some tribute policies, with the rewards they get in the full
    run; the learned tribute may come from a function of a seed (picklable, so it also goes
    to worker processes)."""
    import functools

    full = ta.run("heuristic", deals=4, num_players=4, seed=8, tribute_spec="greedy")
    factory = functools.partial(make_agent, "greedy")
    some = ta.run("heuristic", deals=4, num_players=4, seed=8, tribute_spec=factory,
                  policies=("learned", "heuristic"), workers=2)
    assert list(some["rewards"]) == ["heuristic", "learned"]  # in TRIBUTE_POLICIES order
    for t in some["rewards"]:
        np.testing.assert_array_equal(some["rewards"][t], full["rewards"][t])
    np.testing.assert_array_equal(some["asked"], full["asked"])
    assert some["tribute"] == "greedy"
    text = tr.report(some, tr.summarize(some))
    assert "| `learned` |" in text and "| `none` |" not in text and "asks alone" not in text
    for bad, needle in ((("none", "learned"), "must include heuristic"),
                        (("heuristic", "smart"), "unknown tribute policy 'smart'")):
        with pytest.raises(ValueError, match=needle):
            ta.run("heuristic", deals=1, num_players=4, seed=0, policies=bad)


def test_command_line_policies(tmp_path, capsys):
    out = tmp_path / "p"
    assert ta.main(["--play", "heuristic", "--tribute", "greedy", "--deals", "2",
                    "--policies", "heuristic,learned", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tribute_policies"] == ["heuristic", "learned"]
    assert set(summary["plays"][0]["policies"]) == {"heuristic", "learned"}
    with pytest.raises(SystemExit) as exc:
        ta.main(["--policies", "learned", "--deals", "1", "--out", str(tmp_path / "x")])
    assert exc.value.code == 2 and "--policies: " in capsys.readouterr().err


def _means(summary: dict) -> list:
    return [(p["play"], {t: e["mean"] for t, e in p["policies"].items()},
             {t: (e["mean"], e["low"], e["high"]) for t, e in p["vs_heuristic"].items()},
             p["asked"], p["given"]) for p in summary["plays"]]


def test_by_default_both_plays_the_agents_own_and_the_heuristics(tmp_path):
    """Without --play the analysis plays the learned agent's own play, then the heuristic's,
    each as a run of that one play policy would (deal for deal), and the report's head puts
    the two differences side by side."""
    out = tmp_path / "both"
    assert ta.main(["--tribute", "greedy", "--players", "3", "--deals", "4", "--seed", "6",
                    "--policies", "heuristic,learned,learned-give", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert [p["play"] for p in summary["plays"]] == ["greedy", "heuristic"]
    for play in summary["plays"]:
        res = ta.run(play["play"], deals=4, num_players=3, seed=6, tribute_spec="greedy",
                     policies=("heuristic", "learned", "learned-give"))
        summ = tr.summarize(res)
        assert play["vs_heuristic"]["learned"] == vars(summ["vs_heuristic"]["learned"])
        assert play["asked"] == res["asked"].tolist()
    head = (out / "report.md").read_text().split("## ")[0]
    assert "| `greedy` |" in head and "| `heuristic` |" in head
    assert (out / "tribute_heatmaps_play2.png").stat().st_size > 0


_real_unit = ta._unit


def _stop_after(monkeypatch, calls: int) -> None:
    """The analysis stops (as on Ctrl-C) when it starts its unit of work number ``calls + 1``."""
    real = ta._unit
    seen = []

    def unit(task):
        if len(seen) == calls:
            raise KeyboardInterrupt
        seen.append(task)
        return real(task)

    monkeypatch.setattr(ta, "_unit", unit)


ARGS = ["--tribute", "greedy", "--players", "3", "--seed", "4", "--policies",
        "heuristic,learned", "--engine", "scalar"]


@pytest.mark.parametrize("engine", ["scalar", "batched"])
def test_a_stopped_analysis_keeps_its_finished_work_and_resumes_to_the_same_results(
        tmp_path, monkeypatch, capsys, engine):
    monkeypatch.setattr(ta, "BATCH_DEALS", ta.DEALS_PER_TASK)  # units of one size for both
    args = [*ARGS[:-1], engine]
    deals = ta.DEALS_PER_TASK + 5  # two units of work per play policy, four in all
    whole = tmp_path / "whole"
    assert ta.main([*args, "--deals", str(deals), "--out", str(whole)]) == 0
    out = tmp_path / "cut"
    _stop_after(monkeypatch, 3)
    with pytest.raises(SystemExit) as exc:
        ta.main([*args, "--deals", str(deals), "--out", str(out), "--no-progress"])
    assert exc.value.code == 130
    err = capsys.readouterr().err
    assert f"{deals + ta.DEALS_PER_TASK} of {2 * deals} deal sequences are saved" in err
    assert f"--resume {out}" in err
    assert len((out / ta.PARTS).read_text().splitlines()) == 3
    assert not (out / "summary.json").exists()
    monkeypatch.setattr(ta, "_unit", _real_unit)  # and run on
    # a stop in the middle of a write leaves a torn last line: dropped, and played again
    with (out / ta.PARTS).open("a") as f:
        f.write('{"play": 1, "lo": 25, "rewa')
    assert ta.main(["--resume", str(out), "--no-progress"]) == 0
    assert "dropping a last line cut off" in capsys.readouterr().err
    a = json.loads((whole / "summary.json").read_text())
    b = json.loads((out / "summary.json").read_text())
    assert _means(a) == _means(b) and a["engine"] == b["engine"] == engine
    assert b["command"].endswith(f"--out {out} --no-progress")  # the command that started it
    assert len((out / ta.PARTS).read_text().splitlines()) == 4


@pytest.mark.parametrize("argv, needle", [
    ([], "already holds a tribute analysis: finish it with --resume"),
    (["--resume", "{out}", "--seed", "5"], "cannot resume {out} with other settings: --seed 5 "
     "(saved: 4)"),
    (["--resume", "{out}", "--out", "{out}x"], "continues the analysis in that folder"),
    (["--resume", "{out}x"], "holds no tribute analysis to resume"),
])
def test_a_folder_holding_an_analysis_is_never_written_over(tmp_path, capsys, argv, needle):
    out = tmp_path / "a"
    assert ta.main([*ARGS, "--deals", "2", "--out", str(out)]) == 0

    def files():  # the analysis's files (the writer's lock records who holds the folder)
        return {p.name: p.read_bytes() for p in out.iterdir()
                if not p.name.startswith(".dragons-egg.")}

    before = files()
    argv = [a.format(out=out) for a in argv] or [*ARGS, "--deals", "3", "--out", str(out)]
    with pytest.raises(SystemExit) as exc:
        ta.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert needle.format(out=out) in err and "Traceback" not in err
    assert files() == before


def test_a_damaged_parts_file_is_refused_by_name(tmp_path, monkeypatch, capsys):
    out = tmp_path / "d"
    _stop_after(monkeypatch, 1)
    with pytest.raises(SystemExit):
        ta.main([*ARGS, "--deals", "30", "--out", str(out), "--no-progress"])
    monkeypatch.undo()
    capsys.readouterr()
    parts = out / ta.PARTS
    good = parts.read_text()
    old = json.dumps({k: v for k, v in json.loads(good).items() if k != "digest"}) + "\n"
    line = json.loads(good)
    line["asked"][0] += 1  # a count changed, its digest kept
    edited = json.dumps(line) + "\n"
    for bad, needle in (("{not json\n", "line 1, is not a valid unit of work (Invalid JSON"),
                        (good + good, "line 2, is not a unit of work of this analysis"),
                        (good.replace('"lo": 0', '"lo": 3'), "a unit of deals 3..25 holds"),
                        (edited, "line 1, is damaged or was edited after it was written"),
                        (good.replace('"dragons": [', '"dragons": [9, '),
                         "line 1, is not a valid unit of work (dragons.0: Input should be"),
                        (good + old, "line 2, has no digest, while line 1 has one")):
        parts.write_text(bad)
        with pytest.raises(SystemExit) as exc:
            ta.main(["--resume", str(out), "--no-progress"])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert str(parts) in err and needle in err and "Traceback" not in err
        assert parts.read_text() == bad  # refused, not repaired
    (out / ta.SETTINGS).write_text('{"format": "something else"}')
    with pytest.raises(SystemExit):
        ta.main(["--resume", str(out)])
    assert "is not the settings of a tribute analysis" in capsys.readouterr().err


@pytest.mark.parametrize("play, tribute, n", [("heuristic", "greedy", 3), ("ppo", "ppo", 4),
                                               ("heuristic", "ppo", 6)])
def test_the_batched_engine_plays_the_scalar_engines_matches(play, tribute, n):
    """Deal for deal, tribute policy for tribute policy and card for card: the batched engine
    (round 1 once, round 2 from copies) and one match at a time give the same Dragon's rewards
    ("random" draws from other generators: the same kind of values, not the same ones)."""
    kw = {"deals": 20, "num_players": n, "seed": 11, "tribute_spec": tribute}
    one = ta.run(play, engine="scalar", **kw)
    many = ta.run(play, engine="batched", **kw)
    for t in ta.TRIBUTE_POLICIES:
        if t != "random":
            np.testing.assert_array_equal(one["rewards"][t], many["rewards"][t], err_msg=t)
    assert set(many["rewards"]["random"]) <= set(one["rewards"]["random"]) | {
        (n - 1 - 2 * p) / (n - 1) for p in range(n)} and len(many["rewards"]["random"]) == 20
    assert one["dragons"] == many["dragons"]
    np.testing.assert_array_equal(one["asked"], many["asked"])
    np.testing.assert_array_equal(one["given"], many["given"])
    assert many["asked"].sum() > 0 and not np.array_equal(many["rewards"]["learned"],
                                                          many["rewards"]["none"])


def test_auto_is_batched_only_where_every_policy_has_a_batched_form():
    from dragons_egg_env.config import RulesConfig

    config = RulesConfig(num_players=4, num_rounds=2)
    assert ta.resolve_engine("auto", ["ppo", "heuristic", "greedy"], config) == "batched"
    for spec in ("ppo:deterministic=false", "ismcts:iterations=5", make_agent):
        assert ta.resolve_engine("auto", ["heuristic", spec], config) == "scalar"
        with pytest.raises(ValueError, match="the batched engine cannot play"):
            ta.resolve_engine("batched", ["heuristic", spec], config)
    assert ta.resolve_engine("scalar", ["ppo"], config) == "scalar"
    with pytest.raises(ValueError, match="unknown engine 'fast'"):
        ta.resolve_engine("fast", ["ppo"], config)
