"""Batched self-play PPO on the compiled engine: every seat of thousands of matches learns.

``python -m dragons_egg.experiments.training.selfplay [--total-samples N] [--seed N] [--run-name
NAME] ...``
(``--help`` lists every setting; they are the fields of :class:`SelfPlayConfig`, parsed by
tyro, and may come from a JSON file with ``--config FILE``, or from a training config packaged
with ``dragons_egg.experiments`` by its name: ``--config selfplay-shipped`` is the shipped agent's
run). One :class:`~dragons_egg_env.vector.VectorEngine` per table size (2..8 by default) holds
``envs_per_size`` matches, observations padded to ``max_players`` seats, so one policy plays every
table size. At each step the policy (a masked MLP in torch) acts for the seat to move in every match
at once; the seat's decisions form one trajectory per match and seat, whose reward is what that seat
earned until its next decision (R27 round rewards, the last at the end of the match). Advantages are
GAE over those per-seat trajectories, bootstrapped at the end of a rollout with the value of each
seat's current observation. A share of the seats (``opponent_share``) can be played by a league,
drawn per match and seat: frozen snapshots of the learner and, with ``league_agents``, memoryless
rule agents (``heuristic``, ``greedy``: agents that act on their observation alone, one object for
every seat they play); the league's decisions are not trained on.

Tribute decisions (ask and give, R31..R33) are a few per match; ``tribute_weight`` scales
their part of the loss so that the learner hears about them, and ``tribute_lambda`` gives them
a GAE lambda of their own (docs/training.md compares settings).

Every ``eval_every`` samples the policy is exported (``dragons_egg.agents.netpolicy`` format, played
by the ``net`` and ``ppo`` agents) and evaluated with the tournament code (duplicate deals,
bootstrap intervals) against ``eval_opponents``; the learning curve (strength against samples and
wall time) goes to ``eval.csv``, ``learning_curve.png`` and TensorBoard. An interval from fewer deal
sequences than the tournament's minimum
(:data:`dragons_egg.experiments.evaluation.tournament.MIN_SEQUENCES`)
is left out: NaN in the history, an empty cell in ``eval.csv``. Checkpoints
(``checkpoints/latest.pt``: weights, optimiser, counters, generators, league, history; tensors
and plain data with a digest, read with ``torch.load(weights_only=True)``, so that loading one
runs no code: :func:`.checkpoint.load_checkpoint`; the old format needs ``--trust-checkpoint``) let
``--resume CHECKPOINT`` continue a run: in the checkpoint's own run folder, with the settings saved
in the checkpoint; settings given on the command line (flags, or those a ``--config`` file names)
override single settings, each change printed and recorded in the run's ``config_history.json``; the
network's shape (``hidden``, ``max_players``) cannot change. The trainer updates after whole
rollouts, so it says at the start how far past ``total_samples`` it will go. Torch uses
``torch_threads`` threads (default 1).

This module holds the settings, the run and the command line; the collection is
:mod:`.rollout`, the PPO update :mod:`.learner`, the network and its export :mod:`.network`,
the checkpoint format :mod:`.checkpoint`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from dragons_egg.experiments.common.runs import (
    HeldInterrupts,
    RunInterrupted,
    RunOutput,
    atomic_path,
    claim_run_dir,
    config_changes,
    interrupted_exit,
    json_ready,
    resume_entry,
    resumed_settings,
    start_entry,
    stops_on_sigterm,
    write_run_config,
)
from dragons_egg.experiments.common.settings import (
    check_range,
    module_prog,
    require,
)
from dragons_egg.experiments.training.checkpoint import (
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    TRUST_HELP,
    load_checkpoint,
    plain_state,
    state_digest,
)
from dragons_egg.experiments.training.distributed import (
    acting_seed,
    collector_seed,
    model_weights,
    resolve_collectors,
)
from dragons_egg.experiments.training.learner import Learner
from dragons_egg.experiments.training.network import build_network, export_policy, new_table
from dragons_egg.experiments.training.rollout import (
    ActingPolicy,
    Collector,
    advantages,
    snapshot_fns,
)
from dragons_egg.experiments.training.scaffold import RunSettings, TrainerCommand, trainer_command
from dragons_egg_env.config import MAX_PLAYERS, TABLE_SIZES, RulesConfig

#: Settings a resumed run cannot change, with the reason: the checkpoint's weights, optimiser
#: state and league snapshots are arrays of the network they shape.
FROZEN_ON_RESUME = {"hidden": "the checkpoint's network has its layer sizes",
                    "max_players": "the checkpoint's network reads observations of that size"}
#: What a run writes in its folder (globs): one of them there means the folder holds a run,
#: and ``--overwrite`` removes exactly these.
RUN_FILES = ("config.json", "config_history.json", "checkpoints", "policies", "eval.csv",
             "eval-before-resume-*.csv", "eval_*.csv", "learning_curve.png", "summary.json",
             "final.npz", "tb")


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint a run in ``run_dir`` continues from (``checkpoints/latest.pt``), if it
    has one."""
    path = run_dir / "checkpoints" / "latest.pt"
    return path if path.is_file() else None



