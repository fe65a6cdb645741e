"""The self-play trainer's collectors on Ray (``experiments/training/distributed.py``): the
synchronous mode is the in-process trainer update for update, the pipelined one learns with
one version of lag, a killed collector is restarted and its rollout dropped, a killed learner
resumes from its checkpoint, and a two-node cluster on this machine trains with a collector
on each node. Every Ray process here is on loopback (``tests/conftest.py``), and a stale
cluster file is left where Ray looks for one (``support.stale_ray_cluster``)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("numba")
ray = pytest.importorskip("ray")

from support import stale_ray_cluster, tiny  # noqa: E402

from dragons_egg.experiments.training.checkpoint import load_checkpoint  # noqa: E402
from dragons_egg.experiments.training.distributed import (  # noqa: E402
    model_weights,
    resolve_collectors,
)
from dragons_egg.experiments.training.selfplay import Run  # noqa: E402

LEAGUE = {"opponent_share": 0.5, "league_agents": ("heuristic",)}
#: A tiny run's flags (144 learner samples a rollout without a league).
SP = ["--table-sizes", "2", "3", "--envs-per-size", "6", "--rollout-steps", "12", "--hidden",
      "16", "--epochs", "1", "--minibatch", "32", "--num-rounds", "1", "--eval-every", "0",
      "--no-progress"]


@pytest.fixture(scope="module", autouse=True)
def stale_cluster_file():
    with stale_ray_cluster():
        yield


def _updates(tmp_path, name, n=2, **kw):
    run = Run(tiny(tmp_path, run_name=name, **kw))
    try:
        stats = [run.iteration() for _ in range(n)]
        return model_weights(run.learner.model), stats, run
    finally:
        run.close()


def _same(a, b):
    return all(np.array_equal(a[k], b[k]) for k in a)


def test_the_synchronous_collector_is_the_in_process_trainer(tmp_path):
    """One collector, no overlap: the same engines, seat draws, league and action samples,
    so the same updates; pipelined, the rollouts are one version old and the weights part."""
    inproc, _, _ = _updates(tmp_path, "in", collectors=0, **LEAGUE)
    sync, stats, run = _updates(tmp_path, "sync", collectors=1, pipeline=False, **LEAGUE)
    assert _same(inproc, sync)
    assert [s["lag"] for s in stats] == [0, 0]
    assert run.placement == {"collectors": 1, "pipeline": False,
                             "learner_threads": max(1, os.cpu_count() or 1), "address": ""}
    piped, stats, _ = _updates(tmp_path, "piped", collectors=1, **LEAGUE)
    assert [s["lag"] for s in stats] == [0, 1]  # the second rollout began before update 1
    assert not _same(inproc, piped)


def test_a_pipelined_run_evaluates_checkpoints_and_says_its_placement(tmp_path, capfd):
    cfg = tiny(tmp_path, run_name="p", collectors=2, total_samples=432, eval_every=288,
               eval_opponents=("random",), eval_players=2, eval_matches=4, num_rounds=1,
               checkpoint_every=144)
    run = Run(cfg)
    run.train()
    err = capfd.readouterr().err
    assert "placement: 2 collector(s) on a private local Ray instance (pipelined" in err
    summary = json.loads((run.dir / "summary.json").read_text())
    assert summary["samples"] == 432
    assert summary["placement"]["collectors"] == 2 and summary["placement"]["pipeline"]
    assert summary["placement"]["dropped_rollouts"] == 0
    assert [h["samples"] for h in summary["history"]] == [288, 432]
    assert run.remote is None and not ray.is_initialized()  # train() stopped what it started


def test_a_killed_collector_is_restarted_and_its_rollout_dropped(tmp_path, capfd):
    # long rollouts (3,000 steps) and quick updates (one minibatch), so that the next rollout
    # is still being collected when the learner has updated on the last: a finished one is
    # already safe in the object store
    run = Run(tiny(tmp_path, run_name="k", collectors=1, rollout_steps=3000, minibatch=40000))
    per = 3000 * 12
    try:
        run.iteration()
        samples = run.samples
        (pid,) = run.remote.pids
        assert run.remote.busy_here() == 1  # the next rollout is in flight
        os.kill(pid, signal.SIGKILL)  # the actor's process, mid-rollout
        run.iteration()
        assert run.remote.dropped == 1 and run.samples == samples + per
        assert len(run.remote.pids) == 2  # its rollouts now come from a new process
        assert run.remote.busy_here() == 1
        ray.kill(run.remote.actors[0], no_restart=False)  # the same through Ray
        stats = run.iteration()
        assert run.remote.dropped == 2 and stats["dropped"] == 2
        assert run.samples == samples + 2 * per
    finally:
        run.close()
    err = capfd.readouterr().err
    assert err.count("collector 0 died") == 2 and "dropped and Ray restarts it" in err


def _children(pid):
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _stop(pids):
    """Kill what is left of these processes (by id), and wait for them."""
    import psutil

    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            continue
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=30)


def test_a_killed_learner_resumes_from_its_last_checkpoint(tmp_path):
    """SIGKILL on the trainer between checkpoints: --resume continues from the checkpoint's
    samples, so no sample is counted twice."""
    from dragons_egg.experiments.training import selfplay

    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "dragons_egg.experiments.training.selfplay", *SP,
           "--collectors", "1", "--total-samples", "1000000", "--checkpoint-every", "288",
           "--out-dir", str(out), "--run-name", "k"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ckpt = out / "k" / "checkpoints" / "latest.pt"
    family: set[int] = set()
    try:
        deadline = time.time() + 240
        while not ckpt.is_file() and time.time() < deadline and proc.poll() is None:
            family.update(_children(proc.pid))
            time.sleep(0.2)
        assert ckpt.is_file(), proc.stderr.read() if proc.poll() is not None else "no checkpoint"
        time.sleep(1.0)  # past the checkpoint: updates that no checkpoint holds
        family.update(_children(proc.pid))
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        time.sleep(2)  # Ray's own processes share the driver's fate; any left are stopped
        _stop(family)
    saved = load_checkpoint(ckpt)["samples"]
    assert saved >= 288 and saved % 144 == 0
    target = saved + 288
    assert selfplay.main(["--resume", str(ckpt), "--total-samples", str(target)]) == 0
    summary = json.loads((out / "k" / "summary.json").read_text())
    assert summary["samples"] == target  # resumed at `saved`: two more rollouts, not more
    history = json.loads((out / "k" / "config_history.json").read_text())
    assert [h["event"] for h in history] == ["start", "resume"]
    assert history[1]["samples"] == saved


#: The cluster test's nodes' address (loopback: all of 127.0.0.0/8 is this machine).
HOST = "127.0.0.2"


def _free_port(host):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def test_a_two_node_cluster_on_this_machine_trains_with_a_collector_on_each(tmp_path):
    """``ray start --head`` and ``ray start --address`` (a free port, a temp dir of their
    own), then the trainer joins with ``--address`` and two collectors, spread over both
    nodes; the nodes are stopped by the ids of the processes this test started. The nodes
    are on 127.0.0.2, a loopback address: Ray takes 127.0.0.1 for "this machine" and swaps in
    the machine's network address, which a test must not send traffic to; multi-node
    clusters need ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=1``."""
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    if not os.path.exists(ray_bin):
        pytest.skip("the ray command is not installed beside this Python")
    with stale_ray_cluster() as tmp:
        env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_TMPDIR": tmp,
               "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "1"}
        port = _free_port(HOST)
        address = f"{HOST}:{port}"
        common = [f"--node-ip-address={HOST}", "--num-cpus", "1", "--block",
                  "--disable-usage-stats"]
        nodes = [subprocess.Popen([ray_bin, "start", "--head", "--port", str(port),
                                   "--include-dashboard=false", *common], env=env,
                                  start_new_session=True, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)]
        family: set[int] = set()
        try:
            _wait_nodes(address, 1, env)
            nodes.append(subprocess.Popen([ray_bin, "start", "--address", address, *common],
                                          env=env, start_new_session=True,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            _wait_nodes(address, 2, env)
            out = tmp_path / "runs"
            res = subprocess.run(
                [sys.executable, "-m", "dragons_egg.experiments.training.selfplay", *SP,
                 "--collectors", "2", "--address", address, "--total-samples", "576",
                 "--out-dir", str(out), "--run-name", "c"], env=env, capture_output=True,
                text=True, timeout=300)
            assert res.returncode == 0, res.stderr
            summary = json.loads((out / "c" / "summary.json").read_text())
            assert summary["samples"] == 576
            assert summary["placement"]["collectors"] == 2
            assert summary["placement"]["collector_nodes"] == 2  # one collector on each node
            assert f"2 collector(s) on {address}" in res.stderr
            for p in nodes:
                family.update(_children(p.pid))
        finally:
            for p in nodes:
                family.update(_children(p.pid))
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)  # ray start --block stops its processes
            for p in nodes:
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(timeout=30)
            _stop(family)


def _wait_nodes(address, n, env, timeout=120):
    code = ("import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False); "
            "print(sum(1 for x in ray.nodes() if x['Alive'])); ray.shutdown()")
    deadline = time.time() + timeout
    while time.time() < deadline:
        res = subprocess.run([sys.executable, "-c", code, address], env=env,
                             capture_output=True, text=True, timeout=120)
        if res.returncode == 0 and res.stdout.strip().splitlines()[-1:] == [str(n)]:
            return
        time.sleep(1)
    raise AssertionError(f"the cluster at {address} did not reach {n} node(s)")


def test_auto_is_one_collector_with_ray_and_two_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert resolve_collectors(-1) == 1
    assert resolve_collectors(0) == 0 and resolve_collectors(3) == 3
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert resolve_collectors(-1) == 0
    assert resolve_collectors(-1, "auto") == 1  # a cluster to join


def test_collectors_without_ray_are_an_error_naming_the_extra(tmp_path, monkeypatch):
    from dragons_egg.experiments.training import distributed, settings

    monkeypatch.setattr(distributed, "ray_available", lambda: False)  # resolve_collectors
    monkeypatch.setattr(settings, "ray_available", lambda: False)  # validate
    for kw in ({"collectors": 2}, {"collectors": -1, "address": "auto"}):
        with pytest.raises(ValueError, match=r"need the 'rllib' extra"):
            tiny(tmp_path, **kw).validate()
    tiny(tmp_path, collectors=-1).validate()  # auto: in process, without Ray
    assert resolve_collectors(-1) == 0


def test_bad_collector_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="collectors must be >= -1"):
        tiny(tmp_path, collectors=-2).validate()
    with pytest.raises(ValueError, match="needs collectors"):
        tiny(tmp_path, collectors=0, address="auto").validate()
