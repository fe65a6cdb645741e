"""``dragons-egg``: one command line for playing, tournaments, replays, GIFs and the benchmark.

Every subcommand has ``--help``; a bad argument is a clear error (exit status 2), never a
traceback. Mistakes found after the command line is read (an agent spec, a checkpoint, a
replay file, an output name) print the usage of the subcommand, not the top-level one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TextIO

from dragons_egg_env.replay import ReplayError

from . import bench, gif, tournament
from .play import add_play_arguments, check_play_args, play_game, replay_game, stdin_reader


def build_parser() -> argparse.ArgumentParser:
    """The ``dragons-egg`` parser; :func:`subcommand_parser` finds a subcommand's own."""
    parser = argparse.ArgumentParser(prog="dragons-egg",
                                     description="Dragon's Egg: play, evaluate and inspect.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    p = sub.add_parser("play", help="play a match in the terminal against bots")
    add_play_arguments(p)
    t = sub.add_parser("tournament", help="duplicate-deal tournament between agents")
    tournament.add_arguments(t)
    r = sub.add_parser("replay", help="step through a saved match")
    r.add_argument("file", help="a replay JSON file")
    r.add_argument("--view", default="all",
                   help="'all' (every hand) or an agent such as player_0 (its view)")
    r.add_argument("--all", action="store_true", help="print every step without pausing")
    g = sub.add_parser("gif", help="turn a replay into an animated GIF (or PNG frames)",
                       description=gif.DESCRIPTION)
    gif.add_arguments(g)
    b = sub.add_parser("bench", help="speed benchmark against peers",
                       description=bench.DESCRIPTION)
    bench.add_arguments(b)
    return parser


def subcommand_parser(parser: argparse.ArgumentParser, command: str
                      ) -> argparse.ArgumentParser:
    """The parser of ``command`` (whose usage an error after parsing should print)."""
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser  # pragma: no cover - every command has a parser


def main(argv: list[str] | None = None, read: Callable[[str], str] = stdin_reader,
         out: TextIO | None = None) -> int:
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    sub = subcommand_parser(parser, args.command)
    if args.command == "play":
        check_play_args(args, sub)
        return play_game(args, read, out, sub)
    if args.command == "tournament":
        return tournament.run_from_args(args, sub)
    if args.command == "replay":
        try:
            return replay_game(args, read, out)
        except (ReplayError, OSError) as exc:
            sub.error(str(exc))
    if args.command == "gif":
        return gif.run_from_args(args, sub)
    if args.command == "bench":
        return bench.run_from_args(args, sub) or 0
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