@dataclass
class SelfPlayConfig(RunSettings):
    """Every setting of a self-play run (each is a command-line flag); those every trainer
    has are :class:`~.scaffold.RunSettings`'."""

    RUN_PREFIX: ClassVar[str] = "selfplay"

    #: Learner samples (decisions trained on) to collect in all.
    total_samples: int = 2_000_000
    #: Stop before collection and updates take more than this many seconds in all, across
    #: resumes (the next update's time predicted from the run's mean; 0: no limit).
    #: Evaluations and checkpoints do not count.
    max_seconds: float = 0.0
    #: Table sizes played at once, one engine each.
    table_sizes: tuple[int, ...] = TABLE_SIZES
    #: Matches per table size.
    envs_per_size: int = 128
    #: Observation padding: the policy plays any table up to this size.
    max_players: int = MAX_PLAYERS
    #: Rounds per match (R26).
    num_rounds: int = 3
    #: Steps per match in each rollout.
    rollout_steps: int = 64
    #: Hidden layer sizes of the shared trunk.
    hidden: tuple[int, ...] = (256, 256)
    learning_rate: float = 3e-4
    #: ``constant``, or ``linear``: decay towards 2% of ``learning_rate`` with the run's
    #: progress (the larger of its share of ``total_samples`` and of ``max_seconds``).
    lr_schedule: Literal["constant", "linear"] = "constant"
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    #: Passes over each rollout.
    epochs: int = 2
    minibatch: int = 4096
    #: Loss weight of tribute decisions (ask and give) relative to play decisions.
    tribute_weight: float = 1.0
    #: GAE lambda of tribute decisions (default: ``gae_lambda``). A small value credits an
    #: ask or a give-back with what the value function makes of the hand it leads to, rather
    #: than with the noisy outcome of the whole round.
    tribute_lambda: float | None = None
    #: Share of the learner's tribute decisions (asks and give-backs with a choice) whose
    #: every choice is played out to the end of the round on the same deal by the acting
    #: policy, greedy (:mod:`.counterfactual`), and learned from with the all-action
    #: surrogate on those values (0: none; docs/training.md, "Tribute learned in the trainer").
    tribute_counterfactual: float = 0.0
    #: Loss weight of the counterfactual tribute surrogate.
    tribute_cf_coef: float = 1.0
    #: How the counterfactual values move the policy: ``surrogate``, the all-action clipped
    #: PPO surrogate (an action's step scales with its probability), or ``logits``, each
    #: legal action's logit moved by its advantage (NeuRD, Hennes et al. 2020: no
    #: probability factor, so a choice the policy almost never makes still moves),
    #: within ``tribute_cf_threshold`` of the decision's mean logit.
    #: ``regression``: each legal action's logit, centred on the decision's legal mean,
    #: fitted to ``tribute_cf_scale`` times its value centred alike (a tribute decision is a
    #: bandit whose every arm was played out: regressing every arm averages the hidden cards'
    #: noise over the decisions that share an observation's features, and the policy's best
    #: choice becomes the one of the best expected value).
    tribute_cf_update: Literal["surrogate", "logits", "regression"] = "surrogate"
    #: With ``tribute_cf_update = "logits"``: a logit more than this above (below) its
    #: decision's mean is pushed no further up (down), so the logits stay bounded.
    tribute_cf_threshold: float = 2.0
    #: With ``tribute_cf_update = "regression"``: logits per unit of round reward (20: a
    #: choice worth 0.1 more than another is fitted 2 logits above it).
    tribute_cf_scale: float = 20.0
    #: With ``tribute_cf_update = "regression"``: every update fits the last this many
    #: counterfactual tribute decisions (a replay, kept in the checkpoint), not only its
    #: rollout's (0). Each is fitted once an epoch, beside the rollout's decisions.
    tribute_cf_replay: int = 0
    #: Share of the learner's play decisions with a choice made while holding the Egg (R19:
    #: only a clear passes it on, R20) whose every legal play is played out to the end of the
    #: round on the same deal by the acting policy, greedy, as the counterfactual tribute
    #: decisions are, and learned from with the same update (``tribute_cf_update``,
    #: ``tribute_cf_coef``) (0: none; docs/training.md, "The Egg holder's plays played out").
    egg_counterfactual: float = 0.0
    #: Learn a give-back table beside the network (:mod:`.tribute_table`): every
    #: counterfactual give-back decision adds each choice's value over the heuristic's
    #: give-back to a key of table size, card group and count held; the exported policy gives
    #: back by the table at each table size where, on decisions it had not yet fitted, it
    #: beat the network's own give-back (95% interval above 0), and by the network elsewhere.
    #: Needs ``tribute_counterfactual`` above 0 (docs/training.md, "A give-back table in the
    #: trainer").
    tribute_table: bool = False
    #: A table key's score is its mean gain shrunk towards the rule's as if this many more
    #: decisions had gained 0.
    tribute_table_shrink: float = 50.0
    #: Held-out give-back decisions per table size (the latest) that decide whether the table
    #: plays there.
    tribute_table_window: int = 20_000
    #: The table plays at a table size only with at least this many held-out decisions there.
    tribute_table_min: int = 1_000
    #: A search-targets folder (``dragons-egg search-targets``): every minibatch also fits
    #: the policy to ``ismcts-net``'s root visit distributions on ``search_batch`` of the
    #: folder's decisions, drawn at random (cross-entropy, weight ``search_coef``): expert
    #: iteration, the network pulled towards the moves its search finds (docs/training.md,
    #: "Search targets"). Empty: none.
    search_targets: str = ""
    #: Loss weight of the search targets' cross-entropy.
    search_coef: float = 1.0
    #: Search-target decisions fitted with each minibatch.
    search_batch: int = 1024
    #: Share of seats played by the league (0: pure self-play).
    opponent_share: float = 0.0
    #: Agent specs that are members of the league besides the snapshots, drawn as often as
    #: each snapshot: memoryless agents only (``heuristic``, ``greedy``, ``random``,
    #: ``net:path=...``).
    league_agents: tuple[str, ...] = ()
    #: Add a snapshot to the league every this many samples (0: never).
    snapshot_every: int = 0
    max_snapshots: int = 5
    #: Evaluate every this many samples (0: only at the end).
    eval_every: int = 500_000
    #: Table size of the evaluations.
    eval_players: int = 4
    #: Collectors as Ray actors: 0 collects in this process, between updates; ``N`` >= 1
    #: starts a private local Ray instance (or joins ``address``) with ``N`` collector actors,
    #: and the learner takes the cores they leave; -1 (auto): the fastest measured, one
    #: pipelined collector when Ray is installed and there are two cores, else 0.
    collectors: int = -1
    #: The Ray cluster the collectors join (``auto``, or ``HOST:PORT``; empty: a private local
    #: instance). Only with ``collectors`` >= 1.
    address: str = ""
    #: With collectors: overlap the collection of the next rollout with the update on the
    #: last (one policy version of lag); off: one collector at a time, no lag, and with one
    #: collector the in-process trainer's updates exactly.
    pipeline: bool = True
    #: Save ``checkpoints/latest.pt`` every this many samples (0: only at the end).
    checkpoint_every: int = 250_000

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad setting: its type (the field's
        annotation: :func:`~dragons_egg.experiments.common.settings.check_fields`), then its
        range."""
        self.validate_run()
        for name in ("learning_rate", "clip_range", "max_grad_norm"):
            check_range(getattr(self, name) > 0, name, getattr(self, name), "> 0")
        for name in ("ent_coef", "vf_coef"):
            check_range(getattr(self, name) >= 0, name, getattr(self, name), ">= 0")
        check_range(self.total_samples >= 1, "total_samples", self.total_samples, ">= 1")
        require(bool(self.table_sizes), "table_sizes must name at least one table size")
        check_range(self.max_players in TABLE_SIZES, "max_players", self.max_players,
                    f"in {TABLE_SIZES}")
        for n in self.table_sizes:
            require(n in TABLE_SIZES and n <= self.max_players,
                 f"table size {n} must be in 2..max_players ({self.max_players})")
            RulesConfig(num_players=n, num_rounds=self.num_rounds)
        for name in ("envs_per_size", "rollout_steps", "epochs", "minibatch", "max_snapshots"):
            check_range(getattr(self, name) >= 1, name, getattr(self, name), ">= 1")
        check_range(self.snapshot_every >= 0, "snapshot_every", self.snapshot_every, ">= 0")
        check_range(self.collectors >= -1, "collectors", self.collectors, ">= -1 (-1: auto)")
        require(not self.address or self.collectors != 0,
                f"address {self.address!r} needs collectors (the collectors join it)")
        if self.collectors >= 1 or self.address:
            from dragons_egg.experiments.training.distributed import ray_available

            require(ray_available(), "collectors on Ray (collectors >= 1 or an address) need "
                    "the 'rllib' extra: pip install 'dragons-egg[rllib]' (or --collectors 0)")
        require(all(isinstance(h, int) and h > 0 for h in self.hidden) and bool(self.hidden),
                f"hidden must be positive ints, got {self.hidden}")
        check_range(self.max_seconds >= 0, "max_seconds", self.max_seconds, ">= 0")
        check_range(0 < self.gamma <= 1, "gamma", self.gamma, "in (0, 1]")
        check_range(0 <= self.gae_lambda <= 1, "gae_lambda", self.gae_lambda, "in [0, 1]")
        check_range(0 <= self.opponent_share < 1, "opponent_share", self.opponent_share,
                    "in [0, 1)")
        check_range(self.tribute_weight >= 0, "tribute_weight", self.tribute_weight, ">= 0")
        require(self.tribute_lambda is None or 0 <= self.tribute_lambda <= 1,
             f"tribute_lambda must be in [0, 1], got {self.tribute_lambda}")
        check_range(0 <= self.tribute_counterfactual <= 1, "tribute_counterfactual",
                    self.tribute_counterfactual, "in [0, 1]")
        check_range(0 <= self.egg_counterfactual <= 1, "egg_counterfactual",
                    self.egg_counterfactual, "in [0, 1]")
        check_range(self.tribute_cf_coef >= 0, "tribute_cf_coef", self.tribute_cf_coef,
                    ">= 0")
        check_range(self.tribute_cf_threshold > 0, "tribute_cf_threshold",
                    self.tribute_cf_threshold, "> 0")
        check_range(self.tribute_cf_scale > 0, "tribute_cf_scale", self.tribute_cf_scale,
                    "> 0")
        check_range(self.tribute_cf_replay >= 0, "tribute_cf_replay", self.tribute_cf_replay,
                    ">= 0")
        require(not self.tribute_cf_replay or self.tribute_cf_update == "regression",
                f"tribute_cf_replay ({self.tribute_cf_replay}) needs tribute_cf_update = "
                f"regression (not {self.tribute_cf_update}): the other updates weigh each "
                "decision by the policy that played it, which a replayed one no longer is")
        require(not self.tribute_cf_replay or not self.egg_counterfactual,
                f"tribute_cf_replay ({self.tribute_cf_replay}) keeps tribute decisions only; "
                f"it cannot go with egg_counterfactual ({self.egg_counterfactual})")
        require(not self.tribute_cf_replay or self.tribute_counterfactual > 0,
                f"tribute_cf_replay ({self.tribute_cf_replay}) keeps counterfactual tribute "
                "decisions, which tribute_counterfactual 0 makes none of")
        check_range(self.tribute_table_shrink >= 0, "tribute_table_shrink",
                    self.tribute_table_shrink, ">= 0")
        check_range(self.tribute_table_window >= 2, "tribute_table_window",
                    self.tribute_table_window, ">= 2")
        check_range(1 <= self.tribute_table_min <= self.tribute_table_window,
                    "tribute_table_min", self.tribute_table_min,
                    f"in 1..tribute_table_window ({self.tribute_table_window})")
        require(not self.tribute_table or self.tribute_counterfactual > 0,
                "tribute_table learns from counterfactual give-back decisions, which "
                "tribute_counterfactual 0 makes none of")
        check_range(self.search_coef >= 0, "search_coef", self.search_coef, ">= 0")
        check_range(self.search_batch >= 1, "search_batch", self.search_batch, ">= 1")
        require(not self.search_targets or
                (Path(self.search_targets) / "settings.json").is_file(),
                f"search_targets {self.search_targets!r} is not a search-targets folder (no "
                "settings.json): make one with dragons-egg search-targets")
        check_range(self.eval_players in TABLE_SIZES and self.eval_players <= self.max_players,
                    "eval_players", self.eval_players, f"in 2..{self.max_players}")
        if self.league_agents:
            from dragons_egg.agents import parse_spec

            for spec in self.league_agents:
                parse_spec(spec)
        for spec in self.league_agents:
            require(league_agent(spec, 0, self).memoryless,
                 f"league agent {spec!r} is not memoryless (it keeps state across moves or "
                 "matches), so it cannot play a league seat; use heuristic, greedy, random "
                 "or net:path=FILE.npz")

# ---------------------------------------------------------------------------------------
# Settings, placement and export.

def placement(cfg: SelfPlayConfig) -> dict[str, Any]:
    """Where a run collects and learns: its collectors
    (:func:`~.distributed.resolve_collectors`), pipelined or not, and the learner's threads
    (``torch_threads`` in process; with collectors, this machine's cores, of which a busy
    collector holds one)."""
    import os

    n = resolve_collectors(cfg.collectors, cfg.address)
    threads = max(cfg.torch_threads, os.cpu_count() or 1) if n else cfg.torch_threads
    return {"collectors": n, "pipeline": bool(n) and cfg.pipeline, "learner_threads": threads,
            "address": cfg.address if n else ""}


def describe_placement(p: dict[str, Any]) -> str:
    """One line: where the run collects and learns."""
    if not p["collectors"]:
        return f"collection in this process, then the update on {p['learner_threads']} thread(s)"
    where = p["address"] or "a private local Ray instance"
    lag = p["collectors"]
    mode = (f"pipelined: the next rollout is collected during the update, {lag} policy "
            f"version{'s' * (lag > 1)} of lag" if p["pipeline"] else "synchronous: no lag")
    return (f"{p['collectors']} collector(s) on {where} ({mode}); the learner on up to "
            f"{p['learner_threads']} threads, one fewer for each busy collector here")


def league_agent(spec: str, seed: int, cfg: SelfPlayConfig):
    """The agent ``spec`` made with ``seed``, started for observations padded to
    ``cfg.max_players`` seats (a memoryless agent reads only what decoding needs)."""
    from dragons_egg.agents import make_agent

    agent = make_agent(spec, seed=seed)
    agent.start_match(0, RulesConfig(num_players=cfg.max_players, num_rounds=cfg.num_rounds),
                      cfg.max_players)
    return agent


def config_from_dict(data: dict[str, Any]) -> SelfPlayConfig:
    """A :class:`SelfPlayConfig` from its JSON form (:meth:`~.scaffold.RunSettings.from_dict`)."""
    return SelfPlayConfig.from_dict(data)


def saved_config(state: dict[str, Any], path: str | Path) -> SelfPlayConfig:
    """The settings a checkpoint was saved with (settings added since take their defaults); a
    ``ValueError`` for a setting this version does not have."""
    known = {f.name for f in dataclasses.fields(SelfPlayConfig)}
    unknown = sorted(set(state["config"]) - known)
    if unknown:
        raise ValueError(f"checkpoint {path} has settings this version does not know: "
                         f"{', '.join(unknown)}")
    return config_from_dict(state["config"])


def resumed_config(checkpoint: str | Path, parsed: SelfPlayConfig,
                   given: set[str] | frozenset[str] = frozenset(),
                   trust: bool = False) -> SelfPlayConfig:
    """The settings ``--resume checkpoint`` continues with: the checkpoint's, with those
    ``given`` on the command line taken from ``parsed``; in the checkpoint's run folder
    unless ``out_dir`` or ``run_name`` is given
    (:func:`dragons_egg.experiments.common.settings.resumed_settings`). A ``ValueError`` for a bad
    checkpoint or a setting that cannot change (:data:`FROZEN_ON_RESUME`); ``trust`` loads a
    checkpoint of the old format (:func:`.checkpoint.load_checkpoint`)."""
    saved = saved_config(load_checkpoint(checkpoint, trust), checkpoint)
    return resumed_settings(saved, parsed, given, checkpoint, FROZEN_ON_RESUME)


def export_checkpoint(path: str | Path, dest: str | Path, command: str = "",
                      note: str = "", trust: bool = False) -> Path:
    """Write the policy of a self-play checkpoint as an ``dragons_egg.agents.netpolicy`` file, its
    provenance (command, note, samples, training seconds, config, evaluations) in the file's
    metadata and in a ``.json`` beside it. The checkpoint is read by
    :func:`.checkpoint.load_checkpoint` (``trust`` for one of the old format); weights that
    are not finite are refused."""
    state = load_checkpoint(path, trust)
    cfg = config_from_dict(state["config"])
    model = build_network(cfg)
    model.load_state_dict(state["model"])
    prov = {"trainer": "dragons_egg.experiments.training.selfplay", "command": command,
            "note": note,
            "checkpoint": str(path), "samples": state["samples"],
            "updates": state["updates"], "seconds": round(state["seconds"], 1),
            "config": state["config"], "evaluations": json_ready(state["history"])}
    if state.get("config_history"):
        prov["config_history"] = state["config_history"]
    dest = Path(dest)
    table = new_table(cfg)
    if table is not None:
        try:
            table.load(state.get("tribute_table", {}))
        except ValueError as exc:
            raise ValueError(f"checkpoint {path}: {exc}") from None
        prov["tribute_table"] = table.summary()
    export_policy(model, cfg, dest, prov, table)
    dest.with_suffix(".json").write_text(json.dumps(prov, indent=1) + "\n")
    return dest


# ---------------------------------------------------------------------------------------
# The run.

class Run:
    """A self-play run: collection, updates, league, evaluation, checkpoints.

    With ``resume`` (a checkpoint) the run continues from it with ``cfg``, which the command
    line makes from the checkpoint's settings and the ones given
    (:func:`resumed_config`); every setting ``cfg`` changes is printed and recorded in
    ``config_history.json``, and ``eval.csv`` holds the checkpoint's evaluations, the new
    ones appended. ``trust_checkpoint`` (``--trust-checkpoint``) loads a checkpoint of the old
    format, which runs code (:func:`.checkpoint.load_checkpoint`).

    A run folder holds one run: a folder with another run's files (:data:`RUN_FILES`) is a
    ``ValueError`` naming ``--resume`` and ``--run-name``, unless ``overwrite`` removes them
    first (:func:`~dragons_egg.experiments.common.settings.claim_run_dir`). A Ctrl-C during
    :meth:`train` saves a checkpoint and raises
    :class:`~dragons_egg.experiments.common.settings.RunInterrupted`."""

    #: Without the progress bar (``--no-progress``, as in a log), a checkpoint also writes a
    #: line with the samples, the training seconds and the pace since the line before, at
    #: most once in this many training seconds.
    PACE_EVERY = 60.0

    def __init__(self, cfg: SelfPlayConfig, resume: str | None = None,
                 trust_checkpoint: bool = False, overwrite: bool = False) -> None:
        cfg.validate()
        self.cfg = cfg
        self.dir = cfg.run_dir
        # a new run, or a resume in the checkpoint's own run folder or in one with no run
        claim_run_dir(self.dir, RUN_FILES, latest=latest_checkpoint, resume=resume,
                      overwrite=overwrite)
        (self.dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        (self.dir / "policies").mkdir(exist_ok=True)
        #: Ctrl-C waits for the update in progress (:meth:`iteration`).
        self.hold = HeldInterrupts("this update")
        self.learner = Learner(cfg)
        #: What the search targets the updates fit hold (``search_targets``), else None.
        self.search_info: dict[str, Any] | None = None
        if cfg.search_targets:
            self.search_info = self.learner.load_search_targets(cfg.search_targets)
            info = self.search_info
            total = info["decisions"] + info["held_out"]
            print(f"search targets: {total:,} decisions of ismcts-net "
                  f"({info['iterations']} iterations a move; by table size "
                  f"{info['decisions_by_players']}) from {info['folder']}, gathered in "
                  f"{info['gathered_seconds']:,.1f} s; {info['decisions']:,} fitted, "
                  f"{info['held_out']:,} held out for the evaluations", file=sys.stderr,
                  flush=True)
        #: The learner's policy as the in-process collector plays it (its own generator).
        self.acting = ActingPolicy(self.learner.model, acting_seed(cfg.seed, 0, 0))
        self.samples = 0
        self.updates = 0
        self.seconds = 0.0      # wall time of collection and updates
        self.last_update_s = 0.0  # the last iteration's (this process's; 0 until one ran)
        self.eval_seconds = 0.0
        self.history: list[dict[str, Any]] = []
        self.league: list[str] = []   # snapshot policy files
        self.marks = {"eval": 0, "checkpoint": 0, "snapshot": 0}
        #: Samples and training seconds at the last pace line (:meth:`pace_line`).
        self.pace_mark = (0, 0.0)
        #: When the run started and each resume, with the settings it changed.
        self.config_history: list[dict[str, Any]] = [start_entry()]
        #: What :meth:`train` announced of the sample budget (:meth:`sample_budget`).
        self.budget: dict[str, Any] | None = None
        if resume:
            self._load(Path(resume), trust_checkpoint)
        #: ``eval.csv``, the learning curve and TensorBoard (:class:`RunOutput`).
        self.output = RunOutput(self.dir, "samples")
        if resume:
            self.output.restore(self.history, self.samples)
        write_run_config(self.dir, cfg, self.config_history)
        #: Matches in a rollout (every table size's).
        self.batch = cfg.envs_per_size * len(cfg.table_sizes)
        self._snap_policies: list[Any] = []
        self._agent_fns = self._league_agent_fns()
        #: The collectors on Ray (``collectors`` >= 1), else ``None``.
        self.remote: Any = None
        self.collector: Collector | None = None
        #: How collection and learning are placed (said once, kept in summary.json).
        self.placement = placement(cfg)
        if self.placement["collectors"]:
            from dragons_egg.experiments.training.distributed import RayCollection

            self.remote = RayCollection(dataclasses.asdict(cfg), self.placement["collectors"],
                                        self.updates, address=cfg.address,
                                        pipeline=cfg.pipeline)
            self.remote.set_weights(model_weights(self.learner.model))
            self.learner.before_minibatch = self._share_cores
        else:
            self.collector = Collector(cfg, collector_seed(cfg.seed, self.updates, 0))
        self._sync_league()
        if self.collector is not None:
            self.collector.start()  # the first matches have a league too

    # -- checkpoints -----------------------------------------------------------------------
    def save(self) -> Path:
        """Write ``checkpoints/latest.pt`` (a temporary file, renamed): tensors and plain data
        only (:func:`.checkpoint.plain_state`, so that it loads with ``weights_only=True``),
        with the digest of its contents (:func:`.checkpoint.state_digest`)."""
        torch = self.learner.torch
        path = self.dir / "checkpoints" / "latest.pt"
        state = plain_state({
            "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
            "config": dataclasses.asdict(self.cfg),
            "model": dict(self.learner.model.state_dict()),
            "optimizer": self.learner.opt.state_dict(),
            "generator": self.learner.gen.get_state(),
            "acting_generator": self.acting.gen.get_state(), "samples": self.samples,
            "updates": self.updates, "seconds": self.seconds,
            "eval_seconds": self.eval_seconds, "history": self.history,
            "league": self.league, "marks": self.marks,
            "config_history": self.config_history,
            "tribute_replay": self.learner.replay.state() if self.learner.replay else {},
            "tribute_table": self.learner.table.state() if self.learner.table is not None
            else {}})
        state["digest"] = state_digest(state)
        # torch names the archive's root folder after the file it writes, and load errors
        # quote that name: ``latest.pt.tmp`` keeps it ``latest.pt``
        with atomic_path(path, tmp_name=f"{path.name}.tmp") as tmp:
            torch.save(state, tmp)
        return path

    def _load(self, path: Path, trust: bool = False) -> None:
        state = load_checkpoint(path, trust)
        if tuple(state["config"]["hidden"]) != tuple(self.cfg.hidden) or \
                state["config"]["max_players"] != self.cfg.max_players:
            raise ValueError(f"checkpoint {path} has another network shape (hidden "
                             f"{state['config']['hidden']}, max_players "
                             f"{state['config']['max_players']})")
        self.learner.model.load_state_dict(state["model"])
        self.learner.opt.load_state_dict(state["optimizer"])
        self.learner.gen.set_state(state["generator"])
        if "acting_generator" in state:  # checkpoints before it sampled with the learner's
            self.acting.gen.set_state(state["acting_generator"])
        for k in ("samples", "updates", "seconds", "eval_seconds", "history", "league",
                  "marks"):
            setattr(self, k, state[k])
        missing = [p for p in self.league if not Path(p).is_file()]
        if missing:  # a run resumed in another folder: said, not silently dropped
            print(f"warning: checkpoint {path}: {len(missing)} of its league's snapshots are "
                  f"not where its run kept them, and the league plays without them: "
                  f"{', '.join(missing)}", file=sys.stderr)
        self.league = [p for p in self.league if Path(p).is_file()]
        if self.learner.replay is not None:  # an older checkpoint's run kept none
            try:
                self.learner.replay.load(state.get("tribute_replay", {}))
            except ValueError as exc:
                raise ValueError(f"checkpoint {path}: {exc}") from None
        if self.learner.table is not None:  # a run without the table kept none
            try:
                self.learner.table.load(state.get("tribute_table", {}))
            except ValueError as exc:
                raise ValueError(f"checkpoint {path}: {exc}") from None
        # checkpoints from before the config history have none
        self.config_history = list(state.get("config_history", []))
        self.config_history.append(resume_entry(
            self.samples, path, config_changes(saved_config(state, path), self.cfg)))

    # -- league ------------------------------------------------------------------------------
    def _sync_league(self) -> None:
        from dragons_egg.agents.netpolicy import load_policy_file

        self._snap_policies = [load_policy_file(p) for p in self.league]
        if self.collector is not None:
            self.collector.league_size = len(self.league) + len(self._agent_fns)
        if self.remote is not None:
            self.remote.set_league(list(self.league))

    def _share_cores(self) -> None:
        """Before each minibatch: the learner takes the cores the collectors on this machine
        leave (a collector at work holds one), so that neither waits on a core the other
        spins on; the updates are the same on any number of threads."""
        busy = self.remote.busy_here() if self.remote is not None else 0
        self.learner.torch.set_num_threads(max(1, self.placement["learner_threads"] - busy))

    def _snapshot_fns(self):
        """The league's members: the snapshots (greedy), then the league agents."""
        return snapshot_fns(self._snap_policies) + self._agent_fns

    def _league_agent_fns(self) -> list[Any]:
        return [league_agent(spec, self.cfg.seed * 1000 + k, self.cfg).act_batch
                for k, spec in enumerate(self.cfg.league_agents)]

    def _add_snapshot(self) -> None:
        path = self.dir / "policies" / f"snapshot_{self.samples}.npz"
        export_policy(self.learner.model, self.cfg, path, self._provenance(), self.learner.table)
        self.league.append(str(path))
        self.league = self.league[-self.cfg.max_snapshots:]
        self._sync_league()

    def _provenance(self) -> dict[str, Any]:
        out = {"trainer": "dragons_egg.experiments.training.selfplay", "samples": self.samples,
               "updates": self.updates, "seconds": round(self.seconds, 1),
               "config": dataclasses.asdict(self.cfg)}
        if self.search_info is not None:  # its gathering seconds are training time too
            out["search_targets"] = self.search_info
        return out

    # -- the loop ------------------------------------------------------------------------
    def sample_budget(self) -> dict[str, Any]:
        """How far past ``total_samples`` the run will go from here: it updates after whole
        rollouts of ``rollout_steps`` steps of every match, all of them learner decisions
        without a league (``opponent_share`` 0), so it trains a whole number of rollouts.
        With a league a rollout holds fewer learner decisions, a number drawn with its seats,
        and ``will_train`` and ``overshoot`` are ``None``."""
        cfg = self.cfg
        per = cfg.rollout_steps * cfg.envs_per_size * len(cfg.table_sizes)
        left = max(cfg.total_samples - self.samples, 0)
        out: dict[str, Any] = {"asked": cfg.total_samples, "rollout_samples": per,
                               "will_train": None, "overshoot": None}
        if not cfg.opponent_share:
            will = self.samples + -(-left // per) * per
            out.update(will_train=will, overshoot=max(will - cfg.total_samples, 0))
        return out

    def announce_budget(self) -> dict[str, Any]:
        """Print one line when the run will train past ``total_samples`` (not a multiple of
        the rollout size), saying by how much; returns :meth:`sample_budget`."""
        b = self.sample_budget()
        if self.samples >= self.cfg.total_samples:
            return b
        per = f"{b['rollout_samples']:,}"
        if b["will_train"] is None:
            print(f"total_samples {b['asked']:,}: with a league, a rollout holds up to {per} "
                  f"learner samples, so the run may train up to {b['rollout_samples'] - 1:,} "
                  "past it (summary.json records the overshoot)", file=sys.stderr, flush=True)
        elif b["overshoot"]:
            print(f"total_samples {b['asked']:,} is not a multiple of the rollout size {per} "
                  f"(rollout_steps x envs_per_size x table sizes): asked {b['asked']:,}, will "
                  f"train {b['will_train']:,}, overshoot {b['overshoot']:,}", file=sys.stderr,
                  flush=True)
        return b

    def train(self) -> Path:
        """Train to the end of the run's budget; returns ``final.npz``. A Ctrl-C saves a
        checkpoint (after the update in progress, :attr:`hold`) and raises
        :class:`~dragons_egg.experiments.common.settings.RunInterrupted`, which says where."""
        cfg = self.cfg
        self.budget = self.announce_budget()
        print(f"placement: {describe_placement(self.placement)}", file=sys.stderr, flush=True)
        bar = _progress(cfg, self.samples)
        self.pace_mark = (self.samples, self.seconds)
        try:
            self.periodic()  # what a Ctrl-C left undone at the checkpoint's samples
            while self.samples < cfg.total_samples and not self.out_of_time():
                stats = self.iteration()
                if bar is not None:
                    bar.update(stats["samples"])
                    post = {"sps": f"{self.samples / max(self.seconds, 1e-9):,.0f}"}
                    if cfg.max_seconds:
                        post["train_s"] = f"{self.seconds:,.0f}/{cfg.max_seconds:,.0f}"
                    bar.set_postfix(post)
                self.periodic()
            if bar is not None:
                bar.close()
                bar = None
            return self.finish()
        except KeyboardInterrupt:
            if bar is not None:
                bar.close()
            if self.hold.torn:  # a second Ctrl-C cut an update: nothing whole to save
                raise RunInterrupted(None, self.samples, "samples",
                                     latest_checkpoint(self.dir)) from None
            raise RunInterrupted(self.save(), self.samples, "samples") from None
        finally:
            self.close()

    def close(self) -> None:
        """Stop the Ray collectors (and the private Ray instance), if any; the run can still
        save, evaluate and export, not collect."""
        if self.remote is not None:
            if self.remote.dropped:
                print(f"{self.remote.dropped} rollout(s) dropped: their collector died",
                      file=sys.stderr, flush=True)
            self.remote.close()
            self.remote = None

    def out_of_time(self) -> bool:
        """Whether another update would take the run past its ``max_seconds`` of training,
        at the slower of the run's mean pace and its last update's (so that the budget is a
        limit, not a point to pass, also where a resume with costlier settings slowed it)."""
        if not self.cfg.max_seconds:
            return False
        pace = max(self.seconds / self.updates if self.updates else 0.0, self.last_update_s)
        return self.seconds + pace > self.cfg.max_seconds

    def progress_fraction(self) -> float:
        """How far the run is, 0..1: the larger of its sample and time budgets used."""
        frac = self.samples / self.cfg.total_samples
        if self.cfg.max_seconds:
            frac = max(frac, self.seconds / self.cfg.max_seconds)
        return min(frac, 1.0)

    def iteration(self) -> dict[str, float]:
        """One rollout and one update; returns their figures."""
        cfg = self.cfg
        lr = cfg.learning_rate
        if cfg.lr_schedule == "linear":
            lr *= max(1.0 - self.progress_fraction(), 0.02)
        for group in self.learner.opt.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        if self.remote is not None:
            ro, info = self.remote.next_rollout()
        else:
            ro, info = self.collector.collect(self.acting.act, self._snapshot_fns(),
                                              self.acting.value, self.acting)
        t1 = time.perf_counter()
        with self.hold:  # a Ctrl-C waits for the update and its counts: the state stays whole
            adv = advantages(ro, cfg.rollout_steps, self.batch, cfg.gamma,
                             cfg.gae_lambda, cfg.tribute_lambda)
            stats = self.learner.update(ro, adv)
            if self.remote is not None:
                self.remote.set_weights(model_weights(self.learner.model))
            t2 = time.perf_counter()
            n = int(ro.learner.sum())
            self.samples += n
            self.updates += 1
            self.seconds += t2 - t0
            self.last_update_s = t2 - t0
        stats.update(samples=n, learning_rate=lr, collect_s=t1 - t0, update_s=t2 - t1,
                     samples_per_s=n / (t2 - t0), rounds=info["rounds"],
                     cf_states=info.get("cf_states", 0), egg_states=info.get("egg_states", 0))
        if self.remote is not None:  # collect_s: how long the learner waited for the rollout
            stats.update(lag=info["lag"], collector_s=info["collect_s"],
                         dropped=self.remote.dropped)
        self.output.scalars("train", stats, self.samples)
        return stats

    def periodic(self) -> None:
        """Take the league snapshot, evaluation and checkpoint that are due by the samples
        so far (each every its own number of samples; 0: never). A snapshot's and an
        evaluation's mark moves once it is done, so that one a Ctrl-C cut is still due when
        the run resumes at the same samples (and one that was done is not done twice)."""
        cfg = self.cfg
        m = self.marks
        if cfg.snapshot_every and self.samples - m["snapshot"] >= cfg.snapshot_every:
            if not any(Path(p).name == f"snapshot_{self.samples}.npz" for p in self.league):
                self._add_snapshot()
            m["snapshot"] = self.samples
        if cfg.eval_every and self.samples - m["eval"] >= cfg.eval_every:
            if not self.history or self.history[-1]["samples"] != self.samples:
                self.run_eval()
            m["eval"] = self.samples
        if cfg.checkpoint_every and self.samples - m["checkpoint"] >= cfg.checkpoint_every:
            m["checkpoint"] = self.samples
            self.save()
            self.pace_line()

    def pace_line(self) -> None:
        """Without the progress bar, a line of the run's pace since the line before (at most
        one every :attr:`PACE_EVERY` training seconds): a slow machine or a busy core shows
        in a log at once, not at the next evaluation."""
        last_samples, last_seconds = self.pace_mark
        spent = self.seconds - last_seconds
        if self.cfg.progress or spent < self.PACE_EVERY or spent <= 0:
            return
        budget = f" of {self.cfg.max_seconds:,.0f}" if self.cfg.max_seconds else ""
        sys.stderr.write(f"at {self.samples:,} samples ({self.seconds:,.0f} training s{budget}): "
                         f"{(self.samples - last_samples) / spent:,.0f} samples/s since "
                         f"{last_samples:,}\n")
        self.pace_mark = (self.samples, self.seconds)

    def run_eval(self) -> dict[str, Any]:
        cfg = self.cfg
        t0 = time.perf_counter()
        path = export_policy(self.learner.model, cfg,
                             self.dir / "policies" / f"policy_{self.samples}.npz",
                             self._provenance(), self.learner.table)
        row = {"samples": self.samples, "seconds": round(self.seconds, 1)}
        row.update(cfg.evaluate(f"net:path={path}", players=cfg.eval_players,
                                seed=cfg.seed + 7919 * len(self.history),
                                num_rounds=cfg.num_rounds))
        row.update(self.learner.search_figures())
        self.eval_seconds += time.perf_counter() - t0
        self.history.append(row)
        self.output.add_eval(row)
        line = (f"eval at {self.samples:,} samples ({self.seconds:,.0f} s): "
                + ", ".join(f"{k} {v:+.3f}" for k, v in row.items() if k.startswith("diff_")
                            and not k.endswith(("_low", "_high")))
                + (f", search agreement {row['search_agree']:.1%}" if "search_agree" in row
                   else ""))
        # one write, line and newline together: print() writes them apart, and a Ctrl-C
        # between the two would glue the interruption's line onto this one
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
        return row

    def finish(self) -> Path:
        """The final evaluation, checkpoint and exported policy (``final.npz``)."""
        if not self.history or self.history[-1]["samples"] != self.samples:
            self.run_eval()
        self.save()
        final = export_policy(self.learner.model, self.cfg, self.dir / "final.npz",
                              self._provenance(), self.learner.table)
        budget = {**(self.budget or self.sample_budget()), "trained": self.samples,
                  "overshoot": max(self.samples - self.cfg.total_samples, 0)}
        (self.dir / "summary.json").write_text(json.dumps(json_ready({
            "samples": self.samples, "updates": self.updates, "seconds": self.seconds,
            "samples_per_s": self.samples / max(self.seconds, 1e-9),
            "eval_seconds": self.eval_seconds, "budget": budget,
            "placement": {**self.placement, **({} if self.remote is None else {
                "collector_nodes": len(self.remote.nodes),
                "dropped_rollouts": self.remote.dropped})},
            "history": self.history}), indent=1))
        return final


def _progress(cfg: SelfPlayConfig, start: int):
    if not cfg.progress:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=cfg.total_samples, initial=start, unit="sample", unit_scale=True,
                desc="self-play", file=sys.stderr)


