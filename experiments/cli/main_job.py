"""The main job (the README's first command): train briefly, evaluate, report.

1. Train a fresh agent with the batched self-play trainer
(:mod:`dragons_egg.experiments.training.selfplay`,
   its default settings: every table size 2..8, all seats learning) for ``--samples`` learner
   samples, evaluated against three ``heuristic`` players every ``--samples / 4``.
2. Run a duplicate-deal tournament at 4 players between the fresh agent (``fresh``), the agent
   shipped with the package (``ppo``), the one shipped with 0.1.0/0.2.0 (``ppo-0.1``, SB3)
   and the baselines ``heuristic``, ``greedy`` and ``random``.
3. Write ``<out>/report.md`` with what the fresh agent reached (its learning curve against
   samples and wall time), the tournament tables and the plots.

About 5 minutes on 2 cores with the defaults (4M samples, 200 matches), after set-up
(5 min 18 s measured beside a 2-worker ISMCTS tournament).

``python -m dragons_egg.experiments.cli.main_job [--out runs/main] [--samples N] [--matches N]
[--seed N] [--overwrite]``: without ``--out`` a rerun writes to the first free ``runs/main-2``,
``runs/main-3``, ...; an ``--out`` that holds a main job is refused unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from dragons_egg.agents.ppo import PREVIOUS, SHIPPED
from dragons_egg.experiments.common.args import int_range
from dragons_egg.experiments.common.runs import stops_on_sigterm
from dragons_egg.experiments.evaluation.tournament import (
    Entrant,
    OutputError,
    TournamentConfig,
    check_out_dir,
    markdown_report,
    run_tournament,
)
from dragons_egg.experiments.evaluation.versus import format_estimate
from dragons_egg_env.extras import require_cli

if TYPE_CHECKING:  # the trainer itself is imported only when the job trains (train_fresh)
    from dragons_egg.experiments.training.selfplay import Run

#: The fresh agent's label in the tournament and the report.
FRESH = "fresh"
#: The label of the agent shipped with 0.1.0 and 0.2.0 (SB3 MaskablePPO, 4 players).
PREVIOUS_LABEL = "ppo-0.1"
DEFAULT_SAMPLES = 4_000_000


def train_fresh(samples: int, seed: int, out: Path) -> Run:
    """Train the fresh agent; returns the finished
    :class:`dragons_egg.experiments.training.selfplay.Run`."""
    from dragons_egg.experiments.training.selfplay import Run, SelfPlayConfig

    cfg = SelfPlayConfig(seed=seed, total_samples=samples,
                         eval_every=max(samples // 4, 1), eval_matches=100,
                         checkpoint_every=max(samples // 4, 1), out_dir=str(out),
                         run_name=FRESH)
    run = Run(cfg, overwrite=True)  # a folder holding a job is refused before (or --overwrite)
    run.train()
    return run


def _training_lines(run: Run, asked: int) -> list[str]:
    cfg = run.cfg
    lines = [
        f"Self-play (`dragons_egg.experiments.training.selfplay`, default settings, "
        f"seed {cfg.seed}): "
        f"{run.samples:,} learner samples ({asked:,} asked; the trainer updates after whole "
        f"rollouts of {cfg.collection.rollout_steps} steps of {run.batch} matches) in "
        f"{run.seconds:,.0f} s of collection and updates "
        f"({run.samples / max(run.seconds, 1e-9):,.0f} samples/s), plus "
        f"{run.eval_seconds:,.0f} s of evaluations.", "",
        f"Evaluations: {cfg.eval_matches} duplicate matches at {cfg.eval_players} players "
        "against three `heuristic` players; the fresh agent's mean match score and its "
        "difference to the heuristic (95% bootstrap intervals):", "",
        "| samples | training s | mean match score | difference to `heuristic` |",
        "|---:|---:|---|---|",
    ]
    for r in run.history:
        lines.append(f"| {r['samples']:,} | {r['seconds']:,.0f} | "
                     f"{format_estimate(r, 'mean_score')} | "
                     f"{format_estimate(r, 'diff_heuristic')} |")
    last = run.history[-1]
    verdict = ("ahead of" if last["diff_heuristic_low"] > 0 else
               "behind" if last["diff_heuristic_high"] < 0 else "not distinguishable from")
    lines += ["", f"**What the fresh agent reached:** after {run.samples:,} samples and "
              f"{run.seconds:,.0f} s it is {verdict} the heuristic "
              f"({format_estimate(last, 'diff_heuristic')}). The shipped agent `ppo` is the same "
              "trainer run much longer, with the settings of "
              "`--config selfplay-shipped` (README).", "",
              "![learning curve](learning_curve.png)"]
    return lines


#: The main job's default output folder.
DEFAULT_OUT = Path("runs/main")
#: What a folder holding a main job's results has (any of them).
JOB_FILES = ("report.md", FRESH, "tournament")


def holds_job(out: Path) -> bool:
    """Whether ``out`` holds (some of) a main job's results."""
    return any((out / name).exists() for name in JOB_FILES)


