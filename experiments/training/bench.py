"""Training throughput, measured in one run: the batched self-play trainer
(``dragons_egg.experiments.training.selfplay``) in every placement of collection and learning
over this machine's cores, the parts those placements are made of, and the SB3 MaskablePPO
trainer (``dragons_egg.experiments.training.train_ppo``) beside it.

``dragons-egg train-bench [--seconds 60] [--epochs 4] [--json PATH] [--no-sb3]``

**Placements** (one row each, ``samples_per_s`` = learner samples, the decisions trained on,
per second of wall time, collection and updates included, evaluation excluded, each after a
warm-up that compiles the engine's kernels and starts Ray):

- ``in_process``: today's trainer on one core: collect, then update, one torch thread;
- ``in_process_2threads``: the same, torch on two threads (intra-op parallelism);
- ``ray_1_pipelined``: one collector actor, its next rollout collected while the learner (in
  the driver) updates on the last, on the cores the collector leaves (both while it is idle,
  one while it works): the trainer's default here (``--collectors -1``);
- ``ray_2_pipelined``: two collector actors, the learner on the cores they leave;
- ``ray_1_sync``: one collector actor, no overlap (the in-process trainer's updates exactly),
  the learner on every core while the collector waits.

**Parts**, each alone: one collector's samples/s (engines and inference on one thread); the
learner's update samples/s on one thread, on two, and as two data-parallel workers (two
processes, one thread each, gradients averaged with ``torch.distributed``'s gloo backend on
loopback). From them, :func:`scaling_model` predicts the rate on ``N`` cores: collectors add
up until the learner saturates, then data-parallel learners take it from there.

Every placement runs the shipped settings' shape (every table size, 128 matches each, 64 steps,
a 256x256 network) with ``--epochs`` passes per rollout (4, as the shipped run). Run it on an
otherwise idle machine: the placements share its cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.args import int_range, positive_float
from dragons_egg.experiments.common.files import write_atomically
from dragons_egg.experiments.common.settings import replace_paths
from dragons_egg_env.extras import require_cli

#: name -> (collectors, pipeline, torch_threads); with collectors the learner takes the cores
#: they leave, whatever torch_threads says below that (``selfplay.placement``)
PLACEMENTS: dict[str, tuple[int, bool, int]] = {
    "in_process": (0, True, 1),
    "in_process_2threads": (0, True, 2),
    "ray_1_pipelined": (1, True, 1),
    "ray_2_pipelined": (2, True, 1),
    "ray_1_sync": (1, False, 1),
}


def _config(out: Path, name: str, epochs: int, collectors: int = 0, pipeline: bool = True,
            threads: int = 1) -> Any:
    from dragons_egg.experiments.training.selfplay import SelfPlayConfig

    return SelfPlayConfig.from_dict(dict(  # flat: the groups' settings by name
        total_samples=10**12, eval_every=0, eval_opponents=(), checkpoint_every=0,
        torch_threads=threads, out_dir=str(out), run_name=name, progress=False, epochs=epochs,
        collectors=collectors, pipeline=pipeline))


def _timed(run: Any, seconds: float, warmups: int = 1) -> tuple[int, float, list[Any]]:
    """``run``'s updates for about ``seconds`` after ``warmups`` (kernels compiled or loaded
    from the cache, actors up): the learner samples, the wall seconds, each update's figures."""
    for _ in range(warmups):
        run.iteration()
    start_samples, start = run.samples, time.perf_counter()
    stats = []
    while time.perf_counter() - start < seconds:
        stats.append(run.iteration())
    return run.samples - start_samples, time.perf_counter() - start, stats


def bench_placement(name: str, seconds: float, epochs: int, out: Path) -> dict[str, Any]:
    """One placement (:data:`PLACEMENTS`) timed for about ``seconds`` after a warm-up
    update: its samples/s, and per update the learner's wait for a rollout, its update
    seconds, the collector's busy seconds and the rollout's lag."""
    from dragons_egg.experiments.training.selfplay import Run

    collectors, pipeline, threads = PLACEMENTS[name]
    run = Run(_config(out, name, epochs, collectors, pipeline, threads))
    try:
        # with collectors, a second warm-up: the first rollout was collected before the clock
        n, wall, stats = _timed(run, seconds, warmups=2 if collectors else 1)
    finally:
        run.close()

    def mean(key: str) -> float | None:
        vals = [s[key] for s in stats if key in s]
        return sum(vals) / len(vals) if vals else None

    return {"placement": name, "collectors": collectors, "pipeline": pipeline,
            "learner_threads": run.placement["learner_threads"], "samples": n, "seconds": wall,
            "samples_per_s": n / wall, "updates": len(stats),
            "learner_wait_s": mean("collect_s"), "update_s": mean("update_s"),
            "collector_busy_s": mean("collector_s"), "lag": mean("lag")}


