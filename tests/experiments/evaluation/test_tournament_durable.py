"""Tournaments survive (issue 22): results are saved as matches finish, Ctrl-C keeps them with
a partial report, ``--resume`` plays only the missing matches and gives the summary of an
uninterrupted run, a folder holding a tournament is never silently replaced, an agent that
fails (raises, returns a non-action or an illegal action, hangs) is recorded against its spec
with its match's seed and replay, and a dead worker is reported by its real cause."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import interrupter_source
from support import json_lines as lines
from support import tournament_cli as cli

from dragons_egg import agents
from dragons_egg.experiments.evaluation import tournament as T
from dragons_egg.experiments.evaluation.tournament import (
    OutputError,
    TournamentConfig,
    main,
    run_tournament,
)
from dragons_egg.experiments.evaluation.tournament.report import TIMING_LINE
from dragons_egg.experiments.evaluation.tournament.runner import TIMING_KEYS
from dragons_egg_env.replay import check_replay

PROG = "python -m dragons_egg.experiments.evaluation.tournament"

#: Agents of one's own that fail on purpose, written as a module in a temporary folder and
#: named by ``MODULE:CLASS`` specs (as a user's would be). A ``_Faulty`` agent plays as the
#: heuristic and fails at its second move of every match in which it sits at seat 1.
BOTS = '''
import os
import signal
import time

import numpy as np

from dragons_egg.agents.heuristic import HeuristicAgent


class _Faulty(HeuristicAgent):
    def start_match(self, seat, config, max_players=None):
        super().start_match(seat, config, max_players)
        self.moves = 0

    def act(self, observation, mask):
        self.moves += 1
        if self.seat == 1 and self.moves == 2:
            return self.fail(mask)
        return super().act(observation, mask)


class Raises(_Faulty):
    def fail(self, mask):
        raise ValueError("no idea what to play")


class ReturnsNone(_Faulty):
    def fail(self, mask):
        return None


class ReturnsFloat(_Faulty):
    def fail(self, mask):
        return 2.5


class ReturnsString(_Faulty):
    def fail(self, mask):
        return "pass"


class Illegal(_Faulty):
    def fail(self, mask):
        return int(np.flatnonzero(mask == 0)[0])


class Hangs(_Faulty):
    def fail(self, mask):
        while True:  # pure Python: only the move timeout ends it
            pass


class Sleeps(_Faulty):
    def fail(self, mask):
        try:
            time.sleep(60)
        except Exception:  # swallowing errors does not swallow the timeout
            pass
        return super().act(None, mask)


class Dies(_Faulty):
    def fail(self, mask):
        os.kill(os.getpid(), signal.SIGKILL)


class Exits(_Faulty):
    def fail(self, mask):
        os._exit(3)


class BlocksAlarm(_Faulty):
    def fail(self, mask):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # the interrupt never comes
        time.sleep(60)


class Swallows(_Faulty):
    def fail(self, mask):
        while True:
            try:
                time.sleep(60)
            except BaseException:  # even the move timeout's interrupt
                pass


#: The process that imported this module first (a forked worker inherits the value).
PARENT = os.getpid()


class DiesWhenMade(HeuristicAgent):
    """Ends a worker process as it is made for a match: outside any call to an agent."""

    def __init__(self, seed=None):
        if os.getpid() != PARENT:
            os._exit(3)
        super().__init__(seed)


''' + interrupter_source("DURABLE_STOP_AT")


@pytest.fixture
def bots(tmp_path, monkeypatch):
    """``durable_bots`` importable from the current directory, forgotten after the test."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "durable_bots.py").write_text(BOTS)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(agents, "_LOADED", {})
    monkeypatch.delenv("DURABLE_STOP_AT", raising=False)
    yield folder
    sys.modules.pop("durable_bots", None)




def strip(results):
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in results]


def untimed(summary):
    """A summary (or its file) without its time per move (the one part a rerun does not
    repeat)."""
    if isinstance(summary, Path):
        summary = json.loads(summary.read_text())
    summary = json.loads(json.dumps(summary))
    assert set(summary["timing"]["ms_per_move"]) == set(summary["labels"])
    return {k: v for k, v in summary.items() if k != "timing"}


def untimed_report(text):
    return "\n".join(x for x in text.splitlines() if not x.startswith(TIMING_LINE))


