"""The agent benchmark suite (``dragons-egg benchmark AGENT``; issue 48): a versioned suite of
table sizes and fixed populations on fixed duplicate deals (:mod:`.suite`), played through the
tournament machinery into a score card (:mod:`.run`, :mod:`.card`), and two cards compared
paired by deal (:mod:`.compare`). Not the *speed* benchmark, ``dragons-egg bench``
(:mod:`dragons_egg.experiments.bench`). See docs/benchmark-suite.md."""

from .card import SCHEMA, CardError, CellCard, ScoreCard, read_card
from .cli import main
from .compare import CardComparison, CardMismatch, compare_cards
from .run import Request, run_benchmark
from .suite import PUBLISHED, TIERS, Suite, SuiteError, load_suite, suite_digest

__all__ = ["PUBLISHED", "SCHEMA", "TIERS", "CardComparison", "CardError", "CardMismatch",
           "CellCard", "Request", "ScoreCard", "Suite", "SuiteError", "compare_cards",
           "load_suite", "main", "read_card", "run_benchmark", "suite_digest"]
