"""Every command checks the extras it needs before it does any work: without one it prints one
line naming the extra (and the pip command) and exits with status 2, having written nothing.
Commands that need nothing beyond the core keep working on a core-only install. Each command
runs in a fresh interpreter in which the extra's modules cannot be imported
(``tests/extras_blocker.py``)."""

import re
from pathlib import Path

import pytest
from extras_blocker import OPTIONAL, run_blocked

from dragons_egg_env.extras import EXTRAS, INCLUDES, OWN

ROOT = Path(__file__).resolve().parents[3]
M = "dragons_egg.experiments."
#: The distribution of the import names that differ from it.
DISTRIBUTION = {"PIL": "pillow", "pyspiel": "open-spiel", "material": "mkdocs-material",
                "xdist": "pytest-xdist", "importlinter": "import-linter"}

#: (command, blocked modules, the extra it must name, what the line starts with, outputs that
#: must not appear). Commands whose settings tyro parses are checked before parsing.
CASES = [
    (["dragons-egg", "tournament", "heuristic", "random", "--matches", "4", "--workers", "1",
      "--out", "out"], ["openskill"], "experiments", "dragons-egg tournament", ["out"]),
    (["-m", M + "evaluation.tournament", "heuristic", "random", "--matches", "4", "--workers", "1",
      "--out", "out"], ["matplotlib"], "experiments", f"python -m {M}evaluation.tournament", ["out"]),
    (["dragons-egg", "gif", "replay.json", "out.gif", "--frames-dir", "frames"], ["PIL"],
     "render", "dragons-egg gif", ["out.gif", "frames"]),
    (["-m", M + "cli.gif", "replay.json", "out.gif"], ["PIL"], "render", f"python -m {M}cli.gif",
     ["out.gif"]),
    (["dragons-egg", "bench", "--vector", "--seconds", "0.1", "--json", "b.json"], ["numba"],
     "vector", "dragons-egg bench --vector", ["b.json"]),
    (["dragons-egg-bench", "--vector", "--seconds", "0.1", "--json", "b.json"], ["numba"],
     "vector", "dragons-egg-bench --vector", ["b.json"]),
    (["-m", M + "bench", "--vector", "--seconds", "0.1", "--json", "b.json"], ["numba"],
     "vector", f"python -m {M}bench --vector", ["b.json"]),
    (["-m", M + "training.selfplay", "--total-samples", "1000", "--out-dir", "out"], ["tyro"], "train",
     f"python -m {M}training.selfplay", ["out"]),
    (["-m", M + "training.selfplay", "--help"], ["torch"], "train", f"python -m {M}training.selfplay", []),
    (["dragons-egg", "train", "--total-samples", "1000", "--out-dir", "out"], ["tyro"],
     "train", "dragons-egg train", ["out"]),
    (["dragons-egg", "train-sb3", "--total-timesteps", "10", "--out-dir", "out"],
     ["sb3_contrib"], "train", "dragons-egg train-sb3", ["out"]),
    (["dragons-egg", "evaluate-run", "out", "--opponent", "heuristic"], ["openskill"],
     "experiments", "dragons-egg evaluate-run", ["out"]),
    (["-m", M + "training.train_ppo", "--total-timesteps", "10", "--out-dir", "out"], ["sb3_contrib"],
     "train", f"python -m {M}training.train_ppo", ["out"]),
    (["-m", M + "training.compare", "--seconds", "1", "--out", "out"], ["torch"], "train",
     f"python -m {M}training.compare", ["out"]),
    (["-m", M + "training.evaluate_run", "out", "--opponent", "heuristic"], ["openskill"],
     "experiments", f"python -m {M}training.evaluate_run", ["out"]),
    (["-m", M + "training.ship", "latest.pt", "--dest", "out/policy.npz"], ["torch"], "train",
     f"python -m {M}training.ship", ["out"]),
    (["-m", M + "training.bench", "--seconds", "1", "--json", "t.json"], ["stable_baselines3"],
     "train", f"python -m {M}training.bench", ["t.json"]),
    (["dragons-egg", "search-targets", "--batches", "1", "--out", "out"], ["tqdm"],
     "experiments", "dragons-egg search-targets", ["out"]),
    (["-m", M + "training.train_rllib", "--iterations", "1", "--out", "out"], ["ray"], "rllib",
     f"python -m {M}training.train_rllib", ["out"]),
    (["-m", M + "evaluation.tribute", "--play", "heuristic", "--tribute", "heuristic",
      "--deals", "2", "--out", "out"], ["matplotlib"], "experiments",
     f"python -m {M}evaluation.tribute", ["out"]),
    (["-m", M + "research.tribute.fit", "--policy", "p.npz", "--out-dir", "out"], ["tyro"], "train",
     f"python -m {M}research.tribute.fit", ["out"]),
    (["-m", M + "research.tribute.fit", "--policy", "p.npz", "--out-dir", "out"], ["numba"], "train",
     f"python -m {M}research.tribute.fit", ["out"]),
    (["-m", M + "research.tribute.headroom", "--data", "d.npz", "--out", "out"], ["matplotlib"],
     "experiments", f"python -m {M}research.tribute.headroom", ["out"]),
    (["-m", M + "cli.main_job", "--samples", "1", "--matches", "4", "--out", "out"], ["torch"],
     "train", f"python -m {M}cli.main_job", ["out"]),
]


def _id(case) -> str:
    argv, blocked = case[0], case[1]
    name = argv[1].removeprefix(M) if argv[0] == "-m" else " ".join(argv[:2])
    return f"{name}-without-{blocked[0]}"


