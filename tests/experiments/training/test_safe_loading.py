"""No file taken from someone else runs code on a default path, and damaged checkpoints are
refused (issue 22).

A payload file of each kind is built here, each one writing a marker file when it is
unpickled: an SB3 zip (a copy of the shipped ``ppo_sb3_0.1.zip`` whose ``data`` entry gains a
pickled call, as in the issue, and a minimal SB3-shaped zip), a torch checkpoint with a pickled
object, and a policy ``.npz`` with an object array. The first test shows each payload is live
(it runs when the file is loaded the unsafe way, or with the explicit trust option); the others
try every default path and check that it refuses the file with one line and the marker never
appears."""

from __future__ import annotations

import base64
import json
import pickle
import shutil
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sb3_contrib")
pytest.importorskip("numba")

import torch  # noqa: E402
from support import tiny  # noqa: E402

from dragons_egg.agents import AgentSpec, AgentSpecError, make_agent, parse_spec  # noqa: E402
from dragons_egg.agents import ppo as PPO  # noqa: E402
from dragons_egg.agents.netpolicy import NetPolicy  # noqa: E402
from dragons_egg.experiments.cli.main import main as cli_main  # noqa: E402
from dragons_egg.experiments.training import (
    selfplay,  # noqa: E402
    ship,  # noqa: E402
    train_ppo,  # noqa: E402
)
from dragons_egg.experiments.training.checkpoint import (  # noqa: E402
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    load_checkpoint,
    state_digest,
)
from dragons_egg.experiments.training.selfplay import Run  # noqa: E402
from dragons_egg_env.actions import NUM_ACTIONS  # noqa: E402
from dragons_egg_env.observation import layout  # noqa: E402

DRAGONS_EGG = Path(sys.executable).parent / "dragons-egg"


