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
network's shape (``hidden``, ``max_players``) cannot change. The digest tells a damaged checkpoint,
not a trusted one (anyone can recompute it): an agent spec that runs code (``trust=1``,
``rllib:path=``, ``MODULE:CLASS``) named by the saved settings or by a ``--config`` file is
refused unless given again with ``--allow-code SPEC`` (:func:`~.scaffold.trainer_command`). The
trainer updates after whole
rollouts, so it says at the start how far past ``total_samples`` it will go. Torch uses
``torch_threads`` threads (default 1).

The run's lifecycle (settings, run folder, resume's config history, Ctrl-C, hooks, evaluation
rows, run output, the command line's exits) is :class:`~.lifecycle.TrainerRun`'s, which
:class:`Run` builds on. This module holds the settings, the run and the command line; the
collection is :mod:`.rollout`, the PPO update :mod:`.learner`, the network and its export
:mod:`.network`, the checkpoint format :mod:`.checkpoint`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from dragons_egg.experiments.common.files import write_atomically
from dragons_egg.experiments.common.runs import (
    json_ready,
    resumed_settings,
    stops_on_sigterm,
)
from dragons_egg.experiments.common.settings import module_prog
from dragons_egg.experiments.training.callbacks import TrainerCallback
from dragons_egg.experiments.training.checkpoint import (
    CHECKPOINT_FORMAT,
    CHECKPOINT_VERSION,
    TRUST_HELP,
    load_checkpoint,
    plain_state,
    save_state,
    state_digest,
)
from dragons_egg.experiments.training.distributed import (
    acting_seed,
    collector_seed,
    model_weights,
    resolve_collectors,
)
from dragons_egg.experiments.training.learner import Learner
from dragons_egg.experiments.training.lifecycle import TrainerRun
from dragons_egg.experiments.training.network import build_network, export_policy, new_table
from dragons_egg.experiments.training.rollout import (
    ActingPolicy,
    Collector,
    advantages,
    snapshot_fns,
)
from dragons_egg.experiments.training.scaffold import (
    TrainerCommand,
    check_rules_kept,
    check_saved_consent,
    tournament_flags,
    trainer_command,
)
from dragons_egg.experiments.training.settings import (
    SelfPlayConfig,
    league_fns,
    unparsed_config,
)

#: Settings a resumed run cannot change, with the reason: the checkpoint's weights, optimiser
#: state and league snapshots are arrays of the network they shape.
FROZEN_ON_RESUME = {"ppo.hidden": "the checkpoint's network has its layer sizes",
                    "ppo.size_embedding": "the checkpoint's network has its size embedding or "
                                          "not",
                    "collection.max_players": "the checkpoint's network reads observations of "
                                              "that size",
                    "critic.central_critic": "the checkpoint's network has its critic or not",
                    "critic.critic_hidden": "the checkpoint's critic has its layer sizes",
                    "belief.hand_prediction": ("it is set for the run (the network has a hand head "
                                               "or not)")}
