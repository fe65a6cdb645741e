"""The tournament's command line (``dragons-egg tournament``, ``python -m
dragons_egg.experiments.evaluation.tournament``), and its tools on finished tournaments
(:data:`TOOLS`): ``dragons-egg tournament compare A B [--json FILE]`` (two tournaments on the
same deals, :func:`~.compare.compare_tournaments`) and ``dragons-egg tournament compress
DIR...`` (keep the per-match lines as ``results.jsonl.gz``, :func:`~.output.compress_results`).
The words ``compare`` and ``compress`` in the first place name the tools, never agents."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from dragons_egg.agents import AgentSpecError
from dragons_egg.agents.consent import CONSENT_FLAG, check_consent, runs_code
from dragons_egg.experiments.common.args import positive_float, rule_flag, table_size
from dragons_egg.experiments.common.files import (
    disk_error,
    disk_error_line,
    disk_full,
    write_atomically,
)
from dragons_egg.experiments.common.locks import FolderLock
from dragons_egg.experiments.common.runs import stops_on_sigterm
from dragons_egg_env.config import ConfigError, int_range
from dragons_egg_env.extras import require_cli

from .compare import CompareError, compare_tournaments
from .config import MAX_MATCHES, ON_AGENT_ERROR, TournamentConfig, describe_agents
from .output import (
    RESULTS,
    OutputError,
    SavedRun,
    check_out_dir,
    compress_results,
    holds_tournament,
    plain,
    read_saved_config,
    refuse_foreign,
    run_tournament,
    same_rules,
)
from .report import markdown_report
from .runner import AgentFailed, TournamentStopped

#: The options of the settings saved in config.json: attribute, option, default.
_CLI_SETTINGS = (("num_players", "players", "--players", 4),
                 ("matches", "matches", "--matches", 200),
                 ("num_rounds", "rounds", "--rounds", 3),
                 ("seed", "seed", "--seed", 0),
                 ("bootstrap", "bootstrap", "--bootstrap", 2000),
                 ("move_timeout", "move_timeout", "--move-timeout", None),
                 ("save_replays", "save_replays", "--save-replays", False))


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The tournament's options on ``p`` (its help names the tools, :data:`TOOLS`)."""
    p.epilog = ("Tools on finished tournaments: '%(prog)s compare A B [--json FILE]' compares "
                "two tournaments played on the same deals; '%(prog)s compress DIR...' keeps a "
                "finished tournament's lines as results.jsonl.gz (each has --help).")
    p.add_argument("agents", nargs="*",
                   help="agent specs, e.g. heuristic ismcts:iterations=200 (none with --resume: "
                   "the saved ones)")
    p.add_argument("--players", type=table_size, default=None, help="table size 2..8 (default 4)")
    p.add_argument("--matches", type=int_range(1, MAX_MATCHES), default=None,
                   help=f"matches to play (rounded up to whole rotations; default 200, at "
                   f"most {MAX_MATCHES:,})")
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
    p.add_argument(CONSENT_FLAG, metavar="SPEC", action="append", default=[],
                   help="with --resume: allow this agent spec of the saved config.json to run "
                   "code (trust=1, rllib:path=, MODULE:CLASS): a folder cannot give that "
                   "consent (again for more; giving the agents again does the same)")
    p.add_argument("--on-agent-error", choices=ON_AGENT_ERROR, default=None,
                   help="an agent that raises, returns a non-action or an illegal action, or "
                   "runs past --move-timeout: 'forfeit' (default) scores the match as its "
                   "forfeit and goes on, 'stop' stops the run (finished matches are kept)")
    p.add_argument("--move-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="the time each call to an agent may take; a late agent forfeits the "
                   "match; matches then play in watched worker processes, even with "
                   "--workers 1, so that a call that ignores the interrupt is ended by "
                   "killing its worker (Unix only; default none)")
    p.add_argument("--save-replays", action="store_const", const=True, default=None,
                   help="keep every match's replay, compressed, in the output folder's "
                   "replays/ (seqS-rotR.json.gz; dragons-egg replay and dragons-egg serve "
                   "read them); without it only forfeited matches' replays are kept")
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
    saved = read_saved_config(args.resume)
    # before the specs are parsed (a MODULE:CLASS spec's module is imported then)
    check_consent([a for a in saved.get("agents", []) if isinstance(a, str)],
                  f"the config.json of {args.resume}", [*args.allow_code, *args.agents])
    tc = TournamentConfig.from_json({  # built, and checked, once: with this run's workers
        **saved, "workers": args.workers, "out_dir": args.resume,
        "on_agent_error": args.on_agent_error or saved.get("on_agent_error", "forfeit")})
    diffs = []
    saved_agents = tc.to_json()["agents"]
    if args.agents and plain(describe_agents(args.agents)) != plain(saved_agents):
        diffs.append(f"agents {' '.join(args.agents)} (saved: {json.dumps(saved_agents)})")
    for attr, name, option, _ in _CLI_SETTINGS:
        value = getattr(args, name)
        if value is not None and plain(value) != plain(getattr(tc, attr)):
            diffs.append(f"{option} {value} (saved: {getattr(tc, attr)})")
    flags = tc.rule_flags()
    if args.rule is not None and not same_rules(plain(dict(args.rule)), plain(flags),
                                                tc.num_players, tc.num_rounds):
        diffs.append(f"--rule {json.dumps(dict(args.rule))} (saved: {json.dumps(flags)})")
    if diffs:
        parser.error(f"cannot resume {args.resume!r} with other settings: {'; '.join(diffs)}; "
                     "omit them to resume with the saved settings, or start a new tournament "
                     "with another --out")
    return tc