class _Payload:
    """Unpickling it writes ``marker``: what a malicious file would do."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _serialized(marker: Path) -> dict[str, str]:
    """An SB3 ``data`` value that SB3 unpickles (cloudpickle) when it loads the zip."""
    return {":type:": "<class 'object'>",
            ":serialized:": base64.b64encode(pickle.dumps(_Payload(marker))).decode()}


def sb3_tampered(path: Path, marker: Path) -> Path:
    """The shipped SB3 agent with a payload added to its ``data`` entry (it still plays)."""
    with zipfile.ZipFile(PPO.PREVIOUS) as src, zipfile.ZipFile(path, "w") as dst:
        for item in src.infolist():
            content = src.read(item.filename)
            if item.filename == "data":
                data = json.loads(content)
                data["payload"] = _serialized(marker)
                content = json.dumps(data).encode()
            dst.writestr(item, content)
    return path


def sb3_minimal(path: Path, marker: Path) -> Path:
    """A zip shaped like an SB3 checkpoint (an observation size of a 4-seat table) whose
    ``data`` pickles the payload."""
    space = {**_serialized(marker), "_shape": [layout(4).size]}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data", json.dumps({"observation_space": space}))
    return path


def torch_payload(path: Path, marker: Path) -> Path:
    """A checkpoint of the self-play format with a pickled object in it."""
    torch.save({"format": CHECKPOINT_FORMAT, "config": {}, "model": {},
                "history": [_Payload(marker)]}, path)
    return path


def npz_payload(path: Path, marker: Path) -> Path:
    """A policy file with an object array (pickled) among its members."""
    size, h = layout(4).size, 4
    arrays = {"w0": np.zeros((size, h), np.float32), "b0": np.zeros(h, np.float32),
              "pi_w": np.zeros((h, NUM_ACTIONS), np.float32),
              "pi_b": np.array([_Payload(marker)], dtype=object),
              "v_w": np.zeros((h, 1), np.float32), "v_b": np.zeros(1, np.float32),
              "meta": np.frombuffer(json.dumps({"format": "dragons-egg-policy", "version": 1,
                                                "max_players": 4}).encode(), np.uint8)}
    np.savez(path, **arrays)
    return path


@pytest.fixture
def payloads(tmp_path):
    marker = tmp_path / "payload-ran"
    files = {"sb3": sb3_tampered(tmp_path / "tampered.zip", marker),
             "sb3-minimal": sb3_minimal(tmp_path / "minimal.zip", marker),
             "sb3-as-npz": sb3_tampered(tmp_path / "disguised.npz", marker),
             "torch": torch_payload(tmp_path / "payload.pt", marker),
             "npz": npz_payload(tmp_path / "payload.npz", marker)}
    PPO._CACHE.clear()
    yield marker, files
    PPO._CACHE.clear()
    assert not marker.exists(), "a payload ran"


def test_the_payloads_are_live(payloads, capsys):
    """Each payload runs when its file is loaded the unsafe way, or with the trust option:
    the refusals below are what keep them from running."""
    marker, f = payloads
    make_agent(f"ppo:path={f['sb3']},trust=1", seed=0)  # trusted: SB3 loads it, and it plays
    assert marker.exists()
    marker.unlink()
    with pytest.raises(AgentSpecError, match="could not be loaded"):
        make_agent(f"ppo:path={f['sb3-minimal']},trust=1", seed=0)
    assert marker.exists()
    marker.unlink()
    with pytest.raises(ValueError, match="is not a self-play checkpoint"):
        load_checkpoint(f["torch"], trust=True)  # too late: it ran when it was read
    assert marker.exists() and str(f["torch"]) in capsys.readouterr().err  # warned
    marker.unlink()
    with np.load(f["npz"], allow_pickle=True) as z:
        z["pi_b"]
    assert marker.exists()
    marker.unlink()


SPEC_REFUSALS = {
    "sb3": "is a Stable-Baselines3 zip, and loading one runs code stored in it (pickle): load "
           "it only if you trust where it came from, with ppo:path=",
    "sb3-minimal": "runs code stored in it",
    "sb3-as-npz": "but holds a Stable-Baselines3 checkpoint, which runs code when loaded: it is "
                  "not loaded from a .npz name",
    "npz": "member pi_b holds Python objects (pickled); a policy file holds numbers only",
}


@pytest.mark.parametrize("kind", list(SPEC_REFUSALS))
def test_agent_specs_refuse_the_payloads(payloads, kind):
    marker, f = payloads
    specs = [f"ppo:path={f[kind]}"]
    if kind == "sb3-as-npz":
        specs.append(f"ppo:path={f[kind]},trust=1")  # a .npz name never reaches SB3
    if kind in ("npz", "sb3-as-npz"):
        specs.append(f"net:path={f[kind]}")
    for spec in specs:
        for use in (parse_spec, make_agent, AgentSpec):
            with pytest.raises(AgentSpecError) as exc:
                use(spec)
            msg = str(exc.value)
            assert "\n" not in msg and str(f[kind]) in msg, msg
            if spec.startswith("ppo:"):
                assert SPEC_REFUSALS[kind] in msg, msg


def test_ppo_0_1_loads_by_digest_and_refuses_an_altered_file(payloads, monkeypatch, tmp_path):
    marker, f = payloads
    assert PPO.file_sha256(PPO.PREVIOUS) == PPO.PREVIOUS_SHA256
    copy = shutil.copy(PPO.PREVIOUS, tmp_path / "copy.zip")
    assert make_agent(f"ppo:path={copy}", seed=0).format == "sb3"  # the same bytes: no trust
    monkeypatch.setattr(PPO, "PREVIOUS", f["sb3"])  # the package's file, altered
    for use in (parse_spec, make_agent):
        with pytest.raises(AgentSpecError) as exc:
            use("ppo-0.1")
        assert str(exc.value) == (
            f"ppo-0.1: the package's tampered.zip ({f['sb3']}) does not match the sha256 "
            "recorded for it (dragons_egg.agents.ppo.PREVIOUS_SHA256): it was altered or "
            "damaged, and an SB3 checkpoint runs code when loaded; reinstall the package")
    with pytest.raises(PPO.UntrustedCheckpointError):
        PPO.load_policy(f["sb3"])


def _exit_2(call, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        call()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if "error: " in ln]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("kind", list(SPEC_REFUSALS))
def test_tournament_and_play_refuse_the_payloads(payloads, kind, tmp_path, capsys):
    marker, f = payloads
    spec = f"ppo:path={f[kind]}"
    line = _exit_2(lambda: cli_main(["tournament", spec, "random", "--matches", "4", "--rounds",
                                     "1", "--workers", "1", "--out", str(tmp_path / "t")]),
                   capsys)
    assert str(f[kind]) in line
    line = _exit_2(lambda: cli_main(["play", "--bots", spec, "random", "--save",
                                     str(tmp_path / "m.json")], read=lambda p: "q"), capsys)
    assert str(f[kind]) in line


def test_the_issues_tournament_with_a_tampered_copy_exits_2(payloads, tmp_path):
    """The issue: a copy of the shipped SB3 agent with a payload played a normal tournament,
    exited with status 0 and ran the payload."""
    marker, f = payloads
    proc = subprocess.run([str(DRAGONS_EGG), "tournament", f"ppo:path={f['sb3']}", "heuristic",
                           "--matches", "4", "--rounds", "1", "--workers", "1",
                           "--no-progress", "--out", str(tmp_path / "t")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert "runs code stored in it" in proc.stderr.splitlines()[-1]
    assert not (tmp_path / "t").exists()


def test_selfplay_refuses_the_payloads(payloads, capsys):
    marker, f = payloads
    line = _exit_2(lambda: selfplay.parse_args(["--resume", str(f["torch"])]), capsys)
    assert line == (f"error: --resume: checkpoint {f['torch']} is in the old format, whose "
                    "loading unpickles Python objects and so runs any code stored in the file; "
                    "if you trust where it came from, load it with --trust-checkpoint (the "
                    "next checkpoint is saved in the new format)")
    _exit_2(lambda: selfplay.main(["--resume", str(f["torch"])]), capsys)
    line = _exit_2(lambda: selfplay.parse_args(["--resume", str(f["sb3"])]), capsys)
    assert "could not be read" in line
    for argv in (["--eval-opponents", f"ppo:path={f['sb3']}"],
                 ["--league-agents", f"net:path={f['npz']}"]):
        line = _exit_2(lambda argv=argv: selfplay.parse_args(argv), capsys)
        assert argv[1].partition("=")[2] in line


def test_ship_refuses_the_payloads(payloads, tmp_path, capsys):
    marker, f = payloads
    for kind, needle in (("torch", "--trust-checkpoint"), ("npz", "holds Python objects"),
                         ("sb3-as-npz", "could not be read"), ("sb3", "could not be read")):
        line = _exit_2(lambda kind=kind: ship.main([str(f[kind]), "--dest",
                                                    str(tmp_path / "out.npz")]), capsys)
        assert needle in line and str(f[kind]) in line, line
    assert not (tmp_path / "out.npz").exists()


def test_train_ppo_refuses_the_payloads(payloads, capsys):
    marker, f = payloads
    for kind in ("sb3", "sb3-minimal"):
        line = _exit_2(lambda kind=kind: train_ppo.main(["--resume", str(f[kind])]), capsys)
        assert line.endswith(f"error: --resume: checkpoint {f[kind]} is a Stable-Baselines3 "
                             "zip, and loading one runs code stored in it (pickle): load it "
                             "only if you trust where it came from, with --trust-checkpoint")
    line = _exit_2(lambda: train_ppo.main(["--resume", str(f["sb3-as-npz"])]), capsys)
    assert "it is not loaded from a .npz name" in line
    for flag in ("--opponents", "--eval-opponents"):
        line = _exit_2(lambda flag=flag: train_ppo.main([flag, f"ppo:path={f['sb3']}"]),
                       capsys)
        assert "runs code stored in it" in line


# ---------------------------------------------------------------------------------------
# Self-play checkpoints: plain data, a digest, CRCs, finite weights, the old format.

def _checkpoint(tmp_path, name="r", nan=False) -> Path:
    run = Run(tiny(tmp_path, run_name=name))
    run.iteration()
    # an evaluation row as the evaluator makes it (numpy numbers, an interval left out)
    run.history.append({"samples": run.samples, "seconds": 1.0, "mean_score": np.float64(0.25),
                        "score_low": float("nan")})
    if nan:
        with torch.no_grad():
            run.learner.model.pi.weight[0, 0] = float("nan")
    return run.save()


def test_a_checkpoint_holds_tensors_and_plain_data_and_a_digest(tmp_path):
    path = _checkpoint(tmp_path)
    state = torch.load(path, map_location="cpu", weights_only=True)  # no object unpickled
    assert state["version"] == CHECKPOINT_VERSION == 2
    assert state["digest"] == state_digest(state)
    assert state["history"][-1]["mean_score"] == 0.25
    assert type(state["history"][-1]["mean_score"]) is float
    again = Run(tiny(tmp_path, run_name="r"), resume=str(path))
    assert again.history[-1]["samples"] == state["samples"]


def _data_offset(path: Path, member: str) -> tuple[zipfile.ZipInfo, int]:
    with zipfile.ZipFile(path) as z:
        info = next(i for i in z.infolist() if i.filename.endswith(member))
    raw = path.read_bytes()
    n, m = struct.unpack_from("<HH", raw, info.header_offset + 26)
    return info, info.header_offset + 30 + n + m


def _set_nan(path: Path, fix_crc: bool = False) -> None:
    """One float of the first stored tensor set to NaN, as a bad disk or copy would; with
    ``fix_crc`` the zip's CRC-32 is made to match (as a deliberate edit would)."""
    info, off = _data_offset(path, "/data/0")
    raw = bytearray(path.read_bytes())
    struct.pack_into("<f", raw, off, float("nan"))
    if fix_crc:
        crc = zlib.crc32(bytes(raw[off:off + info.file_size]))
        struct.pack_into("<I", raw, info.header_offset + 14, crc)
        cd = raw.index(b"PK\x01\x02")
        while True:
            n = struct.unpack_from("<H", raw, cd + 28)[0]
            if raw[cd + 46:cd + 46 + n] == info.filename.encode():
                struct.pack_into("<I", raw, cd + 16, crc)
                break
            cd = raw.index(b"PK\x01\x02", cd + 1)
    path.write_bytes(raw)


