"""The benchmark's command line (``dragons-egg bench``, ``dragons-egg-bench``, ``python -m
dragons_egg.experiments.bench``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from dragons_egg.experiments.common.args import int_range, positive_float, table_size
from dragons_egg_env.config import MAX_PLAYERS, MIN_PLAYERS
from dragons_egg_env.extras import require_cli

from .common import pin_to_one_core
from .scalar import run_scalar
from .vector import VECTOR_BATCH, run_vector

DESCRIPTION = ("Steps per second of uniformly random legal play, pinned to one CPU core: "
               "the Dragon's Egg engine and envs against PettingZoo leduc_holdem_v4, "
               "OpenSpiel dou_dizhu and a no-logic AEC env (peers are skipped when not "
               "installed; pip install 'dragons-egg[bench]').")


def build_parser(prog: str = "python -m dragons_egg.experiments.bench") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of this command (also the ``dragons-egg bench`` subcommand's)."""
    p.add_argument("--seconds", type=positive_float, default=5.0,
                   help="timed seconds per measurement, after a short warm-up (default: 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of every RNG (default: 0)")
    p.add_argument("--players", type=table_size, default=4,
                   help=f"Dragon's Egg table size, {MIN_PLAYERS}..{MAX_PLAYERS} (default: 4)")
    p.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    p.add_argument("--vector", action="store_true",
                   help="measure batched random play instead: the batched engine against "
                        "raw_env() and pgx leduc_holdem (jax), plus memory per match and "
                        "compile time (docs/benchmark.md)")
    p.add_argument("--batch", type=int_range(1), default=VECTOR_BATCH,
                   help=f"--vector: matches per batch (default: {VECTOR_BATCH})")
    p.add_argument("--compile-time", action=argparse.BooleanOptionalAction, default=True,
                   help="--vector: time the batched engine's first call in fresh "
                        "subprocesses, with an empty numba cache and a warm one (default: on)")


def main(argv: Sequence[str] | None = None) -> int:
    script = os.path.basename(sys.argv[0]) == "dragons-egg-bench"  # the console script
    parser = build_parser("dragons-egg-bench") if script else build_parser()
    return run_from_args(parser.parse_args(argv), parser)


def run_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run with parsed arguments (``dragons-egg bench``); ``parser`` reports late errors.
    The peers are skipped when not installed; ``--vector`` needs the ``vector`` extra (one
    line naming it and exit status 2 otherwise, before anything runs)."""
    if args.vector:
        require_cli(f"{parser.prog} --vector", "vector")
    if args.json:
        parent = os.path.dirname(os.path.abspath(args.json))
        if not os.path.isdir(parent):
            parser.error(f"--json: directory {parent!r} does not exist")

    old_affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        cpu = pin_to_one_core()
        return run_vector(args, cpu) if args.vector else run_scalar(args, cpu)
    finally:
        if old_affinity is not None:
            os.sched_setaffinity(0, old_affinity)
