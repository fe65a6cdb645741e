"""``dragons-egg benchmark AGENT`` (the agent benchmark suite; not ``dragons-egg bench``, the
speed benchmark) and ``dragons-egg benchmark compare A.json B.json``. Every mistake is one line
and exit status 2; Ctrl-C keeps the finished matches, says how to resume and exits with 130;
an agent failing with ``--on-agent-error stop`` exits with 1."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

from dragons_egg.agents import AgentSpecError
from dragons_egg.agents.consent import CONSENT_FLAG, check_consent, runs_code
from dragons_egg.experiments.common.args import positive_float
from dragons_egg.experiments.common.files import write_atomically
from dragons_egg.experiments.common.runs import stops_on_sigterm
from dragons_egg_env.config import ConfigError, int_range

from ..tournament.config import ON_AGENT_ERROR
from ..tournament.output import OutputError
from ..tournament.runner import TournamentStopped
from .card import CardError, markdown, read_card
from .compare import CardMismatch, compare_cards
from .run import CARD, CARD_MD, Request, read_manifest, run_benchmark
from .suite import TIERS, SuiteError, load_suite

PROG = "python -m dragons_egg.experiments.evaluation.benchmark"


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The parser of ``dragons-egg benchmark``."""
    p = argparse.ArgumentParser(
        prog=prog, description="The agent benchmark suite: score an agent spec against fixed "
        "populations at table sizes 2..8 on the suite's fixed duplicate deals, and write a "
        "score card (JSON, markdown, plot). Not the speed benchmark (dragons-egg bench).",
        epilog=f"'{prog} compare A.json B.json' compares two score cards paired by deal. "
        "See docs/benchmark-suite.md.")
    p.add_argument("agent", nargs="?", metavar="AGENT",
                   help="the agent spec to score: a built-in (heuristic, ppo, ...), "
                   "MODULE:CLASS or a policy file (none with --resume)")
    p.add_argument("--suite", default=None,
                   help="a published suite (v1, the default) or a suite file NAME.json")
    p.add_argument("--tier", default=None,
                   help=f"one of {', '.join(TIERS)} (default quick)")
    p.add_argument("--out", default=None,
                   help="the benchmark folder (default runs/benchmark/SUITE-TIER-AGENT)")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="continue the benchmark in DIR with its saved agent, suite and tier")
    p.add_argument("--references", metavar="DIR", default=None,
                   help="a folder of reference tournaments shared between benchmarks: each "
                   "cell's reference (the population alone, the same for every agent) is "
                   "played there once and read by later benchmarks of the suite and tier "
                   "(a resume keeps the saved one)")
    p.add_argument("--workers", type=int_range(1), default=min(os.cpu_count() or 1, 2))
    p.add_argument("--move-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="the time each call to an agent may take (a late agent forfeits)")
    p.add_argument("--on-agent-error", choices=ON_AGENT_ERROR, default="forfeit",
                   help="an agent that fails a match forfeits it (default) or stops the run")
    p.add_argument(CONSENT_FLAG, metavar="SPEC", action="append", default=[],
                   help="allow this agent spec to run code (MODULE:CLASS, trust=1, "
                   "rllib:path=): the benchmark asks for it, typed or resumed")
    p.add_argument("--no-progress", action="store_true")
    return p


def _folder_name(agent: str) -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in agent)
    return safe[:80] or "agent"