#: What a run writes in its folder (globs): one of them there means the folder holds a run,
#: and ``--overwrite`` removes exactly these.
RUN_FILES = ("config.json", "config_history.json", "checkpoints", "policies", "eval.csv",
             "eval-before-resume-*.csv", "eval_*.csv", "learning_curve.png", "summary.json",
             "final.npz", "tb", "exploiters")


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint a run in ``run_dir`` continues from (``checkpoints/latest.pt``), if it
    has one."""
    path = run_dir / "checkpoints" / "latest.pt"
    return path if path.is_file() else None



# ---------------------------------------------------------------------------------------
# Settings, placement and export.

def placement(cfg: SelfPlayConfig) -> dict[str, Any]:
    """Where a run collects and learns: its collectors
    (:func:`~.distributed.resolve_collectors`), pipelined or not, and the learner's threads
    (``torch_threads`` in process; with collectors, this machine's cores, of which a busy
    collector holds one)."""
    import os

    n = resolve_collectors(cfg.collection.collectors, cfg.collection.address)
    threads = max(cfg.torch_threads, os.cpu_count() or 1) if n else cfg.torch_threads
    return {"collectors": n, "pipeline": bool(n) and cfg.collection.pipeline,
            "learner_threads": threads,
            "address": cfg.collection.address if n else ""}


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


def config_from_dict(data: dict[str, Any]) -> SelfPlayConfig:
    """A :class:`SelfPlayConfig` from its JSON form (:meth:`~.scaffold.RunSettings.from_dict`)."""
    return SelfPlayConfig.from_dict(data)


def saved_config(state: dict[str, Any], path: str | Path) -> SelfPlayConfig:
    """The settings a checkpoint was saved with (settings added since take their defaults;
    those of before the run held its rules read as ``rules``,
    :func:`~.settings.migrate_rules`); a ``ValueError`` for a setting this version does not
    have. Their types are checked, not their agent specs, which are not parsed (parsing a
    ``MODULE:CLASS`` spec imports its module; :func:`resumed_config` asks for consent first,
    and a run checks the settings it runs with)."""
    return unparsed_config(state["config"], f"checkpoint {path}")


def resumed_config(checkpoint: str | Path, parsed: SelfPlayConfig,
                   given: set[str] | frozenset[str] = frozenset(),
                   trust: bool = False, allow_code: Collection[str] = ()) -> SelfPlayConfig:
    """The settings ``--resume checkpoint`` continues with: the checkpoint's, with those
    ``given`` on the command line taken from ``parsed``; in the checkpoint's run folder
    unless ``out_dir`` or ``run_name`` is given
    (:func:`dragons_egg.experiments.common.settings.resumed_settings`). A ``ValueError`` for a bad
    checkpoint or a setting that cannot change (:data:`FROZEN_ON_RESUME`); ``trust`` loads a
    checkpoint of the old format (:func:`.checkpoint.load_checkpoint`). A saved agent spec the
    run keeps that runs code is a :class:`~dragons_egg.agents.consent.ConsentError` unless it
    is in ``allow_code`` (:func:`~.scaffold.check_saved_consent`)."""
    saved = saved_config(load_checkpoint(checkpoint, trust), checkpoint)
    check_saved_consent(saved, given, checkpoint, allow_code)
    if "rules" in given:
        check_rules_kept(saved.rules, parsed.rules)
    cfg: SelfPlayConfig = resumed_settings(saved, parsed, given, checkpoint, FROZEN_ON_RESUME)
    return cfg


def export_checkpoint(path: str | Path, dest: str | Path, command: str = "",
                      note: str = "", trust: bool = False) -> Path:
    """Write the policy of a self-play checkpoint as an ``dragons_egg.agents.netpolicy`` file, its
    provenance (command, note, samples, training seconds, config, evaluations) in the file's
    metadata and in a ``.json`` beside it. The checkpoint is read by
    :func:`.checkpoint.load_checkpoint` (``trust`` for one of the old format); weights that
    are not finite are refused."""
    state = load_checkpoint(path, trust)
    cfg = unparsed_config(state["config"], f"checkpoint {path}")  # no agent of it is made
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

class Run(TrainerRun):
    """A self-play run: collection, updates, league, evaluation, checkpoints. Its lifecycle
    is :class:`~.lifecycle.TrainerRun`'s (settings, run folder, hold on Ctrl-C, hooks,
    history and config history, run output); this class adds the learner, the collectors,
    the league, the sample and time budgets, the checkpoint format and the policy exports.

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

    RUN_FILES = RUN_FILES
    SUBFOLDERS = ("checkpoints", "policies")
    UNIT = "samples"
    latest_checkpoint = staticmethod(latest_checkpoint)
    cfg: SelfPlayConfig

    def __init__(self, cfg: SelfPlayConfig, resume: str | None = None,
                 trust_checkpoint: bool = False, overwrite: bool = False,
                 callbacks: Iterable[TrainerCallback] = ()) -> None:
        # settings, run folder, hold on Ctrl-C (:meth:`iteration`), history; the hooks: the
        # plug-ins' that act around the loop, then those given
        self.begin(cfg, resume, overwrite, [*cfg.plugin_callbacks(), *callbacks])
        self.learner = Learner(cfg)
        #: What the search targets the updates fit hold (``search_targets``), else None.
        self.search_info: dict[str, Any] | None = None
        self.run_started()  # once the learner is built, before a resume's state is loaded
        #: The learner's policy as the in-process collector plays it (its own generator).
        self.acting = ActingPolicy(self.learner.model, acting_seed(cfg.seed, 0, 0))
        self.samples = 0
        self.updates = 0
        self.seconds = 0.0      # wall time of collection and updates
        self.last_update_s = 0.0  # the last iteration's (this process's; 0 until one ran)
        self.eval_seconds = 0.0
        self.league: list[str] = []   # snapshot policy files
        self.marks = {"eval": 0, "checkpoint": 0, "snapshot": 0}
        #: Samples and training seconds at the last pace line (:meth:`pace_line`).
        self.pace_mark = (0, 0.0)
        #: What :meth:`train` announced of the sample budget (:meth:`sample_budget`).
        self.budget: dict[str, Any] | None = None
        if resume:
            self._load(Path(resume), trust_checkpoint)
        self.open_output(bool(resume), self.samples)  # eval.csv, the curve, TensorBoard
        #: Matches in a rollout (every table size's).
        self.batch = cfg.collection.envs_per_size * len(cfg.collection.table_sizes)
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
                                        self.updates, address=cfg.collection.address,
                                        pipeline=cfg.collection.pipeline)
            self.remote.set_weights(model_weights(self.learner.model))
            self.learner.before_minibatch = self._share_cores
        else:
            self.collector = Collector(cfg, collector_seed(cfg.seed, self.updates, 0))
        self._sync_league()
        if self.collector is not None:
            self.collector.start()  # the first matches have a league too

    @property
    def dir(self) -> Path:
        """The run folder (:attr:`run_dir`)."""
        return self.run_dir

    def done_line(self, final: Path) -> str:
        return (f"wrote {final} ({self.samples:,} samples in {self.seconds:,.0f} s: "
                f"{self.samples / max(self.seconds, 1e-9):,.0f} samples/s)")

    # -- checkpoints -----------------------------------------------------------------------
    def save(self) -> Path:
        """Write ``checkpoints/latest.pt`` (a temporary file, renamed): tensors and plain data
        only (:func:`.checkpoint.plain_state`, so that it loads with ``weights_only=True``),
        with the digest of its contents (:func:`.checkpoint.state_digest`)."""
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
            "config_history": self.config_history, "plugins": self.plugin_record(),
            # what the plug-ins' update hooks hold, each under its name (the format keeps
            # both entries, empty where the plug-in is off)
            "tribute_replay": {}, "tribute_table": {}, **self.learner.hook_states()})
        state["digest"] = state_digest(state)
        # whole, through this process's own latest.pt.tmp (the archive's root: latest.pt);
        # a full disk is an OSError that says so
        save_state(state, path)
        return self.checkpoint_written(path)

    def _load(self, path: Path, trust: bool = False) -> None:
        state = load_checkpoint(path, trust)
        saved = saved_config(state, path)
        if saved.ppo.hidden != self.cfg.ppo.hidden or saved.max_players != self.cfg.max_players:
            raise ValueError(f"checkpoint {path} has another network shape (hidden "
                             f"{list(saved.ppo.hidden)}, max_players {saved.max_players})")
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
        for hook in self.learner.hooks:  # the plug-ins' state (none in an older checkpoint)
            if hook.name:
                try:
                    hook.load(state.get(hook.name, {}))
                except ValueError as exc:
                    raise ValueError(f"checkpoint {path}: {exc}") from None
        # checkpoints from before the config history have none
        self.resumed(path, self.samples, saved, state.get("config_history", []))

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

    def _snapshot_fns(self) -> list[Any]:
        """The league's members: the snapshots (greedy), then the league agents."""
        return snapshot_fns(self._snap_policies) + self._agent_fns

    def _league_agent_fns(self) -> list[Any]:
        return league_fns(self.cfg)

    def restart_collection(self) -> None:
        """Fresh matches from here, as a resume at this point starts them: the collector
        made again with the seed of the updates so far and the league agents made again with
        theirs, so that a run driven in stages (:mod:`.exploit`) and resumed from the
        checkpoint of a stage's end trains exactly as one that went on without stopping.
        Only for collection in this process."""
        if self.remote is not None:
            raise ValueError("restart_collection collects in this process (collectors 0)")
        self._agent_fns = self._league_agent_fns()
        self.collector = Collector(self.cfg, collector_seed(self.cfg.seed, self.updates, 0))
        self._sync_league()
        self.collector.start()

    def _add_snapshot(self) -> None:
        path = self.dir / "policies" / f"snapshot_{self.samples}.npz"
        export_policy(self.learner.model, self.cfg, path, self.provenance(), self.learner.table)
        self.league.append(str(path))
        # the last max_snapshots snapshots; the league's exploiters stay (their own cap)
        snaps = [p for p in self.league if Path(p).name.startswith("snapshot_")]
        old = set(snaps[:-self.cfg.league.max_snapshots])
        self.league = [p for p in self.league if p not in old]
        self._sync_league()

    def set_exploiters(self, paths: list[str]) -> None:
        """The league's exploiters (:mod:`.exploiters`): its members besides the snapshots
        (and the league agents)."""
        self.league = [p for p in self.league if Path(p).name.startswith("snapshot_")]
        self.league += paths
        self._sync_league()

    def provenance(self) -> dict[str, Any]:
        """The provenance a policy file of the run records now (trainer, samples, settings,
        plug-ins)."""
        out = {"trainer": "dragons_egg.experiments.training.selfplay", "samples": self.samples,
               "updates": self.updates, "seconds": round(self.seconds, 1),
               "config": dataclasses.asdict(self.cfg), "plugins": self.plugin_record()}
        if self.search_info is not None:  # its gathering seconds are training time too
            out["search_targets"] = self.search_info
        return out

    def plugin_record(self) -> dict[str, Any]:
        """The plug-ins that are on, with their settings (:meth:`.settings.SelfPlayConfig.plugins`):
        recorded in every checkpoint and in every policy file's provenance."""
        return {name: dataclasses.asdict(group) for name, group in self.cfg.plugins().items()}

    # -- the loop ------------------------------------------------------------------------
    def sample_budget(self) -> dict[str, Any]:
        """How far past ``total_samples`` the run will go from here: it updates after whole
        rollouts of ``rollout_steps`` steps of every match, all of them learner decisions
        without a league (``opponent_share`` 0), so it trains a whole number of rollouts.
        (At ``opponent_share`` 1 a match has one learner seat, and a rollout about
        ``1 / table size`` of its decisions.)
        With a league a rollout holds fewer learner decisions, a number drawn with its seats,
        and ``will_train`` and ``overshoot`` are ``None``."""
        cfg = self.cfg
        col = cfg.collection
        per = col.rollout_steps * col.envs_per_size * len(col.table_sizes)
        left = max(cfg.total_samples - self.samples, 0)
        out: dict[str, Any] = {"asked": cfg.total_samples, "rollout_samples": per,
                               "will_train": None, "overshoot": None}
        if not cfg.league.opponent_share:
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
            return self.run_ended(self.finish())
        except KeyboardInterrupt:
            if bar is not None:
                bar.close()
            # a checkpoint, unless a second Ctrl-C cut an update: nothing whole to save
            raise self.interrupted(self.samples, self.save) from None
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
        lr = cfg.ppo.learning_rate
        if cfg.ppo.lr_schedule == "linear":
            lr *= max(1.0 - self.progress_fraction(), 0.02)
        for group in self.learner.opt.param_groups:
            group["lr"] = lr
        t0 = time.perf_counter()
        if self.remote is not None:
            ro, info = self.remote.next_rollout()
        else:
            assert self.collector is not None  # no remote collection: a local collector
            ro, info = self.collector.collect(self.acting.act, self._snapshot_fns(),
                                              self.acting.value, self.acting)
        t1 = time.perf_counter()
        self.callbacks.on_rollout_end(self, info)
        with self.hold:  # a Ctrl-C waits for the update and its counts: the state stays whole
            adv = advantages(ro, cfg.collection.rollout_steps, self.batch, cfg.ppo.gamma,
                             cfg.ppo.gae_lambda, cfg.ppo.tribute_lambda)
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
        self.callbacks.on_update_end(self, stats)
        self.output.scalars("train", stats, self.samples)
        return stats

    def periodic(self) -> None:
        """Take the league snapshot, evaluation and checkpoint that are due by the samples
        so far (each every its own number of samples; 0: never). A snapshot's and an
        evaluation's mark moves once it is done, so that one a Ctrl-C cut is still due when
        the run resumes at the same samples (and one that was done is not done twice)."""
        cfg = self.cfg
        m = self.marks
        if cfg.league.snapshot_every and self.samples - m["snapshot"] >= cfg.league.snapshot_every:
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
                             self.provenance(), self.learner.table)
        row = {"samples": self.samples, "seconds": round(self.seconds, 1)}
        row.update(cfg.evaluate(f"net:path={path}", players=cfg.eval_players,
                                seed=cfg.seed + 7919 * len(self.history),
                                num_rounds=cfg.num_rounds,
                                rules=tournament_flags(cfg.rules)))
        self.record_eval(row)  # the hooks add theirs (the search targets' figures, ...)
        self.eval_seconds += time.perf_counter() - t0
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
                              self.provenance(), self.learner.table)
        budget = {**(self.budget or self.sample_budget()), "trained": self.samples,
                  "overshoot": max(self.samples - self.cfg.total_samples, 0)}
        write_atomically(self.dir / "summary.json", json.dumps(json_ready({
            "samples": self.samples, "updates": self.updates, "seconds": self.seconds,
            "samples_per_s": self.samples / max(self.seconds, 1e-9),
            "eval_seconds": self.eval_seconds, "budget": budget,
            "placement": {**self.placement, **({} if self.remote is None else {
                "collector_nodes": len(self.remote.nodes),
                "dropped_rollouts": self.remote.dropped})},
            "history": self.history}), indent=1))
        return final


