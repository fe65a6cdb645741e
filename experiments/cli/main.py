"""``dragons-egg``: one command line for every user-facing command.

Playing, tournaments, replays, GIFs and the benchmark are parsed here. The others (training,
shipping, evaluating a run, the tribute studies, the main job) are *delegated*: each is a
module of its room with a ``main(argv, prog=None)``, listed once in :data:`DELEGATED`, and
``dragons-egg NAME ARGS...`` runs ``main(ARGS, prog="dragons-egg NAME")`` of that module, its
arguments passed through untouched (so ``dragons-egg NAME --help`` is the module's own help).
Each module also runs as ``python -m MODULE``.

Every subcommand has ``--help``; a bad argument is a clear error (exit status 2), never a
traceback. Mistakes found after the command line is read (an agent spec, a checkpoint, a
replay file, an output name) print the usage of the subcommand, not the top-level one.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from typing import NamedTuple, Protocol, TextIO

from dragons_egg.experiments import bench
from dragons_egg.experiments.cli import gif
from dragons_egg.experiments.cli.play import (
    add_play_arguments,
    check_play_args,
    play_game,
    replay_game,
    stdin_reader,
)
from dragons_egg.experiments.common.runs import stops_on_sigterm
from dragons_egg.experiments.evaluation import tournament
from dragons_egg_env.replay import ReplayError


class Delegated(NamedTuple):
    """A subcommand that runs a module's own command line."""

    #: The module whose ``main(argv, prog=None)`` runs (imported only when the command runs).
    module: str
    #: The line ``dragons-egg --help`` shows for it.
    help: str


class CommandMain(Protocol):
    """The ``main`` of a delegated subcommand's module: runs its command line ``argv``
    under the program name ``prog``; returns the exit status."""

    def __call__(self, argv: list[str] | None = None, prog: str | None = None) -> int: ...


_M = "dragons_egg.experiments."
#: The delegated subcommands, by name: ``dragons-egg NAME ARGS...`` is ``python -m MODULE
#: ARGS...`` with ``dragons-egg NAME`` as the program name. A new command is a module with a
#: ``main(argv, prog=None)`` in its room and a line here.
DELEGATED: dict[str, Delegated] = {
    "train": Delegated(_M + "training.selfplay",
                       "batched self-play PPO (trains the shipped agent)"),
    "train-sb3": Delegated(_M + "training.train_ppo",
                           "train with SB3 MaskablePPO and self-play"),
    "train-rllib": Delegated(_M + "training.train_rllib",
                             "self-play PPO on Ray RLlib with a league"),
    "exploit": Delegated(_M + "training.exploit",
                         "approximate exploitability: a learned best response to an agent"),
    "ship": Delegated(_M + "training.ship",
                      "write a checkpoint as a policy file with its provenance"),
    "evaluate-run": Delegated(_M + "training.evaluate_run",
                              "evaluate the policies a self-play run saved"),
    "search-targets": Delegated(_M + "training.search_targets",
                                "ismcts-net's moves beside the network's, kept as data"),
    "compare-trainers": Delegated(_M + "training.compare",
                                  "training paths and settings compared at equal compute"),
    "train-bench": Delegated(_M + "training.bench",
                             "training throughput: batched self-play beside SB3"),
    "serve": Delegated(_M + "web.serve",
                       "watch replays, play the bots and read run reports in a browser"),
    "main-job": Delegated(_M + "cli.main_job",
                          "train briefly, run a tournament, write a report"),
    "benchmark": Delegated(_M + "evaluation.benchmark",
                           "agent benchmark suite: a score card (not bench, the speed one)"),
    "tribute-analysis": Delegated(_M + "evaluation.tribute",
                                  "compare tribute policies under one play policy"),
    "tribute-fit": Delegated(_M + "research.tribute.fit",
                             "counterfactual tribute fit of a policy file"),
    "tribute-headroom": Delegated(_M + "research.tribute.headroom",
                                  "cross-validated room past the heuristic's tribute"),
}


def run_delegated(name: str, argv: list[str]) -> int:
    """Run the delegated subcommand ``name`` (:data:`DELEGATED`) with its arguments ``argv``:
    its module's ``main(argv, prog="dragons-egg NAME")``."""
    module = importlib.import_module(DELEGATED[name].module)
    command: CommandMain = module.main
    return command(argv, prog=f"dragons-egg {name}")


def build_parser() -> argparse.ArgumentParser:
    """The ``dragons-egg`` parser; :func:`subcommand_parser` finds a subcommand's own."""
    parser = argparse.ArgumentParser(
        prog="dragons-egg", description="Dragon's Egg: play, train, evaluate and inspect.",
        epilog="dragons-egg COMMAND --help lists the options of a command.")
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
    r.add_argument("--html", metavar="OUT.html", default=None,
                   help="write the browser viewer with this replay as one self-contained HTML "
                   "file (no server, no network) instead of stepping through it here")
    g = sub.add_parser("gif", help="turn a replay into an animated GIF (or PNG frames)",
                       description=gif.DESCRIPTION)
    gif.add_arguments(g)
    b = sub.add_parser("bench", help="speed benchmark against peers",
                       description=bench.DESCRIPTION)
    bench.add_arguments(b)
    for name, command in DELEGATED.items():  # listed only: main() hands them their arguments
        sub.add_parser(name, help=command.help, add_help=False)
    return parser


def subcommand_parser(parser: argparse.ArgumentParser, command: str
                      ) -> argparse.ArgumentParser:
    """The parser of ``command`` (whose usage an error after parsing should print)."""
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            sub: argparse.ArgumentParser = action.choices[command]
            return sub
    return parser  # pragma: no cover - every command has a parser


@stops_on_sigterm
def main(argv: list[str] | None = None, read: Callable[[str], str] = stdin_reader,
         out: TextIO | None = None) -> int:
    """Run ``dragons-egg`` with the command line ``argv`` (default: the process's); a
    delegated subcommand (:data:`DELEGATED`) gets the rest of it as it is. ``read`` and
    ``out`` are the terminal of ``play`` and ``replay``. Returns the exit status. Output
    piped into a reader that stops early (``| head``) ends the command quietly, with the
    status 141 a shell gives a command killed by SIGPIPE, not a traceback."""
    try:
        return dispatch(argv, read, out)
    except BrokenPipeError:
        # what is still buffered for the closed pipe goes nowhere (the interpreter's own
        # flush at exit would raise again)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def dispatch(argv: list[str] | None, read: Callable[[str], str],
             out: TextIO | None) -> int:
    """:func:`main`'s work: the command line parsed and its command run."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in DELEGATED:  # before parsing: the module parses its own arguments
        return run_delegated(argv[0], argv[1:])
    if argv[:1] == ["tournament"] and len(argv) > 1 and argv[1] in tournament.TOOLS:
        # ``dragons-egg tournament compare|compress ...``: tools with their own arguments
        return tournament.run_tool(argv[1], argv[2:], prog=f"dragons-egg tournament {argv[1]}")
    out = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    sub = subcommand_parser(parser, args.command)
    if args.command == "play":
        check_play_args(args, sub)
        return play_game(args, read, out, sub)
    if args.command == "tournament":
        return tournament.run_from_args(args, sub)
    if args.command == "replay" and args.html:
        from dragons_egg.experiments.web.serve import html_from_args

        return html_from_args(args.file, args.html, sub)
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


if __name__ == "__main__":
    raise SystemExit(main())