def test_a_float_set_to_nan_in_a_checkpoint_is_caught(tmp_path, capsys):
    """The issue: torch does not check CRCs, so the damaged file loaded and a resume ran on."""
    path = _checkpoint(tmp_path)
    _set_nan(path)
    state = torch.load(path, map_location="cpu", weights_only=True)
    assert torch.isnan(state["model"]["trunk.0.weight"]).any()  # torch alone: silent
    with pytest.raises(ValueError) as exc:
        load_checkpoint(path)
    assert str(exc.value) == (f"checkpoint {path} is damaged: its member "
                              "latest.pt/data/0 fails its CRC-32 check")
    line = _exit_2(lambda: selfplay.parse_args(["--resume", str(path)]), capsys)
    assert "fails its CRC-32 check" in line
    line = _exit_2(lambda: ship.main([str(path), "--dest", str(tmp_path / "x.npz")]), capsys)
    assert "fails its CRC-32 check" in line
    _set_nan(path, fix_crc=True)  # the zip is consistent again: the digest catches it
    with pytest.raises(ValueError, match=r"is damaged or was altered: its contents do not "
                                         r"match the digest it records \(sha256:"):
        load_checkpoint(path)


def test_nan_weights_in_a_checkpoint_are_refused_and_not_shipped(tmp_path, capsys):
    path = _checkpoint(tmp_path, nan=True)  # a consistent file (CRCs, digest) with NaN weights
    with pytest.raises(ValueError) as exc:
        load_checkpoint(path)
    assert str(exc.value) == (f"checkpoint {path}: its weight pi.weight holds values that are "
                              "not finite (NaN or infinity)")
    line = _exit_2(lambda: ship.main([str(path), "--dest", str(tmp_path / "x.npz")]), capsys)
    assert "not finite" in line and str(path) in line
    line = _exit_2(lambda: selfplay.parse_args(["--resume", str(path)]), capsys)
    assert "not finite" in line
    assert not (tmp_path / "x.npz").exists()


