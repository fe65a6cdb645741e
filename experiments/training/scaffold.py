"""What every trainer's settings share: :class:`RunSettings`, the base of the self-play
trainer's :class:`~.selfplay.SelfPlayConfig` and the SB3 trainer's
:class:`~.train_ppo.TrainConfig`.

A run has a seed, evaluations (every so many samples or timesteps, a duplicate-deal
tournament against opponents: :func:`~dragons_egg.experiments.evaluation.versus.evaluate_agent`),
checkpoints, a run folder (``out_dir/run_name``) and a progress bar. The trainers declare
their own settings beside these, and may give these other defaults by declaring the field
again. Every settings dataclass is read the same way: ``--config FILE|NAME`` and one flag per
field, through :func:`~dragons_egg.experiments.common.settings.config_cli` (tyro); its
``validate()`` checks types first (the annotations), then ranges.

The command line also asks for the user's consent to agent specs that run code read from a
file (a ``--config`` file, a checkpoint's saved settings): ``--allow-code SPEC``
(:func:`trainer_command`), and the resume commands a run prints name it
(:func:`consent_flags`).
"""

from __future__ import annotations

import dataclasses
import shlex
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, TypeVar

from dragons_egg.agents.consent import CONSENT_FLAG, ConsentError, check_consent, runs_code
from dragons_egg.experiments.common.runs import OVERWRITE_HELP
from dragons_egg.experiments.common.settings import (
    SEED_RANGE,
    build_settings,
    check_all,
    check_fields,
    check_range,
    check_settings,
    checks_deferred,
    checks_on,
    fail,
    field_types,
    get_path,
    group_types,
    migrated,
    parse_config_cli,
    read_rules,
    validated,
)
from dragons_egg_env.config import RulesConfig

S = TypeVar("S", bound="RunSettings")


