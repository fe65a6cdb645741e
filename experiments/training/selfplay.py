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
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

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
from dragons_egg.experiments.training.counterfactual import (
    counterfactual_values,
    tribute_rows,
)
from dragons_egg.experiments.training.distributed import (
    acting_seed,
    collector_seed,
    model_weights,
    resolve_collectors,
)
from dragons_egg.experiments.training.scaffold import RunSettings, TrainerCommand, trainer_command
from dragons_egg.experiments.training.tribute_table import GiveBackTable
from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.cards import EGG
from dragons_egg_env.config import MAX_PLAYERS, TABLE_SIZES, RulesConfig
from dragons_egg_env.observation import layout

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
# The network.

def _torch():
    import torch

    return torch


def build_network(cfg: SelfPlayConfig):
    """The masked actor-critic MLP: a tanh trunk, an action head and a value head."""
    torch = _torch()
    nn = torch.nn

    class ActorCritic(nn.Module):
        def __init__(self, obs_size: int, hidden: tuple[int, ...]) -> None:
            super().__init__()
            layers: list[Any] = []
            prev = obs_size
            for h in hidden:
                layers += [nn.Linear(prev, h), nn.Tanh()]
                prev = h
            self.trunk = nn.Sequential(*layers)
            self.pi = nn.Linear(prev, NUM_ACTIONS)
            self.v = nn.Linear(prev, 1)
            nn.init.orthogonal_(self.pi.weight, 0.01)
            nn.init.zeros_(self.pi.bias)

        def forward(self, obs, mask):
            h = self.trunk(obs)
            logits = self.pi(h).masked_fill(~mask, -1e9)
            return logits, self.v(h).squeeze(-1)

    return ActorCritic(layout(cfg.max_players).size, tuple(cfg.hidden))


def export_policy(model, cfg: SelfPlayConfig, path: Path, provenance: dict[str, Any],
                  table: GiveBackTable | None = None):
    """Write the network as an ``dragons_egg.agents.netpolicy`` file (numpy arrays); with the
    run's give-back ``table`` (``tribute_table``), its give-back at the sizes where the table
    plays (:meth:`~.tribute_table.GiveBackTable.policy`)."""
    from dragons_egg.agents.netpolicy import NetPolicy

    lin = [m for m in model.trunk if hasattr(m, "weight")]
    layers = [(m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy()) for m in lin]
    pi = (model.pi.weight.detach().numpy().T.copy(), model.pi.bias.detach().numpy().copy())
    v = (model.v.weight.detach().numpy().T.copy(), model.v.bias.detach().numpy().copy())
    meta = {"max_players": cfg.max_players, "obs_size": layout(cfg.max_players).size,
            "num_actions": NUM_ACTIONS, "hidden": list(cfg.hidden), "activation": "tanh",
            "provenance": provenance}
    policy = NetPolicy(layers, pi, v, meta)
    return (policy if table is None else table.policy(policy)).save(path)


def new_table(cfg: SelfPlayConfig) -> GiveBackTable | None:
    """An empty give-back table with the run's settings (``tribute_table``), else None."""
    if not cfg.tribute_table:
        return None
    return GiveBackTable(cfg.max_players, cfg.tribute_table_shrink, cfg.tribute_table_window,
                         cfg.tribute_table_min)


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
# Collection.

@dataclass
class Rollout:
    """One rollout, time-major: index ``t * B + g`` is step ``t`` of global match ``g``."""

    obs: np.ndarray
    mask: np.ndarray
    action: np.ndarray
    logp: np.ndarray
    value: np.ndarray
    learner: np.ndarray    # bool: a learner decision (trained on)
    reward: np.ndarray     # what the deciding seat earned until its next decision
    terminal: np.ndarray   # the match ended before the seat decided again
    next_index: np.ndarray  # index of the seat's next decision in this rollout, else -1
    bootstrap: np.ndarray  # value of the seat's observation at the end of the rollout
    seat: np.ndarray       # the deciding seat
    #: Tribute decisions with counterfactual values (``tribute_counterfactual``): their
    #: indices, ``Q`` of every action (NaN where illegal; :mod:`.counterfactual`) and the
    #: behaviour policy's probabilities of every action.
    cf_index: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int64))
    cf_q: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, NUM_ACTIONS), np.float32))
    cf_probs: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros((0, NUM_ACTIONS), np.float32))
    #: Per counterfactual row: a play decision of the Egg's holder (``egg_counterfactual``),
    #: not a tribute decision.
    cf_egg: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.bool_))


