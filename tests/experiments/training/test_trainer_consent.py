"""Consent to run code comes only from the user, in the trainers too (issue 47, item 1).

An agent spec that runs code (``MODULE:CLASS``, ``ppo:path=...,trust=1``) in a trainer's
settings was honoured when it came from a file: a ``--config`` file, or the settings a
checkpoint saved, used on ``--resume`` (the self-play checkpoint's digest is a checksum anyone
can recompute, and the SB3 checkpoint's settings are a plain ``.json`` beside it). Now such a
spec is honoured only when the user names it again with ``--allow-code SPEC`` or types it as
the setting's value; otherwise the command stops with one line (exit status 2) naming the
spec, the file and the flag, before the spec is parsed: the ``MODULE:CLASS`` module used here
writes a marker file when it is imported, and the SB3 zip one when it is unpickled, and
neither marker may appear.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import pickle
import shlex
import shutil
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")

import torch  # noqa: E402
from support import tiny  # noqa: E402

from dragons_egg.agents import ppo as PPO  # noqa: E402
from dragons_egg.experiments.common.runs import RunInterrupted  # noqa: E402
from dragons_egg.experiments.training import selfplay, train_ppo  # noqa: E402
from dragons_egg.experiments.training.checkpoint import state_digest  # noqa: E402
from dragons_egg.experiments.training.lifecycle import TrainerRun  # noqa: E402
from dragons_egg_env.observation import layout  # noqa: E402


class _Payload:
    """Unpickling it writes ``marker``: what a malicious SB3 zip would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


@pytest.fixture
def code(tmp_path, monkeypatch):
    """``(module spec, trust spec, marker)``: a ``MODULE:CLASS`` spec of a module (on
    ``sys.path``, named afresh for each test) that writes ``marker`` when imported, and a
    ``ppo:path=...,trust=1`` spec of an SB3-shaped zip that writes it when unpickled."""
    marker = tmp_path / "code-ran"
    name = f"consent_probe_{uuid.uuid4().hex[:12]}"
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / f"{name}.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n"
        "from dragons_egg.agents.simple import RandomAgent\n\n\n"
        "class Bot(RandomAgent):\n    pass\n")
    monkeypatch.syspath_prepend(str(mods))
    zpath = tmp_path / "evil.zip"
    space = {":type:": "<class 'object'>",
             ":serialized:": base64.b64encode(pickle.dumps(_Payload(marker))).decode(),
             "_shape": [layout(4).size]}
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("data", json.dumps({"observation_space": space}))
    PPO._CACHE.clear()
    yield f"{name}:Bot", f"ppo:path={zpath},trust=1", marker
    PPO._CACHE.clear()
    sys.modules.pop(name, None)


def _refused(call, capsys, spec: str, where: Path, marker: Path) -> str:
    """``call()`` exits with status 2 and one line, no traceback, that names ``spec``,
    ``where`` it was read and the flag that allows it; no code ran."""
    with pytest.raises(SystemExit) as exc:
        call()
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    line = lines[0]
    assert repr(spec) in line and str(where) in line, line
    assert f"--allow-code {shlex.quote(spec)}" in line or f"--allow-code '{spec}'" in line, line
    assert "a file cannot give that consent" in line
    assert not marker.exists(), "the spec's code ran"
    return line


# ---------------------------------------------------------------------------------------
# A --config file.

#: Where a file names the spec (its path; ``league_agents`` alone: the flat form of before
#: the groups), in each trainer's settings.
FIELDS = [("selfplay", "eval_opponents"), ("selfplay", "eval_search"),
          ("selfplay", "league.league_agents"), ("selfplay", "league_agents"),
          ("sb3", "opponents"), ("sb3", "eval_opponents")]


def _nested(path: str, value):
    head, _, rest = path.partition(".")
    return {head: _nested(rest, value) if rest else value}


@pytest.mark.parametrize("kind", ["module", "trust"])
@pytest.mark.parametrize("trainer,field", FIELDS)
def test_a_config_file_cannot_allow_code(code, tmp_path, capsys, kind, trainer, field):
    """Before: the spec was honoured (the module imported when the settings were checked,
    the league agent's zip unpickled when the league was checked); no refusal."""
    spec = code[0] if kind == "module" else code[1]
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(_nested(field, [spec])))
    parse = selfplay.parse_args if trainer == "selfplay" else train_ppo.parse_args
    line = _refused(lambda: parse(["--config", str(path)]), capsys, spec, path, code[2])
    assert line.startswith(f"error: --config {path} names the agent")


