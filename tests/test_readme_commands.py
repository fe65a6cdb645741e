"""The README's commands, and those of docs/commands.md, run from a temporary folder outside
the checkout (issue 21).

Every command of the ``bash`` blocks of :data:`DOCUMENTS` (the README, a front page, and the
docs page of commands it links to, which holds the commands the README showed before) is
either run here, in their order (the README's first), with its budget shrunk
(:data:`SHRINK`: arguments appended after the document's own, which they override, so a run
takes seconds), or listed in :data:`NOT_RUN_HERE` with the reason. A new command in either
that is in neither table fails the test, so they cannot gain a command that works only from
the repository root. A command both give is run once. ``runs/x`` (the documents' name for
"your run") is the run the first self-play command writes.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: The documents whose commands are run, in this order.
DOCUMENTS = ("README.md", "docs/commands.md")

pytest.importorskip("torch")
pytest.importorskip("tyro")

#: The self-play settings of a run of seconds (2 table sizes, 144 samples a rollout).
TINY_SELFPLAY = ["--table-sizes", "2", "3", "--envs-per-size", "6", "--rollout-steps", "12",
                 "--hidden", "16", "--epochs", "1", "--minibatch", "32", "--num-rounds", "1",
                 "--eval-opponents", "random", "--eval-players", "2", "--eval-matches", "4",
                 "--eval-every", "288", "--checkpoint-every", "144", "--snapshot-every", "144",
                 "--total-samples", "288", "--no-progress"]

#: Command prefix -> what is appended to shrink it (the last value of an option wins).
SHRINK: dict[str, list[str]] = {
    "dragons-egg tournament ismcts": ["--matches", "4", "--rounds", "1", "--workers", "1"],
    "dragons-egg tournament ppo:path=my_agent.npz": ["--matches", "4", "--rounds", "1",
                                                     "--workers", "1"],
    "dragons-egg play": ["--rounds", "1"],
    "dragons-egg replay": ["--all"],
    "dragons-egg gif": [],
    "dragons-egg bench": ["--seconds", "0.2", "--players", "3"],
    "dragons-egg train --total-samples": TINY_SELFPLAY,
    "dragons-egg train --config selfplay-shipped": TINY_SELFPLAY,
    "dragons-egg train --collectors": TINY_SELFPLAY,
    "dragons-egg train --resume runs/x/checkpoints/latest.pt --total":
        ["--total-samples", "432", "--no-progress"],
    "dragons-egg train --resume": [],
    "dragons-egg ship": [],
    "dragons-egg evaluate-run": ["--matches", "4"],
    "dragons-egg search-targets": ["--iterations", "4", "--rounds", "1", "--matches-per-batch",
                                   "1", "--batches", "1", "--no-progress"],
    "dragons-egg train-sb3": [
        "--total-timesteps", "256", "--n-steps", "128", "--batch-size", "64", "--n-epochs", "1",
        "--num-rounds", "1", "--eval-matches", "4", "--eval-every", "0"],
    "dragons-egg tribute-analysis --tribute ppo": ["--deals", "2", "--workers", "1"],
    "dragons-egg tribute-fit --policy runs/x/final.npz": [
        "--chunks", "3", "--states-per-chunk", "3", "--workers", "1", "--table-sizes", "4",
        "--size-weights", "1", "--holdout", "0.34", "--no-progress"],
    "dragons-egg tribute-headroom --data runs/tribute-fit/data.npz": [
        "--validate-deals", "1", "--folds", "2"],
}

#: Command prefix -> why it is not run by this test.
NOT_RUN_HERE = {
    "make demo": "the README's set-up command: it creates .venv in a checkout",
    "make test": "the README's set-up command: CI runs it (.ci/run)",
    "pip install torch": "an install: tests/install/test_real_install.py installs the extras",
    "dragons-egg train --address auto":
        "joins a running Ray cluster: tests/experiments/training/test_distributed.py starts a "
        "two-node cluster on loopback and trains on it",
    "dragons-egg serve":
        "a server that runs until Ctrl-C: tests/experiments/web/ start it on loopback and "
        "drive its pages in a browser",
}


def readme_commands() -> list[str]:
    """The commands of the ``bash`` blocks of :data:`DOCUMENTS`, continuation lines joined,
    comments cut."""
    text = "\n".join((ROOT / doc).read_text() for doc in DOCUMENTS)
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


def _match(command: str, table: dict[str, object]) -> str | None:
    """The longest prefix of ``command`` among the entries of both tables, if it is in
    ``table``."""
    found = [p for p in (*SHRINK, *NOT_RUN_HERE) if command.startswith(p)]
    best = max(found, key=len) if found else None
    return best if best in table else None


def test_every_readme_command_is_run_here_or_says_why_not():
    used = set()
    for command in readme_commands():
        key = _match(command, SHRINK) or _match(command, NOT_RUN_HERE)
        assert key, f"command of {DOCUMENTS} not covered by {__name__}: {command}"
        used.add(key)
    assert used == set(SHRINK) | set(NOT_RUN_HERE), "entries for commands the README lost"


def _argv(command: str, work: Path) -> list[str]:
    words = shlex.split(command.replace("runs/x", "runs/selfplay-seed0"))
    if words[:2] == ["python", "-m"]:
        words[0] = sys.executable
    elif words[0] == "dragons-egg":
        words[0] = str(BIN / "dragons-egg")
    if "runs/play-....json" in words:
        words[words.index("runs/play-....json")] = str(next((work / "runs").glob("play-*.json")))
    return words + SHRINK[_match(command, SHRINK)]


def test_the_readme_commands_run_from_a_folder_outside_the_checkout(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    ran = []
    for command in readme_commands():
        if _match(command, SHRINK) is None or command in ran:
            continue
        argv = _argv(command, tmp_path)
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env,
                              input="q\n" * 50, timeout=600)
        assert proc.returncode == 0, f"{command}\n-> {argv}\n{proc.stdout[-2000:]}\n" \
                                     f"{proc.stderr[-3000:]}"
        ran.append(command)
    runs = tmp_path / "runs"
    assert (runs / "t" / "results.jsonl").is_file() and (runs / "mine" / "results.jsonl").is_file()
    assert (runs / "selfplay-seed0" / "final.npz").is_file()
    assert (tmp_path / "my_agent.npz").is_file() and (tmp_path / "out.gif").is_file()
    assert (runs / "tribute-fit" / "data.npz").is_file()
