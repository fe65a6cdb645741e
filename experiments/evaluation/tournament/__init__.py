"""Sound tournaments between agents: duplicate deals, confidence intervals, ratings.

Duplicate format: a *deal sequence* fixes the cards of every round of a match (one hand per
seat and round). Each sequence is played once per rotation of the line-up through the seats,
so every agent plays every hand and the luck of the deal cancels out. With ``k`` agents at a
table of ``n`` seats and ``k <= n`` the line-up repeats the agents in order to fill the seats;
with ``k > n`` each sequence seats a window of ``n`` consecutive agents (the window moves one
agent per sequence), and pairwise differences use the sequences where both agents played.
Because the deals of later rounds are fixed in advance they follow a fixed dealer schedule
(the dealer moves one seat left each round) instead of R4's "the last Egg holder deals".

Statistics, per agent (its spec string): mean finishing place (1 = Dragon), Dragon rate, Egg
rate and mean match score, each with a 95% bootstrap interval that resamples whole deal
sequences; the mean score difference of every pair with its interval (paired over the same
sequences); a head-to-head matrix (how often the row agent finished above the column agent in
a round where both played); and a Plackett-Luce rating (openskill) over full finishing orders,
with its uncertainty.

Runs in parallel processes with a progress bar; every match's seeds derive from the
tournament seed, the deal sequence and the rotation, so the same seed gives the same results
for any number of workers.

Agents are spec strings (``"heuristic"``, ``"ppo:path=run/final.zip"``; the spec is the label)
or :class:`Entrant` objects, which give a label to a spec, an agent *factory* or a *policy*::

    TournamentConfig(agents=[
        "heuristic",
        Entrant("fresh", spec="ppo:path=runs/x/final.zip"),
        Entrant("mine", factory=MyAgent),        # MyAgent(seed) -> an dragons_egg.agents.base.Agent
        Entrant("first-legal", policy=first),    # first(observation, mask) -> action
    ])

A factory is called once per match and seat with that seat's derived seed (an int), so every
match gets a fresh, seeded agent, exactly as spec strings do; it may also be an object with a
``make(seed)`` method, such as :class:`dragons_egg.agents.AgentSpec`. A policy is wrapped in
:class:`dragons_egg.agents.runner.PolicyAgent` and gets no seed. With ``workers > 1`` matches run in
worker processes, which receive the factories and policies by pickling: they must be defined
at module level in an importable module (not lambdas or nested functions), and with the spawn
or forkserver start method (macOS's default) not in an interactive session's ``__main__``.
A factory must depend on nothing but its seed for results to be the same for any number of
workers.

Pairwise differences exist only for pairs that shared a deal sequence (with more agents than
seats some pairs may never meet). The small-sample rule: a figure from fewer than
:data:`MIN_SEQUENCES` deal sequences has its mean and no interval (``low`` and ``high``
``None`` in the result, ``null`` in ``summary.json``; the report says "too few sequences").
Match scores are exact (see :mod:`dragons_egg.agents.runner`): statistics count them in whole
units of ``1/(n-1)``.

The result. :func:`run_tournament` (and :func:`summarize`) return a
:class:`TournamentResult`, frozen dataclasses whose fields are the keys of ``summary.json``
(``result.to_json()`` is what the file holds; :meth:`TournamentResult.from_json` reads one back,
older files included: :mod:`~dragons_egg.experiments.evaluation.tournament.result`). Besides
the figures above it holds the per-round breakdown (``by_round``,
:mod:`~dragons_egg.experiments.evaluation.tournament.rounds`): per agent and round, its seats'
mean round reward (R27) and, at 2 players, its share of rounds won, from round 2 on split by
who won the round before (the Dragon asks in the tribute, R31; the Egg holder pays).

Two tournaments played on the same seed, table size, match count, rounds and rules were dealt
the same deals: :func:`compare_tournaments` (``dragons-egg tournament compare A B``) gives,
for each pair of line-up places, A's margin minus B's paired by deal sequence
(:mod:`~dragons_egg.experiments.evaluation.tournament.compare`).

Durable runs. With an output folder, ``config.json`` is written before the first result and
every match is appended to ``results.jsonl`` (and flushed) as it comes back from the
workers, in the order matches finish; each line names its deal sequence and rotation, and
the summary sorts them, so the order never changes a statistic. When the run completes,
``results.jsonl`` is rewritten in match order; :func:`compress_results` (``dragons-egg
tournament compress DIR``) then keeps it as ``results.jsonl.gz``, which every reader reads
(a resume decompresses it first). A run that stops early (Ctrl-C, an agent
failing with ``on_agent_error="stop"``, a worker that dies) keeps every match that came back,
and writes ``summary.json`` (``"partial": true``) and ``report.md`` ("partial: N of M
matches") from them. ``run_tournament(config, resume=True)`` (``--resume DIR``) plays only
the matches missing from the folder, with the settings saved in its ``config.json``: a
setting that changes the results (agents, table, matches, seed, rounds, rules, bootstrap,
move timeout) may not differ, and the summary is then the one an uninterrupted run gives.
A folder that already holds a tournament is refused unless ``resume=True`` or
``overwrite=True`` (``--overwrite``: the tournament's files are replaced, nothing else).
Each result line records its ``sitting`` (1 for the first run of the folder, one more for each
resume); a run of several sittings has its time per move per sitting too (``sittings`` in the
summary's ``timing``, a line each in the report), as a resume may run on another machine.

Agent failures. An agent that raises, returns something that is not an action index
(``None``, a float, a string) or an illegal action, or (with ``move_timeout``) runs past the
time limit of a call, is recorded against its label, with the match's seed and a replay of the
match up to the failure (``replays/seqS-rotR.json`` in the output folder). With
``on_agent_error="forfeit"`` (the default) the match counts as a forfeit of that agent (it
finishes last in the forfeit round and the match ends: the rule is in
:mod:`dragons_egg.agents.runner`), the result line carries a ``forfeit`` record, the summary
lists every forfeit and the run goes on; with ``"stop"`` the run stops
(:class:`AgentFailed`), the failing match is not recorded, and a resume plays it again.
``move_timeout`` needs ``signal.setitimer`` (Unix).

Replays. With ``save_replays=True`` (``--save-replays``) every match's replay is kept too,
compressed, as ``replays/seqS-rotR.json.gz``, written whole before the match's line (which
names it in ``replay``); the setting is saved and kept by a resume, so a folder holds the
replays of all its matches or of its forfeits only. ``dragons-egg serve`` shows them.

Worker processes. With ``workers > 1``, and with one worker when there is a move timeout,
matches play in watched worker processes
(:mod:`~dragons_egg.experiments.evaluation.tournament.pool`,
:func:`~dragons_egg.experiments.evaluation.tournament.runner.in_workers`). Each tells the
parent, through shared memory, every call to an agent and every action, so that: a call that
does not give way to the move timeout's interrupt (native code, an agent that blocks SIGALRM
or swallows the interrupt) has its worker killed one more timeout later (at least a second)
and is a ``"timeout"`` forfeit; an agent that ends its worker inside a call (``os._exit``, a
crash, a signal) is an ``"exited"`` forfeit; both scored in the parent exactly as if that call
had raised, and a fresh worker goes on with the rest. A worker that dies outside any agent's
call, or by a stop signal, stops the run (:class:`WorkerDied`). With one worker and no move
timeout, matches play in the calling process, where an agent that ends the process ends the
tournament: give ``--move-timeout`` (or more workers) for agents one does not trust.

The package, one job a module: :mod:`~dragons_egg.experiments.evaluation.tournament.config`
(entrants and settings, checked once as they are built),
:mod:`~dragons_egg.experiments.evaluation.tournament.schedule` (matches, seats and seeds),
:mod:`~dragons_egg.experiments.evaluation.tournament.runner` (playing the matches),
:mod:`~dragons_egg.experiments.evaluation.tournament.pool` (the watched worker pool),
:mod:`~dragons_egg.experiments.evaluation.tournament.stats` (the estimator and its rule),
:mod:`~dragons_egg.experiments.evaluation.tournament.summary` (the figures),
:mod:`~dragons_egg.experiments.evaluation.tournament.rounds` (the per-round breakdown),
:mod:`~dragons_egg.experiments.evaluation.tournament.result` (the typed result),
:mod:`~dragons_egg.experiments.evaluation.tournament.report` (plots and markdown),
:mod:`~dragons_egg.experiments.evaluation.tournament.output` (the output folder, resume,
compressed lines, :func:`run_tournament`),
:mod:`~dragons_egg.experiments.evaluation.tournament.compare` (two tournaments on the same
deals) and :mod:`~dragons_egg.experiments.evaluation.tournament.cli` (the command line);
every public name is importable from the package itself.
"""

