"""Counterfactual tribute learning: every tribute choice played out on the same deal, and the
policy's tribute logits fitted to what each choice earned.

Tribute decisions (R30..R34) are a few per match, and their effect on the round is small next to
everything played after them, so PPO's advantage for one ask is mostly noise. This trainer
measures it instead, on duplicate deals:

1. **States.** Batched matches on the compiled engine (:class:`dragons_egg_env.vector.
   VectorEngine`, every table size of ``table_sizes``, observations padded to the policy's
   ``max_players``) are played until the Dragon decides in the tribute; that state is kept.
   The Dragon's choices while states are gathered are the heuristic's (H8/H9) or, with
   probability ``explore``, a uniform legal one, so asks after a hit, after a miss and after
   any first ask are all seen.
2. **Counterfactual values.** Each kept state is copied once per legal action (with
   ``per_class``, the default: once per class of
   :func:`~dragons_egg.experiments.training.counterfactual.action_classes`, one card of each
   number, one dragon card and the pass, whose value counts for its whole class, as suits
   cannot change the game, R7); every copy plays its action and then the rest of the round,
   all copies in one batch: the Dragon's later tribute choices by the heuristic, all play by
   one *play policy* (``self``: the policy being fitted, greedy; ``heuristic``: the rule
   agent; a share ``heuristic_share`` of the states each). Play is deterministic, so
   ``Q(s, a)``, the Dragon's round reward (R27) after ``a``, is exact for that deal; its mean
   over deals is the value of ``a`` in what the Dragon knows.
3. **Fit.** The policy's shared layers stay as they are, and so do the rows of its action layer
   that belong to play (``PASS`` included: it is shared with play). Each tribute column's logit
   becomes a small linear model (:func:`features`): a bias per column, a weight per tribute
   context (first ask, ask after misses, ask after a hit, give-back), card group (a number, or
   the dragon cards) and count of that group in the own hand (one-hot, so "ask for the number I
   hold once after a hit" and "give back a card I hold alone" can be told apart; written into
   the policy file as the head ``tribute``'s ``pi_counts``,
   :func:`dragons_egg.agents.heads.tribute_features`), and
   a weight per phase on the old logit. It is fitted by ridge regression to ``scale * (Q(s, a) -
   Q(s, pass))`` in the ask phase (the model being the logit minus the pass logit) and to
   ``scale * (Q(s, a) - mean Q(s, .))`` in the give phase, over every legal action of every
   state. Play logits do not change at all: the new policy plays exactly as the old one. Greedy
   in ``Q`` of the heuristic's continuation is one step of policy improvement over the
   heuristic's tribute (Bertsekas' rollout), as far as the model can represent it (what else
   was tried, and what each fit measured: ``docs/training.md``).

A share ``holdout`` of the states is kept out of the fit and scores it: the mean ``Q`` of the
fitted policy's choice, of the heuristic's, of the old policy's, of the best choice (an oracle
that sees the deal) and of a uniform one, per phase and play policy, and per table size
(``summary.json``, ``report.md``). The run stops before its time budget (``max_seconds``
counts the base policy's training seconds too, read from its provenance, and the time the fit
will take is kept back, :func:`fit_reserve`) or after ``chunks`` batches of states; with a
number of chunks (and the same workers) it is reproducible bit for bit.

Each batch is saved as it is gathered (``OUT/gather/``, :func:`save_batch`): a stopped fit
continues with ``--resume OUT`` (its saved settings and the rest of its budget; with
``chunks``, exactly the uninterrupted fit).

``python -m dragons_egg.experiments.research.tribute.fit --policy runs/ppo-shipped/final.npz --out
runs/tribute-fit [--max-seconds 10800] [--chunks N] [--workers 2]``, then if stopped
``... --resume runs/tribute-fit``
"""

from __future__ import annotations

import functools
import json
import shlex
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg.agents.heads import (
    GROUPS,
    TRIBUTE_FEATURES,
    group_counts,
    tribute_context,
    tribute_row,
)
from dragons_egg.experiments.common.runs import (
    atomic_path,
    claim_output,
    ignore_interrupts,
    listing,
    run_files,
    stops_on_sigterm,
    write_atomically,
)
from dragons_egg.experiments.common.settings import parse_config_cli, validated
from dragons_egg.experiments.training import counterfactual as cf
from dragons_egg.experiments.training.counterfactual import (
    COLUMN_GROUP,
    tribute_rows,
)
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS, PASS
from dragons_egg_env.cards import NUM_NUMBERS
from dragons_egg_env.config import TABLE_SIZES, RulesConfig
from dragons_egg_env.extras import require_cli

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


# ---------------------------------------------------------------------------------------
# One batch of states, in a worker.

def _heuristic(max_players: int):
    """The heuristic's actions for rows of observations padded to ``max_players`` seats
    (:func:`dragons_egg.agents.heuristic.heuristic_actions`: memoryless, no random numbers)."""
    from dragons_egg.agents.heuristic import heuristic_actions

    return functools.partial(heuristic_actions, max_players=max_players)