@dataclass(frozen=True)
class RunSettings:
    """The settings every training run has (each a command-line flag of the same name)."""

    #: The run folder's default name is this, then ``-seed<seed>``.
    RUN_PREFIX: ClassVar[str] = "run"
    #: The settings that hold agent specs (paths: ``league.league_agents``); a trainer adds
    #: its own. Such a spec read from a file runs code only with the user's consent
    #: (:func:`trainer_command`).
    AGENT_SPECS: ClassVar[tuple[str, ...]] = ("eval_opponents", "eval_search")

    #: Seed of everything random in the run (engines, network, sampling, evaluations).
    seed: int = 0
    #: Evaluate every this many samples or timesteps (0: only at the end).
    eval_every: int = 0
    #: Duplicate matches per evaluation (rounded up to whole rotations of the table).
    eval_matches: int = 200
    #: Agent specs the learner is evaluated against, in turn in the seats it does not hold.
    eval_opponents: tuple[str, ...] = ("heuristic",)
    #: Processes that play an evaluation's matches.
    eval_workers: int = 1
    #: Agent specs too slow to share every evaluation's matches (``ismcts``): at each
    #: evaluation each is played in a tournament of its own (the learner in one seat, that
    #: agent in the others) of ``eval_search_matches`` matches, and adds its ``diff_<spec>``
    #: columns to the row and a line to the learning curve.
    eval_search: tuple[str, ...] = ()
    #: Duplicate matches of each ``eval_search`` evaluation.
    eval_search_matches: int = 40
    #: Save a checkpoint every this many samples or timesteps (0: only at the end).
    checkpoint_every: int = 0
    #: Torch's threads (1: on 2 cores more made updates ~10x slower while the other core was
    #: busy).
    torch_threads: int = 1
    #: The folder that holds run folders.
    out_dir: str = "runs"
    #: Run folder name (default: the trainer's prefix, then ``-seed<seed>``).
    run_name: str = ""
    #: A progress bar on stderr.
    progress: bool = True

    def __post_init__(self) -> None:
        # a RulesConfig setting may be given as its JSON object of rule flags, a group as its
        # object of settings
        groups = group_types(type(self))
        for name, tp in field_types(type(self)).items():
            value = getattr(self, name)
            if tp is RulesConfig and isinstance(value, dict):
                object.__setattr__(self, name, read_rules(value, name))
            elif name in groups and isinstance(value, dict):
                check_settings(groups[name], value)
                object.__setattr__(self, name, build_settings(groups[name], value))
        if checks_on():
            self.check()

    def check(self) -> None:
        """The checks made with the settings (``__post_init__``): :meth:`validate_run`; the
        trainers add theirs. A ``ValueError`` names the first bad setting."""
        self.validate_run()

    @property
    def name(self) -> str:
        return self.run_name or f"{self.RUN_PREFIX}-seed{self.seed}"

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.name

    def validate_run(self) -> None:
        """The first step of every trainer's ``validate()``: every field of its annotated type
        (:func:`~dragons_egg.experiments.common.settings.check_fields`), then the ranges of
        the shared settings; a ``ValueError`` names the first bad one."""
        check_fields(self)
        lo, hi = SEED_RANGE
        check_range(lo <= self.seed <= hi, "seed", self.seed, f"in {lo}..{hi}")
        for name in ("eval_matches", "eval_workers", "torch_threads", "eval_search_matches"):
            check_range(getattr(self, name) >= 1, name, getattr(self, name), ">= 1")
        for name in ("eval_every", "checkpoint_every"):
            check_range(getattr(self, name) >= 0, name, getattr(self, name), ">= 0")
        # a name, not a path: the run folder is out_dir/run_name, never outside out_dir
        check_range(not any(c in self.run_name for c in "/\\\0")
                    and self.run_name not in (".", "..") and len(self.run_name.encode()) <= 255,
                    "run_name", self.run_name, "a folder name (no path separators, not . "
                    "or .., at most 255 bytes)")
        if self.eval_opponents or self.eval_search:
            from dragons_egg.agents import parse_spec

            for spec in (*self.eval_opponents, *self.eval_search):
                parse_spec(spec)

    def evaluate(self, me: str, *, players: int, seed: int, num_rounds: int,
                 rules: dict[str, Any] | None = None) -> dict[str, float]:
        """One evaluation of the agent spec ``me``: against ``eval_opponents`` (in turn, one
        tournament of ``eval_matches``), then against each of ``eval_search`` (a tournament of
        its own of ``eval_search_matches``, whose ``diff_<spec>`` figures join the row); the
        row of :func:`~dragons_egg.experiments.evaluation.versus.evaluate_agent`."""
        from dragons_egg.experiments.evaluation.versus import evaluate_agent

        common: dict[str, Any] = dict(players=players, num_rounds=num_rounds, rules=rules,
                                      workers=self.eval_workers)
        row = (evaluate_agent(me, self.eval_opponents, matches=self.eval_matches, seed=seed,
                              **common) if self.eval_opponents else {})
        for k, spec in enumerate(self.eval_search, start=1):
            extra = evaluate_agent(me, [spec], matches=self.eval_search_matches,
                                   seed=seed + 104_729 * k, **common)
            row.update({key: v for key, v in extra.items() if key.startswith(f"diff_{spec}")})
        return row

    @classmethod
    def from_dict(cls: type[S], data: dict[str, Any]) -> S:
        """Settings from their JSON form (``dataclasses.asdict`` written as JSON: lists where
        the fields are tuples); a ``ValueError`` naming an unknown setting or a value of the
        wrong type (:func:`~dragons_egg.experiments.common.settings.check_settings`)."""
        data = migrated(cls, data)
        check_settings(cls, data)
        built: S = build_settings(cls, data)
        return built


class RulesSettings:
    """What a trainer's settings holding its rules (a ``rules`` field, a
    :class:`~dragons_egg_env.config.RulesConfig`) read off them."""

    rules: RulesConfig

    @property
    def num_rounds(self) -> int:
        """Rounds per match (R26): ``rules.num_rounds``."""
        return self.rules.num_rounds

    @property
    def eval_players(self) -> int:
        """Table size of the evaluations: ``rules.num_players``."""
        return self.rules.num_players


#: The switch that lets ``--resume`` load a checkpoint that runs code when loaded.
TRUST_FLAG = "--trust-checkpoint"
#: The help of :data:`~dragons_egg.agents.consent.CONSENT_FLAG` (``--allow-code``) in every
#: trainer.
ALLOW_CODE_HELP = ("allow this agent spec, named by the --config file or by the settings "
                   "the --resume checkpoint saved, to run code (trust=1, rllib:path=, "
                   "MODULE:CLASS): a file cannot give that consent, and a checkpoint's digest "
                   "only tells that it is not damaged (again for more; giving the spec as a "
                   "setting's value here, such as --eval-opponents SPEC, does the same)")


class TrainerCommand(NamedTuple):
    """What a trainer's command line asks for."""

    #: The settings, validated.
    cfg: Any
    #: The checkpoint ``--resume`` continues, or ``None`` for a new run.
    resume: str | None
    #: ``--trust-checkpoint`` was given.
    trust: bool
    #: ``--overwrite`` was given.
    overwrite: bool


