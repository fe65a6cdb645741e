"""Multi-agent self-play on Ray RLlib (new API stack) with a league of opponents.

``main`` (a masked PPO module) learns at one seat per episode; the other seats are played by
league members: masked random and heuristic modules, plus a frozen snapshot of ``main`` added
every ``--snapshot-every`` iterations (:mod:`dragons_egg.experiments.training.rllib`).

Runs on this machine or on an existing cluster (``--address auto`` or ``ray://host:10001``);
``--num-env-runners`` and ``--num-learners`` set the sampling and learning actors. Without
``--address`` it always starts a private local instance (``ray.init(address="local")``), even
when a Ray cluster already runs on the machine, ``RAY_ADDRESS`` is set or a stale
``ray_current_cluster`` file is left by one that was killed: plain ``ray.init()`` would try to
join that cluster and refuse ``--num-cpus``. Checkpoints go to ``<out>/checkpoint_<iter>``; the
trained module is exported to ``<out>/main_module``, which the ``rllib`` agent plays
(``rllib:path=<out>/main_module``) in tournaments and in ``dragons-egg play``.

Durable as the other trainers, save that it does not resume: ``--out`` holding an earlier run
is an error unless ``--overwrite`` (which removes that run's files first); ``history.json``
holds every finished iteration as it finishes; Ctrl-C or SIGTERM lets the iteration in
progress finish (a second one stops at once), then saves a checkpoint and the module and
exits with status 130 in one line. A checkpoint loads with RLlib's own
``Algorithm.from_checkpoint``.

``python -m dragons_egg.experiments.training.train_rllib --iterations 20 --num-env-runners 1 --out
runs/rllib``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.args import int_range
from dragons_egg.experiments.common.files import write_atomically
from dragons_egg.experiments.common.runs import (
    HeldInterrupts,
    claim_output,
    sigterm_kept,
    stops_on_sigterm,
)
from dragons_egg.experiments.training.distributed import ray_init_kwargs
from dragons_egg_env.extras import require_cli


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog or "python -m dragons_egg.experiments.training.train_rllib",
        description="Self-play PPO on Ray RLlib with a league.")
    p.add_argument("--address", default=None,
                   help="join the Ray cluster at this address ('auto': the one running on "
                        "this machine; ray://host:10001); default: start a private local "
                        "instance, whatever else runs")
    p.add_argument("--num-env-runners", type=int_range(0), default=0,
                   help="remote sampling actors (0: sample in the driver)")
    p.add_argument("--num-learners", type=int_range(0), default=0,
                   help="remote learner actors (0: learn in the driver)")
    p.add_argument("--iterations", type=int_range(1), default=20)
    p.add_argument("--players", type=int_range(2, 8), default=4)
    p.add_argument("--rounds", type=int_range(1), default=3)
    p.add_argument("--train-batch-size", type=int_range(32), default=4000)
    p.add_argument("--minibatch-size", type=int_range(16), default=512)
    p.add_argument("--num-epochs", type=int_range(1), default=5)
    p.add_argument("--snapshot-every", type=int_range(0), default=5,
                   help="add a frozen copy of main to the league every N iterations")
    p.add_argument("--min-return", type=float, default=0.0,
                   help="main joins the league only while its mean return is above this")
    p.add_argument("--checkpoint-every", type=int_range(0), default=10)
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--out", default="runs/rllib",
                   help="the run's folder: checkpoints, history.json, the exported module")
    p.add_argument("--overwrite", action="store_true",
                   help="train even where --out holds an earlier run: its checkpoints, "
                        "module and history are removed first (and said)")
    p.add_argument("--num-cpus", type=int_range(1), default=None,
                   help="CPUs for a local Ray instance (default: all)")
    return p


#: What a run leaves in ``--out``: a folder holding any of them holds an earlier run.
RUN_FILES = ("checkpoint_*", "main_module", "history.json", "env_config.json")


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    require_cli(parser.prog, "rllib")
    try:
        out = claim_output(args.out, RUN_FILES, overwrite=args.overwrite, what="RLlib run",
                           clear=True).resolve()
    except ValueError as exc:
        parser.error(str(exc))
    if not args.address and "ray" not in sys.modules:
        # a private instance serves this machine only: Ray then takes 127.0.0.1 as the node's
        # address, not the machine's network one (read when ray is imported)
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    from dragons_egg.experiments.training.rllib import ppo_config
    env_config = {"num_players": args.players, "num_rounds": args.rounds}
    started = not ray.is_initialized()
    if started:
        with sigterm_kept():  # ray.init's own SIGTERM handler would exit without a checkpoint
            ray.init(**ray_init_kwargs(args.address, args.num_cpus))
    try:
        config = ppo_config(env_config, num_env_runners=args.num_env_runners,
                            num_learners=args.num_learners,
                            train_batch_size=args.train_batch_size,
                            minibatch_size=args.minibatch_size, num_epochs=args.num_epochs,
                            snapshot_every=args.snapshot_every, min_return=args.min_return,
                            seed=args.seed)
        algo = config.build_algo()
        history: list[dict[str, Any]] = []
        hold = HeldInterrupts("this iteration")
        try:
            _train(algo, args, out, history, hold, env_config)
        except KeyboardInterrupt:
            print(_interrupted(algo, out, len(history), args.iterations, hold.torn),
                  file=sys.stderr, flush=True)
            return 130
        finally:
            algo.stop()  # type: ignore[no-untyped-call]  # RLlib's Algorithm has no hints
    finally:
        if started:
            ray.shutdown()
    return 0


def _train(algo: Any, args: argparse.Namespace, out: Path, history: list[dict[str, Any]],
           hold: HeldInterrupts, env_config: dict[str, int]) -> None:
    """``args.iterations`` iterations of ``algo``, each held whole against Ctrl-C with what it
    writes (its row of ``history.json``, its checkpoint; the first one also
    ``env_config.json``), then the final checkpoint and the exported module."""
    from dragons_egg.experiments.training.rllib import MAIN
    start = time.time()
    for it in range(1, args.iterations + 1):
        with hold:
            res = algo.train()
            runners = res.get("env_runners", {})
            steps = res.get("num_env_steps_sampled_lifetime", 0)
            timers = res.get("timers", {})
            sampled = runners.get("num_env_steps_sampled", 0)
            row = {"iteration": it, "env_steps": steps, "seconds": round(time.time() - start, 1),
                   "env_steps_per_s": round(steps / max(time.time() - start, 1e-9), 1),
                   # sampling alone: steps of this iteration / time spent waiting for samples
                   "sampling_steps_per_s": round(
                       sampled / max(timers.get("env_runner_sampling_timer", 0), 1e-9), 1),
                   "league_size": res.get("league_size"),
                   "main_return": (runners.get("module_episode_returns_mean") or {}).get(MAIN)}
            history.append(row)
            if it == 1:
                write_atomically(out / "env_config.json", json.dumps(env_config))
            write_atomically(out / "history.json", json.dumps(history, indent=1))
            print(f"[{it}/{args.iterations}] " + ", ".join(f"{k} {v}" for k, v in row.items()
                                                        if k != "iteration"), flush=True)
            if args.checkpoint_every and it % args.checkpoint_every == 0:
                algo.save(str(out / f"checkpoint_{it}"))
    with hold:
        algo.save(str(out / "checkpoint_final"))
        algo.get_module(MAIN).save_to_path(str(out / "main_module"))
    print(f"exported {out / 'main_module'} (agent spec rllib:path={out / 'main_module'})",
          file=sys.stderr)


def _interrupted(algo: Any, out: Path, done: int, planned: int, torn: bool) -> str:
    """After Ctrl-C: the last finished iteration's checkpoint and module saved (unless a second
    Ctrl-C cut an iteration or a save: the state is then not whole, and nothing more is
    saved), and the one line that says so."""
    from dragons_egg.experiments.training.rllib import MAIN
    head = f"interrupted after {done} of {planned} iterations"
    if torn or done == 0:
        kept = sorted(p.name for p in out.glob("checkpoint_*"))
        why = "a second stop cut an iteration" if torn else "no iteration finished"
        return (f"{head}: nothing saved ({why}); checkpoints kept: "
                f"{', '.join(kept) or 'none'}")
    ckpt = out / f"checkpoint_{done}"
    if not ckpt.exists():
        algo.save(str(ckpt))
    algo.get_module(MAIN).save_to_path(str(out / "main_module"))
    return (f"interrupted after {done} of {planned} iterations: saved {ckpt} and the module "
            f"{out / 'main_module'} (agent spec rllib:path={out / 'main_module'}); "
            "train-rllib does not resume (RLlib's Algorithm.from_checkpoint loads the "
            "checkpoint)")


if __name__ == "__main__":
    raise SystemExit(main())