SMALL = ["--players", "4", "--matches", "16", "--rounds", "1", "--seed", "7", "--bootstrap",
         "100", "--no-progress"]
FOUR = ["durable_bots:Interrupter", "heuristic", "random", "greedy"]


# ---------------------------------------------------------------------------------------
# Ctrl-C, partial reports and --resume.

def test_ctrl_c_keeps_the_finished_matches_and_resume_gives_the_uninterrupted_summary(
        bots, capsys, monkeypatch):
    full, cut = bots / "full", bots / "cut"
    monkeypatch.setenv("DURABLE_STOP_AT", "6")  # Ctrl-C in the 6th match: 5 finished
    code, _, err = cli(FOUR + SMALL + ["--workers", "1", "--out", str(cut)], capsys)
    assert code == 130 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"{PROG}: interrupted; 5 of 16 matches are saved in {cut} with a partial report; "
        f"resume with: {PROG} --resume {cut} --allow-code durable_bots:Interrupter")
    assert len(lines(cut / "results.jsonl")) == 5
    partial = json.loads((cut / "summary.json").read_text())
    assert partial["partial"] is True and (partial["matches"], partial["planned"]) == (5, 16)
    assert "**partial: 5 of 16 matches**" in (cut / "report.md").read_text()

    monkeypatch.delenv("DURABLE_STOP_AT")
    assert cli(FOUR + SMALL + ["--workers", "1", "--out", str(full)], capsys)[0] == 0
    played = []
    real = T.play_task
    monkeypatch.setattr(T.runner, "play_task",
                        lambda *a, **k: played.append(a[1:3]) or real(*a, **k))
    # the folder names a MODULE:CLASS agent: the resume line's consent is needed
    code, _, err = cli(["--resume", str(cut), "--workers", "1", "--no-progress"], capsys)
    assert code == 2 and "--allow-code 'durable_bots:Interrupter'" in err and not played
    code, out, err = cli(["--resume", str(cut), "--workers", "1", "--no-progress",
                          "--allow-code", "durable_bots:Interrupter"], capsys)
    assert code == 0, err
    assert len(played) == 11  # only the missing matches
    assert untimed(cut / "summary.json") == untimed(full / "summary.json")
    assert strip(lines(cut / "results.jsonl")) == strip(lines(full / "results.jsonl"))
    report = (cut / "report.md").read_text()
    assert "partial" not in report and untimed_report(report) == \
        untimed_report((full / "report.md").read_text())
    assert TIMING_LINE in report
    # each match says which sitting played it; the times are also given per sitting
    assert sorted(r["sitting"] for r in lines(cut / "results.jsonl")) == [1] * 5 + [2] * 11
    sittings = json.loads((cut / "summary.json").read_text())["timing"]["sittings"]
    assert [(s["sitting"], s["matches"]) for s in sittings] == [(1, 5), (2, 11)]
    assert all(set(s["ms_per_move"]) == set(FOUR) for s in sittings)
    assert f"{TIMING_LINE} (decisions with a choice) over the 2 sittings" in report
    assert f"{TIMING_LINE}, sitting 1 (5 matches): " in report
    assert f"{TIMING_LINE}, sitting 2 (11 matches): " in report
    # an uninterrupted run is one sitting: one line, no per-sitting times
    assert {r["sitting"] for r in lines(full / "results.jsonl")} == {1}
    assert "sittings" not in json.loads((full / "summary.json").read_text())["timing"]
    assert "sitting" not in (full / "report.md").read_text()


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell does for `cmd &` in a script


@pytest.mark.parametrize("sig,script,start", [
    (signal.SIGINT, False, None), (signal.SIGTERM, False, None), (signal.SIGTERM, True, None),
    (signal.SIGHUP, False, None), (signal.SIGINT, False, _ignore_sigint)],
    ids=["SIGINT", "SIGTERM", "SIGTERM-dragons-egg", "SIGHUP", "SIGINT-inherited-ignored"])