def collector_rate(seconds: float, epochs: int, out: Path) -> dict[str, Any]:
    """One collector alone (engines and the policy's inference on one thread): learner
    samples collected per second."""
    import torch

    from dragons_egg.experiments.training.distributed import CollectorWorker, model_weights
    from dragons_egg.experiments.training.network import build_network

    torch.set_num_threads(1)
    cfg = _config(out, "collector", epochs)
    worker = CollectorWorker(dataclasses.asdict(cfg), 0, 0)
    weights = model_weights(build_network(cfg))
    worker.collect(weights, (0, []))  # warm-up
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        ro, _ = worker.collect(weights, (0, []))
        n += int(ro.learner.sum())
    wall = time.perf_counter() - start
    return {"samples_per_s": n / wall, "samples": n, "seconds": wall}


def _rollout(out: Path, epochs: int) -> Path:
    """One rollout of the shipped shape, with its advantages, saved for the learner parts."""
    import numpy as np

    from dragons_egg.experiments.training.rollout import advantages
    from dragons_egg.experiments.training.selfplay import Run

    cfg = _config(out, "parts", epochs)
    run = Run(cfg)
    assert run.collector is not None  # collectors = 0: the run's own collector
    ro, _ = run.collector.collect(run.acting.act, run._snapshot_fns(), run.acting.value)
    adv = advantages(ro, cfg.collection.rollout_steps, run.batch, cfg.ppo.gamma, cfg.ppo.gae_lambda)
    path = out / "rollout.npz"
    np.savez(path, adv=adv, **dataclasses.asdict(ro))
    return path


def _load_rollout(path: Path) -> tuple[Any, Any]:
    import numpy as np

    from dragons_egg.experiments.training.rollout import Rollout

    with np.load(path) as z:
        adv = z["adv"]
        ro = Rollout(**{k: z[k] for k in z.files if k != "adv"})
    return ro, adv


def _shard(ro: Any, adv: Any, rank: int, world: int) -> tuple[Any, Any]:
    """Rank ``rank``'s share of a rollout's learner decisions (every ``world``-th)."""
    import numpy as np

    idx = np.flatnonzero(ro.learner)[rank::world]
    keep = np.zeros(len(ro.learner), np.bool_)
    keep[idx] = True
    return dataclasses.replace(ro, learner=keep), adv


def learner_rate(path: Path, epochs: int, threads: int, repeats: int = 2) -> dict[str, Any]:
    """The learner's update alone on ``threads`` torch threads: learner samples per second of
    update."""
    import torch

    from dragons_egg.experiments.training.learner import Learner

    torch.set_num_threads(threads)
    ro, adv = _load_rollout(path)
    learner = Learner(_config(path.parent, "learner", epochs, threads=threads))
    learner.update(ro, adv)  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        learner.update(ro, adv)
    wall = time.perf_counter() - start
    n = int(ro.learner.sum()) * repeats
    return {"samples_per_s": n / wall, "update_s": wall / repeats, "threads": threads}


