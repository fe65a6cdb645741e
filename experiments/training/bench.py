"""Training throughput, measured in one run: the batched self-play trainer
(``dragons_egg.experiments.training.selfplay``) beside the SB3 MaskablePPO trainer
(``dragons_egg.experiments.training.train_ppo``).

``python -m dragons_egg.experiments.training.bench [--seconds 60] [--json PATH]``

Each trainer runs for about ``--seconds`` of wall time from a fresh start (after a warm-up
that compiles the batched engine's kernels and builds the networks), collection and updates
included, evaluation excluded; the figure is learner samples (decisions trained on) per second
of wall time. Both use one torch thread (``--torch-threads``). The two run one after the other
in this process, so run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.args import int_range, positive_float
from dragons_egg_env.extras import require_cli


def bench_selfplay(seconds: float, threads: int, out: Path) -> dict[str, Any]:
    """Samples per second of :class:`dragons_egg.experiments.training.selfplay.Run` (default
    settings)."""
    from dragons_egg.experiments.training.selfplay import Run, SelfPlayConfig

    cfg = SelfPlayConfig(total_samples=10**12, eval_every=0, eval_opponents=(),
                         checkpoint_every=0, torch_threads=threads, out_dir=str(out),
                         run_name="bench-selfplay", progress=False)
    run = Run(cfg)
    run.iteration()  # warm-up: kernels compiled or loaded from the cache
    start_samples, start = run.samples, time.perf_counter()
    iterations = 0
    while time.perf_counter() - start < seconds:
        run.iteration()
        iterations += 1
    wall = time.perf_counter() - start
    return {"samples": run.samples - start_samples, "seconds": wall,
            "samples_per_s": (run.samples - start_samples) / wall, "iterations": iterations,
            "batch": run.collector.num, "rollout_steps": cfg.rollout_steps}


def bench_train_ppo(seconds: float, threads: int, out: Path) -> dict[str, Any]:
    """Samples per second of ``dragons_egg.experiments.training.train_ppo`` (SB3 MaskablePPO, its
    defaults)."""
    import torch
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    from dragons_egg.experiments.training.train_ppo import TrainConfig, make_env_fn

    torch.set_num_threads(threads)
    cfg = TrainConfig(out_dir=str(out), run_name="bench-ppo", progress=False)
    venv = DummyVecEnv([make_env_fn(cfg, i) for i in range(cfg.n_envs)])
    model = MaskablePPO("MlpPolicy", venv, learning_rate=cfg.learning_rate,
                        n_steps=cfg.n_steps, batch_size=cfg.batch_size, n_epochs=cfg.n_epochs,
                        gamma=cfg.gamma, policy_kwargs={"net_arch": list(cfg.net_arch)},
                        seed=cfg.seed, device="cpu", verbose=0)

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


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog or "python -m dragons_egg.experiments.training.bench",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=positive_float, default=60.0,
                   help="wall seconds per trainer (default 60)")
    p.add_argument("--torch-threads", type=int_range(1), default=1)
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = p.parse_args(argv)
    require_cli(p.prog, "train")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        print(f"timing each trainer for {args.seconds:g} s ...", file=sys.stderr, flush=True)
        sp = bench_selfplay(args.seconds, args.torch_threads, out)
        print(f"selfplay (batched engine, all seats learn): {sp['samples_per_s']:,.0f} "
              "samples/s", flush=True)
        ppo = bench_train_ppo(args.seconds, args.torch_threads, out)
        print(f"train_ppo (SB3 MaskablePPO, SingleAgentEnv): {ppo['samples_per_s']:,.0f} "
              "samples/s", flush=True)
    ratio = sp["samples_per_s"] / ppo["samples_per_s"]
    print(f"ratio selfplay / train_ppo: {ratio:.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"selfplay": sp, "train_ppo": ppo,
                                               "ratio": ratio,
                                               "torch_threads": args.torch_threads},
                                              indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
