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

``python -m dragons_egg.experiments.training.train_rllib --iterations 20 --num-env-runners 1 --out
runs/rllib``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from dragons_egg.experiments.common.args import int_range
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
    p.add_argument("--out", default="runs/rllib")
    p.add_argument("--num-cpus", type=int_range(1), default=None,
                   help="CPUs for a local Ray instance (default: all)")
    return p


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    require_cli(parser.prog, "rllib")
    import ray

    from dragons_egg.experiments.training.rllib import MAIN, ppo_config
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    env_config = {"num_players": args.players, "num_rounds": args.rounds}
    started = not ray.is_initialized()
    if started:
        ray.init(**ray_init_kwargs(args.address, args.num_cpus))
    try:
        config = ppo_config(env_config, num_env_runners=args.num_env_runners,
                            num_learners=args.num_learners,
                            train_batch_size=args.train_batch_size,
                            minibatch_size=args.minibatch_size, num_epochs=args.num_epochs,
                            snapshot_every=args.snapshot_every, min_return=args.min_return,
                            seed=args.seed)
        algo = config.build_algo()
        history = []
        start = time.time()
        for it in range(1, args.iterations + 1):
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
            print(f"[{it}/{args.iterations}] " + ", ".join(f"{k} {v}" for k, v in row.items()
                                                        if k != "iteration"), flush=True)
            if args.checkpoint_every and it % args.checkpoint_every == 0:
                algo.save(str(out / f"checkpoint_{it}"))
        algo.save(str(out / "checkpoint_final"))
        algo.get_module(MAIN).save_to_path(str(out / "main_module"))
        (out / "history.json").write_text(json.dumps(history, indent=1))
        (out / "env_config.json").write_text(json.dumps(env_config))
        print(f"exported {out / 'main_module'} (agent spec rllib:path={out / 'main_module'})",
              file=sys.stderr)
        algo.stop()
    finally:
        if started:
            ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