def _ddp_worker(rank: int, world: int, port: int, path: str, epochs: int, repeats: int,
                result: Any) -> None:
    import torch
    import torch.distributed as dist

    from dragons_egg.experiments.training.learner import Learner

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    ro, adv = _load_rollout(Path(path))
    ro, adv = _shard(ro, adv, rank, world)
    cfg = _config(Path(path).parent, "ddp", epochs, threads=1)
    cfg = replace_paths(cfg, {"ppo.minibatch": cfg.ppo.minibatch // world})  # the same global batch
    learner = Learner(cfg)
    params = list(learner.model.parameters())

    def average() -> None:
        for p in params:
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= world

    learner.after_backward = average
    learner.update(ro, adv)  # warm-up
    dist.barrier()
    start = time.perf_counter()
    for _ in range(repeats):
        learner.update(ro, adv)
    dist.barrier()
    wall = time.perf_counter() - start
    if rank == 0:
        result.put(wall / repeats)
    dist.destroy_process_group()


def ddp_learner_rate(path: Path, epochs: int, world: int = 2, repeats: int = 2
                     ) -> dict[str, Any]:
    """The learner's update as ``world`` data-parallel workers (processes on one thread
    each, gradients averaged by gloo all-reduce on loopback, each worker a share of every
    minibatch): learner samples per second of update."""
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    procs = [ctx.Process(target=_ddp_worker, args=(r, world, port, str(path), epochs, repeats,
                                                    result)) for r in range(world)]
    for p in procs:
        p.start()
    update_s = result.get(timeout=600)
    for p in procs:
        p.join(timeout=60)
    ro, _ = _load_rollout(path)
    return {"samples_per_s": int(ro.learner.sum()) / update_s, "update_s": update_s,
            "workers": world}


def scaling_model(collector: float, learner: float, learner_2: float, cores: int
                  ) -> dict[str, Any]:
    """The rate the measured parts predict on ``cores`` cores: collectors (``collector``
    samples/s each) add up until they feed the learner (``learner`` samples/s on one core);
    past that, each further pair of cores doubles the learner by data parallelism at the
    measured two-worker efficiency (``learner_2`` / (2 x ``learner``)), with one collector
    for every core the learners leave. A rate is the smaller of what the collectors bring
    and what the learners take."""
    eff = learner_2 / (2 * learner)
    best = {"cores": cores, "samples_per_s": 0.0, "collectors": 0, "learners": 0}
    for learners in range(1, cores):
        collectors = cores - learners
        learn = learner * (1 if learners == 1 else learners * eff)
        rate = min(collectors * collector, learn)
        if rate > best["samples_per_s"]:
            best = {"cores": cores, "samples_per_s": rate, "collectors": collectors,
                    "learners": learners}
    return best


def bench_selfplay(seconds: float, threads: int, out: Path, epochs: int = 2
                   ) -> dict[str, Any]:
    """Samples per second of the in-process self-play trainer with ``threads`` torch
    threads (the SB3 comparison's row)."""
    from dragons_egg.experiments.training.selfplay import Run

    run = Run(_config(out, "bench-selfplay", epochs, threads=threads))
    n, wall, stats = _timed(run, seconds)
    return {"samples": n, "seconds": wall, "samples_per_s": n / wall, "iterations": len(stats),
            "batch": run.batch, "rollout_steps": run.cfg.collection.rollout_steps, "epochs": epochs}


def bench_train_ppo(seconds: float, threads: int, out: Path) -> dict[str, Any]:
    """Samples per second of ``dragons_egg.experiments.training.train_ppo`` (SB3
    MaskablePPO, its defaults)."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.vec_env import DummyVecEnv

    from dragons_egg.experiments.training.train_ppo import TrainConfig, make_env_fn, make_model

    torch.set_num_threads(threads)
    cfg = TrainConfig(out_dir=str(out), run_name="bench-ppo", progress=False)
    venv = DummyVecEnv([make_env_fn(cfg, i) for i in range(cfg.n_envs)])
    model = make_model(cfg, venv, resume=None)  # the learner train_ppo builds, exactly
    model.set_logger(Logger(None, []))  # no output: not even SB3's empty /tmp/SB3-<time> folder

    class Stop(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.start = 0.0

        def _on_training_start(self) -> None:
            self.start = time.perf_counter()

        def _on_step(self) -> bool:
            return time.perf_counter() - self.start < seconds

    model.learn(cfg.n_steps * cfg.n_envs)  # warm-up: one rollout and one update
    before, t0 = model.num_timesteps, time.perf_counter()
    model.learn(10**12, callback=Stop(), reset_num_timesteps=False)
    wall = time.perf_counter() - t0
    venv.close()
    return {"samples": model.num_timesteps - before, "seconds": wall,
            "samples_per_s": (model.num_timesteps - before) / wall, "n_envs": cfg.n_envs,
            "n_steps": cfg.n_steps}


def _say(text: str) -> None:
    print(text, flush=True)


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog or "python -m dragons_egg.experiments.training.bench",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=positive_float, default=60.0,
                   help="wall seconds per placement and per trainer (default 60)")
    p.add_argument("--epochs", type=int_range(1), default=4,
                   help="passes over each rollout in the placements (default 4: the shipped "
                   "run's)")
    p.add_argument("--placements", default=",".join(PLACEMENTS),
                   help=f"comma-separated subset of {', '.join(PLACEMENTS)}")
    p.add_argument("--no-sb3", action="store_true",
                   help="leave out the comparison with the SB3 trainer")
    p.add_argument("--json", metavar="PATH",
                   help="also write the figures as JSON, as each part finishes (\"partial\": "
                   "true until the end); an existing file is refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the --json file if it exists")
    args = p.parse_args(argv)
    names = [n for n in args.placements.split(",") if n]
    unknown = [n for n in names if n not in PLACEMENTS]
    if unknown or not names:
        p.error(f"--placements: unknown {', '.join(unknown) or '(none given)'}; choose from "
                f"{', '.join(PLACEMENTS)}")
    require_cli(p.prog, "train")
    if any(PLACEMENTS[n][0] for n in names):
        require_cli(p.prog, "rllib")  # Ray
    json_path = _json_path(args.json, args.overwrite, p) if args.json else None

    def save(done: bool = False) -> None:
        """The figures so far, to --json (a bench cut short keeps what it measured)."""
        if json_path is not None:
            write_atomically(json_path, json.dumps({**report, "partial": not done}, indent=1))

    report: dict[str, Any] = {"epochs": args.epochs, "cores": os.cpu_count(), "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for name in names:
            _say(f"placement {name}: {args.seconds:g} s ...")
            row = bench_placement(name, args.seconds, args.epochs, out)
            report["rows"].append(row)
            save()
            _say(f"  {row['samples_per_s']:,.0f} samples/s ({row['updates']} updates)")
        _say("parts, each alone ...")
        col = collector_rate(min(args.seconds, 20.0), args.epochs, out)
        path = _rollout(out, args.epochs)
        l1 = learner_rate(path, args.epochs, 1)
        l2 = learner_rate(path, args.epochs, 2)
        ddp = ddp_learner_rate(path, args.epochs, 2)
        report["parts"] = {"collector": col, "learner_1thread": l1, "learner_2threads": l2,
                           "learner_ddp2": ddp}
        best2 = max(l2["samples_per_s"], ddp["samples_per_s"])
        report["model"] = [scaling_model(col["samples_per_s"], l1["samples_per_s"], best2, c)
                           for c in (2, 4, 8, 16, 32)]
        save()
        if not args.no_sb3:
            _say(f"SB3 trainer and the in-process trainer at 2 epochs: {args.seconds:g} s "
                 "each ...")
            sp = bench_selfplay(args.seconds, 1, out)
            ppo = bench_train_ppo(args.seconds, 1, out)
            report["selfplay"], report["train_ppo"] = sp, ppo
            report["ratio"] = sp["samples_per_s"] / ppo["samples_per_s"]
    print_report(report)
    save(done=True)
    return 0


def _json_path(path: str, overwrite: bool, parser: argparse.ArgumentParser) -> Path:
    """``--json PATH`` checked before any measuring: its folder made, an existing file (an
    earlier bench's figures) refused unless ``overwrite``."""
    out = Path(path)
    if out.is_dir():
        parser.error(f"--json {path} is a folder, not a file")
    if out.exists() and not overwrite:
        parser.error(f"--json {path} exists (an earlier bench's figures): give another path, "
                     "or --overwrite to replace it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        parser.error(f"--json {path}: cannot make its folder: {exc}")
    if not os.access(out.parent, os.W_OK):
        parser.error(f"--json {path}: its folder {out.parent} is not writable")
    return out


def print_report(report: dict[str, Any]) -> None:
    """The placements side by side (ratios to ``in_process``), the parts, the model."""
    rows = report["rows"]
    base = next((r["samples_per_s"] for r in rows if r["placement"] == "in_process"), None)
    _say(f"\nplacements ({report['epochs']} epochs, {report['cores']} cores):")
    _say(f"{'placement':<22} {'threads':>7} {'samples/s':>10} {'x in_process':>13} "
         f"{'learner wait s':>15} {'update s':>9} {'collector s':>12} {'lag':>4}")
    for r in rows:
        ratio = f"{r['samples_per_s'] / base:.2f}" if base else "-"

        def cell(key: str, fmt: str, r: dict[str, Any] = r) -> str:
            return format(r[key], fmt) if r.get(key) is not None else "-"
        _say(f"{r['placement']:<22} {r['learner_threads']:>7} {r['samples_per_s']:>10,.0f} "
             f"{ratio:>13} "
             f"{cell('learner_wait_s', '.2f'):>15} {cell('update_s', '.2f'):>9} "
             f"{cell('collector_busy_s', '.2f'):>12} {cell('lag', '.1f'):>4}")
    parts = report.get("parts")
    if parts:
        _say("\nparts alone (samples/s): collector "
             f"{parts['collector']['samples_per_s']:,.0f}; learner 1 thread "
             f"{parts['learner_1thread']['samples_per_s']:,.0f}, 2 threads "
             f"{parts['learner_2threads']['samples_per_s']:,.0f}, 2 data-parallel workers "
             f"{parts['learner_ddp2']['samples_per_s']:,.0f}")
        for m in report["model"]:
            _say(f"  predicted on {m['cores']:>2} cores: {m['samples_per_s']:,.0f} samples/s "
                 f"({m['collectors']} collectors, {m['learners']} learner workers)")
    if "ratio" in report:
        _say(f"\nin-process self-play (2 epochs) {report['selfplay']['samples_per_s']:,.0f} "
             f"samples/s, SB3 train_ppo {report['train_ppo']['samples_per_s']:,.0f}: "
             f"ratio {report['ratio']:.1f}x")


if __name__ == "__main__":
    raise SystemExit(main())