def test_sigint_to_a_parallel_run_then_resume(sig, script, start, tmp_path):
    """A real Ctrl-C (SIGINT), a scheduler's SIGTERM or a closed terminal's SIGHUP, to the
    command with 2 workers (run as a module, or as ``dragons-egg tournament``), then --resume
    with 1 worker: the summary of an uninterrupted run, byte for byte. Also for a command
    started with SIGINT ignored, as a script's background job is (issue 47: SIGHUP killed a
    run at once, and a background run ignored Ctrl-C for good)."""
    out, full = tmp_path / "t", tmp_path / "full"
    args = ["heuristic", "random", "--players", "4", "--matches", "240", "--rounds", "1",
            "--seed", "11", "--bootstrap", "100", "--no-progress"]
    command = [str(Path(sys.executable).with_name("dragons-egg")), "tournament"] if script \
        else [sys.executable, "-m", "dragons_egg.experiments.evaluation.tournament"]
    prog = "dragons-egg tournament" if script else PROG
    proc = subprocess.Popen([*command, *args, "--workers", "2", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=start)
    results = out / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if results.exists() and len(results.read_text().splitlines()) >= 10:
            break
        time.sleep(0.02)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    done = len(lines(results))
    assert 10 <= done < 240
    assert err.strip().splitlines()[-1] == (
        f"{prog}: interrupted; {done} of 240 matches are saved in {out} with a partial "
        f"report; resume with: {prog} --resume {out}")
    assert json.loads((out / "summary.json").read_text())["partial"] is True
    assert f"partial: {done} of 240 matches" in (out / "report.md").read_text()

    assert main(["--resume", str(out), "--workers", "1", "--no-progress"]) == 0
    assert main(args + ["--workers", "1", "--out", str(full)]) == 0
    assert untimed(out / "summary.json") == untimed(full / "summary.json")
    assert strip(lines(results)) == strip(lines(full / "results.jsonl"))


def small_run(out):
    """A finished 8-match, 2-player tournament in ``out``; its config."""
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=8,
                          num_rounds=1, seed=4, bootstrap=100, out_dir=str(out))
    run_tournament(tc, progress=False)
    return tc


def write_lines(path, results):
    path.write_text("".join(json.dumps(r) + "\n" for r in results))


def test_resume_of_matches_recorded_before_sittings(tmp_path):
    """Matches written before results recorded their sitting count as one sitting: a resume
    is the second, and the report gives the old matches' times apart."""
    out = tmp_path / "t"
    tc = small_run(out)
    # (nor their digest, recorded later still)
    old = [{k: v for k, v in r.items() if k not in ("sitting", "digest")}
           for r in lines(out / "results.jsonl")]
    write_lines(out / "results.jsonl", old[:3])
    summary = run_tournament(tc, progress=False, resume=True)
    assert [r.get("sitting") for r in lines(out / "results.jsonl")] == [None] * 3 + [2] * 5
    assert [(s["sitting"], s["matches"]) for s in summary["timing"]["sittings"]] == \
        [(None, 3), (2, 5)]
    report = (out / "report.md").read_text()
    assert f"{TIMING_LINE}, before sittings were recorded (3 matches): " in report
    assert f"{TIMING_LINE}, sitting 2 (5 matches): " in report


@pytest.mark.parametrize("bad", ["2", 0, True, 1.5])
def test_resume_refuses_a_bad_sitting_by_line(tmp_path, bad):
    out = tmp_path / "t"
    tc = small_run(out)
    rs = lines(out / "results.jsonl")[:3]
    rs[1]["sitting"] = bad
    write_lines(out / "results.jsonl", rs)
    with pytest.raises(OutputError, match=r"results.jsonl line 2 is not a valid match record "
                                          r"\(sitting: "):
        run_tournament(tc, progress=False, resume=True)


def test_resume_drops_an_unfinished_last_line(tmp_path):
    """A run killed while it wrote a line: resume drops the half line and plays that match."""
    full, cut = tmp_path / "full", tmp_path / "cut"
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=8,
                          num_rounds=1, seed=4, bootstrap=100, out_dir=str(full))
    summary = run_tournament(tc, progress=False)
    cut.mkdir()
    (cut / "config.json").write_text((full / "config.json").read_text())
    text = (full / "results.jsonl").read_text().splitlines(keepends=True)
    (cut / "results.jsonl").write_text("".join(text[:3]) + text[3][:40])
    tc.out_dir = str(cut)
    again = run_tournament(tc, progress=False, resume=True)
    assert untimed(T.jsonable(again)) == untimed(T.jsonable(summary))
    assert strip(lines(cut / "results.jsonl")) == strip(lines(full / "results.jsonl"))