class ActingPolicy:
    """The learner's policy as a collector plays it: ``model`` (the learner's network, or a
    collector's copy of it) and the generator its actions are sampled with. The generator is
    the collector's own, not the learner's (whose draws order the minibatches), so that a
    collector draws the same actions in the learner's process and in a Ray actor."""

    def __init__(self, model: Any, seed: int) -> None:
        torch = _torch()
        self.torch = torch
        self.model = model
        self.gen = torch.Generator().manual_seed(seed)

    def act(self, obs: np.ndarray, mask: np.ndarray):
        torch = self.torch
        with torch.no_grad():
            logits, v = self.model(torch.from_numpy(obs), torch.from_numpy(mask))
            probs = torch.softmax(logits, -1)
            a = torch.multinomial(probs, 1, generator=self.gen).squeeze(-1)
            lp = torch.log_softmax(logits, -1).gather(1, a[:, None]).squeeze(-1)
        return a.numpy(), lp.numpy(), v.numpy()

    def value(self, obs: np.ndarray) -> np.ndarray:
        torch = self.torch
        with torch.no_grad():
            h = self.model.trunk(torch.from_numpy(obs))
            return self.model.v(h).squeeze(-1).numpy()

    def probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The policy's probability of every action (0 where illegal)."""
        torch = self.torch
        with torch.no_grad():
            logits, _ = self.model(torch.from_numpy(obs), torch.from_numpy(mask))
            return torch.softmax(logits, -1).numpy()

    def greedy(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The policy's most likely action of each row (the counterfactual play-outs')."""
        torch = self.torch
        with torch.no_grad():
            logits, _ = self.model(torch.from_numpy(obs.astype(np.float32, copy=False)),
                                   torch.from_numpy(mask.astype(bool, copy=False)))
            return logits.argmax(-1).numpy()

    def load(self, weights: dict[str, np.ndarray]) -> None:
        """The learner's weights (numpy arrays by parameter name)."""
        self.model.load_state_dict({k: self.torch.from_numpy(v) for k, v in weights.items()})


def snapshot_fns(policies: list[Any]) -> list[Any]:
    """The league's snapshots (loaded policy files) as functions ``(obs, mask) -> action``:
    each plays its most likely action."""
    def greedy(pol: Any) -> Any:
        return lambda obs, mask: np.argmax(pol.logits(obs, mask), axis=-1)
    return [greedy(pol) for pol in policies]