from __future__ import annotations

from .cli import TOOLS, add_arguments, main, run_from_args, run_tool
from .compare import CompareError, Comparison, PairComparison, compare_tournaments
from .config import (
    ON_AGENT_ERROR,
    Entrant,
    TournamentConfig,
    check_importable,
    describe_agents,
    worker_registrations,
)
from .output import (
    OUTPUT_FILES,
    REPLAYS,
    RESULTS,
    RESULTS_GZ,
    RESUME_SETTINGS,
    OutputError,
    SavedRun,
    check_out_dir,
    compress_results,
    holds_tournament,
    load_results,
    prepare_out_dir,
    read_result_lines,
    read_saved_config,
    refuse_foreign,
    results_file,
    run_tournament,
    settings_differences,
    write_results,
)
from .report import jsonable, markdown_report, plot_summary
from .result import (
    AgentStats,
    Forfeit,
    Rating,
    RoundStats,
    Sitting,
    Timing,
    TournamentResult,
)
from .rounds import round_breakdown, round_rewards
from .runner import (
    AgentFailed,
    TournamentStopped,
    WorkerDied,
    default_start_method,
    failure_line,
    play_task,
    run_matches,
)
from .schedule import deal_sequence, derive, match_key, match_seats, match_tasks
from .stats import MIN_SEQUENCES, Estimate, bootstrap
from .summary import summarize