def test_a_resume_with_other_settings_is_refused_naming_them(tmp_path, capsys):
    out = tmp_path / "t"
    base = ["heuristic", "random", "--players", "2", "--matches", "4", "--rounds", "1",
            "--bootstrap", "100", "--workers", "1", "--no-progress"]
    assert cli(base + ["--out", str(out)], capsys)[0] == 0
    code, _, err = cli(["--resume", str(out), "--matches", "8", "--seed", "3"], capsys)
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert "--matches 8 (saved: 4)" in line and "--seed 3 (saved: 0)" in line
    code, _, err = cli(["greedy", "random", "--resume", str(out)], capsys)
    assert code == 2 and "agents greedy random (saved:" in err
    # the same settings, or other workers, resume (nothing is left to play)
    assert cli(base + ["--resume", str(out), "--workers", "2"], capsys)[0] == 0
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=4,
                          num_rounds=2, bootstrap=100, out_dir=str(out))
    with pytest.raises(OutputError, match=r"num_rounds 2 \(saved: 1\)"):
        run_tournament(tc, progress=False, resume=True)
    code, _, err = cli(["--resume", str(tmp_path / "none")], capsys)
    assert code == 2 and "nothing to resume" in err


def test_a_folder_holding_a_tournament_is_refused_unless_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "t"
    argv = ["heuristic", "random", "--players", "2", "--matches", "4", "--rounds", "1",
            "--bootstrap", "100", "--workers", "1", "--no-progress", "--out", str(out)]
    assert cli(argv, capsys)[0] == 0
    before = (out / "results.jsonl").read_text()
    code, _, err = cli(argv + ["--seed", "5"], capsys)
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert "already holds a tournament" in line and f"--resume {out}" in line
    assert "--overwrite" in line
    assert (out / "results.jsonl").read_text() == before  # untouched
    (out / "notes.txt").write_text("mine")
    assert cli(argv + ["--seed", "5", "--overwrite"], capsys)[0] == 0
    assert (out / "results.jsonl").read_text() != before
    assert json.loads((out / "config.json").read_text())["seed"] == 5
    assert (out / "notes.txt").read_text() == "mine"  # only the tournament's files go
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=4,
                          num_rounds=1, bootstrap=100, out_dir=str(out))
    with pytest.raises(OutputError, match="already holds a tournament.*resume=True.*"
                                          "overwrite=True"):
        run_tournament(tc, progress=False)
    # another program's config.json is never replaced, even with --overwrite
    run = tmp_path / "selfplay-run"
    run.mkdir()
    (run / "config.json").write_text('{"lr": 0.001}')
    code, _, err = cli(argv[:-1] + [str(run), "--overwrite"], capsys)
    assert code == 2 and "holds a config.json that is not a tournament's" in err
    assert (run / "config.json").read_text() == '{"lr": 0.001}'


# ---------------------------------------------------------------------------------------
# Agents that fail.