def gather_states(policy, n: int, play: str, count: int, explore: float, num_rounds: int,
                  rng: np.random.Generator):
    """``count`` tribute decision states of ``n``-seat matches played by ``play``: the
    scalar states, the deciding seats, and their observations and masks."""
    from dragons_egg_env.vector import VectorEngine

    m = policy.max_players
    heur = _heuristic(m)
    config = RulesConfig(num_players=n, num_rounds=num_rounds)
    eng = VectorEngine(min(64, 4 * count), config, max_players=m,
                       seed=int(rng.integers(2**62)), record=False)
    st = eng.reset()
    states, seats, obs, masks = [], [], [], []
    while len(states) < count:
        acts = np.empty(eng.num_envs, np.int64)
        trib = tribute_rows(st.mask)
        for b in np.flatnonzero(trib):
            if len(states) < count and st.mask[b].sum() > 1:
                states.append(eng.to_state(int(b)))
                seats.append(int(st.seat[b]))
                obs.append(st.obs[b])
                masks.append(st.mask[b])
            legal = np.flatnonzero(st.mask[b])
            acts[b] = legal[rng.integers(len(legal))] if rng.random() < explore else \
                heur(st.obs[b:b + 1], st.mask[b:b + 1])[0]
        rest = ~trib
        if rest.any():
            acts[rest] = _play_actions(policy, heur, play, st.obs[rest], st.mask[rest])
        st = eng.step(acts)
    return states, seats, np.array(obs), np.array(masks)