def _saved_line(exc: BaseException, prog: str) -> str:
    saved = getattr(exc, "tournament_saved", None)
    if not isinstance(saved, SavedRun):
        return ""
    return f"{_kept(saved)}; resume with: {_resume_command(saved.out_dir, prog)}"


def _kept(saved: SavedRun) -> str:
    """Where a stopped tournament's finished matches are."""
    if saved.report:
        return (f"{saved.finished} of {saved.planned} matches are saved in {saved.out_dir} "
                "with a partial report")
    return (f"{saved.finished} of {saved.planned} matches are saved in "
            f"{Path(saved.out_dir) / RESULTS}")


def _resume_command(out_dir: str, prog: str) -> str:
    return f"{prog} --resume {shlex.quote(out_dir)}" + _consent_flags(out_dir)


def _disk_line(exc: BaseException, tc: TournamentConfig, prog: str) -> str:
    """One line on a disk that refused a write (:func:`.files.disk_error_line`): the file,
    the matches saved and the resume command; or, when the folder holds no tournament yet
    (its ``config.json`` could not be written), that nothing is saved."""
    err = disk_error(exc)
    assert err is not None
    saved = getattr(exc, "tournament_saved", None)
    out = tc.out_dir or ""
    if not (Path(out) / "config.json").is_file():
        return disk_error_line(err, f"no match is saved in {out}: free space and run the "
                                    "same command again")
    kept = (_kept(saved) if isinstance(saved, SavedRun)
            else f"the finished matches are saved in {Path(out) / RESULTS}")
    return disk_error_line(err, kept, _resume_command(out, prog))


def _consent_flags(out_dir: str) -> str:
    """The ``--allow-code SPEC`` options a resume of ``out_dir`` needs (its agents that run
    code: the folder cannot give that consent, the user gives it again)."""
    try:
        specs = read_saved_config(out_dir).get("agents", [])
    except (OutputError, OSError, ValueError):
        return ""
    return "".join(f" {CONSENT_FLAG} {shlex.quote(a)}" for a in specs
                   if isinstance(a, str) and runs_code(a))