def test_ship_refuses_a_policy_file_with_nan_weights(tmp_path, capsys):
    size, h = layout(4).size, 4
    w = np.zeros((h, NUM_ACTIONS), np.float32)
    w[1, 2] = np.nan
    path = tmp_path / "nan.npz"
    np.savez(path, w0=np.zeros((size, h), np.float32), b0=np.zeros(h, np.float32), pi_w=w,
             pi_b=np.zeros(NUM_ACTIONS, np.float32), v_w=np.zeros((h, 1), np.float32),
             v_b=np.zeros(1, np.float32),
             meta=np.frombuffer(json.dumps({"format": "dragons-egg-policy", "version": 1,
                                            "max_players": 4}).encode(), np.uint8))
    line = _exit_2(lambda: ship.main([str(path), "--dest", str(tmp_path / "x.npz")]), capsys)
    assert line.endswith(f"error: policy file {path}: its array pi_w holds values that are not "
                         "finite (NaN or infinity); a policy's weights are finite")
    assert not (tmp_path / "x.npz").exists()
    with pytest.raises(ValueError, match="refusing to write policy file"):
        NetPolicy([(np.zeros((size, h), np.float32), np.zeros(h, np.float32))],
                  (w, np.zeros(NUM_ACTIONS, np.float32)),
                  (np.zeros((h, 1), np.float32), np.zeros(1, np.float32)),
                  {"max_players": 4}).save(tmp_path / "y.npz")


