"""The settings of the counterfactual tribute fit (:mod:`.fit`): :class:`TributeFitConfig`,
its JSON form (:func:`config_from_dict`, :func:`jsonable`), and the play policies and tribute
phases the fit's batches and scores are split by."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from dragons_egg_env.config import TABLE_SIZES

PLAY_POLICIES = ("self", "heuristic")
PHASES = ("ask", "give")


@dataclass
class TributeFitConfig:
    """Settings of :func:`fit`; the JSON config files hold these names."""

    #: The policy file (``.npz``, :mod:`dragons_egg.agents.netpolicy`) whose tribute is refitted.
    policy: str = ""
    #: Output directory: ``policy.npz`` (+ ``.json``), ``summary.json``, ``report.md``.
    out: str = "runs/tribute-fit"
    seed: int = 0
    #: Training-time budget in seconds, the base policy's own training seconds included (its
    #: provenance ``seconds``); the fit stops before a batch of states would cross it.
    max_seconds: float = 10800.0
    #: Or stop after this many batches of states (0: only the time budget).
    chunks: int = 0
    #: Tribute states per batch; each is copied once per legal action.
    states_per_chunk: int = 48
    #: Table sizes the states come from, drawn per batch with ``size_weights``.
    table_sizes: tuple[int, ...] = TABLE_SIZES
    size_weights: tuple[float, ...] = (1, 1, 4, 1, 1, 1, 1)
    num_rounds: int = 3
    #: Share of batches whose play policy is the heuristic (else the policy itself).
    heuristic_share: float = 0.5
    #: Probability that the Dragon's choice while gathering states is uniform (else H8/H9).
    explore: float = 0.5
    #: Play out one card of each class (a number, the dragon cards; suits cannot change the
    #: game, R7) and give its value to the class, instead of every legal card: unbiased over
    #: deals, for about a third of the play-outs of an ask state
    #: (:func:`~dragons_egg.experiments.training.counterfactual.action_classes`).
    per_class: bool = True
    #: Logit units per unit of round reward.
    scale: float = 10.0
    #: Ridge penalty of the fit (on every parameter).
    ridge: float = 100.0
    #: Share of the batches (the last ones) kept out of the fit to score it.
    holdout: float = 0.2
    workers: int = 2
    progress: bool = True
    #: Replace the fit that ``out`` holds (without it, such a folder is an error, before any
    #: state is gathered).
    overwrite: bool = False
    #: The command recorded as provenance.
    command: str = field(default="", repr=False)

    def validate(self) -> None:
        def need(cond: bool, msg: str) -> None:
            if not cond:
                raise ValueError(msg)

        need(bool(self.policy), "policy: give the .npz policy file to refit")
        need(self.max_seconds > 0 or self.chunks > 0, "give max_seconds > 0 or chunks > 0")
        need(self.chunks >= 0, f"chunks must be >= 0, got {self.chunks}")
        need(self.states_per_chunk >= 1, "states_per_chunk must be >= 1")
        need(len(self.table_sizes) > 0 and all(n in TABLE_SIZES for n in self.table_sizes),
             f"table_sizes must be sizes of {TABLE_SIZES}, got {self.table_sizes}")
        need(len(self.size_weights) == len(self.table_sizes)
             and all(w >= 0 for w in self.size_weights) and sum(self.size_weights) > 0,
             "size_weights: one weight >= 0 per table size, not all 0")
        need(self.num_rounds >= 2, "num_rounds must be >= 2 (round 1 has no tribute)")
        for name in ("heuristic_share", "explore"):
            v = getattr(self, name)
            need(0.0 <= v <= 1.0, f"{name} must be in [0, 1], got {v}")
        need(0.0 <= self.holdout < 1.0, f"holdout must be in [0, 1), got {self.holdout}")
        need(self.scale > 0 and self.ridge >= 0, "scale must be > 0 and ridge >= 0")
        need(self.workers >= 1, f"workers must be >= 1, got {self.workers}")


def config_from_dict(data: dict[str, Any]) -> TributeFitConfig:
    """A :class:`TributeFitConfig` from its JSON form (lists for tuples)."""
    data = dict(data)
    for k in ("table_sizes", "size_weights"):
        if k in data:
            data[k] = tuple(data[k])
    return TributeFitConfig(**data)


def jsonable(cfg: TributeFitConfig) -> dict[str, Any]:
    """The settings ``cfg`` as JSON, less ``command`` (which the files record apart)."""
    d = asdict(cfg)
    d.pop("command", None)
    return d