@pytest.mark.parametrize("cls,kind,needle", [
    ("Raises", "raised", "act raised ValueError: no idea what to play"),
    ("ReturnsNone", "not an action", "act returned None (NoneType), not an action index"),
    ("ReturnsFloat", "not an action", "act returned 2.5 (float), not an action index"),
    ("ReturnsString", "not an action", "act returned 'pass' (str), not an action index"),
    ("Illegal", "illegal move", "act returned the illegal action"),
])
def test_a_failing_agent_forfeits_against_its_spec_with_seed_and_replay(cls, kind, needle,
                                                                        bots, capsys):
    spec = f"durable_bots:{cls}"
    out = bots / "t"
    code, _, err = cli([spec, "heuristic", "--players", "2", "--matches", "4", "--rounds", "1",
                        "--seed", "2", "--bootstrap", "100", "--workers", "1", "--no-progress",
                        "--out", str(out)], capsys)
    assert code == 0, err
    assert "Traceback" not in err and "2 matches were forfeited" in err
    results = lines(out / "results.jsonl")
    assert len(results) == 4
    forfeited = [r for r in results if "forfeit" in r]
    assert [r["rotation"] for r in forfeited] == [1, 1]  # the seat-1 matches
    for r in forfeited:
        f = r["forfeit"]
        assert (f["label"], f["seat"], f["kind"], f["stage"]) == (spec, 1, kind, "act")
        assert needle in f["error"] and "player_1" not in f["error"]
        assert f["match_seed"] == T.derive(2, r["sequence"], r["rotation"])
        replay = json.loads((out / f["replay"]).read_text())
        assert replay["seed"] == f["match_seed"] and replay["partial"] is True
        assert len(replay["actions"]) == f["step"]
        check_replay(replay)  # a valid replay of the match up to the failure
        # the forfeit rule: the offender finishes last in the round in progress, and the
        # match ends there, with exact, zero-sum scores
        assert r["rounds"][-1]["order"][-1] == 1 and r["rounds"][-1]["forfeit"] is True
        assert r["scores"] == [1.0, -1.0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["agents"][spec]["forfeits"] == 2
    assert [(f["label"], f["kind"]) for f in summary["forfeits"]] == [(spec, kind)] * 2
    report = (out / "report.md").read_text()
    assert "## Forfeits" in report and f"| `{spec}` | 0, 1 | 1 | {kind} |" in report


def test_on_agent_error_stop_keeps_the_finished_matches_and_says_what_failed(bots, capsys):
    spec = "durable_bots:Raises"
    out = bots / "t"
    argv = [spec, "heuristic", "--players", "2", "--matches", "4", "--rounds", "1", "--seed",
            "2", "--bootstrap", "100", "--workers", "1", "--no-progress"]
    code, _, err = cli(argv + ["--out", str(out), "--on-agent-error", "stop"], capsys)
    assert code == 1 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    seed = T.derive(2, 0, 1)
    assert line == (
        f"{PROG}: error: agent '{spec}' failed (raised) in the match of deal sequence 0, "
        f"rotation 1 (seat 1, round 1, match seed {seed}): act raised ValueError: no idea "
        f"what to play; replay: {out / 'replays' / 'seq0-rot1.json'}; 1 of 4 matches are "
        f"saved in {out} with a partial report; resume with: {PROG} --resume {out} "
        f"--allow-code {spec} (--on-agent-error forfeit plays past it)")
    assert check_replay(out / "replays" / "seq0-rot1.json")
    assert [(r["sequence"], r["rotation"]) for r in lines(out / "results.jsonl")] == [(0, 0)]
    assert json.loads((out / "summary.json").read_text())["partial"] is True

    # resumed with forfeits, it is the run that forfeited from the start
    assert cli(["--resume", str(out), "--on-agent-error", "forfeit", "--workers", "1",
                "--no-progress", "--allow-code", spec], capsys)[0] == 0
    assert cli(argv + ["--out", str(bots / "full")], capsys)[0] == 0
    assert untimed(out / "summary.json") == untimed(bots / "full" / "summary.json")

    tc = TournamentConfig(agents=[spec, "heuristic"], num_players=2, matches=4, num_rounds=1,
                          seed=2, on_agent_error="stop")
    with pytest.raises(T.AgentFailed) as exc:  # the library: the finished matches come along
        T.run_matches(tc, progress=False)
    assert [r["rotation"] for r in exc.value.results] == [0]
    assert exc.value.record["forfeit"]["label"] == spec


def _timeout_forfeits(cls: str, workers: str, bots: Path, capsys) -> list[dict]:
    """The forfeits of a tournament of the bot ``cls`` against the heuristic (2 players, 4
    matches) at ``--move-timeout 0.3``: the bot's two matches in rotation 1, each a timeout
    forfeit. (A hang would be the bug itself: CI's time limit ends it.)"""
    spec = f"durable_bots:{cls}"
    out = bots / "t"
    code, _, err = cli([spec, "heuristic", "--players", "2", "--matches", "4", "--rounds", "1",
                        "--bootstrap", "100", "--workers", workers, "--no-progress",
                        "--move-timeout", "0.3", "--out", str(out)], capsys)
    assert code == 0, err
    forfeits: list[dict] = json.loads((out / "summary.json").read_text())["forfeits"]
    assert [(f["label"], f["kind"], f["rotation"]) for f in forfeits] == \
        [(spec, "timeout", 1)] * 2
    return forfeits


@pytest.mark.parametrize("cls,workers", [("Hangs", "1"), ("Sleeps", "2")])
def test_move_timeout_ends_a_hung_agents_match_as_a_forfeit(cls, workers, bots, capsys):
    out = bots / "t"
    forfeits = _timeout_forfeits(cls, workers, bots, capsys)
    assert "move timeout of 0.3 s" in forfeits[0]["error"]
    assert json.loads((out / "config.json").read_text())["move_timeout"] == 0.3


@pytest.mark.parametrize("cls,cause", [("Dies", "was killed by signal 9 (SIGKILL)"),
                                       ("Exits", "exited with status 3")])
def test_an_agent_that_ends_its_process_forfeits_and_the_report_is_written(cls, cause, bots,
                                                                           capsys):
    """Issue 47: before, a worker that an agent ended stopped the whole run (exit status 1,
    "worker process ... exited with status 3 while playing", no report); with --workers 1
    and a move timeout it ended the tournament's own process."""
    spec = f"durable_bots:{cls}"
    outs = []
    for workers, extra in (("2", []), ("1", ["--move-timeout", "30"])):
        out = bots / f"t{workers}"
        code, _, err = cli([spec, "heuristic", "--players", "2", "--matches", "4", "--rounds",
                            "1", "--seed", "2", "--bootstrap", "100", "--workers", workers,
                            "--no-progress", "--out", str(out), *extra], capsys)
        assert code == 0 and "Traceback" not in err and "2 matches were forfeited" in err
        outs.append(out)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["partial"] is False and summary["matches"] == 4
        forfeits = summary["forfeits"]
        assert [(f["label"], f["kind"], f["rotation"]) for f in forfeits] == \
            [(spec, "exited", 1)] * 2
        assert forfeits[0]["error"] == f"act ended its worker process, which {cause}"
        assert "| exited |" in (out / "report.md").read_text()
        for r in lines(out / "results.jsonl"):
            if "forfeit" in r:  # scored as the forfeit rule says, with a valid replay
                f = r["forfeit"]
                assert (f["seat"], f["stage"]) == (1, "act") and r["scores"] == [1.0, -1.0]
                replay = json.loads((out / f["replay"]).read_text())
                assert len(replay["actions"]) == f["step"] and check_replay(replay)
    # the match an agent ended is scored the same with any number of workers, and as if the
    # agent had raised at that move
    one, two = (strip(lines(o / "results.jsonl")) for o in outs)
    assert one == two
    assert cli(["durable_bots:Raises", "heuristic", "--players", "2", "--matches", "4",
                "--rounds", "1", "--seed", "2", "--bootstrap", "100", "--workers", "1",
                "--no-progress", "--out", str(bots / "raises")], capsys)[0] == 0
    raised = strip(lines(bots / "raises" / "results.jsonl"))
    assert [r["scores"] for r in raised] == [r["scores"] for r in one]
    assert [r["rounds"] for r in raised] == [r["rounds"] for r in one]
    assert [r.get("forfeit", {}).get("step") for r in raised] == \
        [r.get("forfeit", {}).get("step") for r in one]


def test_a_worker_that_dies_outside_an_agents_call_is_reported_by_its_real_cause(bots,
                                                                                 capsys):
    out = bots / "t"
    code, _, err = cli(["durable_bots:DiesWhenMade", "heuristic", "--players", "2",
                        "--matches", "4", "--rounds", "1", "--bootstrap", "100", "--workers",
                        "2", "--no-progress", "--out", str(out)], capsys)
    assert code == 1 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"{PROG}: error: tournament worker process ")
    assert ("(fork start method) exited with status 3 while playing, outside any agent's "
            "call") in line
    assert "spawn" not in line and "importable" not in line
    assert f"resume with: {PROG} --resume {out}" in line
    assert json.loads((out / "summary.json").read_text())["partial"] is True