def _request(args: argparse.Namespace, p: argparse.ArgumentParser) -> tuple[Request, Path]:
    if args.resume is not None:
        if args.out is not None and Path(args.out) != Path(args.resume):
            p.error(f"--resume {args.resume} continues that folder: drop --out {args.out}")
        saved = read_manifest(Path(args.resume))
        given = {"agent": args.agent, "suite": args.suite, "tier": args.tier}
        for key, value in given.items():
            if value is not None and value != saved.get(key):
                p.error(f"cannot resume {args.resume!r} with {key} {value!r} (saved: "
                        f"{saved.get(key)!r}): omit it to resume with the saved one")
        agent, suite_name, tier = saved["agent"], str(saved["suite"]), str(saved["tier"])
        check_consent([agent], f"the {Path(args.resume) / 'benchmark.json'}",
                      args.allow_code)
        timeout = args.move_timeout if args.move_timeout is not None \
            else saved.get("move_timeout")
        references = args.references or saved.get("references")
        out = Path(args.resume)
    else:
        if not args.agent:
            p.error("give the agent spec to score, or --resume DIR")
        agent, suite_name, tier = args.agent, args.suite or "v1", args.tier or "quick"
        why = runs_code(agent) if ":" in agent else None  # a bare name: parsed below
        if why is not None and agent.strip() not in {a.strip() for a in args.allow_code}:
            p.error(f"the agent {agent!r} runs code ({why}): the benchmark plays it in every "
                    f"cell, so it asks your consent; if you trust it, add {CONSENT_FLAG} "
                    f"'{agent}'")
        timeout = args.move_timeout
        references = args.references
        out = Path(args.out or f"runs/benchmark/{Path(suite_name).stem}-{tier}-"
                   f"{_folder_name(agent)}")
    if tier not in TIERS:
        p.error(f"unknown tier {tier!r}: the tiers are {', '.join(TIERS)}")
    suite, digest = load_suite(suite_name)
    if references is not None and not isinstance(references, str):
        p.error(f"cannot resume {args.resume!r}: its benchmark.json names no folder of "
                f"references ({references!r})")
    if references is not None:
        references = str(Path(references).resolve())
    return Request(agent, suite_name, suite, digest, tier, args.workers, timeout,
                   args.on_agent_error, references), out


def _resume_line(prog: str, out: Path, agent: str) -> str:
    consent = f" {CONSENT_FLAG} {shlex.quote(agent)}" if runs_code(agent) else ""
    return f"resume with: {prog} --resume {shlex.quote(str(out))}{consent}"


@stops_on_sigterm
def run(argv: list[str], prog: str) -> int:
    """``dragons-egg benchmark AGENT ...`` (see the module's docstring)."""
    p = build_parser(prog)
    args = p.parse_args(argv)
    try:
        req, out = _request(args, p)
        card = run_benchmark(req, out, resume=args.resume is not None,
                             progress=not args.no_progress,
                             say=lambda line: print(line, file=sys.stderr))
    except KeyboardInterrupt:
        req_agent = locals().get("req")
        agent = req_agent.agent if isinstance(req_agent, Request) else (args.agent or "")
        p.exit(130, f"{prog}: interrupted; the finished matches are saved in {out}; "
                    f"{_resume_line(prog, out, agent)}\n")
    except TournamentStopped as exc:
        p.exit(1, f"{prog}: error: {exc}; the finished matches are saved in {out}; "
                  f"{_resume_line(prog, out, req.agent)}\n")
    except (AgentSpecError, ConfigError, OutputError, SuiteError, ValueError,
            TypeError) as exc:
        p.error(str(exc))
    print(markdown(card))
    print(f"wrote {out / CARD}, {out / CARD_MD} and the plot")
    return 0


def compare(argv: list[str], prog: str) -> int:
    """``dragons-egg benchmark compare A.json B.json [--json FILE]``."""
    p = argparse.ArgumentParser(prog=prog, description="Compare two score cards of one suite "
                                "and tier: A's mean match score minus B's per cell, paired by "
                                "deal sequence, and the headline, with 95% intervals.")
    p.add_argument("a", metavar="A.json", help="a score card (scorecard.json) or its "
                   "benchmark folder")
    p.add_argument("b", metavar="B.json", help="another, of the same suite and tier")
    p.add_argument("--json", metavar="FILE", default=None, help="also write it as JSON")
    args = p.parse_args(argv)
    try:
        cards = [read_card(Path(x) / CARD if Path(x).is_dir() else x)
                 for x in (args.a, args.b)]
        result = compare_cards(*cards)
    except (CardError, CardMismatch) as exc:
        p.error(str(exc))
    print(result.table())
    if args.json:
        write_atomically(args.json, json.dumps(result.to_json(), indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``dragons-egg benchmark`` (``python -m dragons_egg.experiments.evaluation.benchmark``):
    a benchmark run, or ``compare`` when it comes first."""
    prog = prog or PROG
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["compare"]:
        return compare(argv[1:], f"{prog} compare")
    return run(argv, prog)