def _play_actions(policy, heur, play: str, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    if play == "self":
        return np.argmax(policy.logits(obs, mask), axis=-1)
    return heur(obs, mask)


def counterfactual_values(policy, states, seats, masks: np.ndarray, play: str, seed: int,
                          per_class: bool = False) -> np.ndarray:
    """``Q[i, a]``: the round reward of ``seats[i]`` after action ``a`` in ``states[i]`` and
    the rest of the round played by ``play`` (the Dragon's later tribute by the heuristic);
    NaN where ``a`` is not legal (:func:`dragons_egg.experiments.training.counterfactual.
    counterfactual_values`, with ``per_class`` one play-out per class of
    :func:`~dragons_egg.experiments.training.counterfactual.action_classes`)."""
    heur = _heuristic(policy.max_players)
    return cf.counterfactual_values(
        states, seats, masks, functools.partial(_play_actions, policy, heur, play), heur,
        policy.max_players, seed, per_class)


def run_chunk(task: tuple[str, int, int, str, int, float, int, bool]) -> dict[str, Any]:
    """One batch of states (a worker's unit of work): gathered, valued, with features."""
    from dragons_egg.agents.netpolicy import cached_policy

    path, seed, n, play, count, explore, num_rounds, per_class = task
    t0 = time.perf_counter()
    policy = cached_policy(path)
    rng = np.random.default_rng(seed)
    states, seats, obs, masks = gather_states(policy, n, play, count, explore, num_rounds, rng)
    q = counterfactual_values(policy, states, seats, masks, play, int(rng.integers(2**62)),
                              per_class)
    heur = _heuristic(policy.max_players)
    return {"obs": obs.astype(np.float32), "mask": masks, "q": q, "n": n, "play": play,
            "heuristic": heur(obs, masks),
            "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------
# The fit.

#: Tribute columns of the action layer (asks of cards 0..43, then gives of cards 0..44) and
#: what each one is: its card, whether it is a give, and its group of
#: :func:`dragons_egg.agents.heads.group_counts` (0..9: the card's number, 10: a dragon card;
#: -1: the
#: Egg, which has no count term).
NCOL = NUM_ACTIONS - ASK_BASE
_GIVE = np.r_[np.zeros(GIVE_BASE - ASK_BASE, int), np.ones(NUM_ACTIONS - GIVE_BASE, int)]
#: Parameters of the fit: a bias per column, a weight per (tribute context, group, count held)
#: (the rows of a ``tribute`` head's ``pi_counts``) and a weight per phase on the old
#: policy's logits.
NPARAM = NCOL + TRIBUTE_FEATURES + 2
_BLOCK = GROUPS * 5


def features(obs: np.ndarray, base: np.ndarray, max_players: int) -> np.ndarray:
    """``(N, NCOL, NPARAM)``: what each tribute column's logit is linear in (see the module
    docstring): its own bias, how many cards of its group the own hand holds (one-hot, in the
    block of the state's tribute context) and the old logit (relative to the pass logit for
    asks)."""
    N = len(obs)
    onehot = (group_counts(obs)[:, :, None] == np.arange(5)).astype(np.float32)
    ctx = tribute_context(obs, max_players)
    F = np.zeros((N, NCOL, NPARAM), np.float32)
    F[:, np.arange(NCOL), np.arange(NCOL)] = 1.0
    rows = np.arange(N)[:, None]
    for j in np.flatnonzero(COLUMN_GROUP >= 0):
        k = NCOL + _BLOCK * ctx + 5 * COLUMN_GROUP[j]  # (N,)
        F[rows, j, k[:, None] + np.arange(5)] = onehot[:, COLUMN_GROUP[j]]
    ask = slice(0, GIVE_BASE - ASK_BASE)
    F[:, ask, NPARAM - 2] = base[:, ASK_BASE:GIVE_BASE] - base[:, [PASS]]
    F[:, GIVE_BASE - ASK_BASE:, NPARAM - 1] = base[:, GIVE_BASE:]
    return F


def design(obs: np.ndarray, mask: np.ndarray, q: np.ndarray, base: np.ndarray,
           scale: float, max_players: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows (one per state and legal tribute action) and targets of the least-squares fit:
    ``scale * (Q(s, a) - Q(s, pass))`` in ask states (the model is the logit minus the pass
    logit); in give states targets and features centred per state (only differences between
    gives matter)."""
    F = features(obs, np.where(np.isfinite(base), base, 0.0), max_players)
    legal = mask[:, ASK_BASE:]
    qt = np.where(legal, q[:, ASK_BASE:], 0.0)
    ask_state = mask[:, PASS]
    y = np.zeros(qt.shape)
    y[ask_state] = scale * (qt[ask_state] - q[ask_state, PASS][:, None])
    g = ~ask_state & legal.any(axis=1)
    lg = legal[g]
    count = lg.sum(axis=1, keepdims=True)
    F[g] -= (F[g] * lg[:, :, None]).sum(axis=1, keepdims=True) / count[:, :, None]
    y[g] = scale * (qt[g] - (qt[g] * lg).sum(axis=1, keepdims=True) / count)
    return F[legal].astype(np.float64), y[legal]


def solve(obs, mask, q, base, scale: float, ridge: float, max_players: int,
          batch: int = 2048) -> np.ndarray:
    """The fitted parameters (ridge regression on :func:`design`), accumulated over batches
    of states so that memory stays small (the rows of 2,048 states take about 140 MB)."""
    xtx = np.zeros((NPARAM, NPARAM))
    xty = np.zeros(NPARAM)
    for lo in range(0, len(obs), batch):
        sl = slice(lo, lo + batch)
        X, y = design(obs[sl], mask[sl], q[sl], base[sl], scale, max_players)
        xtx += X.T @ X
        xty += X.T @ y
    return np.linalg.solve(xtx + ridge * np.eye(NPARAM), xty)


def fitted_policy(policy, theta: np.ndarray, meta: dict[str, Any]):
    """The policy with its tribute columns rewritten to the fitted model; every other column
    (play and pass) and the shared layers unchanged."""
    from dragons_egg.agents.netpolicy import NetPolicy

    w0, b0 = policy.pi
    w, b = w0.astype(np.float64).copy(), b0.astype(np.float64).copy()
    counts = np.zeros((TRIBUTE_FEATURES, NUM_ACTIONS))
    a_ask, a_give = theta[NPARAM - 2], theta[NPARAM - 1]
    for j in range(NCOL):
        col = ASK_BASE + j
        if _GIVE[j]:
            w[:, col] = a_give * w0[:, col]
            b[col] = a_give * b0[col] + theta[j]
        else:
            w[:, col] = w0[:, PASS] + a_ask * (w0[:, col] - w0[:, PASS])
            b[col] = b0[PASS] + a_ask * (b0[col] - b0[PASS]) + theta[j]
        if COLUMN_GROUP[j] >= 0:  # the blocks of its phase's contexts (asks: 0..2; gives: 3)
            for c in ((3,) if _GIVE[j] else (0, 1, 2)):
                r = tribute_row(c, COLUMN_GROUP[j])
                counts[r:r + 5, col] = theta[NCOL + r:NCOL + r + 5]
    return NetPolicy(policy.layers, (w.astype(np.float32), b.astype(np.float32)), policy.v,
                     meta, counts.astype(np.float32), heads=["tribute"])


def choice_values(q: np.ndarray, choice: np.ndarray) -> np.ndarray:
    return q[np.arange(len(q)), choice]


def score(policy_logits, q: np.ndarray, mask: np.ndarray,
          heuristic: np.ndarray) -> dict[str, float]:
    """Mean ``Q`` of each way of choosing, over states."""
    qm = np.where(mask, q, np.nan)
    with np.errstate(invalid="ignore"):
        out = {name: float(np.mean(choice_values(q, np.argmax(z, axis=1))))
               for name, z in policy_logits.items()}
        out["heuristic"] = float(np.mean(choice_values(q, heuristic)))
        out["oracle"] = float(np.mean(np.nanmax(qm, axis=1)))
        out["uniform"] = float(np.mean(np.nanmean(qm, axis=1)))
    out["states"] = len(q)
    return out


# ---------------------------------------------------------------------------------------
# The driver.

def chunk_tasks(cfg: TributeFitConfig):
    """The batches of states, in order: (policy, seed, table size, play policy, ...)."""
    ss = np.random.SeedSequence(cfg.seed)
    weights = np.asarray(cfg.size_weights, float) / sum(cfg.size_weights)
    k = 0
    while cfg.chunks == 0 or k < cfg.chunks:
        rng = np.random.default_rng(ss.spawn(1)[0])
        n = int(rng.choice(cfg.table_sizes, p=weights))
        play = "heuristic" if rng.random() < cfg.heuristic_share else "self"
        yield (str(cfg.policy), int(rng.integers(2**62)), n, play, cfg.states_per_chunk,
               cfg.explore, cfg.num_rounds, cfg.per_class)
        k += 1


def gather(cfg: TributeFitConfig, allowed: float, done: list[dict[str, Any]] | None = None,
           seconds: float = 0.0, keep: Any = None) -> tuple[list[dict[str, Any]], float]:
    """Run batches on ``cfg.workers`` processes until ``cfg.chunks`` are done or the next
    batch would end too late to fit every state within ``allowed`` seconds
    (:func:`fit_reserve`). ``done``: the first batches, gathered before (``seconds`` of
    gathering, counted in the budget), which are not gathered again. ``keep(k, batch,
    seconds)`` is called as each batch finishes, in task order (:func:`save_batch` keeps it
    on disk). Returns the batches in task order and the gathering seconds in all."""
    import multiprocessing as mp

    t0 = time.perf_counter()
    tasks = chunk_tasks(cfg)
    out: list[dict[str, Any]] = list(done or ())
    _take(tasks, len(out))  # those were gathered before
    bar = _bar(cfg, len(out))

    def elapsed() -> float:
        return seconds + time.perf_counter() - t0

    def more(queued: int) -> bool:  # may one more batch start after ``queued`` others?
        if cfg.chunks and len(out) + queued >= cfg.chunks:
            return False
        if not out:
            return queued < 2 * cfg.workers
        pace = elapsed() / len(out) * cfg.workers  # seconds per batch per worker
        # a new batch starts after the ones queued before it: stop when it would end too
        # late to fit every state gathered by then
        states = sum(len(c["q"]) for c in out) + (queued + 1) * cfg.states_per_chunk
        return elapsed() + pace * (queued / cfg.workers + 1) + fit_reserve(states) < allowed

    with mp.get_context("spawn").Pool(cfg.workers, initializer=ignore_interrupts) as pool:
        n0 = 2 * cfg.workers if not out else sum(more(q) for q in range(2 * cfg.workers))
        pending = [pool.apply_async(run_chunk, (t,)) for t in _take(tasks, n0)]
        while pending:
            r = pending.pop(0).get()
            out.append(r)
            if keep is not None:
                keep(len(out) - 1, r, elapsed())
            if bar is not None:
                bar.update(1)
                bar.set_postfix(states=sum(len(c["q"]) for c in out))
            if more(len(pending)):
                pending += [pool.apply_async(run_chunk, (t,)) for t in _take(tasks, 1)]
    if bar is not None:
        bar.close()
    return out, elapsed()


def _take(it, k: int) -> list:
    out = []
    for _ in range(k):
        try:
            out.append(next(it))
        except StopIteration:
            break
    return out


def _bar(cfg: TributeFitConfig, initial: int = 0):
    if not cfg.progress:
        return None
    from tqdm import tqdm

    return tqdm(total=cfg.chunks or None, initial=initial, desc="tribute-fit", unit="batch",
                file=sys.stderr)


def concat_chunks(chunks: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """The batches of :func:`gather` (or :func:`load_data`) as one set of arrays: ``obs``,
    ``mask``, ``q``, ``heuristic``, and per state ``n`` (table size) and ``play`` (index into
    :data:`PLAY_POLICIES`)."""
    out = {k: np.concatenate([c[k] for c in chunks]) for k in ("obs", "mask", "q", "heuristic")}
    out["n"] = np.concatenate([np.full(len(c["q"]), c["n"]) for c in chunks])
    out["play"] = np.concatenate([np.full(len(c["q"]), PLAY_POLICIES.index(c["play"]))
                                  for c in chunks])
    return out


def save_data(path: Path, chunks: list[dict[str, Any]], seconds: float, cfg) -> None:
    """The gathered states and values (``data.npz``), to refit without gathering again."""
    data = concat_chunks(chunks)
    data["chunk_sizes"] = np.array([len(c["q"]) for c in chunks])
    data["meta"] = np.frombuffer(json.dumps({"seconds": seconds, "config": _jsonable(cfg),
                                             "command": cfg.command,
                                             "policy_sha256": file_digest(cfg.policy)})
                                 .encode(), np.uint8)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.savez_compressed(f, **data)


def load_data(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read :func:`save_data`'s file back as batches; a ``ValueError`` naming a bad file."""
    import zipfile

    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
        meta = json.loads(bytes(d.pop("meta")).decode())
        sizes = d.pop("chunk_sizes")
        ends = np.cumsum(sizes)
        if ends[-1] != len(d["q"]) or d["q"].shape != d["mask"].shape != (ends[-1], NUM_ACTIONS):
            raise ValueError("arrays of different lengths")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"tribute-fit data {p} is not readable: {exc}") from None
    chunks = []
    for lo, hi in zip(np.r_[0, ends[:-1]], ends, strict=True):
        c = {k: d[k][lo:hi] for k in ("obs", "mask", "q", "heuristic")}
        c["n"], c["play"] = int(d["n"][lo]), PLAY_POLICIES[int(d["play"][lo])]
        chunks.append(c)
    return chunks, meta


def file_digest(path: str | Path) -> str:
    """The SHA-256 of a file's bytes (hex): how data files name the policy they came from."""
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _jsonable(cfg: TributeFitConfig) -> dict[str, Any]:
    d = asdict(cfg)
    d.pop("command", None)
    return d


def interval(d: np.ndarray) -> list[float]:
    """Mean and 95% normal interval of paired differences."""
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return [float(d.mean()), float(d.mean() - half), float(d.mean() + half)]


def evaluate(old, new, chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean ``Q`` of each way of choosing on ``chunks``, per play policy and phase, and the
    paired difference between the fitted choice and the heuristic's (95% normal interval);
    under ``by_size``, that difference per table size, play policy and phase (with the
    number of states)."""
    data = concat_chunks(chunks) if chunks else None
    out: dict[str, Any] = {}
    if data is None:
        return out
    by_size: dict[str, dict[str, list[float]]] = {}
    for pi, play in enumerate(PLAY_POLICIES):
        for phase in PHASES:
            sel = (data["play"] == pi) & (data["mask"][:, PASS] == (phase == "ask"))
            if not sel.any():
                continue
            o, m, q, h = (data[k][sel] for k in ("obs", "mask", "q", "heuristic"))
            zf, zo = new.logits(o, m), old.logits(o, m)
            row = score({"fitted": zf, "old": zo}, q, m, h)
            d = choice_values(q, np.argmax(zf, axis=1)) - choice_values(q, h)
            row["fitted_minus_heuristic"] = interval(d)
            out[f"{play}/{phase}"] = row
            sizes = data["n"][sel]
            for n in np.unique(sizes):
                dn = d[sizes == n]
                by_size.setdefault(str(n), {})[f"{play}/{phase}"] = [*interval(dn), len(dn)]
    out["by_size"] = dict(sorted(by_size.items(), key=lambda kv: int(kv[0])))
    return out


#: Settings that do not change what a batch holds, nor the order of the batches.
NOT_IN_STATES = ("out", "overwrite", "workers", "progress")
#: The folder of a fit's output that holds its batches as each is gathered (``batch_*.npz``,
#: :func:`save_batch`) and its settings (``settings.json``), until ``data.npz`` holds them all.
GATHER = "gather"
OUTPUTS = ("policy.npz", "policy.json", "summary.json", "report.md", "card_values.png")


def save_batch(folder: Path, k: int, batch: dict[str, Any], seconds: float,
               cfg: TributeFitConfig) -> Path:
    """Batch ``k`` of a gather as its own file (:func:`save_data`'s form, written whole or
    not at all), with the gathering ``seconds`` spent when it finished."""
    path = folder / f"batch_{k:05d}.npz"
    save_data(path, [batch], seconds, cfg)
    return path


def load_batches(folder: Path, cfg: TributeFitConfig) -> tuple[list[dict[str, Any]], float]:
    """The batches a stopped gather saved in ``folder`` (:func:`save_batch`), in order, and
    the gathering seconds they took; a ``ValueError`` naming a damaged or missing batch, or
    one gathered with other settings or another policy."""
    files = sorted(folder.glob("batch_*.npz"))
    chunks, seconds = [], 0.0
    def same(config: dict[str, Any]) -> dict[str, Any]:  # what the states depend on, as JSON
        return json.loads(json.dumps({k: v for k, v in config.items()
                                      if k not in NOT_IN_STATES}))

    want = same(_jsonable(cfg))
    digest = file_digest(cfg.policy)
    for k, path in enumerate(files):
        if path.name != f"batch_{k:05d}.npz":
            raise ValueError(f"{folder} lacks batch_{k:05d}.npz (it has {path.name}): the "
                             "saved batches are not a gather's first ones")
        batch, meta = load_data(path)
        if same(meta.get("config", {})) != want or meta.get("policy_sha256") != digest:
            raise ValueError(f"{path} was gathered with other settings or another policy than "
                             f"the fit in {folder.parent} (settings.json)")
        chunks += batch
        seconds = float(meta["seconds"])
    return chunks, seconds


def fit(cfg: TributeFitConfig, data: str | None = None, resume: bool = False) -> Path:
    """Gather (or read ``data``), fit, score on the held-out batches and write the policy,
    ``summary.json`` and ``report.md`` to ``cfg.out``. Returns the policy file. Each batch is
    on disk as it is gathered (``gather/``); ``resume`` continues the gather (or the fit) that
    stopped in ``cfg.out`` (whose settings :func:`resume_settings` reads) instead of starting
    one."""
    from dragons_egg.agents.netpolicy import load_policy_file

    cfg.validate()
    t0 = time.perf_counter()
    policy = load_policy_file(cfg.policy)
    if policy.pi_counts is not None:
        raise ValueError(f"{cfg.policy} is already tribute-fitted; fit the policy it came from")
    prov = dict(policy.meta.get("provenance", {}))
    base_seconds = float(prov.get("seconds", 0.0))
    folder = Path(cfg.out) / GATHER
    if resume:
        out = Path(cfg.out)
        if data is not None:
            raise ValueError("--data and --resume: a resumed fit reads what its folder holds")
        if run_files(out, OUTPUTS):
            raise ValueError(f"the tribute fit in {out} is finished "
                             f"({listing(run_files(out, OUTPUTS))}); nothing to resume")
        if (out / "data.npz").is_file():
            data = str(out / "data.npz")  # the gather finished, the fit did not
    else:
        # before any work: a folder that cannot be written, or holds an earlier fit (its
        # data.npz may be the --data this fit reads) or a stopped one
        if folder.is_dir() and not cfg.overwrite:
            n = len(list(folder.glob("batch_*.npz")))
            raise ValueError(f"{cfg.out} holds a tribute fit that stopped after {n} batch(es): "
                             f"continue it with --resume {shlex.quote(str(cfg.out))}, or give "
                             "another folder, or --overwrite to start again")
        out = claim_output(cfg.out, (*OUTPUTS, *(() if data else ("data.npz",))),
                           overwrite=cfg.overwrite, what="tribute fit")
        if folder.is_dir():
            shutil.rmtree(folder)  # --overwrite: never mix two gathers
    if data is None:
        allowed = cfg.max_seconds - base_seconds if cfg.max_seconds > 0 else float("inf")
        if allowed <= 0:
            raise ValueError(f"the base policy already trained {base_seconds:,.1f} s, the "
                             f"whole budget of max_seconds={cfg.max_seconds:,.0f}")
        done, spent = load_batches(folder, cfg) if resume else ([], 0.0)
        if not resume:
            folder.mkdir()
            write_atomically(folder / "settings.json", json.dumps(
                {"config": _jsonable(cfg), "command": cfg.command,
                 "policy_sha256": file_digest(cfg.policy)}, indent=1))
        chunks, gather_seconds = gather(
            cfg, allowed, done, spent,
            keep=lambda k, batch, secs: save_batch(folder, k, batch, secs, cfg))
        save_data(out / "data.npz", chunks, gather_seconds, cfg)
        shutil.rmtree(folder)  # data.npz holds every batch now
    else:
        if resume:
            shutil.rmtree(folder, ignore_errors=True)  # left by a stop after data.npz
        chunks, meta = load_data(data)
        if meta.get("policy_sha256") != file_digest(cfg.policy):
            raise ValueError(f"tribute-fit data {data} was gathered with another policy than "
                             f"{cfg.policy} (its values come from that policy's play)")
        gather_seconds = float(meta["seconds"])
    if len(chunks) < (2 if cfg.holdout > 0 else 1):
        raise ValueError(f"only {len(chunks)} batch(es) of states: too few to fit and score")
    t_fit = time.perf_counter()
    cut = len(chunks) if cfg.holdout == 0 else \
        min(len(chunks) - 1, max(1, round(len(chunks) * (1 - cfg.holdout))))
    train, held = chunks[:cut], chunks[cut:]
    d = concat_chunks(train)
    theta = solve(d["obs"], d["mask"], d["q"], policy.logits(d["obs"], d["mask"]), cfg.scale,
                  cfg.ridge, policy.max_players)
    seconds = gather_seconds + (time.perf_counter() - t_fit)
    total = base_seconds + seconds
    info = {"config": _jsonable(cfg), "base_policy": str(cfg.policy),
            "base_seconds": base_seconds, "seconds": round(seconds, 1),
            "states": int(len(d["q"])), "held_out_states": int(sum(len(c["q"]) for c in held)),
            "alpha": [float(theta[-2]), float(theta[-1])]}
    new_prov = {**prov, "seconds": round(total, 1), "tribute_fit": info}
    if cfg.command:
        new_prov["command"] = cfg.command
    new = fitted_policy(policy, theta, {**policy.meta, "provenance": new_prov})
    info["held_out"] = evaluate(policy, new, held)
    info["card_values"] = card_values(chunks)  # info is new_prov's: the file carries it too
    plot_card_values(info["card_values"], out / "card_values.png")
    new.meta["provenance"]["tribute_fit"] = info
    path = new.save(out / "policy.npz")
    path.with_suffix(".json").write_text(json.dumps(new_prov, indent=1) + "\n")
    (out / "summary.json").write_text(json.dumps(info, indent=1) + "\n")
    (out / "report.md").write_text(report(info))
    print(f"wrote {path}: {info['states']:,} states, {seconds:,.0f} s "
          f"(with the base policy {total:,.0f} s); {time.perf_counter() - t0:,.0f} s in all",
          file=sys.stderr)
    return path


def card_values(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What the gathered values say, card by card (all states, both play policies): the mean
    gain of asking for each card over passing, the same by how many cards of its number the
    Dragon holds, and the mean value of giving back each card relative to the state's mean
    give (with two standard errors)."""
    d = concat_chunks(chunks)
    q, m = d["q"], d["mask"]
    ask = m[:, PASS]
    gain = q[ask][:, ASK_BASE:GIVE_BASE] - q[ask][:, [PASS]]
    give = q[~ask][:, GIVE_BASE:]
    with np.errstate(invalid="ignore"):
        give = give - np.nanmean(give, axis=1, keepdims=True)

    def mean_se(x: np.ndarray) -> tuple[list[float | None], list[float | None], list[int]]:
        import warnings

        n = (~np.isnan(x)).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # cards never legal: NaN, said so
            mu = np.nanmean(x, axis=0) if len(x) else np.full(x.shape[1], np.nan)
            se = np.nanstd(x, axis=0) / np.sqrt(n)
        clean = [None if not np.isfinite(v) else float(v) for v in mu]
        return clean, [None if not np.isfinite(v) else float(2 * v) for v in se], n.tolist()

    held = group_counts(d["obs"][ask])
    by_count = []
    for k in range(NUM_NUMBERS):
        row = []
        for c in range(4):
            x = gain[held[:, k] == c][:, 4 * k:4 * k + 4]
            row.append(float(np.nanmean(x)) if np.isfinite(x).any() else None)
        by_count.append(row)
    a_mu, a_se, a_n = mean_se(gain)
    g_mu, g_se, g_n = mean_se(give)
    return {"ask_gain": a_mu, "ask_gain_2se": a_se, "ask_states": a_n,
            "give_value": g_mu, "give_value_2se": g_se, "give_states": g_n,
            "ask_gain_by_number_and_count_held": by_count}


def plot_card_values(values: dict[str, Any], path: Path) -> Path:
    """Bar charts of :func:`card_values`: the gain of each ask and the value of each give."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dragons_egg_env.cards import CARD_CODES

    fig, axes = plt.subplots(2, 1, figsize=(13, 6.5))
    for ax, key, n, title in ((axes[0], "ask_gain", GIVE_BASE - ASK_BASE,
                               "ask: mean round reward gained over passing"),
                              (axes[1], "give_value", NUM_ACTIONS - GIVE_BASE,
                               "give back: mean round reward relative to the state's mean give")):
        mu = np.array([np.nan if v is None else v for v in values[key]])
        se = np.array([np.nan if v is None else v for v in values[key + "_2se"]])
        ax.bar(range(n), np.nan_to_num(mu), yerr=np.nan_to_num(se), color="tab:blue",
               ecolor="grey", capsize=1.5)
        ax.set_xticks(range(n), CARD_CODES[:n], rotation=90, fontsize=7)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


#: Seconds kept back from the budget for the fit itself: a fixed part and a part per state
#: gathered (the fit of 139,392 states took 16.7 s on the 2-core machine, 0.12 ms a state;
#: twice that is kept back).
FIT_RESERVE = 15.0
FIT_SECONDS_PER_STATE = 2.4e-4


def fit_reserve(states: int) -> float:
    """Seconds of the budget kept back for fitting ``states`` gathered states."""
    return FIT_RESERVE + FIT_SECONDS_PER_STATE * states


def report(info: dict[str, Any]) -> str:
    lines = ["# Tribute fit", "",
             f"Base policy `{info['base_policy']}` (trained {info['base_seconds']:,.1f} s); "
             f"{info['states']:,} states fitted in {info['seconds']:,.1f} s; "
             f"{info['held_out_states']:,} held out.", "",
             "Held-out states: mean round reward (R27) of the Dragon after each way of choosing "
             "(the rest of the round played by the play policy, later tribute choices by the "
             "heuristic). *oracle* sees the deal; *uniform* is the mean over legal choices.", "",
             "| play / phase | states | fitted | heuristic | old | uniform | oracle | "
             "fitted - heuristic [95%] |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    held = {k: v for k, v in info["held_out"].items() if k != "by_size"}
    for key, r in held.items():
        m, lo, hi = r["fitted_minus_heuristic"]
        lines.append(f"| {key} | {r['states']:,} | {r['fitted']:.3f} | {r['heuristic']:.3f} | "
                     f"{r['old']:.3f} | {r['uniform']:.3f} | {r['oracle']:.3f} | "
                     f"{m:+.3f} [{lo:+.3f}, {hi:+.3f}] |")
    by_size = info["held_out"].get("by_size", {})
    if by_size:
        keys = list(held)
        lines += ["", "Fitted - heuristic on the held-out states by table size (states):", "",
                  "| players | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
        for n, row in by_size.items():
            cells = [f"{row[k][0]:+.3f} [{row[k][1]:+.3f}, {row[k][2]:+.3f}] ({row[k][3]:,})"
                     if k in row else "" for k in keys]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
    from dragons_egg_env.cards import CARD_CODES

    cv = info["card_values"]
    ranked = sorted((v, c) for c, v in enumerate(cv["ask_gain"]) if v is not None)[::-1]
    given = sorted((v, c) for c, v in enumerate(cv["give_value"]) if v is not None)[::-1]
    lines += ["", "What the values say, card by card (all states; `card_values.png`):", "",
              "- asks, best first (gain over passing): " + ", ".join(
                  f"{CARD_CODES[c]} {v:+.3f}" for v, c in ranked[:12]),
              "- gives, best first (relative to the mean give): " + ", ".join(
                  f"{CARD_CODES[c]} {v:+.3f}" for v, c in given[:8]), "",
              "Gain of asking for a number by how many of it the Dragon holds:", "",
              "| number | held 0 | held 1 | held 2 | held 3 |", "|---|---:|---:|---:|---:|"]
    for k, row in enumerate(cv["ask_gain_by_number_and_count_held"]):
        cells = " | ".join("" if v is None else f"{v:+.3f}" for v in row)
        lines.append(f"| {k + 1} | {cells} |")
    lines += ["", "![card values](card_values.png)"]
    return "\n".join(lines) + "\n"


#: Settings a resumed fit may take from the command line: they do not change its results.
RESUME_MAY_CHANGE = ("workers", "progress")


def parse_args(argv: list[str] | None = None, prog: str | None = None
               ) -> tuple[TributeFitConfig, str | None, bool]:
    """The config from ``--config FILE`` (JSON) and flags, ``--data``, and whether it is
    ``--resume DIR`` (then the config is the one saved in DIR, :func:`resume_settings`);
    ``--help`` and errors name ``prog`` (default ``python -m`` this module)."""
    parsed = parse_config_cli(
        TributeFitConfig, argv, config_from_dict, "--data",
        "Counterfactual tribute fit of a policy file.", prog=prog,
        extra_help="refit the states gathered before (data.npz of an earlier fit) instead of "
        "gathering", extra_metavar="DATA.npz",
        options=(("--resume", "continue the fit that stopped in DIR, with its saved settings "
                  f"(only {', '.join(RESUME_MAY_CHANGE)} may be given)", "DIR"),))
    resume = parsed.options["--resume"]
    if resume is None:
        return validated(parsed.settings), parsed.extra, False
    return resume_settings(resume, parsed.settings, parsed.given), parsed.extra, True


def resume_settings(folder: str, parsed: TributeFitConfig, given: frozenset[str]
                    ) -> TributeFitConfig:
    """The settings of the fit that stopped in ``folder`` (``gather/settings.json``, or a
    finished gather's ``data.npz``), with those of :data:`RESUME_MAY_CHANGE` that ``given``
    names taken from ``parsed``; a ``ValueError`` when ``folder`` holds no such fit or another
    setting is given with a different value."""
    out = Path(folder)
    try:
        if (out / GATHER / "settings.json").is_file():
            saved = json.loads((out / GATHER / "settings.json").read_text())
            config, command = saved["config"], saved.get("command", "")
        elif (out / "data.npz").is_file():
            meta = load_data(out / "data.npz")[1]
            config, command = meta["config"], meta.get("command", "")
        else:
            raise ValueError(f"{folder} holds no stopped tribute fit to resume (no "
                             f"{GATHER}/settings.json or data.npz)")
        cfg = config_from_dict({**config, "out": str(out), "command": command})
    except (OSError, KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{out / GATHER / 'settings.json'} is not a tribute fit's settings: "
                         f"{exc}") from None
    changed = [f"--{name.replace('_', '-')} {getattr(parsed, name)!r} (saved: "
               f"{getattr(cfg, name)!r})" for name in sorted(given - set(RESUME_MAY_CHANGE))
               if name != "out" and getattr(parsed, name) != getattr(cfg, name)]
    if "out" in given and Path(parsed.out) != out:
        changed.append(f"--out {parsed.out} (the fit resumed is in {folder})")
    if changed:
        raise ValueError(f"cannot resume {folder} with other settings: {'; '.join(changed)}; "
                         "omit them to resume with the saved ones")
    for name in RESUME_MAY_CHANGE:
        if name in given:
            setattr(cfg, name, getattr(parsed, name))
    cfg.validate()
    return cfg


def config_from_dict(data: dict[str, Any]) -> TributeFitConfig:
    """A :class:`TributeFitConfig` from its JSON form (lists for tuples)."""
    data = dict(data)
    for k in ("table_sizes", "size_weights"):
        if k in data:
            data[k] = tuple(data[k])
    return TributeFitConfig(**data)


@stops_on_sigterm
def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    prog = prog or "python -m dragons_egg.experiments.research.tribute.fit"
    # before parsing: tyro parses (train), the batched engine gathers (vector), tqdm and plots
    require_cli(prog, "train")
    try:
        cfg, data, resume = parse_args(argv, prog)
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    if not cfg.command:
        cfg.command = f"{prog} " + " ".join(
            sys.argv[1:] if argv is None else argv)
    try:
        fit(cfg, data, resume)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        saved = len(list((Path(cfg.out) / GATHER).glob("batch_*.npz")))
        print(f"{prog}: interrupted; {saved} batch(es) of states are saved in "
              f"{Path(cfg.out) / GATHER}; resume with: {prog} --resume "
              f"{shlex.quote(str(cfg.out))}", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["TributeFitConfig", "fit", "gather", "gather_states", "counterfactual_values",
           "features", "design", "solve", "fitted_policy", "evaluate", "load_data",
           "concat_chunks", "interval", "save_batch", "load_batches", "resume_settings",
           "main"]
