"""The tournament's command line (``dragons-egg tournament``, ``python -m
dragons_egg.experiments.evaluation.tournament``)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from dragons_egg.agents import AgentSpecError
from dragons_egg.experiments.common.args import int_range, positive_float, rule_flag, table_size
from dragons_egg.experiments.common.runs import stops_on_sigterm
from dragons_egg_env.config import ConfigError
from dragons_egg_env.extras import require_cli

from .config import ON_AGENT_ERROR, TournamentConfig
from .output import (
    OutputError,
    SavedRun,
    check_out_dir,
    holds_tournament,
    plain,
    read_saved_config,
    refuse_foreign,
    run_tournament,
)
from .report import markdown_report
from .runner import AgentFailed, TournamentStopped

#: The options of the settings saved in config.json: attribute, option, default.
_CLI_SETTINGS = (("num_players", "players", "--players", 4),
                 ("matches", "matches", "--matches", 200),
                 ("num_rounds", "rounds", "--rounds", 3),
                 ("seed", "seed", "--seed", 0),
                 ("bootstrap", "bootstrap", "--bootstrap", 2000),
                 ("move_timeout", "move_timeout", "--move-timeout", None))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("agents", nargs="*",
                   help="agent specs, e.g. heuristic ismcts:iterations=200 (none with --resume: "
                   "the saved ones)")
    p.add_argument("--players", type=table_size, default=None, help="table size 2..8 (default 4)")
    p.add_argument("--matches", type=int_range(1), default=None,
                   help="matches to play (rounded up to whole rotations; default 200)")
    p.add_argument("--rounds", type=int_range(1), default=None, help="rounds per match (default 3)")
    p.add_argument("--seed", type=int_range(0), default=None,
                   help="tournament seed: every deal and agent seed derives from it (default 0)")
    p.add_argument("--workers", type=int_range(1), default=os.cpu_count() or 1)
    p.add_argument("--rule", type=rule_flag, action="append", default=None, metavar="FLAG=VALUE",
                   help="a rule flag, e.g. --rule pass_locks_out=true (repeatable)")
    p.add_argument("--bootstrap", type=int_range(100), default=None,
                   help="bootstrap resamples for the intervals (default 2000)")
    p.add_argument("--out", default=None, help="output folder (default runs/tournament)")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="play the missing matches of the tournament in DIR, with its saved "
                   "settings")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the tournament already in the output folder")
    p.add_argument("--on-agent-error", choices=ON_AGENT_ERROR, default=None,
                   help="an agent that raises, returns a non-action or an illegal action, or "
                   "runs past --move-timeout: 'forfeit' (default) scores the match as its "
                   "forfeit and goes on, 'stop' stops the run (finished matches are kept)")
    p.add_argument("--move-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="the time each call to an agent may take; a late agent forfeits the "
                   "match (Unix only; default none)")
    p.add_argument("--no-progress", action="store_true")


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace
                    ) -> argparse.ArgumentParser:
    """The parser whose usage an error should print: the subcommand's parser when ``parser``
    is a top-level parser with subcommands (``dragons-egg tournament ...``), else itself."""
    for action in parser._actions:  # argparse keeps subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(getattr(args, action.dest, None) or "")
            if chosen is not None:
                return _command_parser(chosen, args)
    return parser


def _new_config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> TournamentConfig:
    if not args.agents:
        parser.error("give the agents to play (agent specs), or --resume DIR")
    given = {attr: getattr(args, name) for attr, name, _, _ in _CLI_SETTINGS
             if getattr(args, name) is not None}
    return TournamentConfig(agents=args.agents, rules=dict(args.rule or []),
                            workers=args.workers, out_dir=args.out or "runs/tournament",
                            on_agent_error=args.on_agent_error or "forfeit", **given)


def _resumed_config(args: argparse.Namespace, parser: argparse.ArgumentParser
                    ) -> TournamentConfig:
    """The saved config of ``--resume DIR``; an option given with a value other than the
    saved one is an error that names it."""
    if args.overwrite:
        parser.error("--resume and --overwrite exclude each other: resume the tournament, or "
                     "replace it")
    if args.out is not None and Path(args.out) != Path(args.resume):
        parser.error(f"--resume {args.resume} continues the tournament in that folder: drop "
                     f"--out {args.out}")
    tc = TournamentConfig.from_json(read_saved_config(args.resume))
    diffs = []
    saved_agents = tc.to_json()["agents"]
    if args.agents and plain(TournamentConfig(agents=args.agents).to_json()["agents"]) \
            != plain(saved_agents):
        diffs.append(f"agents {' '.join(args.agents)} (saved: {json.dumps(saved_agents)})")
    for attr, name, option, _ in _CLI_SETTINGS:
        value = getattr(args, name)
        if value is not None and plain(value) != plain(getattr(tc, attr)):
            diffs.append(f"{option} {value} (saved: {getattr(tc, attr)})")
    if args.rule is not None and plain(dict(args.rule)) != plain(tc.rules):
        diffs.append(f"--rule {json.dumps(dict(args.rule))} (saved: {json.dumps(tc.rules)})")
    if diffs:
        parser.error(f"cannot resume {args.resume!r} with other settings: {'; '.join(diffs)}; "
                     "omit them to resume with the saved settings, or start a new tournament "
                     "with another --out")
    tc.workers, tc.out_dir = args.workers, args.resume
    tc.on_agent_error = args.on_agent_error or tc.on_agent_error
    return tc


def _saved_line(exc: BaseException, prog: str) -> str:
    saved = getattr(exc, "tournament_saved", None)
    if not isinstance(saved, SavedRun):
        return ""
    return (f"{saved.finished} of {saved.planned} matches are saved in {saved.out_dir} with a "
            f"partial report; resume with: {prog} --resume {shlex.quote(saved.out_dir)}")


@stops_on_sigterm  # ``dragons-egg tournament`` calls this directly, not :func:`main`
def run_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run the tournament the parsed arguments describe. Every mistake is one line (with the
    usage of the tournament command: ``parser`` should be the subcommand's parser, and a
    top-level parser is searched for it) and exit status 2, whether found before playing (agent
    specs and paths, rules, the output folder, a resume's settings) or while building an
    agent. Without the ``experiments`` extra it prints one line naming it and exits with
    status 2 first. A run that stops early keeps its finished matches and a partial report and
    says, in one line, where they are and how to resume: Ctrl-C exits with status 130, an agent
    failing with ``--on-agent-error stop`` or a worker that dies with status 1."""
    parser = _command_parser(parser, args)
    require_cli(parser.prog, "experiments")  # ratings, progress bar, plots: before any match
    resume = args.resume is not None
    try:
        tc = _resumed_config(args, parser) if resume else _new_config(args, parser)
        tc.validate()
        out = check_out_dir(tc.out_dir or "")
        if not resume:
            refuse_foreign(out)
        if not resume and not args.overwrite and holds_tournament(out):
            raise OutputError(f"output folder {str(out)!r} already holds a tournament: resume "
                              f"it with --resume {shlex.quote(str(out))}, or replace it with "
                              "--overwrite (or choose another --out)")
    except (AgentSpecError, ConfigError, OutputError, ValueError, TypeError) as exc:
        parser.error(str(exc))
    try:
        summary = run_tournament(tc, progress=not args.no_progress, resume=resume,
                                 overwrite=args.overwrite)
    except KeyboardInterrupt as exc:
        parser.exit(130, f"{parser.prog}: interrupted; {_saved_line(exc, parser.prog)}\n")
    except TournamentStopped as exc:
        hint = " (--on-agent-error forfeit plays past it)" if isinstance(exc, AgentFailed) else ""
        parser.exit(1, f"{parser.prog}: error: {exc}; {_saved_line(exc, parser.prog)}{hint}\n")
    except (AgentSpecError, OutputError) as exc:  # an agent that fails to build in a match
        saved = _saved_line(exc, parser.prog)
        parser.error(f"{exc}; {saved}" if saved else str(exc))
    print(markdown_report(tc, summary, []))
    if summary["forfeits"]:
        print(f"{len(summary['forfeits'])} matches were forfeited by an agent that failed: "
              "see the report's Forfeits section", file=sys.stderr)
    print(f"wrote {tc.out_dir}/report.md, results.jsonl, summary.json and plots")
    return 0


@stops_on_sigterm
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dragons_egg.experiments.evaluation.tournament",
                                     description="Duplicate-deal tournament between agents.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv), parser)