def agent_specs(cfg: Any, paths: Iterable[str] | None = None) -> list[str]:
    """The agent specs the settings ``cfg`` hold (at its :attr:`RunSettings.AGENT_SPECS`;
    none for settings without them), or those at the ``paths`` among them."""
    chosen = getattr(cfg, "AGENT_SPECS", ())
    if paths is not None:
        wanted = set(paths)
        chosen = [p for p in chosen if p in wanted]
    return [spec for p in chosen for spec in get_path(cfg, p) if isinstance(spec, str)]


def check_saved_consent(saved: Any, given: Iterable[str], checkpoint: str | Path,
                        allowed: Collection[str]) -> None:
    """A :class:`~dragons_egg.agents.consent.ConsentError` (a ``ValueError``) for the first
    agent spec that the settings a checkpoint ``saved`` hold and its resume keeps (those not
    ``given`` on the command line or in ``--config``) that runs code and is not among
    ``allowed`` (given with ``--allow-code``, or typed as a setting's value). Called as soon as
    the saved settings are read, before any spec is parsed: the checkpoint's digest is a
    checksum anyone can recompute, so the file cannot give that consent."""
    given = set(given)
    check_consent(agent_specs(saved, [p for p in saved.AGENT_SPECS if p not in given]),
                  f"checkpoint {checkpoint} (its saved settings)", allowed)


def consent_flags(specs: Iterable[str]) -> str:
    """The ``--allow-code SPEC`` options (each with a leading space) that a resume of a run
    whose settings hold ``specs`` needs: one for each that runs code."""
    return "".join(f" {CONSENT_FLAG} {shlex.quote(spec)}"
                   for spec in dict.fromkeys(s.strip() for s in specs) if runs_code(spec))


def folder_consent_flags(run_dir: Path, cfg: Any) -> str:
    """:func:`consent_flags` of the run in ``run_dir``, by the settings its ``config.json``
    records (those of ``cfg``'s kind); empty where there is none to read."""
    import json

    try:
        data = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        return ""
    specs: list[str] = []
    for path in getattr(cfg, "AGENT_SPECS", ()):
        value: Any = data
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, list):
            specs += [s for s in value if isinstance(s, str)]
    return consent_flags(specs)


def check_rules_kept(saved: RulesConfig, given: RulesConfig) -> None:
    """A ``ValueError`` naming each rule flag but the table size on which ``given``, the rules
    a resumed run is asked for, differs from ``saved``, its checkpoint's: a run trains under
    one set of rules, which its policy files record (the evaluations' table size may
    change)."""
    mine, theirs = saved.to_dict(), given.to_dict()
    changed = [f"{k} (checkpoint {mine[k]!r}, given {theirs[k]!r})" for k in mine
               if k != "num_players" and mine[k] != theirs[k]]
    if changed:
        raise ValueError("the rules cannot change on resume (a run trains under one set of "
                         "rules, which its policy files record; the evaluations' table size, "
                         f"eval_players, may): {', '.join(changed)}")


def tournament_flags(rules: RulesConfig) -> dict[str, Any]:
    """The rule flags of ``rules`` that a tournament takes beside its table size and match
    length (``num_players``, ``num_rounds``): the ``rules`` of
    :func:`~dragons_egg.experiments.evaluation.versus.evaluate_agent`."""
    return {k: v for k, v in rules.to_dict().items() if k not in ("num_players", "num_rounds")}


#: The options that set single rule flags of a trainer whose ``rules`` is a
#: :class:`~dragons_egg_env.config.RulesConfig` (name, flag, help): ``--rule FLAG=VALUE``
#: (again for more), and the short forms of two.
RULE_OPTIONS = (("--rule", "", "a rule flag of the run's rules (the tournament's syntax, "
                 "such as pass_locks_out=true; again for more; docs/flags.md lists them), over "
                 "--rules and --config"),
                ("--num-rounds", "num_rounds", "rounds per match (R26): --rule num_rounds=N"),
                ("--eval-players", "num_players", "table size of the evaluations: --rule "
                 "num_players=N"))