def _progress(cfg: SelfPlayConfig, start: int) -> Any:
    """A tqdm bar of the samples, or None (no ``progress``, or no tqdm)."""
    if not cfg.progress:
        return None
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type hints
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
               "of the old format (pickled objects) loads only with --trust-checkpoint; a "
               "saved agent spec that runs code needs --allow-code SPEC")


def _resumed(checkpoint: str, parsed: SelfPlayConfig, given: frozenset[str],
             trust: bool, allowed: list[str]) -> SelfPlayConfig:
    try:
        return resumed_config(checkpoint, parsed, given, trust, allowed)
    except ValueError as exc:
        raise ValueError(f"--resume: {exc}") from None


def parse_args(argv: list[str] | None = None, prog: str | None = None) -> TrainerCommand:
    """The settings and what to do with the run folder (:func:`~.scaffold.trainer_command`):
    from ``--config FILE|NAME`` and flags; with ``--resume CHECKPOINT``, the checkpoint's
    settings with those given explicitly (:func:`resumed_config`; ``--trust-checkpoint`` for a
    checkpoint of the old format). Bad input is a one-line error and exit status 2."""
    return trainer_command(SelfPlayConfig, argv, "Batched self-play PPO on the compiled engine.",
                           prog=prog or module_prog(Run), resume_help=RESUME_HELP,
                           resume_metavar="CHECKPOINT.pt", trust_help=TRUST_HELP,
                           resumed=_resumed)


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line (``dragons-egg train``, or this module run with ``python -m``);
    ``prog`` is the command named in help, errors and the line that says how to resume."""
    from dragons_egg_env.extras import require_cli  # before parsing: tyro parses, torch trains

    prog = prog or module_prog(Run) or "python -m " + __name__
    require_cli(prog, "train")
    cmd = parse_args(argv, prog)
    return Run.command(prog, lambda: Run(cmd.cfg, cmd.resume, cmd.trust, cmd.overwrite))


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["SelfPlayConfig", "Run", "export_checkpoint", "config_from_dict",
           "saved_config", "resumed_config", "FROZEN_ON_RESUME", "main"]