@pytest.mark.parametrize("argv,blocked,extra,what,outputs", CASES, ids=map(_id, CASES))
def test_a_missing_extra_stops_the_command_before_any_work(tmp_path, argv, blocked, extra,
                                                           what, outputs):
    work = tmp_path / "work"
    work.mkdir()
    res = run_blocked(argv, blocked, work, site=tmp_path / "site")
    assert res.returncode == 2, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr  # no traceback, no usage, no progress bar
    line = lines[0]
    assert line.startswith(f"{what} needs the '{extra}' extra (missing: "), line
    assert all(m in line for m in blocked), line
    assert line.endswith(f"pip install 'dragons-egg[{extra}]'"), line
    assert res.stdout == ""  # nothing played, trained or measured
    assert sorted(p.name for p in work.iterdir()) == [], outputs  # nothing written


def test_the_spec_of_an_agent_names_the_extra_it_needs(tmp_path):
    """ppo-0.1 (an SB3 checkpoint) needs the train extra: a one-line usage error before the
    tournament plays, naming the agent and the extra."""
    work = tmp_path / "work"
    work.mkdir()
    res = run_blocked(["dragons-egg", "tournament", "ppo-0.1", "heuristic", "--matches", "4",
                       "--workers", "1", "--out", "out"], ["torch"], work,
                      site=tmp_path / "site")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.splitlines()[-1] == (
        "dragons-egg tournament: error: agent ppo-0.1 needs the 'train' extra (missing: torch): "
        "pip install torch==2.13.0 && pip install 'dragons-egg[train]'")
    assert not (work / "out").exists() and res.stdout == ""


def test_core_only_commands_work_without_any_extra(tmp_path):
    """A core-only install: play against the rule agents, ISMCTS and the shipped ppo (a .npz
    played with numpy), replay the match, the text demo and the plain benchmark."""
    site, work = tmp_path / "site", tmp_path / "work"
    work.mkdir()
    play = run_blocked(["dragons-egg", "play", "--bots", "ppo", "heuristic",
                        "ismcts:iterations=5", "--seed", "3", "--save", "m.json"], OPTIONAL,
                       work, site=site, stdin="q\n")
    assert play.returncode == 0, play.stderr
    assert "You quit." in play.stdout and (work / "m.json").is_file()
    replay = run_blocked(["dragons-egg", "replay", "m.json", "--all"], OPTIONAL, work,
                         site=site)
    assert replay.returncode == 0 and replay.stdout, replay.stderr
    demo = run_blocked(["-m", "dragons_egg_env", "--seed", "1"], OPTIONAL, work, site=site)
    assert demo.returncode == 0 and "player_0" in demo.stdout, demo.stderr
    bench = run_blocked(["dragons-egg", "bench", "--seconds", "0.05"], OPTIONAL, work,
                        site=site)
    assert bench.returncode == 0, bench.stderr
    assert "engine alone" in bench.stdout
    for tool in ("tools.docs", "tools.readme_tables"):  # the generators import and parse on the core
        res = run_blocked(["-m", M + tool, "--help"], OPTIONAL, work, site=site)
        assert res.returncode == 0 and "--check" in res.stdout, res.stderr


def _readme_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Install as a library")
    return text[start:text.index("\n## ", start + 1)]


def _readme_rows() -> dict[str, str]:
    rows = {}
    for line in _readme_section().splitlines():
        m = re.match(r"\| `([a-z]+)` \|(.*)", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_the_readme_lists_every_extra_and_the_commands_that_need_it():
    section = _readme_section()
    assert section.index("## Install as a library") < section.index("pip install .")
    text = (ROOT / "README.md").read_text()
    assert text.index("## Set-up: two commands") < text.index("## Install as a library")
    rows = _readme_rows()
    assert set(rows) == set(EXTRAS)
    for extra in EXTRAS:
        for inner in INCLUDES.get(extra, ()):
            assert f"`{inner}`" in rows[extra], (extra, inner)
        for module in OWN[extra]:  # named as pip knows it
            dist = DISTRIBUTION.get(module, module.replace("_", "-"))
            assert dist in rows[extra], (extra, dist)
    for argv, _, extra, _, _ in CASES:
        command = argv[1].removeprefix(M) if argv[0] == "-m" else argv[1] if len(argv) > 1 \
            else argv[0]
        command = "bench --vector" if "--vector" in argv else command
        assert command in rows[extra], (extra, command)
    assert "exit status 2" in section
    assert "pip install torch==2.13.0 && pip install 'dragons-egg[train]'" in section


def test_run_tournament_checks_the_modules_it_needs_before_playing(monkeypatch, tmp_path):
    import dataclasses
    import sys

    from dragons_egg.experiments.evaluation import tournament as T
    from dragons_egg_env.extras import MissingExtraError

    played = []
    real = T.run_matches
    monkeypatch.setattr(T.output, "run_matches",  # where run_tournament finds it
                        lambda *a, **k: played.append(1) or real(*a, **k))
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    tc = T.TournamentConfig(agents=["random", "greedy"], num_players=2, matches=2, workers=1,
                            out_dir=str(tmp_path / "t"))
    with pytest.raises(MissingExtraError, match=r"^run_tournament needs the 'experiments' "
                                                r"extra \(missing: matplotlib\): "):
        T.run_tournament(tc, progress=False)
    assert not played and not (tmp_path / "t").exists()
    # without an output folder there are no plots: matplotlib is not needed
    summary = T.run_tournament(dataclasses.replace(tc, out_dir=None), progress=False)
    assert played and summary["matches"] == 2
    monkeypatch.setitem(sys.modules, "openskill", None)  # the ratings are always computed
    with pytest.raises(MissingExtraError, match=r"\(missing: openskill\)"):
        T.run_tournament(dataclasses.replace(tc, out_dir=None), progress=False)
    assert len(played) == 1
