"""The self-play trainer's settings: :class:`SelfPlayConfig` (in a module of its own, below
the trainer's other modules, which all read it: :mod:`.selfplay` runs it, :mod:`.rollout`
collects with it, :mod:`.learner` updates with it, :mod:`.distributed` ships it to Ray).

The core's settings are the run's (:class:`~.scaffold.RunSettings`), the budget, the rules and
three groups: :class:`PPOSettings` (``ppo``), :class:`CollectionSettings` (``collection``) and
:class:`LeagueSettings` (``league``). The research methods are plug-ins, each with its settings
in its own module: the tribute counterfactual and the Egg holder's counterfactual
(:mod:`.counterfactual`: ``tribute_cf``, ``egg_cf``), the give-back table
(:mod:`.tribute_table`: ``table``) and the search targets (:mod:`.search_targets`:
``search``); each is off by default. Every group is a frozen dataclass checked when it is made
(``__post_init__``); its settings are flat flags (``--learning-rate``,
``--tribute-counterfactual``) and nested in JSON (``"ppo": {"learning_rate": ...}``), and a file
of the flat form of before reads as the nested one
(:class:`~dragons_egg.experiments.common.settings.SettingsGroup`).

The run's rules are one :class:`~dragons_egg_env.config.RulesConfig` (``rules``): every match
the run plays, collection, league and evaluation, is played under them. Settings written before
(a ``config.json``, a ``--config`` file, a checkpoint's) name ``num_rounds`` and
``eval_players`` instead; they are read as ``rules`` (:func:`migrate_rules`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from dragons_egg.experiments.common.settings import (
    SettingsGroup,
    check_all,
    check_range,
    checks_deferred,
    migrated,
    require,
)
from dragons_egg.experiments.training.callbacks import TrainerCallback
from dragons_egg.experiments.training.counterfactual import (
    EggCounterfactualSettings,
    TributeCounterfactualSettings,
)
from dragons_egg.experiments.training.exploiters import ExploiterSettings
from dragons_egg.experiments.training.hooks import CollectionHook, UpdateHook
from dragons_egg.experiments.training.oracle import (
    CentralCriticSettings,
    CriticLoss,
    HandLoss,
    HandPredictionSettings,
    HiddenHands,
    network_parts,
)
from dragons_egg.experiments.training.scaffold import RulesSettings, RunSettings
from dragons_egg.experiments.training.search_targets import SearchTargetSettings
from dragons_egg.experiments.training.tribute_table import TributeTableSettings
from dragons_egg_env.config import MAX_PLAYERS, TABLE_SIZES, RulesConfig

if TYPE_CHECKING:
    from dragons_egg.agents import Agent

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


@dataclass(frozen=True)
class PPOSettings(SettingsGroup):
    """The network and the PPO update (``ppo``)."""

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
    #: A policy file (``dragons_egg.agents.netpolicy``, of this network's shape) whose trunk,
    #: action head and value head the network starts from, instead of random weights (a
    #: fresh run only; a resume loads its checkpoint). The ``exploiters`` plug-in starts its
    #: best responses from the learner so. Empty: random weights.
    init_policy: str = ""
    #: A learned vector per table size added to the first layer's pre-activation (zeros at
    #: the start), exported as the policy file's head ``size_embedding``: the lever "a size
    #: embedding" of issue 49. Off: the network as before, the same initial weights.
    size_embedding: bool = False

    def check(self) -> None:
        super().check()
        for name in ("learning_rate", "clip_range", "max_grad_norm"):
            check_range(getattr(self, name) > 0, name, getattr(self, name), "> 0")
        for name in ("ent_coef", "vf_coef"):
            check_range(getattr(self, name) >= 0, name, getattr(self, name), ">= 0")
        for name in ("epochs", "minibatch"):
            check_range(getattr(self, name) >= 1, name, getattr(self, name), ">= 1")
        require(all(isinstance(h, int) and h > 0 for h in self.hidden) and bool(self.hidden),
                f"hidden must be positive ints, got {self.hidden}")
        check_range(0 < self.gamma <= 1, "gamma", self.gamma, "in (0, 1]")
        check_range(0 <= self.gae_lambda <= 1, "gae_lambda", self.gae_lambda, "in [0, 1]")
        check_range(self.tribute_weight >= 0, "tribute_weight", self.tribute_weight, ">= 0")
        require(self.tribute_lambda is None or 0 <= self.tribute_lambda <= 1,
                f"tribute_lambda must be in [0, 1], got {self.tribute_lambda}")


@dataclass(frozen=True)
class CollectionSettings(SettingsGroup):
    """The engines that collect the rollouts, and where they run (``collection``)."""

    #: Table sizes played at once, one engine each.
    table_sizes: tuple[int, ...] = TABLE_SIZES
    #: Matches per table size.
    envs_per_size: int = 128
    #: Observation padding: the policy plays any table up to this size.
    max_players: int = MAX_PLAYERS
    #: Steps per match in each rollout.
    rollout_steps: int = 64
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

    def check(self) -> None:
        super().check()
        require(bool(self.table_sizes), "table_sizes must name at least one table size")
        check_range(self.max_players in TABLE_SIZES, "max_players", self.max_players,
                    f"in {TABLE_SIZES}")
        for n in self.table_sizes:
            require(n in TABLE_SIZES and n <= self.max_players,
                    f"table size {n} must be in 2..max_players ({self.max_players})")
        for name in ("envs_per_size", "rollout_steps"):
            check_range(getattr(self, name) >= 1, name, getattr(self, name), ">= 1")
        check_range(self.collectors >= -1, "collectors", self.collectors, ">= -1 (-1: auto)")
        require(not self.address or self.collectors != 0,
                f"address {self.address!r} needs collectors (the collectors join it)")


@dataclass(frozen=True)
class LeagueSettings(SettingsGroup):
    """Who plays the seats the learner does not (``league``)."""

    #: Share of seats played by the league (0: pure self-play; 1: every seat but one, the
    #: learner's drawn uniformly, as a best response against a fixed agent plays).
    opponent_share: float = 0.0
    #: Agent specs that are members of the league besides the snapshots, drawn as often as
    #: each snapshot: memoryless agents only (``heuristic``, ``greedy``, ``random``,
    #: ``net:path=...``).
    league_agents: tuple[str, ...] = ()
    #: Add a snapshot to the league every this many samples (0: never).
    snapshot_every: int = 0
    max_snapshots: int = 5

    def check(self) -> None:
        super().check()
        check_range(0 <= self.opponent_share <= 1, "opponent_share", self.opponent_share,
                    "in [0, 1]")
        check_range(self.snapshot_every >= 0, "snapshot_every", self.snapshot_every, ">= 0")
        check_range(self.max_snapshots >= 1, "max_snapshots", self.max_snapshots, ">= 1")
        if self.league_agents:
            from dragons_egg.agents import parse_spec

            for spec in self.league_agents:
                parse_spec(spec)


@dataclass(frozen=True)
class SelfPlayConfig(RulesSettings, RunSettings):
    """Every setting of a self-play run (each is a command-line flag); those every trainer
    has are :class:`~.scaffold.RunSettings`'; the rest are the budget, the rules and the
    groups (the module docstring). Made, it is checked (``__post_init__``: types, ranges and
    how the groups go together); :meth:`validate` also checks what the run needs around it
    (Ray, the league's agents, the search-targets folder)."""

    RUN_PREFIX: ClassVar[str] = "selfplay"
    AGENT_SPECS: ClassVar[tuple[str, ...]] = (*RunSettings.AGENT_SPECS, "league.league_agents")

    #: Learner samples (decisions trained on) to collect in all.
    total_samples: int = 2_000_000
    #: Stop before collection and updates take more than this many seconds in all, across
    #: resumes (the next update's time predicted from the run's mean; 0: no limit).
    #: Evaluations and checkpoints do not count.
    max_seconds: float = 0.0
    #: The rules of every match the run plays (:class:`~dragons_egg_env.config.RulesConfig`):
    #: the collection's at each of ``table_sizes``, the league's and the evaluations', whose
    #: table size is its ``num_players`` (:attr:`eval_players`). ``--rules FILE|JSON`` gives
    #: them, ``--rule FLAG=VALUE`` (again for more) one flag, ``--num-rounds N`` and
    #: ``--eval-players N`` its ``num_rounds`` and ``num_players``.
    rules: RulesConfig = RulesConfig()
    #: The network and the PPO update.
    ppo: PPOSettings = PPOSettings()
    #: The engines that collect, and where.
    collection: CollectionSettings = CollectionSettings()
    #: Who plays the seats the learner does not.
    league: LeagueSettings = LeagueSettings()
    #: Plug-in: the tribute counterfactual (off by default).
    tribute_cf: TributeCounterfactualSettings = TributeCounterfactualSettings()
    #: Plug-in: the Egg holder's counterfactual (off by default).
    egg_cf: EggCounterfactualSettings = EggCounterfactualSettings()
    #: Plug-in: the give-back table (off by default).
    table: TributeTableSettings = TributeTableSettings()
    #: Plug-in: the search targets (off by default).
    search: SearchTargetSettings = SearchTargetSettings()
    #: Plug-in: the centralised critic (off by default).
    critic: CentralCriticSettings = CentralCriticSettings()
    #: Plug-in: the hand-prediction auxiliary head (off by default).
    belief: HandPredictionSettings = HandPredictionSettings()
    #: Plug-in: exploiters, best responses to the learner, in the league (off by default).
    exploiters: ExploiterSettings = ExploiterSettings()
    #: Evaluate every this many samples (0: only at the end).
    eval_every: int = 500_000
    #: Save ``checkpoints/latest.pt`` every this many samples (0: only at the end).
    checkpoint_every: int = 250_000

    @property
    def max_players(self) -> int:
        """Observation padding: ``collection.max_players``."""
        return self.collection.max_players

    def table_rules(self, n: int) -> RulesConfig:
        """The run's :attr:`rules` at a table of ``n`` seats (a ``ConfigError``, a
        ``ValueError``, where they do not hold there)."""
        return dataclasses.replace(self.rules, num_players=n)

    def rule_flags(self) -> dict[str, Any]:
        """The run's rule flags: :attr:`rules` without the table size, as a policy file
        records them (:data:`dragons_egg.agents.netpolicy.RULES_KEY`)."""
        return {k: v for k, v in self.rules.to_dict().items() if k != "num_players"}

    def plugins(self) -> dict[str, SettingsGroup]:
        """The plug-ins that are on, by field name (recorded in checkpoints and policy files'
        provenance)."""
        out: dict[str, SettingsGroup] = {}
        if self.tribute_cf.on:
            out["tribute_cf"] = self.tribute_cf
        if self.egg_cf.on:
            out["egg_cf"] = self.egg_cf
        if self.table.tribute_table:
            out["table"] = self.table
        if self.search.search_targets:
            out["search"] = self.search
        if self.critic.central_critic:
            out["critic"] = self.critic
        if self.belief.hand_prediction > 0:
            out["belief"] = self.belief
        if self.exploiters.on:
            out["exploiters"] = self.exploiters
        return out

    def network_parts(self, obs_size: int) -> dict[str, Any]:
        """The networks the plug-ins that are on add to the learner's model, by attribute
        name (:func:`.oracle.network_parts`: ``critic``, ``hand_head``)."""
        return network_parts(self.critic, self.belief, obs_size, self.ppo.hidden[-1],
                             self.max_players)

    def plugin_callbacks(self) -> list[TrainerCallback]:
        """The hooks of the plug-ins that are on and act around the loop
        (:mod:`.callbacks`): the search targets' (they load their folder at the start of
        the run and add their figures to each evaluation), the exploiters' (they train a
        best response to the learner when one is due and add it to the league)."""
        out: list[TrainerCallback] = []
        if self.search.search_targets:
            out.append(self.search.callback())
        if self.exploiters.on:
            out.append(self.exploiters.callback())
        return out

    def collection_hooks(self, seed: int) -> list[CollectionHook]:
        """The hooks of the plug-ins that are on inside a collector seeded ``seed``
        (:mod:`.hooks`), in this order: ``tribute_cf``'s, then ``egg_cf``'s, then the hidden
        hands of ``critic`` and ``belief`` (one hook for both)."""
        out: list[CollectionHook] = [group.collection_hook(seed, self.max_players)
                                     for group in (self.tribute_cf, self.egg_cf) if group.on]
        if self.critic.central_critic or self.belief.hand_prediction > 0:
            out.append(HiddenHands(self.max_players, self.critic.central_critic))
        return out

    def update_hooks(self) -> list[UpdateHook]:
        """The hooks of the plug-ins that are on inside the learner's update (:mod:`.hooks`),
        in this order: the counterfactual rows' loss (``tribute_cf`` or ``egg_cf``), the
        give-back table (``table``), the search targets' loss (``search``), the centralised
        critic's value loss (``critic``), the hand-prediction loss (``belief``)."""
        out: list[UpdateHook] = []
        if self.tribute_cf.on or self.egg_cf.on:
            out.append(self.tribute_cf.update_hook(self.ppo.clip_range))
        table = self.table.update_hook(self.max_players)
        if table is not None:
            out.append(table)
        if self.search.search_targets:
            out.append(self.search.update_hook())
        if self.critic.central_critic:
            out.append(CriticLoss(self.ppo.vf_coef))
        if self.belief.hand_prediction > 0:
            out.append(HandLoss(self.belief.hand_prediction, self.max_players))
        return out

    @classmethod
    def migrate(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Settings written before the run held its rules (``num_rounds``, ``eval_players``:
        config files, ``config.json`` of a run, checkpoints) in today's form
        (:func:`migrate_rules`; the flat form of before the groups is nested after it)."""
        return migrate_rules(data)

    def check(self) -> None:
        """The checks made with the settings: the run's, then types, ranges and how the
        groups go together (each group has checked itself before)."""
        super().check()
        check_range(self.total_samples >= 1, "total_samples", self.total_samples, ">= 1")
        check_range(self.max_seconds >= 0, "max_seconds", self.max_seconds, ">= 0")
        for n in self.collection.table_sizes:
            self.table_rules(n)
        check_range(self.eval_players in TABLE_SIZES and self.eval_players <= self.max_players,
                    "eval_players", self.eval_players, f"in 2..{self.max_players}")
        cf, egg = self.tribute_cf, self.egg_cf
        require(not cf.tribute_cf_replay or not egg.egg_counterfactual,
                f"tribute_cf_replay ({cf.tribute_cf_replay}) keeps tribute decisions only; "
                f"it cannot go with egg_counterfactual ({egg.egg_counterfactual})")
        require(not self.exploiters.on or self.league.opponent_share > 0,
                f"exploiters play in the league, which opponent_share "
                f"{self.league.opponent_share} seats nowhere")
        require(not self.exploiters.on or all(
            n <= self.max_players for n in self.exploiters.exploiter_players),
            f"exploiter_players {list(self.exploiters.exploiter_players)} go past "
            f"max_players {self.max_players}")
        require(not self.table.tribute_table or cf.on,
                "tribute_table learns from counterfactual give-back decisions, which "
                "tribute_counterfactual 0 makes none of")

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad setting: the checks made with the
        settings (types, ranges, the groups together), then what the run needs around it:
        Ray for collectors, memoryless league agents, a search-targets folder."""
        check_all(self)
        col = self.collection
        if col.collectors >= 1 or col.address:
            require(ray_available(), "collectors on Ray (collectors >= 1 or an address) need "
                    "the 'rllib' extra: pip install 'dragons-egg[rllib]' (or --collectors 0)")
        self.search.check_folder()
        for spec in self.league.league_agents:
            require(league_agent(spec, 0, self).memoryless,
                    f"league agent {spec!r} is not memoryless (it keeps state across moves or "
                    "matches), so it cannot play a league seat; use heuristic, greedy, random "
                    "or net:path=FILE.npz")


def league_agent(spec: str, seed: int, cfg: SelfPlayConfig) -> Agent:
    """The agent ``spec`` made with ``seed``, started for observations padded to
    ``cfg.max_players`` seats (a memoryless agent reads only what decoding needs)."""
    from dragons_egg.agents import make_agent

    agent = make_agent(spec, seed=seed)
    agent.start_match(0, cfg.table_rules(cfg.max_players), cfg.max_players)
    return agent


def unparsed_config(data: Any, where: str) -> SelfPlayConfig:
    """The self-play settings ``data`` (their JSON form, as a checkpoint or a run folder's
    ``config.json`` saved them) read as this version's: settings added since take their
    defaults, those of before the run held its rules read as ``rules``
    (:func:`migrate_rules`); a ``ValueError`` that starts with ``where`` for a setting this
    version does not have. Their types are checked, not their agent specs, which are not
    parsed: parsing a ``MODULE:CLASS`` spec imports its module, and what a file names is not
    the user's consent (a resume asks for it first; shipping a checkpoint or evaluating a
    run's policies makes none of its agents)."""
    try:
        data = migrated(SelfPlayConfig, data)  # rules, then the groups
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    known = {f.name for f in dataclasses.fields(SelfPlayConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where} has settings this version does not know: "
                         f"{', '.join(unknown)}")
    with checks_deferred():
        return SelfPlayConfig.from_dict(data)


def league_fns(cfg: SelfPlayConfig) -> list[Any]:
    """The league agents' functions ``(obs, mask) -> actions`` for rows padded to
    ``cfg.max_players`` seats, agent ``k`` made with seed ``cfg.seed * 1000 + k``: a
    deterministic policy file's argmax over all its rows in one call
    (:func:`dragons_egg.agents.batched.batch_policy`: the actions of its ``act``), else the
    agent's own ``act_batch``. The in-process collection and the Ray collectors both play
    these."""
    from dragons_egg.agents.batched import batch_policy

    fns = []
    for k, spec in enumerate(cfg.league.league_agents):
        seed = cfg.seed * 1000 + k
        fn = batch_policy(spec, cfg.table_rules(cfg.max_players), seed)
        fns.append(fn if fn is not None else league_agent(spec, seed, cfg).act_batch)
    return fns


__all__ = ["CollectionSettings", "LEGACY_RULE_SETTINGS", "LeagueSettings", "PPOSettings",
           "SelfPlayConfig", "league_agent", "league_fns", "migrate_rules", "ray_available",
           "unparsed_config"]