class Collector:
    """The engines of every table size and the per-seat bookkeeping of a rollout."""

    def __init__(self, cfg: SelfPlayConfig, seed: int) -> None:
        from dragons_egg_env.vector import VectorEngine

        self.cfg = cfg
        self.engines = []
        self.offsets = []
        off = 0
        for k, n in enumerate(cfg.table_sizes):
            eng = VectorEngine(cfg.envs_per_size, num_players=n, num_rounds=cfg.num_rounds,
                               max_players=cfg.max_players, seed=seed * 1000 + k,
                               record=False)
            self.engines.append(eng)
            self.offsets.append(off)
            off += cfg.envs_per_size
        self.num = off
        self.steps = [eng.reset() for eng in self.engines]
        self.rng = np.random.default_rng(seed)
        #: Which tribute decisions get counterfactual values, and their representatives (a
        #: generator of its own, so that the seat draws are the same with or without them).
        self.cf_rng = np.random.default_rng((seed, 2))
        #: The same for the Egg holder's play decisions (``egg_counterfactual``).
        self.egg_rng = np.random.default_rng((seed, 3))
        #: Where an observation shows the observer's own Egg.
        self.egg_col = layout(cfg.max_players)["hand"].start + EGG
        #: owner[e][b, s]: 0 for the learner, k > 0 for member k-1 of the league (the
        #: snapshots, then the league agents).
        self.owner = [np.zeros((cfg.envs_per_size, n), np.int64) for n in cfg.table_sizes]
        self.matches_done = 0

    def start(self) -> None:
        """Draw the seats of the first matches (a league may hold some of them too)."""
        for e, own in enumerate(self.owner):
            self.draw_owners(e, np.arange(len(own)), self.league_size)

    def draw_owners(self, e: int, rows: np.ndarray, league: int) -> None:
        """Seats of fresh matches: each a league member (one of ``league``, uniformly) with
        probability ``opponent_share``, but at least one learner seat per match."""
        own = self.owner[e]
        if not league or not self.cfg.opponent_share or not len(rows):
            own[rows] = 0
            return
        n = own.shape[1]
        pick = self.rng.random((len(rows), n)) < self.cfg.opponent_share
        pick[np.arange(len(rows)), self.rng.integers(0, n, len(rows))] = False
        own[rows] = np.where(pick, self.rng.integers(1, league + 1, (len(rows), n)), 0)

    def collect(self, act_fn, snap_fns, value_fn, acting: ActingPolicy | None = None
                ) -> tuple[Rollout, dict[str, float]]:
        """Play ``rollout_steps`` steps of every match. ``act_fn(obs, mask) -> (action, logp,
        value)`` is the learner; ``snap_fns[k]`` the league's members; ``acting`` the policy
        whose greedy play values tribute choices (needed with ``tribute_counterfactual``)."""
        share = self.cfg.tribute_counterfactual
        egg_share = self.cfg.egg_counterfactual
        for name, value in (("tribute_counterfactual", share), ("egg_counterfactual", egg_share)):
            if value and acting is None:
                raise ValueError(f"{name} needs the acting policy (acting=...)")
        cf: list[list[tuple[Any, int]]] = [[] for _ in self.engines]
        egg: list[list[tuple[Any, int]]] = [[] for _ in self.engines]
        T, B = self.cfg.rollout_steps, self.num
        size = layout(self.cfg.max_players).size
        N = T * B
        ro = Rollout(np.empty((N, size), np.float32), np.empty((N, NUM_ACTIONS), np.bool_),
                     np.zeros(N, np.int64), np.zeros(N, np.float32), np.zeros(N, np.float32),
                     np.zeros(N, np.bool_), np.zeros(N, np.float32), np.zeros(N, np.bool_),
                     np.full(N, -1, np.int64), np.zeros(N, np.float32), np.zeros(N, np.int64))
        pending = [np.full((eng.num_envs, eng.num_players), -1, np.int64)
                   for eng in self.engines]
        rounds = 0
        for t in range(T):
            sl = slice(t * B, (t + 1) * B)
            obs = np.concatenate([st.obs for st in self.steps])
            mask = np.concatenate([st.mask for st in self.steps])
            seat = np.concatenate([st.seat for st in self.steps])
            who = np.concatenate([own[np.arange(len(own)), st.seat]
                                  for own, st in zip(self.owner, self.steps, strict=True)])
            ro.obs[sl], ro.mask[sl], ro.seat[sl] = obs, mask, seat
            learn = who == 0
            ro.learner[sl] = learn
            actions = np.zeros(B, np.int64)
            a, lp, v = act_fn(obs[learn], mask[learn])
            actions[learn] = a
            ro.logp[sl][learn], ro.value[sl][learn] = lp, v
            for k, fn in enumerate(snap_fns, start=1):
                rows = who == k
                if rows.any():
                    actions[rows] = fn(obs[rows], mask[rows])
            ro.action[sl] = actions
            for e, eng in enumerate(self.engines):
                o = self.offsets[e]
                idx = t * B + o + np.arange(eng.num_envs)
                rows = slice(o, o + eng.num_envs)
                self._before(e, pending[e], idx, seat[rows], learn[rows], ro)
                if share:
                    self._pick_counterfactual(e, share, mask[rows], learn[rows], idx, cf[e])
                if egg_share:
                    self._pick_egg(e, egg_share, obs[rows], mask[rows], learn[rows], idx,
                                   egg[e])
                st = eng.step(actions[rows])
                self.steps[e] = st
                rounds += int(st.round_ended.sum())
                self._after(e, pending[e], st, ro)
        self._bootstrap(pending, value_fn, ro)
        if share or egg_share:
            assert acting is not None
            self._counterfactual(cf, egg, acting, ro)
        return ro, {"rounds": rounds, "cf_states": len(ro.cf_index),
                    "egg_states": int(ro.cf_egg.sum())}

    def _pick_counterfactual(self, e: int, share: float, mask: np.ndarray, learn: np.ndarray,
                             idx: np.ndarray, out: list[tuple[Any, int]]) -> None:
        """Keep the state of a share of engine ``e``'s learner tribute decisions with a
        choice, before they are played."""
        choice = learn & tribute_rows(mask) & (mask.sum(axis=1) > 1)
        self._keep(e, choice, share, self.cf_rng, idx, out)

    def _pick_egg(self, e: int, share: float, obs: np.ndarray, mask: np.ndarray,
                  learn: np.ndarray, idx: np.ndarray, out: list[tuple[Any, int]]) -> None:
        """Keep the state of a share of engine ``e``'s learner play decisions with a choice
        whose seat holds the Egg, before they are played."""
        choice = (learn & (obs[:, self.egg_col] > 0) & ~tribute_rows(mask)
                  & (mask.sum(axis=1) > 1))
        self._keep(e, choice, share, self.egg_rng, idx, out)

    def _keep(self, e: int, choice: np.ndarray, share: float, rng: np.random.Generator,
              idx: np.ndarray, out: list[tuple[Any, int]]) -> None:
        """Append ``(state, rollout index)`` of each row of ``choice`` that ``rng`` draws
        with probability ``share`` (no draw when there is none)."""
        rows = np.flatnonzero(choice)
        if not len(rows):
            return
        rows = rows[rng.random(len(rows)) < share]
        eng = self.engines[e]
        for b in rows:
            out.append((eng.to_state(int(b)), int(idx[b])))

    def _counterfactual(self, cf: list[list[tuple[Any, int]]],
                        egg: list[list[tuple[Any, int]]], acting: ActingPolicy,
                        ro: Rollout) -> None:
        """The counterfactual values of the kept tribute decisions (every class of choice
        played out to the end of the round by the acting policy, greedy) and of the kept
        plays of the Egg's holder (every legal play: each is a class of its own), per table
        size."""
        index, qs, kinds = [], [], []
        for kept_lists, is_egg, rng in ((cf, False, self.cf_rng), (egg, True, self.egg_rng)):
            for kept in kept_lists:
                if not kept:
                    continue
                at = np.array([i for _, i in kept], np.int64)
                states = [s for s, _ in kept]
                seats = [s.current for s in states]
                q = counterfactual_values(states, seats, ro.mask[at], acting.greedy,
                                          acting.greedy, self.cfg.max_players,
                                          int(rng.integers(2**62)), per_class=not is_egg,
                                          rng=rng)
                index.append(at)
                qs.append(q.astype(np.float32))
                kinds.append(np.full(len(at), is_egg))
        if index:
            ro.cf_index = np.concatenate(index)
            ro.cf_q = np.concatenate(qs)
            ro.cf_egg = np.concatenate(kinds)
            ro.cf_probs = acting.probs(ro.obs[ro.cf_index], ro.mask[ro.cf_index])

    @staticmethod
    def _before(e: int, pend: np.ndarray, idx: np.ndarray, seat: np.ndarray,
                learn: np.ndarray, ro: Rollout) -> None:
        """The seat to act decides: its previous decision's trajectory continues here."""
        b = np.arange(len(idx))
        prev = pend[b, seat]
        link = (prev >= 0) & learn
        ro.next_index[prev[link]] = idx[link]
        pend[b, seat] = np.where(learn, idx, -1)

    def _after(self, e: int, pend: np.ndarray, st, ro: Rollout) -> None:
        """Credit the step's rewards to every seat's pending decision; close finished
        matches."""
        for s in range(pend.shape[1]):
            p = pend[:, s]
            has = p >= 0
            if has.any():
                np.add.at(ro.reward, p[has], st.rewards[has, s].astype(np.float32))
        done = np.flatnonzero(st.done)
        if len(done):
            p = pend[done]
            ro.terminal[p[p >= 0]] = True
            pend[done] = -1
            self.matches_done += len(done)
            self.draw_owners(e, done, self.league_size)

    league_size = 0

    def _bootstrap(self, pending, value_fn, ro: Rollout) -> None:
        """Open trajectories end with the value of the seat's observation now."""
        for e, eng in enumerate(self.engines):
            pend = pending[e]
            for s in range(eng.num_players):
                p = pend[:, s]
                has = p >= 0
                if has.any():
                    obs = eng.observe(np.full(eng.num_envs, s, np.int64))
                    ro.bootstrap[p[has]] = value_fn(obs[has])