@stops_on_sigterm  # ``dragons-egg tournament`` calls this directly, not :func:`main`
def run_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run the tournament the parsed arguments describe. Every mistake is one line (with the
    usage of the tournament command: ``parser`` should be the subcommand's parser, and a
    top-level parser is searched for it) and exit status 2, whether found before playing (agent
    specs and paths, rules, the output folder, a resume's settings) or while building an
    agent. Without the ``experiments`` extra it prints one line naming it and exits with
    status 2 first. A run that stops early keeps its finished matches and a partial report and
    says, in one line, where they are and how to resume: Ctrl-C exits with status 130, an agent
    failing with ``--on-agent-error stop``, a worker that dies or a disk that refuses a write
    (full, over its quota, failing: the line names the file) with status 1."""
    parser = _command_parser(parser, args)
    require_cli(parser.prog, "experiments")  # ratings, progress bar, plots: before any match
    resume = args.resume is not None
    try:
        # the config checks itself as it is built (agents, rules, settings): once
        tc = _resumed_config(args, parser) if resume else _new_config(args, parser)
        out = check_out_dir(tc.out_dir or "")
        # one writer per folder: held from here to the end (run_tournament takes it again)
        lock = FolderLock(out, "tournament folder").acquire()
        if not resume:
            refuse_foreign(out)
        if not resume and not args.overwrite and holds_tournament(out):
            raise OutputError(f"output folder {str(out)!r} already holds a tournament: resume "
                              f"it with --resume {shlex.quote(str(out))}, or replace it with "
                              "--overwrite (or choose another --out)")
    except (AgentSpecError, ConfigError, OutputError, ValueError, TypeError) as exc:
        parser.error(str(exc))
    try:
        return _run(args, parser, tc, resume)
    finally:
        lock.release()


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser, tc: TournamentConfig,
         resume: bool) -> int:
    """:func:`run_from_args`'s tournament, in the folder it holds."""
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
    except OSError as exc:  # a full disk: what is saved, and the resume
        if not disk_full(exc):
            raise
        parser.exit(1, f"{parser.prog}: error: {_disk_line(exc, tc, parser.prog)}\n")
    print(markdown_report(tc, summary, []))
    if summary.forfeits:
        print(f"{len(summary.forfeits)} matches were forfeited by an agent that failed: "
              "see the report's Forfeits section", file=sys.stderr)
    print(f"wrote {tc.out_dir}/report.md, results.jsonl, summary.json and plots")
    return 0


#: The tools on finished tournaments: ``dragons-egg tournament NAME ARGS...``.
TOOLS = ("compare", "compress")


def _compare_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Compare two tournaments played on the same seed, table size, "
        "match count, rounds and rules: for each pair of line-up places, A's margin minus "
        "B's, paired by deal sequence, with a 95% bootstrap interval.")
    p.add_argument("a", metavar="A", help="a tournament folder")
    p.add_argument("b", metavar="B", help="another, played on the same deals")
    p.add_argument("--json", metavar="FILE", default=None, help="also write the table as JSON")
    p.add_argument("--bootstrap", type=int_range(100), default=None,
                   help="bootstrap resamples (default: A's setting)")
    return p


def _compress_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="Keep finished tournaments' per-match lines as "
        "results.jsonl.gz (deterministic gzip) in place of results.jsonl; every tournament "
        "reader reads it. A partial or unfinished folder is refused.")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="tournament folders")
    return p


def run_tool(name: str, argv: list[str], prog: str) -> int:
    """Run the tool ``name`` of :data:`TOOLS` with its arguments; a mistake is one line and
    exit status 2."""
    if name == "compare":
        p = _compare_parser(prog)
        args = p.parse_args(argv)
        try:
            result = compare_tournaments(args.a, args.b, bootstrap_reps=args.bootstrap)
            if args.json:
                check_out_dir(Path(args.json).parent)
        except (CompareError, OutputError) as exc:
            p.error(str(exc))
        print(result.table())
        if args.json:
            write_atomically(args.json, json.dumps(result.to_json(), indent=1) + "\n")
            print(f"wrote {args.json}")
        return 0
    if name == "compress":
        p = _compress_parser(prog)
        args = p.parse_args(argv)
        for d in args.dirs:
            try:
                before = (Path(d) / "results.jsonl").stat().st_size \
                    if (Path(d) / "results.jsonl").is_file() else None
                packed = compress_results(d)
            except OutputError as exc:
                p.error(str(exc))
            print(f"{packed}: {before} -> {packed.stat().st_size} bytes")
        return 0
    raise ValueError(f"unknown tournament tool {name!r}; known: {', '.join(TOOLS)}")


@stops_on_sigterm
def main(argv: list[str] | None = None) -> int:
    """``python -m dragons_egg.experiments.evaluation.tournament``: a tournament, or one of
    the :data:`TOOLS` when its name comes first."""
    prog = "python -m dragons_egg.experiments.evaluation.tournament"
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in TOOLS:
        return run_tool(argv[0], argv[1:], f"{prog} {argv[0]}")
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Duplicate-deal tournament between agents.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv), parser)