@pytest.mark.parametrize("cls", ["BlocksAlarm", "Swallows"])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_timeout_the_interrupt_cannot_enforce_is_enforced_by_killing_the_worker(
        cls, workers, bots, capsys):
    """Issue 47: before, an agent that blocks SIGALRM or swallows the interrupt hung the
    tournament for good (with --workers 1 in its own process)."""
    forfeits = _timeout_forfeits(cls, workers, bots, capsys)
    error = forfeits[0]["error"]
    assert error.startswith("act ran past the move timeout of 0.3 s and did not give way to "
                            "the interrupt; its worker process was killed after ")
    assert float(error.rsplit(" ", 2)[-2]) >= 0.3 + 1.0  # pool.kill_after: one more second


def test_a_policy_returning_a_float_is_not_truncated_to_an_action():
    from dragons_egg.experiments.evaluation.tournament import Entrant

    tc = TournamentConfig(agents=[Entrant("floaty", policy=_float_policy), "random"],
                          num_players=2, matches=2, num_rounds=1)
    results = T.run_matches(tc, progress=False)
    assert [r["forfeit"]["kind"] for r in results] == ["not an action"] * 2
    assert "returned 0.0 (float)" in results[0]["forfeit"]["error"]
    assert "'floaty'" in results[0]["forfeit"]["error"]