def advantages(ro: Rollout, T: int, B: int, gamma: float, lam: float,
               tribute_lam: float | None = None) -> np.ndarray:
    """GAE over each seat's own trajectory (its decisions in order, ``next_index``).
    ``tribute_lam``: the lambda of tribute decisions (ask and give) where it differs from
    ``lam`` (GAE with a per-decision lambda)."""
    N = T * B
    adv = np.zeros(N, np.float32)
    lams = np.full(N, lam, np.float32)
    if tribute_lam is not None:
        lams[tribute_rows(ro.mask)] = tribute_lam
    for t in range(T - 1, -1, -1):
        sl = slice(t * B, (t + 1) * B)
        nx = ro.next_index[sl]
        term = ro.terminal[sl]
        linked = nx >= 0
        safe = np.where(linked, nx, 0)
        next_v = np.where(term, 0.0, np.where(linked, ro.value[safe], ro.bootstrap[sl]))
        next_adv = np.where(linked & ~term, adv[safe], 0.0)
        delta = ro.reward[sl] + gamma * next_v - ro.value[sl]
        adv[sl] = np.where(ro.learner[sl], delta + gamma * lams[sl] * next_adv, 0.0)
    return adv


def counterfactual_batch(ro: Rollout) -> dict[str, np.ndarray]:
    """The counterfactual tribute rows of a rollout as the learner trains on them: the
    observation, mask, behaviour probabilities ``probs`` (and their logs, 0 where illegal)
    and each legal action's advantage ``A(a) = Q(a) - sum_b pi_b(b) Q(b)``, divided by the
    behaviour policy's root mean square of ``A`` over every row (as PPO normalises its
    advantages); 0 where illegal; ``adv_u`` the same ``A`` divided by its root mean square
    over every legal action alike (the logit update's); ``target`` each legal action's value
    minus the legal actions' mean value (the regression's), 0 where illegal; ``egg`` which
    rows are the Egg holder's plays (``egg_counterfactual``). The tribute rows and the Egg
    holder's rows are normalised apart, each over its own rows, so that either scales as it
    would alone. Rows whose actions all have the same value add nothing."""
    mask = ro.mask[ro.cf_index]
    probs = np.where(mask, np.maximum(ro.cf_probs, 1e-8), 0.0).astype(np.float32)
    probs /= probs.sum(axis=1, keepdims=True)
    q = np.where(mask, np.nan_to_num(ro.cf_q), 0.0)
    raw = np.where(mask, q - (probs * q).sum(axis=1, keepdims=True), 0.0)
    egg = _egg_rows(ro)
    adv, adv_u = np.zeros_like(raw), np.zeros_like(raw)
    for rows in (~egg, egg):
        if rows.any():
            r = raw[rows]
            adv[rows] = r / (float(np.sqrt((probs[rows] * r ** 2).sum(axis=1).mean())) + 1e-8)
            # the same advantages divided instead by their root mean square over every legal
            # action of every row, weighed alike (the logit update's: an action the behaviour
            # policy almost never plays counts as much as the one it plays)
            adv_u[rows] = r / (float(np.sqrt((r ** 2).sum() / mask[rows].sum())) + 1e-8)
    target = np.where(mask, q - q.sum(axis=1, keepdims=True) / mask.sum(axis=1, keepdims=True),
                      0.0)
    return {"obs": np.ascontiguousarray(ro.obs[ro.cf_index]), "mask": mask,
            "probs": probs, "logp_b": np.where(mask, np.log(probs + (~mask)), 0.0
                                                ).astype(np.float32),
            "adv": adv.astype(np.float32), "adv_u": adv_u.astype(np.float32),
            "target": target.astype(np.float32), "egg": egg}