def _old_format(path: Path) -> Path:
    """``path`` written again as checkpoints were before: pickled objects (an OrderedDict, a
    tuple, numpy numbers), no version, no digest."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    state = {k: v for k, v in state.items() if k not in ("version", "digest")}
    state["history"][-1]["mean_score"] = np.float64(0.25)  # not a plain value
    old = path.with_name("old.pt")
    torch.save(state, old)
    return old


def test_an_old_checkpoint_loads_only_with_trust_checkpoint(tmp_path, capsys):
    old = _old_format(_checkpoint(tmp_path))
    line = _exit_2(lambda: selfplay.parse_args(["--resume", str(old)]), capsys)
    assert "is in the old format" in line and "--trust-checkpoint" in line
    line = _exit_2(lambda: ship.main([str(old), "--dest", str(tmp_path / "x.npz")]), capsys)
    assert "is in the old format" in line
    cfg, resume = selfplay.parse_args(["--resume", str(old), "--trust-checkpoint"])[:2]
    err = capsys.readouterr().err
    assert (f"warning: loading checkpoint {old} with --trust-checkpoint: it is in the old "
            "format, and loading it runs any code stored in it") in err
    assert f"warning: checkpoint {old} records no digest" in err
    run = Run(cfg, resume, trust_checkpoint=True)
    new = run.save()  # the next checkpoint is of the new format
    assert torch.load(new, weights_only=True)["digest"] == state_digest(load_checkpoint(new))
    assert ship.main([str(old), "--dest", str(tmp_path / "x.npz"), "--trust-checkpoint"]) == 0
    assert (tmp_path / "x.npz").is_file()


# ---------------------------------------------------------------------------------------
# A zip bomb (issue 47, 3): a small checkpoint whose member inflates to a gigabyte.

BOMB_PROBE = """
import sys, time
import torch  # imported before the clock starts: what is timed is the refusal
from dragons_egg.experiments.training.checkpoint import load_checkpoint
t = time.perf_counter()
try:
    load_checkpoint(sys.argv[1])
except ValueError as exc:
    print("refused:", exc)
print(time.perf_counter() - t)
# VmHWM: this process's peak resident memory (kB), from its exec on (ru_maxrss
# keeps the forking test worker's, Linux keeps it across exec)
print(next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')))
"""


def deflated_bomb(path: Path, inflated: int = 2**30) -> Path:
    torch.save({"format": "dragons-egg-selfplay", "version": 2}, path)
    chunk = bytes(1 << 20)
    info = zipfile.ZipInfo(f"{path.stem}/data/99")
    info.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "a") as z, z.open(info, "w", force_zip64=True) as f:
        for _ in range(inflated // len(chunk)):
            f.write(chunk)
    return path


def test_a_zip_bomb_checkpoint_is_refused_before_it_is_decompressed(tmp_path):
    """A 1 MB checkpoint whose member inflates to 1 GiB is refused from the sizes its zip
    declares, in a fraction of a second and well under 1 GB of memory (the check before
    decompressed it: the issue's 2.1 MB file cost 4.1 GB and 30 s before its digest refused
    it)."""
    bomb = deflated_bomb(tmp_path / "latest.pt")
    assert bomb.stat().st_size < 2 * 2**20
    out = subprocess.run([sys.executable, "-c", BOMB_PROBE, str(bomb)], capture_output=True,
                         text=True, timeout=120, check=True).stdout.splitlines()
    assert out[0].startswith(f"refused: checkpoint {bomb} is refused: its members declare ")
    assert "more than 4x its" in out[0] and "latest/data/99" in out[0]
    assert float(out[1]) < 5.0  # decompressing the gigabyte took longer than that
    assert int(out[2]) * 1024 < 1e9  # VmHWM, kB


def test_a_real_checkpoint_is_within_the_size_cap(tmp_path):
    """The cap refuses nothing torch writes: a run's own checkpoint loads."""
    run = Run(tiny(tmp_path, total_samples=64))
    path = run.save()
    assert load_checkpoint(path)["format"] == "dragons-egg-selfplay"
