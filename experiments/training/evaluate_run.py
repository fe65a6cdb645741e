"""Evaluate the policies a self-play run saved against more opponents, after (or beside) it.

``python -m dragons_egg.experiments.training.evaluate_run RUN_DIR [--opponent ismcts] [--matches
100] [--players N] [--workers 1] [--seed 0]``

The trainer exports its policy at every evaluation (``RUN_DIR/policies/policy_<samples>.npz``)
and evaluates it in the loop against its ``eval_opponents`` (cheap ones: the heuristic). An
expensive opponent such as ISMCTS would stall training, so this command evaluates the saved
policies afterwards, or on the other core while the run goes on: each not yet evaluated
against ``--opponent`` plays ``--matches`` duplicate matches in one seat against it in the
others, like the in-loop evaluation. Rows go to ``RUN_DIR/eval_<opponent>.csv`` (samples,
training seconds, mean score, difference to the opponent, 95% intervals, empty where the
evaluation had fewer deal sequences than the tournament's minimum); ``--players N`` plays at
another table size than the run's own evaluations (``RUN_DIR/eval_<opponent>-<N>p.csv``, its
figures named ``...@<N>p``, drawn as their own curve); the learning curve
``RUN_DIR/learning_curve.png`` is redrawn with every opponent, against samples and against
training wall time.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from dragons_egg.agents import AgentSpecError, parse_spec
from dragons_egg.experiments.common.args import int_range
from dragons_egg.experiments.common.runs import append_eval_csv, read_eval_csv, redraw_curve
from dragons_egg.experiments.evaluation.versus import evaluate_agent, format_estimate
from dragons_egg.experiments.training.scaffold import tournament_flags
from dragons_egg.experiments.training.settings import unparsed_config
from dragons_egg_env.extras import require_cli


def saved_policies(run_dir: Path) -> list[tuple[int, Path]]:
    """The policies the run exported at its evaluations, by samples."""
    out = []
    for p in (run_dir / "policies").glob("policy_*.npz"):
        m = re.fullmatch(r"policy_(\d+)\.npz", p.name)
        if m:
            out.append((int(m.group(1)), p))
    return sorted(out)


def label(spec: str) -> str:
    """File-name-safe form of an opponent spec (``ismcts:iterations=400`` ->
    ``ismcts-iterations-400``)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", spec).strip("-")


def suffixed(row: dict[str, Any], opponent: str, players: int) -> dict[str, Any]:
    """An evaluation row at another table size than the run's own evaluations: every figure
    named with ``@<players>p`` (``diff_ismcts@2p``, ``diff_ismcts@2p_low``, ``mean_score@2p``),
    so that its curve is drawn beside the others and no figure is mistaken for theirs."""
    base = f"diff_{opponent}"
    out: dict[str, Any] = {}
    for k, v in row.items():
        if k in ("samples", "seconds"):
            out[k] = v
        elif k.startswith(base):
            out[f"{base}@{players}p{k[len(base):]}"] = v
        else:
            out[f"{k}@{players}p"] = v
    return out


def evaluate_run(run_dir: Path, opponent: str, matches: int, workers: int, seed: int,
                 progress: bool = True, players: int | None = None) -> list[dict[str, Any]]:
    """Evaluate every saved policy of the run not yet evaluated against ``opponent`` at
    ``players`` seats (default: the run's ``eval_players``; another size goes to
    ``eval_<opponent>-<players>p.csv``, its figures named by :func:`suffixed`)."""
    cfg_path = run_dir / "config.json"
    if not cfg_path.is_file():
        raise ValueError(f"{run_dir} is not a self-play run folder (no config.json)")
    try:  # read as today's, its agent specs not parsed: what the folder names is not consent
        run_cfg = unparsed_config(json.loads(cfg_path.read_text()), str(cfg_path))
    except ValueError as exc:
        raise ValueError(f"{cfg_path}: {exc}" if str(cfg_path) not in str(exc)
                         else str(exc)) from None
    rules = run_cfg.rules
    own = rules.num_players
    n = own if players is None else players
    most = run_cfg.max_players
    if not 2 <= n <= most:
        raise ValueError(f"--players {n}: the run's policies play 2 to {most} players")
    seconds = {r["samples"]: r["seconds"] for r in read_eval_csv(run_dir / "eval.csv")}
    out_csv = run_dir / (f"eval_{label(opponent)}.csv" if n == own
                         else f"eval_{label(opponent)}-{n}p.csv")
    done = {r["samples"] for r in read_eval_csv(out_csv)}
    todo = [(s, p) for s, p in saved_policies(run_dir) if s not in done]
    key = f"diff_{opponent}" if n == own else f"diff_{opponent}@{n}p"
    rows = []
    for k, (samples, path) in enumerate(todo, 1):
        row = {"samples": samples, "seconds": seconds.get(samples, float("nan")),
               **evaluate_agent(f"net:path={path}", [opponent], matches=matches, seed=seed,
                                players=n, num_rounds=rules.num_rounds,
                                rules=tournament_flags(rules),
                                workers=workers)}
        if n != own:
            row = suffixed(row, opponent, n)
        append_eval_csv(out_csv, row)
        rows.append(row)
        if progress:
            print(f"[{k}/{len(todo)}] {samples:,} samples: {opponent} difference at {n} "
                  f"players {format_estimate(row, key)}", file=sys.stderr, flush=True)
    redraw_curve(run_dir)
    return rows


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(
        prog=prog or "python -m dragons_egg.experiments.training.evaluate_run",
        description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", help="a self-play run folder (runs/NAME)")
    p.add_argument("--opponent", default="ismcts", help="agent spec (default ismcts)")
    p.add_argument("--matches", type=int_range(1), default=100,
                   help="duplicate matches per policy (default 100)")
    p.add_argument("--players", type=int_range(2, 8), default=None,
                   help="table size (default: the run's eval_players; another size is "
                   "written to eval_<opponent>-<N>p.csv and drawn as <opponent>@<N>p)")
    p.add_argument("--workers", type=int_range(1), default=1)
    p.add_argument("--seed", type=int_range(0), default=0)
    args = p.parse_args(argv)
    require_cli(p.prog, "experiments")  # ratings and the learning curve
    try:
        parse_spec(args.opponent)
    except AgentSpecError as exc:
        p.error(str(exc))
    try:
        evaluate_run(Path(args.run_dir), args.opponent, args.matches, args.workers, args.seed,
                     players=args.players)
    except ValueError as exc:
        p.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
