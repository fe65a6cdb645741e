"""The self-play trainer's settings: :class:`SelfPlayConfig` (in a module of its own, below
the trainer's other modules, which all read it: :mod:`.selfplay` runs it, :mod:`.rollout`
collects with it, :mod:`.learner` updates with it, :mod:`.distributed` ships it to Ray).

The run's rules are one :class:`~dragons_egg_env.config.RulesConfig` (``rules``): every match
the run plays, collection, league and evaluation, is played under them. Settings written before
(a ``config.json``, a ``--config`` file, a checkpoint's) name ``num_rounds`` and
``eval_players`` instead; they are read as ``rules`` (:func:`migrate_rules`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from dragons_egg.experiments.common.settings import check_range, require
from dragons_egg.experiments.training.scaffold import RunSettings
from dragons_egg_env.config import MAX_PLAYERS, TABLE_SIZES, RulesConfig

#: Settings of the time before the run held its rules, with the rule flag each now is.
LEGACY_RULE_SETTINGS = {"num_rounds": "num_rounds", "eval_players": "num_players"}


def migrate_rules(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (settings as JSON holds them) with the settings of
    :data:`LEGACY_RULE_SETTINGS` moved into ``rules``; unchanged where there are none. A
    ``ValueError`` when one disagrees with the flag ``rules`` gives it."""
    if not isinstance(data, dict) or not LEGACY_RULE_SETTINGS.keys() & data.keys():
        return data
    rules = data.get("rules", {})
    if isinstance(rules, RulesConfig):
        rules = rules.to_dict()
    out = {k: v for k, v in data.items() if k not in LEGACY_RULE_SETTINGS}
    if not isinstance(rules, dict):
        return out  # the type check names rules
    rules = dict(rules)
    for old, flag in LEGACY_RULE_SETTINGS.items():
        if old in data:
            if flag in rules and rules[flag] != data[old]:
                raise ValueError(f"{old} ({data[old]!r}) and rules {flag} ({rules[flag]!r}) "
                                 "disagree: give one")
            rules[flag] = data[old]
    out["rules"] = rules
    return out


def ray_available() -> bool:
    """Whether Ray is installed (the ``rllib`` extra)."""
    import importlib.util

    return importlib.util.find_spec("ray") is not None


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
    #: The rules of every match the run plays (:class:`~dragons_egg_env.config.RulesConfig`):
    #: the collection's at each of ``table_sizes``, the league's and the evaluations', whose
    #: table size is its ``num_players`` (:attr:`eval_players`). ``--rules FILE|JSON`` gives
    #: them, ``--rule FLAG=VALUE`` (again for more) one flag, ``--num-rounds N`` and
    #: ``--eval-players N`` its ``num_rounds`` and ``num_players``.
    rules: RulesConfig = RulesConfig()
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

    @property
    def num_rounds(self) -> int:
        """Rounds per match (R26): ``rules.num_rounds``."""
        return self.rules.num_rounds

    @property
    def eval_players(self) -> int:
        """Table size of the evaluations: ``rules.num_players``."""
        return self.rules.num_players

    def table_rules(self, n: int) -> RulesConfig:
        """The run's :attr:`rules` at a table of ``n`` seats (a ``ConfigError``, a
        ``ValueError``, where they do not hold there)."""
        return dataclasses.replace(self.rules, num_players=n)

    def rule_flags(self) -> dict[str, Any]:
        """The run's rule flags: :attr:`rules` without the table size, as a policy file
        records them (:data:`dragons_egg.agents.netpolicy.RULES_KEY`)."""
        return {k: v for k, v in self.rules.to_dict().items() if k != "num_players"}

    @classmethod
    def migrate(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Settings written before the run held its rules (``num_rounds``, ``eval_players``:
        config files, ``config.json`` of a run, checkpoints) in today's form
        (:func:`migrate_rules`)."""
        return migrate_rules(data)

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
            self.table_rules(n)
        for name in ("envs_per_size", "rollout_steps", "epochs", "minibatch", "max_snapshots"):
            check_range(getattr(self, name) >= 1, name, getattr(self, name), ">= 1")
        check_range(self.snapshot_every >= 0, "snapshot_every", self.snapshot_every, ">= 0")
        check_range(self.collectors >= -1, "collectors", self.collectors, ">= -1 (-1: auto)")
        require(not self.address or self.collectors != 0,
                f"address {self.address!r} needs collectors (the collectors join it)")
        if self.collectors >= 1 or self.address:
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


def league_agent(spec: str, seed: int, cfg: SelfPlayConfig):
    """The agent ``spec`` made with ``seed``, started for observations padded to
    ``cfg.max_players`` seats (a memoryless agent reads only what decoding needs)."""
    from dragons_egg.agents import make_agent

    agent = make_agent(spec, seed=seed)
    agent.start_match(0, cfg.table_rules(cfg.max_players), cfg.max_players)
    return agent


__all__ = ["LEGACY_RULE_SETTINGS", "SelfPlayConfig", "league_agent", "migrate_rules",
           "ray_available"]