def _egg_rows(ro: Rollout) -> np.ndarray:
    """Which counterfactual rows are the Egg holder's plays (none in a rollout built
    without the marker)."""
    if len(ro.cf_egg) == len(ro.cf_index):
        return ro.cf_egg.astype(bool)
    return np.zeros(len(ro.cf_index), bool)


class TributeReplay:
    """The last ``size`` counterfactual tribute decisions (``tribute_cf_replay``), oldest
    first: what the regression fits of each (:data:`KEYS` of :func:`counterfactual_batch`)."""

    KEYS = ("obs", "mask", "target")

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: dict[str, np.ndarray] | None = None

    def __len__(self) -> int:
        return 0 if self.data is None else len(self.data["target"])

    def add(self, batch: dict[str, np.ndarray] | None) -> dict[str, np.ndarray] | None:
        """Keep ``batch``'s decisions (``None``: none), dropping the oldest past ``size``;
        every decision kept, this batch's last."""
        if batch is not None and len(batch["target"]):
            new = {k: np.asarray(batch[k]) for k in self.KEYS}
            if self.data is not None:
                new = {k: np.concatenate([self.data[k], new[k]]) for k in self.KEYS}
            self.data = {k: np.ascontiguousarray(v[-self.size:]) for k, v in new.items()}
        return self.data

    def state(self) -> dict[str, Any]:
        """The decisions as a checkpoint holds them (tensors; empty: ``{}``)."""
        torch = _torch()
        return {} if self.data is None else {k: torch.from_numpy(v) for k, v in
                                             self.data.items()}

    def load(self, state: dict[str, Any]) -> None:
        """The decisions of :meth:`state` (the last ``size`` of them: a resume may keep fewer);
        a ``ValueError`` naming what is wrong with a damaged one."""
        if not state:
            self.data = None
            return
        if set(state) != set(self.KEYS):
            raise ValueError(f"the checkpoint's tribute replay holds {sorted(state)}, not "
                             f"{list(self.KEYS)}")
        torch = _torch()
        if not all(isinstance(state[k], torch.Tensor) for k in self.KEYS):
            raise ValueError("the checkpoint's tribute replay holds something other than "
                             "tensors")
        data = {k: state[k].numpy() for k in self.KEYS}
        rows = {len(v) for v in data.values()}
        if len(rows) != 1 or data["mask"].dtype != np.bool_ or data["mask"].ndim != 2 or \
                data["mask"].shape != data["target"].shape or data["obs"].ndim != 2:
            raise ValueError("the checkpoint's tribute replay is damaged: its arrays do not "
                             "agree in rows or shape")
        self.data = None
        self.add(data)


def tribute_regret(ro: Rollout, egg: bool = False) -> float | None:
    """How far the behaviour policy's tribute choices fall short of the best, in round reward:
    the mean over the rollout's counterfactual tribute rows of
    ``max_a Q(a) - sum_a pi_b(a) Q(a)`` (0 for a policy that always takes a best choice of
    the deal; logged as ``cf_regret``, the learning curve of the tribute). With ``egg``, the
    same over the Egg holder's plays (``egg_regret``). ``None`` without such rows."""
    rows = _egg_rows(ro) == egg
    if not rows.any():
        return None
    mask = ro.mask[ro.cf_index[rows]]
    q = np.where(mask, np.nan_to_num(ro.cf_q[rows]), -np.inf)
    probs = np.where(mask, ro.cf_probs[rows], 0.0)
    expected = (probs * np.where(mask, q, 0.0)).sum(axis=1) / probs.sum(axis=1)
    return float((q.max(axis=1) - expected).mean())


# ---------------------------------------------------------------------------------------
# The learner.

#: With search targets, every this many-th cycle of the folder's table sizes (one batch of
#: each size in its ``players`` list, in turn) is held out of the fit, for the evaluations'
#: ``search_ce`` and ``search_agree`` (:meth:`Learner.search_figures`).
HELD_OUT = 20