def fresh_out(base: Path = DEFAULT_OUT) -> Path:
    """``base``, or when it holds an earlier main job the first of ``base-2``, ``base-3``, ...
    that does not: a rerun with the default folder never writes over an earlier one."""
    out, k = base, 1
    while holds_job(out):
        k += 1
        out = base.with_name(f"{base.name}-{k}")
    return out


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog or "python -m dragons_egg.experiments.cli.main_job",
                                description="Train briefly, run a tournament, write a report.")
    p.add_argument("--out", default=None,
                   help=f"output folder (default {DEFAULT_OUT}, or, when that holds an "
                   f"earlier main job, the first free {DEFAULT_OUT}-2, {DEFAULT_OUT}-3, ...)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the main job that the --out folder holds (without it, such a "
                   "folder is an error)")
    p.add_argument("--samples", type=int_range(1), default=DEFAULT_SAMPLES,
                   help=f"learner samples to train the fresh agent for (default "
                   f"{DEFAULT_SAMPLES:,}), rounded up to whole rollouts")
    p.add_argument("--matches", type=int_range(1), default=200,
                   help="tournament matches (default 200)")
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--workers", type=int_range(1), default=min(2, os.cpu_count() or 1))
    args = p.parse_args(argv)
    require_cli(p.prog, "train")  # self-play (torch, numba), SB3 for ppo-0.1, the tournament
    for agent in (SHIPPED, PREVIOUS):
        if not agent.is_file():
            p.error(f"the shipped agent {agent} is missing: reinstall the package")
    if args.out is not None and holds_job(Path(args.out)) and not args.overwrite:
        p.error(f"--out {args.out} holds an earlier main job's results: give another --out, "
                "or --overwrite to replace them")
    try:
        out = check_out_dir(args.out if args.out is not None else fresh_out())
    except OutputError as exc:
        p.error(str(exc))
    if args.out is None and out != DEFAULT_OUT:
        print(f"{DEFAULT_OUT} holds an earlier main job: this one writes to {out}",
              file=sys.stderr, flush=True)
    try:
        return _job(args, out)
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM: what was done stays in ``out``
        print(f"{p.prog}: interrupted; what was done is in {out}; run it again with --out "
              f"{out} --overwrite, or in a new folder", file=sys.stderr, flush=True)
        return 130


def _job(args: argparse.Namespace, out: Path) -> int:
    """Train, play the tournament and write the report in ``out``."""
    t0 = time.time()

    print(f"[1/3] training a fresh agent for {args.samples:,} samples (batched self-play)",
          file=sys.stderr, flush=True)
    run = train_fresh(args.samples, args.seed, out)
    final = run.dir / "final.npz"
    shutil.copy(run.dir / "learning_curve.png", out / "learning_curve.png")
    t1 = time.time()

    print(f"[2/3] tournament: {args.matches} matches at 4 players (duplicate deals)",
          file=sys.stderr, flush=True)
    tc = TournamentConfig(agents=["ppo", Entrant(FRESH, spec=f"ppo:path={final}"),
                                  PREVIOUS_LABEL,  # the agent ppo-0.1 plays PREVIOUS
                                  "heuristic", "greedy", "random"], num_players=4,
                          matches=args.matches, seed=args.seed, workers=args.workers,
                          out_dir=str(out / "tournament"))
    summary = run_tournament(tc, overwrite=True)  # as the training: refused before, or replaced
    t2 = time.time()

    print("[3/3] writing the report", file=sys.stderr, flush=True)
    lines = [
        "# Dragon's Egg: main job report", "",
        f"Training {t1 - t0:.0f} s (compilation and evaluations included); tournament "
        f"{summary['matches']} matches ({t2 - t1:.0f} s).",
        f"`{FRESH}` is the agent trained here (`ppo:path={final}`); `ppo` is the agent "
        f"shipped with the package (self-play, every table size); `{PREVIOUS_LABEL}` is the "
        f"one shipped with 0.1.0 and 0.2.0 (`{PREVIOUS.name}` in the package, SB3, 4 "
        "players).", "",
        "## Training", "", *_training_lines(run, args.samples), "", "## Tournament",
    ]
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
