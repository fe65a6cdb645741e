"""The agents of a tournament and its settings: :class:`Entrant` (a label with a spec, a factory
or a policy), :class:`TournamentConfig` and the checks made before any match is played."""

from __future__ import annotations

import math
import pickle
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from dragons_egg.agents import (
    AgentSpec,
    check_spec_for_table,
    make_agent,
    parse_spec,
    registrations,
)
from dragons_egg.agents.base import Agent
from dragons_egg.agents.runner import PolicyAgent, check_move_timeout
from dragons_egg_env.config import ConfigError, RulesConfig

#: What a tournament does when an agent fails a match (``TournamentConfig.on_agent_error``).
ON_AGENT_ERROR = ("forfeit", "stop")


def _qualname(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{getattr(obj, '__module__', None) or type(obj).__module__}.{name}"


#: The most matches one tournament plays: its schedule and its records are kept in memory
#: (the schedule alone, its list and set of matches, took 117 MiB at this many); a larger one
#: is refused at once rather than building a schedule that does not fit
#: (``--matches 1000000000000`` took 24 GB before the kernel killed it).
MAX_MATCHES = 1_000_000


@dataclass(frozen=True)
class Entrant:
    """One agent of a tournament with its label: exactly one of ``spec`` (an agent spec
    string), ``factory`` (``factory(seed) -> Agent``, or an object with ``make(seed)``) or
    ``policy`` (``policy(observation, action_mask) -> action``). The label names it in the
    results, the summary and the report. With ``workers > 1`` factories and policies must
    be picklable (module-level functions or classes, or instances of module-level classes)."""

    label: str
    spec: str | None = None
    factory: Callable[[int], Agent] | None = None
    policy: Callable[[Any, Any], Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.label, str) or not self.label.strip():
            raise ValueError(f"an entrant's label is a non-empty string, got {self.label!r}")
        given = [k for k in ("spec", "factory", "policy") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"entrant {self.label!r}: give exactly one of spec, factory or "
                             f"policy, got {', '.join(given) or 'none'}")
        if self.spec is not None and not isinstance(self.spec, str):
            raise TypeError(f"entrant {self.label!r}: spec is an agent spec string, got "
                            f"{self.spec!r}")
        factory: Any = self.factory  # a callable, or an object with make(seed)
        if factory is not None and not (callable(factory)
                                        or callable(getattr(factory, "make", None))):
            raise TypeError(f"entrant {self.label!r}: factory must be callable as "
                            f"factory(seed) or have make(seed), got {self.factory!r}")
        if self.policy is not None and not callable(self.policy):
            raise TypeError(f"entrant {self.label!r}: policy must be callable as "
                            f"policy(observation, action_mask), got {self.policy!r}")

    @property
    def kind(self) -> str:
        return "spec" if self.spec is not None else (
            "factory" if self.factory is not None else "policy")

    def make(self, seed: int) -> Agent:
        """A fresh agent for one seat of one match, seeded with ``seed``."""
        if self.spec is not None:
            return make_agent(self.spec, seed=seed)
        if self.policy is not None:
            return PolicyAgent(self.policy, seed=seed, label=self.label)
        factory: Any = self.factory
        make = getattr(factory, "make", None)
        agent: Agent = make(seed) if callable(make) else factory(seed)
        missing = [m for m in ("start_match", "act", "end_round")
                   if not callable(getattr(agent, m, None))]
        if missing:
            raise TypeError(f"entrant {self.label!r}: factory {_qualname(self.factory)} "
                            f"returned {agent!r}, which lacks {', '.join(missing)}; return "
                            "an dragons_egg.agents.base.Agent (or pass the callable as policy=)")
        return agent

    def describe(self) -> dict[str, str]:
        """What ``config.json`` records of it."""
        if self.spec is not None:
            return {"label": self.label, "spec": self.spec}
        obj = self.factory if self.factory is not None else self.policy
        return {"label": self.label, self.kind: _qualname(obj)}


def _as_entrant(item: Any, index: int) -> Entrant:
    if isinstance(item, Entrant):
        return item
    if isinstance(item, str):
        return Entrant(item, spec=item)
    if isinstance(item, AgentSpec):
        return Entrant(item.spec, spec=item.spec)
    hint = (" (wrap it: Entrant('name', factory=f) for f(seed) -> Agent, or "
            "Entrant('name', policy=f) for f(observation, mask) -> action)"
            if callable(item) or hasattr(item, "make") else "")
    raise TypeError(f"agents[{index}] is an agent spec string or an Entrant, got "
                    f"{item!r}{hint}")


@dataclass
class TournamentConfig:
    """Everything a tournament needs; saved beside its results. ``agents`` holds spec strings
    (each its own label) and :class:`Entrant` objects (a label with a spec, a factory or a
    policy); an agent listed twice fills two places of the line-up.

    Built once, checked once: the constructor turns ``rules`` into a
    :class:`~dragons_egg_env.config.RulesConfig` (with ``num_players`` and ``num_rounds``) and
    runs :meth:`validate`, so a config that exists can be played (a mistake is a
    ``ValueError``, ``TypeError``, :class:`~dragons_egg_env.config.ConfigError` or
    :class:`~dragons_egg.agents.AgentSpecError` with a one-line message, raised here).
    :func:`~.output.run_tournament` and :func:`~.runner.run_matches` do not check it again:
    change a setting with :func:`dataclasses.replace`, which builds and checks a new one."""

    agents: list[str | Entrant]
    num_players: int = 4
    #: Matches to play; rounded up to whole deal sequences (one match per rotation).
    matches: int = 200
    seed: int = 0
    num_rounds: int = 3
    #: The rule flags: a :class:`~dragons_egg_env.config.RulesConfig` once built. A plain
    #: dict of flags other than num_players / num_rounds is accepted (and is how
    #: ``config.json`` saves them); a RulesConfig must agree with ``num_players`` and
    #: ``num_rounds``.
    rules: RulesConfig | Mapping[str, Any] = field(default_factory=dict)
    workers: int = 1
    #: Bootstrap resamples for the intervals.
    bootstrap: int = 2000
    out_dir: str | None = None
    #: ``"forfeit"``: an agent that fails a match forfeits it and the run goes on;
    #: ``"stop"``: the run stops (:class:`AgentFailed`), keeping every finished match.
    on_agent_error: str = "forfeit"
    #: Seconds each call to an agent may take (``None``: no limit); a late agent fails.
    move_timeout: float | None = None
    #: Keep every match's replay, compressed, in the output folder's ``replays/``
    #: (``seqS-rotR.json.gz``; ``dragons-egg tournament --save-replays``); without it only
    #: forfeited matches' replays are kept.
    save_replays: bool = False
    #: The flags given as a dict, saved as given (``config.json`` keeps its old form).
    _given: tuple[str, ...] | None = field(default=None, init=False, repr=False,
                                           compare=False)

    def __post_init__(self) -> None:
        self.rules, self._given = _build_rules(self.rules, self.num_players, self.num_rounds)
        self.validate()

    def rules_config(self) -> RulesConfig:
        """The rules (R1..R34 flags, table size and match length) as built at construction."""
        assert isinstance(self.rules, RulesConfig)  # __post_init__ made it one
        return self.rules

    def rule_flags(self) -> dict[str, Any]:
        """The rule flags other than num_players / num_rounds as ``config.json`` saves them:
        those given as a dict, or the ones that differ from their defaults."""
        rules = self.rules_config().to_dict()
        if self._given is not None:
            return {k: rules[k] for k in self._given}
        default = RulesConfig().to_dict()
        return {k: v for k, v in rules.items()
                if k not in _TABLE and v != default[k]}

    def entrants(self) -> list[Entrant]:
        """``agents`` as :class:`Entrant` objects (a spec string is its own label)."""
        return [_as_entrant(a, i) for i, a in enumerate(self.agents)]

    @property
    def labels(self) -> list[str]:
        """The label of every entry of ``agents``, in order (repeats kept)."""
        return [e.label for e in self.entrants()]

    def by_label(self) -> dict[str, Entrant]:
        """Each distinct label's entrant; a label naming two different agents is an error."""
        out: dict[str, Entrant] = {}
        for e in self.entrants():
            if out.setdefault(e.label, e) != e:
                raise ValueError(f"the label {e.label!r} names two different agents")
        return out

    def validate(self) -> None:
        """Check everything that can be checked before playing (the constructor does): agent
        specs (with their paths and options, and that each can play a table of
        ``num_players``), labels, the settings and, with ``workers > 1``, that every factory,
        policy and registered agent the specs use can be sent to worker processes."""
        if not self.agents:
            raise ValueError("a tournament needs at least one agent")
        entrants = self.by_label()
        for e in entrants.values():
            if e.spec is not None:
                check_spec_for_table(e.spec, self.num_players)  # parses the spec fully
        if not 1 <= self.matches <= MAX_MATCHES:
            raise ValueError(f"matches must be in 1..{MAX_MATCHES:,}, got {self.matches:,} "
                             "(a tournament keeps its schedule and its records in memory)")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.on_agent_error not in ON_AGENT_ERROR:
            raise ValueError(f"on_agent_error is one of {', '.join(ON_AGENT_ERROR)}, got "
                             f"{self.on_agent_error!r}")
        self._check_move_timeout()
        if not isinstance(self.save_replays, bool):
            raise TypeError(f"save_replays is true or false, got {self.save_replays!r}")
        if self.workers > 1:
            for e in entrants.values():
                _check_picklable(e, self.workers)
            worker_registrations(self)

    def _check_move_timeout(self) -> None:
        t = self.move_timeout
        if t is None:
            return
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) \
                or t <= 0:
            raise ValueError(f"move_timeout is a positive number of seconds, got {t!r}")
        why = check_move_timeout()
        if why is not None and not hasattr(signal, "setitimer"):
            raise ValueError(why)
        # elsewhere than in a main thread is no matter: with a move timeout, the matches
        # play in worker processes' main threads (runner.in_workers)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TournamentConfig:
        """The config that :meth:`to_json` described (``config.json``); an entrant given by
        a factory or a policy cannot be rebuilt from its name (a ``ValueError``)."""
        agents: list[str | Entrant] = []
        for i, a in enumerate(data.get("agents") or []):
            if isinstance(a, str):
                agents.append(a)
            elif isinstance(a, dict) and set(a) == {"label", "spec"}:
                agents.append(Entrant(a["label"], spec=a["spec"]))
            else:
                raise ValueError(
                    f"agent {i + 1} of the saved config, {a!r}, is a factory or a policy: "
                    "only the program that made it can rebuild it (resume with "
                    "run_tournament(config, resume=True) there)")
        known = {f.name for f in fields(cls) if f.init} - {"agents"}
        return cls(agents=agents, **{k: v for k, v in data.items() if k in known})

    def registrations(self) -> dict[str, Callable[..., Agent]]:
        """The agents added with :func:`dragons_egg.agents.register` that this tournament's specs
        use
        (worker processes get them; see :func:`dragons_egg.agents.registrations`)."""
        names = {parse_spec(e.spec)[0] for e in self.by_label().values() if e.spec is not None}
        return {k: v for k, v in registrations().items() if k in names}

    def lineup(self, sequence: int = 0) -> list[str]:
        """The labels of the agents at the table for a deal sequence (before rotation): with
        ``k <= n`` agents they repeat in order to fill the seats; with more agents than seats
        a window of ``n`` of them, moving one agent along per sequence, so each sits out in
        turn."""
        labels = self.labels
        k, n = len(labels), self.num_players
        start = sequence % k if k > n else 0
        return [labels[(start + i) % k] for i in range(n)]

    def seats_filled(self) -> dict[str, int]:
        """How many seats of every table each label fills when the agents do not outnumber
        the seats (the line-up repeats them in order); empty when they do."""
        if len(self.agents) > self.num_players:
            return {}
        counts: dict[str, int] = {}
        for label in self.lineup(0):
            counts[label] = counts.get(label, 0) + 1
        return counts

    def to_json(self) -> dict[str, Any]:
        """The config as JSON data: spec strings as they are, other entrants described."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        data["agents"] = describe_agents(self.agents)
        data["rules"] = self.rule_flags()
        if not self.save_replays:  # config.json of a tournament without it, as before
            del data["save_replays"]
        return data

    @property
    def num_sequences(self) -> int:
        return math.ceil(self.matches / self.num_players)


#: The settings of a RulesConfig that are TournamentConfig fields of their own.
_TABLE = ("num_players", "num_rounds")


def _build_rules(rules: RulesConfig | Mapping[str, Any], num_players: int, num_rounds: int
                 ) -> tuple[RulesConfig, tuple[str, ...] | None]:
    """The RulesConfig of a tournament's ``rules`` and the flags given as a dict (``None``
    for a RulesConfig); a one-line error for an unknown or bad flag, or a table size or match
    length given twice."""
    for name, value in (("num_players", num_players), ("num_rounds", num_rounds)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} is a whole number, got {value!r}")
    if isinstance(rules, RulesConfig):
        for name, value in (("num_players", num_players), ("num_rounds", num_rounds)):
            if getattr(rules, name) != value:
                raise ValueError(f"rules has {name}={getattr(rules, name)} but the tournament "
                                 f"{name}={value}: give the same, or pass the rule flags as "
                                 "a dict")
        return rules, None
    if not isinstance(rules, Mapping):
        raise TypeError(f"rules is a RulesConfig or a dict of rule flags, got {rules!r}")
    extra = set(rules) & set(_TABLE)
    if extra:
        raise ConfigError(f"set {', '.join(sorted(extra))} directly, not in rules")
    built = RulesConfig.from_kwargs({**rules, "num_players": num_players,
                                     "num_rounds": num_rounds})
    return built, tuple(rules)


def describe_agents(agents: Sequence[str | Entrant]) -> list[str | dict[str, str]]:
    """``agents`` as ``config.json`` saves them: spec strings as they are, other entrants
    described (:meth:`Entrant.describe`)."""
    return [a if isinstance(a, str) else _as_entrant(a, i).describe()
            for i, a in enumerate(agents)]


def _require_picklable(value: Any, what: str, workers: int, fix: str) -> None:
    """A ``TypeError`` naming ``what`` when ``value`` cannot be pickled: with ``workers`` > 1
    matches run in worker processes that receive it by pickling (``fix``: how to mend it)."""
    try:
        pickle.loads(pickle.dumps(value))
    except Exception as exc:  # noqa: BLE001 - any failure means workers cannot get it
        raise TypeError(
            f"{what} cannot be pickled ({type(exc).__name__}: {exc}), and with "
            f"workers={workers} matches run in worker processes that receive it by "
            f"pickling: {fix}, or use workers=1") from None


def _check_picklable(e: Entrant, workers: int) -> None:
    if e.spec is not None:
        return
    obj = e.factory if e.factory is not None else e.policy
    _require_picklable(e, f"entrant {e.label!r}: its {e.kind} {_qualname(obj)}", workers,
                       "define it at module level (not a lambda or a nested function)")


def worker_registrations(tc: TournamentConfig) -> dict[str, Callable[..., Agent]]:
    regs = tc.registrations()
    for name, factory in regs.items():
        _require_picklable(factory, f"agent {name!r} (registered with "
                           f"dragons_egg.agents.register as {_qualname(factory)})",
                           tc.workers, "register a module-level class or function")
    return regs


def check_importable(tc: TournamentConfig, method: str) -> None:
    """With spawn or forkserver, workers import what they unpickle: objects of an
    interactive ``__main__`` (a notebook, the REPL) cannot be found there."""
    if method == "fork" or getattr(sys.modules.get("__main__"), "__file__", None):
        return
    for e in tc.by_label().values():
        obj = e.factory if e.factory is not None else e.policy
        if obj is not None and getattr(obj, "__module__", type(obj).__module__) == "__main__":
            raise TypeError(
                f"entrant {e.label!r}: its {e.kind} {_qualname(obj)} is defined in an "
                f"interactive session, which worker processes started by {method!r} cannot "
                "import: move it to a module, or use workers=1")
