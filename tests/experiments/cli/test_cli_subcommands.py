"""Every user-facing command is a ``dragons-egg`` subcommand (issue 23). The delegated ones
(:data:`~dragons_egg.experiments.cli.main.DELEGATED`) run their module's own
``main(argv, prog="dragons-egg NAME")`` with the rest of the command line untouched, so their
``--help`` and errors name ``dragons-egg NAME``; each module still runs as ``python -m``."""

import importlib
import inspect
import subprocess
import sys
import types

import pytest

from dragons_egg.experiments.cli import main as cli
from dragons_egg.experiments.cli.main import DELEGATED, Delegated, main
from dragons_egg_env.extras import missing

#: Every subcommand the issue asks for, with the module it runs.
EXPECTED = {
    "train": "dragons_egg.experiments.training.selfplay",
    "train-sb3": "dragons_egg.experiments.training.train_ppo",
    "train-rllib": "dragons_egg.experiments.training.train_rllib",
    "exploit": "dragons_egg.experiments.training.exploit",
    "ship": "dragons_egg.experiments.training.ship",
    "evaluate-run": "dragons_egg.experiments.training.evaluate_run",
    "search-targets": "dragons_egg.experiments.training.search_targets",
    "compare-trainers": "dragons_egg.experiments.training.compare",
    "train-bench": "dragons_egg.experiments.training.bench",
    "serve": "dragons_egg.experiments.web.serve",
    "main-job": "dragons_egg.experiments.cli.main_job",
    "benchmark": "dragons_egg.experiments.evaluation.benchmark",
    "tribute-analysis": "dragons_egg.experiments.evaluation.tribute",
    "tribute-fit": "dragons_egg.experiments.research.tribute.fit",
    "tribute-headroom": "dragons_egg.experiments.research.tribute.headroom",
}
#: The subcommands that ``dragons-egg`` parses itself.
OWN = ("play", "tournament", "replay", "gif", "bench")

#: The commands whose settings tyro reads: they check the 'train' extra (tyro among it)
#: before parsing, so even ``--help`` needs it. The others parse first, on the core alone.
CHECKED_BEFORE_PARSING = {"train": "train", "tribute-fit": "train"}


def needs_extra(name: str) -> None:
    extra = CHECKED_BEFORE_PARSING.get(name)
    if extra and missing(extra):
        pytest.skip(f"dragons-egg {name} needs the '{extra}' extra (missing: "
                    f"{', '.join(missing(extra))})")


def run(argv, capsys) -> tuple[int, str, str]:
    """``main(argv)``'s exit status (argparse and tyro exit through ``SystemExit``), stdout
    and stderr."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_table_holds_every_command_once():
    assert {name: d.module for name, d in DELEGATED.items()} == EXPECTED
    assert not set(DELEGATED) & set(OWN)
    assert all(d.help and "\n" not in d.help for d in DELEGATED.values())


def test_the_modules_load_only_when_their_command_runs():
    """``dragons-egg play`` does not pay for importing the trainers: the table names modules."""
    code = ("import sys; import dragons_egg.experiments.cli.main as m; "
            "print(sorted(d.module for d in m.DELEGATED.values() if d.module in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_delegated_main_takes_a_prog(name):
    module = importlib.import_module(EXPECTED[name])
    params = inspect.signature(module.main).parameters
    assert "prog" in params, f"{EXPECTED[name]}.main has no prog parameter"
    assert params["prog"].default is None


def test_arguments_pass_through_untouched(monkeypatch):
    calls = []

    def fake_main(argv, prog=None):
        calls.append((argv, prog))
        return 7

    monkeypatch.setitem(sys.modules, "fake_command", types.SimpleNamespace(main=fake_main))
    monkeypatch.setitem(DELEGATED, "fake", Delegated("fake_command", "a fake command"))
    rest = ["--help", "-x", "1", "--", "play", "--seed=3"]
    assert main(["fake", *rest]) == 7
    assert calls == [(rest, "dragons-egg fake")]
    assert cli.run_delegated("fake", []) == 7 and calls[-1] == ([], "dragons-egg fake")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_help_of_a_delegated_command_is_its_own_under_its_name(name, capsys):
    needs_extra(name)
    code, out, err = run([name, "--help"], capsys)
    assert code == 0, err
    assert f"dragons-egg {name}" in out, out
    assert "python -m" not in out.split("\n", 1)[0]  # the usage line names the subcommand


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_bad_option_is_a_usage_error_of_the_subcommand(name, capsys, tmp_path,
                                                          monkeypatch):
    needs_extra(name)
    monkeypatch.chdir(tmp_path)  # nothing may be written, even by mistake
    code, out, err = run([name, "--no-such-option"], capsys)
    assert code == 2, err
    assert f"dragons-egg {name}" in err, err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_subcommand_is_exit_status_2(capsys):
    code, out, err = run(["no-such-command"], capsys)
    assert code == 2
    assert "invalid choice: 'no-such-command'" in err and "train-sb3" in err


def test_the_top_level_help_lists_every_subcommand(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("    ")}
    assert set(OWN) | set(EXPECTED) <= listed, out
    for name, d in DELEGATED.items():
        assert d.help.split()[0] in out, name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_delegated_module_still_runs_as_python_m(name):
    needs_extra(name)
    res = subprocess.run([sys.executable, "-m", EXPECTED[name], "--help"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"python -m {EXPECTED[name]}" in res.stdout, res.stdout


def test_output_into_a_pipe_closed_early_ends_quietly(tmp_path):
    """``dragons-egg tournament compare A B | head``: the reader closes the pipe before the
    command has written; the command ends with status 141 and no traceback (it printed a
    BrokenPipeError's before)."""
    import os

    out = tmp_path / "t"
    assert main(["tournament", "random", "greedy", "--players", "2", "--matches", "20",
                 "--out", str(out), "--no-progress"]) == 0
    # unbuffered: the first print meets the closed pipe (buffered, a short table would wait
    # in the buffer for the interpreter's exit)
    proc = subprocess.Popen([sys.executable, "-m", "dragons_egg.experiments.cli.main",
                             "tournament", "compare", str(out), str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    proc.stdout.close()  # before it writes
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipe" not in err