class Learner:
    """The network, its optimiser and the PPO update."""

    def __init__(self, cfg: SelfPlayConfig) -> None:
        torch = _torch()
        torch.set_num_threads(cfg.torch_threads)
        torch.manual_seed(cfg.seed)
        self.torch = torch
        self.cfg = cfg
        self.model = build_network(cfg)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.learning_rate, eps=1e-5)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        #: Called after each minibatch's backward pass, before clipping and the step: a
        #: data-parallel learner averages the gradients across its workers here.
        self.after_backward: Any = None
        #: Called before each minibatch: the pipelined trainer sets torch's threads here.
        self.before_minibatch: Any = None
        #: The counterfactual decisions every update fits (``tribute_cf_replay``), else None.
        self.replay = TributeReplay(cfg.tribute_cf_replay) if cfg.tribute_cf_replay else None
        #: The give-back table learned beside the network (``tribute_table``), else None.
        self.table = new_table(cfg)
        #: The search targets every minibatch fits (``search_targets``: obs, mask and
        #: target tensors), else None; :meth:`load_search_targets`.
        self.search: dict[str, Any] | None = None
        #: The held-out search targets the evaluations measure (:meth:`search_figures`).
        self.search_held: dict[str, Any] | None = None

    def search_figures(self) -> dict[str, float]:
        """On the held-out search targets (none: ``{}``): the policy's cross-entropy against
        the visit distributions (``search_ce``) and the share of decisions where its most
        likely move is the move the search played (``search_agree``, by table size
        ``search_agree_<N>p``, on the decisions where the search played another move than
        its guiding network's most likely one ``search_agree_overruled``, and on the others
        ``search_agree_kept``)."""
        held = self.search_held
        if held is None:
            return {}
        torch = self.torch
        with torch.no_grad():
            ce = self._search_loss(held).item()
            logits, _ = self.model(held["obs"], held["mask"])
            same = (logits.argmax(-1) == held["played"]).float()
        out = {"search_ce": round(ce, 4), "search_agree": round(same.mean().item(), 4)}
        # the decisions where the search overruled its guide carry what the search adds; on
        # the others, the search and its guide agree, and the policy should keep that move
        over = held["overruled"]
        if over.any():
            out["search_agree_overruled"] = round(same[over].mean().item(), 4)
        if (~over).any():
            out["search_agree_kept"] = round(same[~over].mean().item(), 4)
        for n in sorted(set(held["players"].tolist())):
            out[f"search_agree_{n}p"] = round(same[held["players"] == n].mean().item(), 4)
        return out

    def load_search_targets(self, folder: str) -> dict[str, Any]:
        """Load a search-targets folder (every batch checked:
        :func:`~dragons_egg.experiments.training.search_targets.load_targets`) for the
        updates to fit; returns what it holds (decisions, table sizes, the policy file's
        SHA-256 and the gathering seconds), for the run's provenance. A ``ValueError`` when
        its observations are not this network's (another ``max_players``)."""
        from dragons_egg.experiments.training.search_targets import load_targets

        data, settings = load_targets(folder)
        width = layout(self.cfg.max_players).size
        if data["obs"].shape[1] != width or data["mask"].shape[1] != NUM_ACTIONS:
            raise ValueError(f"search_targets {folder}: its observations have "
                             f"{data['obs'].shape[1]} values, this network reads {width} "
                             f"(max_players {self.cfg.max_players})")
        torch = self.torch
        # every HELD_OUT-th cycle of table sizes (whole matches on deals of their own, every
        # size in its share) is not fitted: the evaluations measure on it how far the policy
        # has come towards the search
        cycle = data["batch"] // len(settings["players"])
        held = cycle % HELD_OUT == HELD_OUT - 1

        def tensors(rows: np.ndarray) -> dict[str, Any]:
            return {"obs": torch.from_numpy(data["obs"][rows].astype(np.float32)),
                    "mask": torch.from_numpy(data["mask"][rows].astype(bool)),
                    "target": torch.from_numpy(data["target"][rows].astype(np.float32)),
                    "played": torch.from_numpy(data["played"][rows].astype(np.int64)),
                    "players": torch.from_numpy(data["players"][rows].astype(np.int64)),
                    "overruled": torch.from_numpy(data["played"][rows] != data["net_move"][rows])}
        self.search = tensors(~held)
        self.search_held = tensors(held) if held.any() else None
        sizes, counts = np.unique(data["players"], return_counts=True)
        return {"folder": str(folder), "decisions": int((~held).sum()),
                "held_out": int(held.sum()),
                "decisions_by_players": {str(int(n)): int(c) for n, c in zip(sizes, counts,
                                                                             strict=True)},
                "policy": settings["policy"], "policy_sha256": settings["policy_sha256"],
                "iterations": settings["iterations"],
                "gathered_seconds": round(float(settings["gathered_seconds"]), 1)}

    def update(self, ro: Rollout, adv: np.ndarray) -> dict[str, float]:
        torch = self.torch
        cfg = self.cfg
        idx = np.flatnonzero(ro.learner)
        ret = adv + ro.value
        weight = np.where(tribute_rows(ro.mask), cfg.tribute_weight, 1.0).astype(np.float32)
        t = {k: torch.from_numpy(np.ascontiguousarray(v[idx])) for k, v in (
            ("obs", ro.obs), ("mask", ro.mask), ("act", ro.action), ("logp", ro.logp),
            ("adv", adv), ("ret", ret), ("w", weight), ("v", ro.value))}
        n = len(idx)
        stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "clip_frac": 0.0,
                 "approx_kl": 0.0}
        cf = counterfactual_batch(ro) if len(ro.cf_index) else None
        if self.replay is not None:  # this rollout's decisions and the earlier ones kept
            cf = self.replay.add(cf)
        if cf is not None:
            stats["cf_loss"] = 0.0
            cf = {k: torch.from_numpy(v) for k, v in cf.items()}
        search = self.search
        if search is not None:
            stats["search_loss"] = 0.0
        regret = tribute_regret(ro)
        egg_regret = tribute_regret(ro, egg=True)
        if self.table is not None and len(ro.cf_index):
            mask = ro.mask[ro.cf_index]
            self.table.add(ro.obs[ro.cf_index], mask, ro.cf_q,
                           np.argmax(np.where(mask, ro.cf_probs, -1.0), axis=1))
        count = 0
        # equal minibatches of at most ``minibatch`` decisions: no tiny remainder whose
        # advantages could not be normalised (one decision has no standard deviation)
        parts = -(-n // cfg.minibatch)
        for _ in range(cfg.epochs):
            perm = torch.randperm(n, generator=self.gen)
            # the counterfactual rows, spread over the same minibatches (drawn only when
            # there are some, so that a run without them draws as before)
            cf_parts = (torch.tensor_split(torch.randperm(len(cf["obs"]), generator=self.gen),
                                           parts) if cf is not None else [None] * parts)
            for mb, cmb in zip(torch.tensor_split(perm, parts), cf_parts, strict=True):
                if self.before_minibatch is not None:
                    self.before_minibatch()
                sb = None
                if search is not None:  # drawn only then: a run without them draws as before
                    rows = torch.randint(len(search["obs"]), (cfg.search_batch,),
                                         generator=self.gen)
                    sb = {k: search[k][rows] for k in ("obs", "mask", "target")}
                s = self._minibatch({k: v[mb] for k, v in t.items()},
                                    None if cmb is None or cf is None or not len(cmb)
                                    else {k: v[cmb] for k, v in cf.items()}, sb)
                for k in stats:
                    stats[k] += s.get(k, 0.0)
                count += 1
        out = {k: v / max(count, 1) for k, v in stats.items()}
        if regret is not None:
            out["cf_regret"] = regret
        if egg_regret is not None:
            out["egg_regret"] = egg_regret
        if self.table is not None:
            out.update(self.table.figures())
        return out

    def _minibatch(self, b: dict[str, Any], cf: dict[str, Any] | None = None,
                   search: dict[str, Any] | None = None) -> dict[str, float]:
        torch = self.torch
        cfg = self.cfg
        logits, v = self.model(b["obs"], b["mask"])
        logp_all = torch.log_softmax(logits, -1)
        logp = logp_all.gather(1, b["act"][:, None]).squeeze(-1)
        ratio = torch.exp(logp - b["logp"])
        adv = b["adv"]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        w = b["w"]
        pg = -torch.min(ratio * adv, ratio.clamp(1 - cfg.clip_range, 1 + cfg.clip_range) * adv)
        policy_loss = (pg * w).sum() / w.sum()
        value_loss = (((v - b["ret"]) ** 2) * w).sum() / w.sum()
        # -sum p log p over the legal actions: exp of the legal log-probabilities only (an
        # illegal action's 0 gives exp(0) * 0 = 0, as its probability 0 did), never exp of
        # an illegal action's -1e9 logit, whose underflow takes exp's slow path (10x here)
        logp_legal = logp_all.masked_fill(~b["mask"], 0.0)
        ent = -(logp_legal.exp() * logp_legal).sum(-1)
        entropy = (ent * w).sum() / w.sum()
        loss = policy_loss + cfg.vf_coef * value_loss - cfg.ent_coef * entropy
        cf_loss = self._cf_loss(cf) if cf is not None else None
        if cf_loss is not None:
            loss = loss + cfg.tribute_cf_coef * cf_loss
        search_loss = self._search_loss(search) if search is not None else None
        if search_loss is not None:
            loss = loss + cfg.search_coef * search_loss
        if not torch.isfinite(loss):
            raise FloatingPointError(
                f"the PPO loss is not finite (policy {policy_loss.item()}, value "
                f"{value_loss.item()}, entropy {entropy.item()}, minibatch of {len(adv)}); the "
                "weights were left as they were: resume from the last checkpoint")
        self.opt.zero_grad()
        loss.backward()
        if self.after_backward is not None:
            self.after_backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
        self.opt.step()
        with torch.no_grad():
            kl = ((ratio - 1) - (logp - b["logp"])).mean().item()
            clip = ((ratio - 1).abs() > cfg.clip_range).float().mean().item()
        out = {"policy_loss": policy_loss.item(), "value_loss": value_loss.item(),
               "entropy": entropy.item(), "clip_frac": clip, "approx_kl": kl}
        if cf_loss is not None:
            out["cf_loss"] = cf_loss.item()
        if search_loss is not None:
            out["search_loss"] = search_loss.item()
        return out

    def _search_loss(self, search: dict[str, Any]) -> Any:
        """The cross-entropy of the policy against the search's visit distributions: minus
        the sum over the legal actions of each one's visit share times its log-probability,
        averaged over the decisions."""
        torch = self.torch
        logits, _ = self.model(search["obs"], search["mask"])
        logp = torch.log_softmax(logits, -1).masked_fill(~search["mask"], 0.0)
        return -(search["target"] * logp).sum(-1).mean()

    def _cf_loss(self, cf: dict[str, Any]) -> Any:
        """The all-action clipped surrogate of the counterfactual tribute rows: for each, the
        behaviour policy's expectation over its legal actions ``a`` of PPO's clipped
        objective with the ratio ``pi(a) / pi_b(a)`` and the advantage ``A(a)``
        (:func:`counterfactual_batch`), negated."""
        torch = self.torch
        eps = self.cfg.clip_range
        logits, _ = self.model(cf["obs"], cf["mask"])
        if self.cfg.tribute_cf_update == "logits":
            return self._cf_logits_loss(logits, cf)
        if self.cfg.tribute_cf_update == "regression":
            return self._cf_regression_loss(logits, cf)
        logp = torch.log_softmax(logits, -1).masked_fill(~cf["mask"], 0.0)
        ratio = torch.exp(logp - cf["logp_b"])
        adv = cf["adv"]
        obj = torch.min(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv)
        return self._kind_mean(-(cf["probs"] * obj).sum(-1), cf)

    @staticmethod
    def _centred_logits(logits: Any, mask: Any) -> Any:
        """Each legal action's logit minus the mean of its decision's legal logits; 0 where
        illegal (what the logit update pushes and the regression fits)."""
        z = logits.masked_fill(~mask, 0.0)
        return (z - z.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True)).masked_fill(~mask, 0.0)

    def _cf_logits_loss(self, logits: Any, cf: dict[str, Any]) -> Any:
        """The logit update of the counterfactual tribute rows (NeuRD): minus the sum over
        the legal actions of each one's advantage over the behaviour policy's expected value
        (``adv_u``) times its logit centred on the legal actions' mean, so that the gradient
        on a logit is its advantage, whatever its probability; a logit already
        ``tribute_cf_threshold`` above (below) the mean is not pushed further up (down)."""
        torch = self.torch
        mask = cf["mask"]
        y = self._centred_logits(logits, mask)
        adv = cf["adv_u"]
        beta = self.cfg.tribute_cf_threshold
        with torch.no_grad():
            push = torch.where(((adv > 0) & (y < beta)) | ((adv < 0) & (y > -beta)), adv,
                               torch.zeros_like(adv))
        return self._kind_mean(-(push * y).sum(-1), cf)

    def _cf_regression_loss(self, logits: Any, cf: dict[str, Any]) -> Any:
        """The regression of the counterfactual tribute rows: each legal action's logit,
        centred on the decision's legal mean, fitted to ``tribute_cf_scale`` (``c``) times its
        centred value (``target``): ``sum_a (y_a - c t_a)^2 / (2c)`` over the legal actions,
        averaged over the rows, so that the gradient on a logit is its error in round reward,
        ``y_a / c - t_a`` (the same order as the logit update's pushes)."""
        mask = cf["mask"]
        c = self.cfg.tribute_cf_scale
        y = self._centred_logits(logits, mask)
        return self._kind_mean(((y - c * cf["target"]) ** 2).sum(-1), cf) / (2 * c)

    @staticmethod
    def _kind_mean(per_row: Any, cf: dict[str, Any]) -> Any:
        """The mean over the tribute rows plus the mean over the Egg holder's rows (each
        kind weighs in the loss as it would alone); the plain mean where the batch does not
        mark them (the tribute replay holds tribute rows only)."""
        egg = cf.get("egg")
        if egg is None or not bool(egg.any()) or bool(egg.all()):
            return per_row.mean()
        return per_row[~egg].mean() + per_row[egg].mean()


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


__all__ = ["SelfPlayConfig", "Run", "Collector", "Learner", "advantages", "export_policy",
           "export_checkpoint", "config_from_dict",
           "saved_config", "resumed_config",
           "FROZEN_ON_RESUME", "build_network", "main"]