def _float_policy(observation, mask):
    return 0.0


def test_move_timeout_works_from_any_thread_as_matches_play_in_a_worker():
    """Before, a move timeout with workers=1 needed the calling thread to be the main one."""
    import threading

    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=2,
                          num_rounds=1, move_timeout=1.0)
    results, errors = [], []
    thread = threading.Thread(target=lambda: _catch(
        lambda: results.append(T.run_matches(tc, progress=False)), errors))
    thread.start()
    thread.join()
    assert not errors and strip(results[0]) == strip(T.run_matches(
        TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=2,
                         num_rounds=1), progress=False))
    with pytest.raises(ValueError, match="positive number of seconds"):
        TournamentConfig(agents=["random"], move_timeout=float("nan")).validate()


def _catch(fn, errors):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test reports whatever it was
        errors.append(exc)


def test_results_are_on_disk_while_the_run_plays(tmp_path, monkeypatch):
    """Every result is written and flushed as it comes back, not at the end."""
    out = tmp_path / "t"
    seen = []
    real = T.play_task

    def spy(tc, seq, rot, entrants=None):
        path = out / "results.jsonl"
        seen.append(len(path.read_text().splitlines()) if path.exists() else 0)
        return real(tc, seq, rot, entrants)

    monkeypatch.setattr(T.runner, "play_task", spy)
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=6,
                          num_rounds=1, bootstrap=100, out_dir=str(out))
    run_tournament(tc, progress=False)
    assert seen == [0, 1, 2, 3, 4, 5]


def test_matches_are_still_the_same_for_any_worker_count_with_agent_errors(bots):
    tc = TournamentConfig(agents=["durable_bots:Illegal", "heuristic"], num_players=2,
                          matches=8, num_rounds=1, seed=9)
    one = T.run_matches(tc, progress=False)
    tc.workers = 2
    two = T.run_matches(tc, progress=False)
    assert strip(one) == strip(two) and sum("forfeit" in r for r in one) == 4


@pytest.fixture(autouse=True)
def _no_stray_alarm():
    yield
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)


def test_a_schedule_too_large_for_memory_is_refused_at_once(capsys):
    """Issue 47: ``--matches 1000000000000`` built the whole schedule in memory (24 GB, then
    the kernel killed it, SIGTERM ignored meanwhile); now one line, exit status 2, before
    anything is built, from the command line and from Python."""
    from dragons_egg.experiments.evaluation.tournament.config import MAX_MATCHES

    code, _, err = cli(["heuristic", "random", "--matches", "1000000000000", "--no-progress"],
                       capsys)
    assert code == 2 and "Traceback" not in err and "--matches" in err
    assert f"{MAX_MATCHES}" in err.replace(",", "").replace("_", "")
    with pytest.raises(ValueError, match=r"matches must be in 1\.\.1,000,000, got "
                                         r"1,000,000,000,000"):
        TournamentConfig(agents=["heuristic", "random"], matches=10**12)


@pytest.mark.parametrize("name,needle", [
    ("x" * 300, "is 300 bytes long, longer than the 255 this file system allows"),
    ("/proc/dragons-egg-test", "cannot write to tournament folder '/proc/dragons-egg-test'"),
])
def test_an_output_folder_that_cannot_be_made_is_one_line(tmp_path, capsys, name, needle):
    """Issue 47: a 300-character --out and a folder in /proc gave tracebacks."""
    out = name if name.startswith("/") else str(tmp_path / name)
    code, _, err = cli(["random", "greedy", "--players", "2", "--matches", "2", "--rounds",
                        "1", "--no-progress", "--out", out], capsys)
    assert code == 2 and "Traceback" not in err and needle in err