# ---------------------------------------------------------------------------------------
# Command line.

RESUME_HELP = ("continue the run of this checkpoint (checkpoints/latest.pt) in its own run "
               "folder with its saved settings; settings given here (flags, or those a "
               "--config file names) override single ones, each change printed and recorded "
               "in config_history.json; hidden and max_players cannot change; a checkpoint "
               "of the old format (pickled objects) loads only with --trust-checkpoint")


def _resumed(checkpoint: str, parsed: SelfPlayConfig, given: frozenset[str],
             trust: bool) -> SelfPlayConfig:
    try:
        return resumed_config(checkpoint, parsed, given, trust)
    except ValueError as exc:
        raise ValueError(f"--resume: {exc}") from None


def parse_args(argv: list[str] | None = None, prog: str | None = None) -> TrainerCommand:
    """The settings and what to do with the run folder (:func:`~.scaffold.trainer_command`):
    from ``--config FILE|NAME`` and flags; with ``--resume CHECKPOINT``, the checkpoint's
    settings with those given explicitly (:func:`resumed_config`; ``--trust-checkpoint`` for a
    checkpoint of the old format). Bad input is a one-line error and exit status 2."""
    return trainer_command(SelfPlayConfig, argv, "Batched self-play PPO on the compiled engine.",
                           prog=prog, resume_help=RESUME_HELP, resume_metavar="CHECKPOINT.pt",
                           trust_help=TRUST_HELP, resumed=_resumed)


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line (``dragons-egg train``, or this module run with ``python -m``);
    ``prog`` is the command named in help, errors and the line that says how to resume."""
    from dragons_egg_env.extras import require_cli  # before parsing: tyro parses, torch trains

    prog = prog or module_prog(SelfPlayConfig) or "python -m " + __name__
    require_cli(prog, "train")
    cmd = parse_args(argv, prog)
    try:
        run = Run(cmd.cfg, cmd.resume, trust_checkpoint=cmd.trust, overwrite=cmd.overwrite)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return interrupted_exit(exc, prog)
    try:
        final = run.train()
    except KeyboardInterrupt as exc:  # Run.train saved a checkpoint (RunInterrupted)
        return interrupted_exit(exc, prog)
    print(f"wrote {final} ({run.samples:,} samples in {run.seconds:,.0f} s: "
          f"{run.samples / max(run.seconds, 1e-9):,.0f} samples/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["SelfPlayConfig", "Run", "export_checkpoint", "config_from_dict",
           "saved_config", "resumed_config", "FROZEN_ON_RESUME", "main"]