__all__ = [
    "AgentFailed",
    "AgentStats",
    "CompareError",
    "Comparison",
    "Entrant",
    "Estimate",
    "Forfeit",
    "MIN_SEQUENCES",
    "ON_AGENT_ERROR",
    "OUTPUT_FILES",
    "OutputError",
    "PairComparison",
    "REPLAYS",
    "RESULTS",
    "RESULTS_GZ",
    "RESUME_SETTINGS",
    "Rating",
    "RoundStats",
    "SavedRun",
    "Sitting",
    "TOOLS",
    "Timing",
    "TournamentConfig",
    "TournamentResult",
    "TournamentStopped",
    "WorkerDied",
    "add_arguments",
    "bootstrap",
    "check_importable",
    "check_out_dir",
    "compare_tournaments",
    "compress_results",
    "deal_sequence",
    "default_start_method",
    "derive",
    "describe_agents",
    "failure_line",
    "holds_tournament",
    "jsonable",
    "load_results",
    "main",
    "markdown_report",
    "match_key",
    "match_seats",
    "match_tasks",
    "play_task",
    "plot_summary",
    "prepare_out_dir",
    "read_result_lines",
    "read_saved_config",
    "refuse_foreign",
    "results_file",
    "round_breakdown",
    "round_rewards",
    "run_from_args",
    "run_matches",
    "run_tool",
    "run_tournament",
    "settings_differences",
    "summarize",
    "worker_registrations",
    "write_results",
]
