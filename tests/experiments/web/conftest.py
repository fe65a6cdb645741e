"""The web pages' fixtures: a served folder with a replay, a tampered replay, a tournament
with every match's replay, a training run and a way out through a symlink; a server on a free
loopback port (stopped by its pid); Debian's headless Chromium driven by Playwright.

Without the browser the browser tests skip, saying why; under ``CI=true`` they fail instead
(``make test`` and ``.ci/run`` install it with apt-get where they can). Screenshots go to
``$DRAGONS_EGG_SCREENSHOTS`` when it is set (``make screenshots`` sets it to ``docs/web``),
else to a temporary folder.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from dragons_egg.agents import make_agent  # noqa: E402
from dragons_egg.agents.runner import play_match  # noqa: E402
from dragons_egg.experiments.evaluation.tournament import (  # noqa: E402
    TournamentConfig,
    run_tournament,
)
from dragons_egg_env.config import RulesConfig  # noqa: E402

#: The system's Chromium (Debian's package); Playwright's own browsers are never installed.
CHROMIUM = os.environ.get("DRAGONS_EGG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
#: The seed and line-up of the served replay (4 seats, 2 rounds: round 2 has a tribute).
REPLAY_SEED = 5
REPLAY_BOTS = ["heuristic", "greedy", "random", "heuristic"]


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (``None``: they can)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install playwright; the test extra has it)"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return (f"no Chromium at {CHROMIUM} (apt-get install chromium; make test installs it "
                "as root)")
    return None


def match_replay(tribute_asks: int = 2) -> dict:
    config = RulesConfig(num_players=4, num_rounds=2, tribute_asks=tribute_asks)
    agents = [make_agent(spec, seed=REPLAY_SEED * 10 + q) for q, spec in enumerate(REPLAY_BOTS)]
    return play_match(agents, config, seed=REPLAY_SEED, keep_replay=True).replay


def tampered(replay: dict) -> dict:
    """The replay with its 11th move swapped for another action (which is not legal there)."""
    data = json.loads(json.dumps(replay))
    agent, action = data["actions"][10]
    data["actions"][10] = [agent, 0 if action != 0 else 1]
    return data


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The served folder: ``replays/match.json``, ``replays/tampered.json``, a tournament
    ``tourney/`` (2 seats, 4 matches, every replay kept), a run ``run/eval.csv`` and, outside
    it, ``outside/secret.json`` with links to it from inside."""
    base = tmp_path_factory.mktemp("web")
    root = base / "root"
    (root / "replays").mkdir(parents=True)
    replay = match_replay()
    (root / "replays" / "match.json").write_text(json.dumps(replay, indent=1))
    (root / "replays" / "tampered.json").write_text(json.dumps(tampered(replay), indent=1))
    tc = TournamentConfig(agents=["heuristic", "random"], num_players=2, matches=4,
                          num_rounds=2, seed=11, bootstrap=100, out_dir=str(root / "tourney"),
                          save_replays=True)
    run_tournament(tc, progress=False)
    (root / "run").mkdir()
    (root / "run" / "eval.csv").write_text(
        "samples,seconds,mean_score,score_low,score_high,diff_heuristic,diff_heuristic_low,"
        "diff_heuristic_high\n1000000,10,0.1,0.0,0.2,-0.3,-0.5,-0.1\n"
        "2000000,20,0.4,0.3,0.5,0.1,-0.1,0.3\n3000000,30,0.6,0.5,0.7,0.3,0.1,0.5\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text(json.dumps(replay))
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "link.json").symlink_to(outside / "secret.json")
    return root


@pytest.fixture(scope="module")
def server(site, tmp_path_factory):
    """``dragons-egg serve --root SITE --port 0`` on loopback: its base URL. Stopped by its
    pid (SIGTERM, which saves the matches in play) when the module's tests are done."""
    save_dir = tmp_path_factory.mktemp("played")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dragons_egg.experiments.web.serve", "--root", str(site),
         "--port", "0", "--host", "127.0.0.1", "--save-dir", str(save_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("serving http://"):
        proc.kill()
        raise AssertionError(f"the server did not start: {line!r} {proc.stderr.read()}")
    url = line.split()[1].rstrip("/")
    yield {"url": url, "root": site, "save_dir": save_dir, "pid": proc.pid}
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    proc.stdout.close()
    proc.stderr.close()


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (the system's) through Playwright; skipped without it, failed
    without it under CI=true."""
    why = browser_missing()
    if why is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true and the browser tests cannot run: {why}", pytrace=False)
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    b.close()
    pw.stop()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    p = context.new_page()
    p.set_default_timeout(15000)
    yield p
    context.close()


@pytest.fixture(scope="session")
def shots(tmp_path_factory):
    """Where screenshots go: ``$DRAGONS_EGG_SCREENSHOTS`` (the docs' images), else a
    temporary folder."""
    target = os.environ.get("DRAGONS_EGG_SCREENSHOTS")
    folder = Path(target) if target else tmp_path_factory.mktemp("shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
