"""The main job (the README's first command): train briefly, evaluate, report.

1. Train a fresh MaskablePPO agent from the default :class:`~experiments.train_ppo.TrainConfig`
   (self-play against the baselines; a few minutes on 2 cores).
2. Run a duplicate-deal tournament at 4 players between the baselines (``heuristic``,
   ``greedy``, ``random``), the agent shipped with the package (``ppo``) and the fresh one.
3. Write ``<out>/report.md`` with the training curve, the tournament tables and the plots.

``python -m experiments.main_job [--out runs/main] [--timesteps N] [--matches N] [--seed N]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from agents.ppo import SHIPPED
from experiments.cli_args import int_range
from experiments.tournament import (
    Entrant,
    OutputError,
    TournamentConfig,
    check_out_dir,
    markdown_report,
    run_tournament,
)
from experiments.train_ppo import TrainConfig, train

#: The fresh agent's label in the tournament and the report.
FRESH = "fresh"


def trained_steps(checkpoint: Path) -> int:
    """The steps a checkpoint was really trained for (from the ``.json`` beside it)."""
    return int(json.loads(checkpoint.with_suffix(".json").read_text())["num_timesteps"])


def _asked(steps: int, asked: int, cfg: TrainConfig) -> str:
    if steps == asked:
        return ""
    return (f" ({asked} asked; MaskablePPO trains in whole rollouts of "
            f"{cfg.n_steps * cfg.n_envs} steps)")


def main(argv: list[str] | None = None) -> int:
    defaults = TrainConfig()
    p = argparse.ArgumentParser(prog="python -m experiments.main_job",
                                description="Train briefly, run a tournament, write a report.")
    p.add_argument("--out", default="runs/main", help="output folder (default runs/main)")
    p.add_argument("--timesteps", type=int_range(1), default=defaults.total_timesteps,
                   help="training steps, rounded up to whole rollouts of "
                   f"{defaults.n_steps * defaults.n_envs} (default {defaults.total_timesteps})")
    p.add_argument("--matches", type=int_range(1), default=200,
                   help="tournament matches (default 200)")
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--workers", type=int_range(1), default=min(2, os.cpu_count() or 1))
    args = p.parse_args(argv)
    if not SHIPPED.is_file():
        p.error(f"the shipped agent {SHIPPED} is missing: reinstall the package")
    try:
        out = check_out_dir(args.out)
    except OutputError as exc:
        p.error(str(exc))
    t0 = time.time()

    print(f"[1/3] training a fresh agent for {args.timesteps} steps (MaskablePPO, self-play)",
          file=sys.stderr, flush=True)
    cfg = replace(defaults, total_timesteps=args.timesteps, seed=args.seed, out_dir=str(out),
                  run_name="fresh")
    final = train(cfg)
    shutil.copy(cfg.run_dir / "learning_curve.png", out / "learning_curve.png")
    steps = trained_steps(final)
    t1 = time.time()

    print(f"[2/3] tournament: {args.matches} matches at 4 players (duplicate deals)",
          file=sys.stderr, flush=True)
    fresh = f"ppo:path={final}"
    tc = TournamentConfig(agents=["ppo", Entrant(FRESH, spec=fresh), "heuristic", "greedy",
                                  "random"], num_players=4,
                          matches=args.matches, seed=args.seed, workers=args.workers,
                          out_dir=str(out / "tournament"))
    summary = run_tournament(tc)
    t2 = time.time()

    print("[3/3] writing the report", file=sys.stderr, flush=True)
    import csv

    with open(cfg.run_dir / "eval.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    lines = [
        "# Dragon's Egg: main job report", "",
        f"Training: {steps} steps{_asked(steps, args.timesteps, cfg)} from the default config, "
        f"seed {args.seed} ({t1 - t0:.0f} s); tournament: {summary['matches']} matches "
        f"({t2 - t1:.0f} s).",
        f"The fresh agent `{FRESH}` is `{fresh}`; `ppo` is the agent shipped with the package.",
        "",
        "## Training", "",
        "Evaluations against " + ", ".join(cfg.eval_opponents) + " (mean match score, 95% "
        "interval, duplicate deals):", "",
        "| steps | mean match score | Dragon rate | Egg rate |", "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['timesteps']} | {float(r['mean_score']):+.3f} "
                     f"[{float(r['score_low']):+.3f}, {float(r['score_high']):+.3f}] | "
                     f"{float(r['dragon_rate']):.2f} | {float(r['egg_rate']):.2f} |")
    lines += ["", "![learning curve](learning_curve.png)", "", "## Tournament"]
    plots = [Path("tournament") / name for name in ("ratings.png", "head_to_head.png",
                                                     "places.png")]
    body = markdown_report(tc, summary, [])
    lines += body.splitlines()[1:]
    lines += [f"![{p.stem}]({p.as_posix()})" for p in plots]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print(body)
    print(f"report: {out / 'report.md'} ({time.time() - t0:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