@pytest.mark.parametrize("trainer", ["selfplay", "sb3"])
def test_the_user_allows_a_spec_of_a_config_file(code, tmp_path, trainer):
    """Before: ``--allow-code`` was not an option (tyro refused it, exit status 2)."""
    spec, _, marker = code
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"eval_opponents": [spec], "out_dir": str(tmp_path)}))
    parse = selfplay.parse_args if trainer == "selfplay" else train_ppo.parse_args
    assert parse(["--config", str(path), "--allow-code", spec,
                  "--allow-code", "other:Bot"]).cfg.eval_opponents == (spec,)
    assert marker.exists()  # allowed, so checked (imported)
    # typed as the setting's value, it is the user's own (as the tournament's agents)
    assert parse(["--config", str(path), "--eval-opponents", spec,
                  "heuristic"]).cfg.eval_opponents == (spec, "heuristic")
    # a packaged config is checked as any file is, and passes: none names such a spec
    packaged = parse(["--config", "selfplay-shipped" if trainer == "selfplay" else "shipped"])
    assert packaged.cfg.eval_opponents == ("heuristic",)


@pytest.mark.parametrize("parse", [selfplay.parse_args, train_ppo.parse_args])
def test_the_help_names_allow_code(parse, capsys):
    """Before: no such option."""
    with pytest.raises(SystemExit) as exc:
        parse(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--allow-code SPEC" in out and "cannot give that consent" in " ".join(out.split())


# ---------------------------------------------------------------------------------------
# The settings a self-play checkpoint saved.

@pytest.fixture(scope="module")
def selfplay_checkpoint(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ckpt")
    run = selfplay.Run(tiny(tmp, run_name="r"))
    path = run.save()
    run.lock.release()
    return path


def _forged(checkpoint: Path, tmp_path: Path, **config) -> Path:
    """A copy of ``checkpoint`` in a run folder of ``tmp_path`` whose saved settings are
    changed by ``config`` (nested), its digest recomputed, as anyone can."""
    dest = tmp_path / "run" / "checkpoints" / "latest.pt"
    dest.parent.mkdir(parents=True)
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    for key, value in config.items():
        if isinstance(value, dict):
            state["config"][key].update(value)
        else:
            state["config"][key] = value
    state["config"]["out_dir"] = str(tmp_path)
    state["digest"] = state_digest(state)
    torch.save(state, dest)
    (dest.parent.parent / "config.json").write_text(json.dumps(state["config"]))
    return dest


@pytest.mark.parametrize("kind", ["module", "trust"])
@pytest.mark.parametrize("field", ["eval_opponents", "league"])
def test_a_selfplay_checkpoint_cannot_allow_code(selfplay_checkpoint, code, tmp_path, capsys,
                                                 kind, field):
    """Before: ``train --resume`` honoured the spec (its module imported, the league agent's
    zip unpickled, when the resumed settings were checked)."""
    spec = code[0] if kind == "module" else code[1]
    value = {"league_agents": [spec]} if field == "league" else [spec]
    ckpt = _forged(selfplay_checkpoint, tmp_path, **{field: value})
    line = _refused(lambda: selfplay.main(["--resume", str(ckpt)]), capsys, spec, ckpt, code[2])
    assert line.startswith(f"error: --resume: checkpoint {ckpt} (its saved settings) names")


def test_the_user_allows_a_spec_a_selfplay_checkpoint_saved(selfplay_checkpoint, code,
                                                            tmp_path):
    """Before: ``--allow-code`` was not an option; and a spec overridden on the command line
    was still imported when the run read the checkpoint's settings."""
    spec, _, marker = code
    ckpt = _forged(selfplay_checkpoint, tmp_path, eval_opponents=[spec])
    # typed over it: the saved spec is never parsed, by the command line nor by the run
    cmd = selfplay.parse_args(["--resume", str(ckpt), "--eval-opponents", "heuristic"])
    assert cmd.cfg.eval_opponents == ("heuristic",)
    run = selfplay.Run(cmd.cfg, cmd.resume)
    run.lock.release()
    assert not marker.exists()
    # allowed again on the command line
    cmd = selfplay.parse_args(["--resume", str(ckpt), "--allow-code", spec])
    assert cmd.cfg.eval_opponents == (spec,) and marker.exists()


# ---------------------------------------------------------------------------------------
# The settings an SB3 checkpoint saved (the .json beside it).

def _sb3_checkpoint(tmp_path: Path, **config) -> Path:
    """The shipped SB3 checkpoint (trusted by its digest, so no --trust-checkpoint) in a run
    folder, with the settings ``config`` in its ``.json``."""
    dest = tmp_path / "run" / "checkpoints" / "step_8.zip"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(PPO.PREVIOUS, dest)
    saved = {"out_dir": str(tmp_path), "run_name": "run", **config}
    dest.with_suffix(".json").write_text(json.dumps({
        "num_timesteps": 8, "snapshots": [], "history": [], "config": saved}))
    (dest.parent.parent / "config.json").write_text(json.dumps(saved))
    return dest


@pytest.mark.parametrize("kind", ["module", "trust"])
@pytest.mark.parametrize("field", ["opponents", "eval_opponents"])
def test_an_sb3_checkpoint_cannot_allow_code(code, tmp_path, capsys, kind, field):
    """Before: ``train-sb3 --resume`` honoured the spec (the module imported when the
    resumed settings were checked)."""
    spec = code[0] if kind == "module" else code[1]
    ckpt = _sb3_checkpoint(tmp_path, **{field: [spec]})
    line = _refused(lambda: train_ppo.main(["--resume", str(ckpt)]), capsys, spec, ckpt,
                    code[2])
    assert line.endswith(f"--allow-code '{spec}'")


def test_the_user_allows_a_spec_an_sb3_checkpoint_saved(code, tmp_path):
    """Before: ``--allow-code`` was not an option."""
    spec, _, marker = code
    ckpt = _sb3_checkpoint(tmp_path, opponents=[spec])
    assert train_ppo.parse_args(["--resume", str(ckpt), "--opponents", "random"]
                                ).cfg.opponents == ("random",)
    assert not marker.exists()
    cfg = train_ppo.parse_args(["--resume", str(ckpt), "--allow-code", spec]).cfg
    assert cfg.opponents == (spec,) and marker.exists()


# ---------------------------------------------------------------------------------------
# The resume commands a trainer prints name the consent the resume needs.

class _Stopped(TrainerRun):
    """A run stopped by Ctrl-C as soon as it trains, after "saving" a checkpoint."""

    RUN_FILES = ("config.json", "checkpoints")
    RESUME_FLAGS = " --trust-me"

    @staticmethod
    def latest_checkpoint(run_dir: Path) -> Path | None:
        path = run_dir / "checkpoints" / "latest.pt"
        return path if path.is_file() else None

    def __init__(self, cfg) -> None:
        self.begin(cfg)

    def train(self) -> Path:
        raise RunInterrupted(self.run_dir / "checkpoints" / "latest.pt", 5, "samples")


def test_the_resume_line_names_the_consent_it_needs(code, tmp_path, capsys):
    """Before: the line said ``--resume CHECKPOINT --trust-me`` alone, and that resume was
    then refused (or, before the refusal, ran the code on the checkpoint's word)."""
    spec, trust_spec, _ = code
    cfg = tiny(tmp_path, run_name="r", eval_opponents=(spec, "heuristic"),
               eval_search=(trust_spec,))
    assert _Stopped.command("trainer", lambda: _Stopped(cfg)) == 130
    line = capsys.readouterr().err.strip().splitlines()[-1]
    ckpt = tmp_path / "r" / "checkpoints" / "latest.pt"
    assert line.endswith(f"resume with: trainer --resume {ckpt} --trust-me --allow-code {spec} "
                         f"--allow-code {shlex.quote(trust_spec)}"), line


def test_a_taken_run_folder_names_the_consent_its_resume_needs(code, tmp_path, capsys):
    """Before: the refusal named ``--resume CHECKPOINT`` alone."""
    spec, _, _ = code
    cfg = tiny(tmp_path, run_name="r", eval_opponents=(spec,))
    folder = tmp_path / "r"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "latest.pt").write_bytes(b"x")
    (folder / "config.json").write_text(json.dumps(dataclasses.asdict(cfg)))
    assert _Stopped.command("trainer", lambda: _Stopped(tiny(tmp_path, run_name="r"))) == 2
    err = capsys.readouterr().err
    assert f"--resume {folder / 'checkpoints' / 'latest.pt'} --trust-me --allow-code {spec}," \
        in err, err


# ---------------------------------------------------------------------------------------
# Commands that read a run's settings and make none of its agents.

@pytest.mark.parametrize("kind", ["module", "trust"])
def test_ship_and_evaluate_run_make_none_of_the_agents_a_run_names(selfplay_checkpoint, code,
                                                                   tmp_path, capsys, kind):
    """``dragons-egg ship CHECKPOINT`` and ``dragons-egg evaluate-run DIR`` read the run's
    settings for its rules and network, and play none of its agents; they no longer parse
    its agent specs, so a spec that runs code in a checkpoint or a run folder's
    ``config.json`` neither runs nor needs consent. Before: both parsed the settings whole,
    and ``MODULE:CLASS`` imported its module (the marker was written)."""
    from dragons_egg.experiments.training import evaluate_run, ship

    spec = code[0] if kind == "module" else code[1]
    ckpt = _forged(selfplay_checkpoint, tmp_path, eval_opponents=[spec],
                   league={"league_agents": [spec]})
    policy = ckpt.parent.parent / "policies" / "policy_0.npz"
    policy.parent.mkdir()
    assert ship.main([str(ckpt), "--dest", str(policy)]) == 0
    assert not code[2].exists(), "ship ran the spec's code"
    assert evaluate_run.main([str(ckpt.parent.parent), "--opponent", "random", "--matches",
                              "1", "--players", "2"]) == 0
    assert not code[2].exists(), "evaluate-run ran the spec's code"
    rows = (ckpt.parent.parent / "eval_random-2p.csv").read_text().splitlines()
    assert rows[0].startswith("samples,") and rows[1].startswith("0,"), rows
    capsys.readouterr()