def _rule_overrides(words: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The rule flags that :data:`RULE_OPTIONS` in ``words`` set, and the other words; a bad
    one is a one-line error and exit status 2."""
    import argparse

    from dragons_egg.experiments.common.args import rule_flag

    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--rule", type=rule_flag, action="append", default=[])
    for name, flag, _ in RULE_OPTIONS[1:]:
        pre.add_argument(name, dest=flag, default=None)
    known, rest = pre.parse_known_args(list(words))
    out: dict[str, Any] = {}
    for (name, flag, _) in RULE_OPTIONS[1:]:
        text = getattr(known, flag)
        if text is not None:
            try:
                out[flag] = RulesConfig.parse_value(flag, text)
            except ValueError as exc:
                fail(f"{name}: {exc}")
    for flag, value in known.rule:
        if flag in out and out[flag] != value:
            fail(f"--rule {flag}={value!r} disagrees with {flag}={out[flag]!r} given before")
        out[flag] = value
    return out, rest


def trainer_command(cls: type[RunSettings], argv: Sequence[str] | None, description: str, *,
                    prog: str | None, resume_help: str, resume_metavar: str, trust_help: str,
                    resumed: Callable[[str, Any, frozenset[str], bool, list[str]], Any]
                    ) -> TrainerCommand:
    """Every trainer's command line: ``--config FILE|NAME`` and a flag per setting of ``cls``
    (:func:`~dragons_egg.experiments.common.settings.parse_config_cli`), ``--resume
    CHECKPOINT``, ``--overwrite``, ``--trust-checkpoint`` and ``--allow-code SPEC`` (again for
    more). With ``--resume``, the settings are ``resumed(checkpoint, parsed, given, trust,
    allowed)``: the checkpoint's, with those given (their names in ``given``), its agent specs
    checked against ``allowed`` (:func:`check_saved_consent`). Bad input, a ``ValueError`` of
    ``resumed`` included, is a one-line error and exit status 2.

    Consent to run code comes from the user (:mod:`dragons_egg.agents.consent`): an agent spec
    that runs code (``trust=1``, ``rllib:path=``, ``MODULE:CLASS``) read from the ``--config``
    file or from the settings the checkpoint saved is honoured only when the user gives it
    again, with ``--allow-code SPEC`` or as a setting's value on the command line (typed
    there, it is the user's); otherwise it is a one-line refusal naming the spec, the file and
    the flag, before any spec is parsed (a ``MODULE:CLASS`` spec's module is not imported).
    A config packaged with the package (``--config NAME``) is checked as any file is; none
    names such a spec."""
    words = sys.argv[1:] if argv is None else list(argv)
    has_rules = field_types(cls).get("rules") is RulesConfig
    overrides: dict[str, Any] = {}
    if has_rules:
        overrides, words = _rule_overrides(words)
    with checks_deferred():  # checked once, whole, at the end: a one-line error
        parsed = parse_config_cli(cls, words, cls.from_dict, "--resume", description,
                                  prog=prog, extra_help=resume_help,
                                  extra_metavar=resume_metavar,
                                  switches=[("--overwrite", OVERWRITE_HELP),
                                            (TRUST_FLAG, trust_help)],
                                  options=[(n, h, "FLAG=VALUE" if not f else "N")
                                           for n, f, h in RULE_OPTIONS] if has_rules else (),
                                  repeated=[(CONSENT_FLAG, ALLOW_CODE_HELP, "SPEC")],
                                  check=False)
        cfg, trust = parsed.settings, TRUST_FLAG in parsed.switches
        # consent, before any spec is parsed (a MODULE:CLASS spec's module is imported then)
        allowed = [*parsed.repeated[CONSENT_FLAG], *agent_specs(cfg, parsed.typed)]
        if parsed.config_source is not None:
            try:
                check_consent(agent_specs(cfg, parsed.given - parsed.typed),
                              f"--config {parsed.config_source}", allowed)
            except ConsentError as exc:
                fail(str(exc))
        if parsed.extra is not None:
            try:
                cfg = resumed(parsed.extra, cfg, parsed.given, trust, allowed)
            except ValueError as exc:
                fail(str(exc))
        if overrides:  # over the rules of --rules, --config or the checkpoint (or defaults)
            try:
                rules = read_rules({**cfg.rules.to_dict(), **overrides}, "--rule")
                if parsed.extra is not None:
                    check_rules_kept(cfg.rules, rules)
                cfg = dataclasses.replace(cfg, rules=rules)
            except ValueError as exc:
                fail(f"--resume: {exc}" if parsed.extra is not None else str(exc))
    try:
        check_all(cfg)
    except ValueError as exc:
        fail(str(exc))
    return TrainerCommand(validated(cfg), parsed.extra, trust, "--overwrite" in parsed.switches)


__all__ = ["ALLOW_CODE_HELP", "RULE_OPTIONS", "RulesSettings", "RunSettings", "TRUST_FLAG",
           "TrainerCommand", "agent_specs", "check_rules_kept", "check_saved_consent",
           "consent_flags", "folder_consent_flags", "tournament_flags", "trainer_command"]
