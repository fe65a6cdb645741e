"""Sound tournaments between agents: duplicate deals, confidence intervals, ratings.

Duplicate format: a *deal sequence* fixes the cards of every round of a match (one hand per
seat and round). Each sequence is played once per rotation of the line-up through the seats,
so every agent plays every hand and the luck of the deal cancels out. With ``k`` agents at a
table of ``n`` seats and ``k <= n`` the line-up repeats the agents in order to fill the seats;
with ``k > n`` each sequence seats a window of ``n`` consecutive agents (the window moves one
agent per sequence), and pairwise differences use the sequences where both agents played.
Because the deals of later rounds are fixed in advance they follow a fixed dealer schedule
(the dealer moves one seat left each round) instead of R4's "the last Egg holder deals".

Statistics, per agent (its spec string): mean finishing place (1 = Dragon), Dragon rate, Egg
rate and mean match score, each with a 95% bootstrap interval that resamples whole deal
sequences; the mean score difference of every pair with its interval (paired over the same
sequences); a head-to-head matrix (how often the row agent finished above the column agent in
a round where both played); and a Plackett-Luce rating (openskill) over full finishing orders,
with its uncertainty.

Runs in parallel processes with a progress bar; every match's seeds derive from the
tournament seed, the deal sequence and the rotation, so the same seed gives the same results
for any number of workers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents import AgentSpecError, make_agent, parse_spec
from agents.runner import play_match
from dragons_egg_env import engine as E
from dragons_egg_env.cards import NUM_CARDS, codes
from dragons_egg_env.config import ConfigError, RulesConfig
from experiments.cli_args import int_range, rule_flag, table_size


@dataclass
class TournamentConfig:
    """Everything a tournament needs; saved beside its results."""

    agents: list[str]
    num_players: int = 4
    #: Matches to play; rounded up to whole deal sequences (one match per rotation).
    matches: int = 200
    seed: int = 0
    num_rounds: int = 3
    #: Rule flags other than num_players / num_rounds.
    rules: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    #: Bootstrap resamples for the intervals.
    bootstrap: int = 2000
    out_dir: str | None = None

    def rules_config(self) -> RulesConfig:
        extra = set(self.rules) & {"num_players", "num_rounds"}
        if extra:
            raise ConfigError(f"set {', '.join(sorted(extra))} directly, not in rules")
        return RulesConfig.from_kwargs({**self.rules, "num_players": self.num_players,
                                        "num_rounds": self.num_rounds})

    def validate(self) -> None:
        if not self.agents:
            raise ValueError("a tournament needs at least one agent")
        for spec in self.agents:
            parse_spec(spec)
        self.rules_config()
        if self.matches < 1:
            raise ValueError(f"matches must be >= 1, got {self.matches}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")

    def lineup(self, sequence: int = 0) -> list[str]:
        """The agents at the table for a deal sequence (before rotation): with ``k <= n``
        agents they repeat in order to fill the seats; with more agents than seats a window of
        ``n`` of them, moving one agent along per sequence, so each sits out in turn."""
        k, n = len(self.agents), self.num_players
        start = sequence % k if k > n else 0
        return [self.agents[(start + i) % k] for i in range(n)]

    @property
    def num_sequences(self) -> int:
        return math.ceil(self.matches / self.num_players)


def _derive(*parts: int) -> int:
    """A 63-bit seed derived from integers (stable across runs and platforms)."""
    rng = random.Random(" ".join(map(str, parts)))
    return rng.getrandbits(63)


def deal_sequence(config: RulesConfig, seed: int) -> list[list[int]]:
    """The hands of every round of one deal sequence: round ``r`` is dealt by R4 from a
    shuffled deck, with seat ``(d + r) mod n`` as dealer (``d`` drawn from the seed)."""
    rng = random.Random(seed)
    n = config.num_players
    first = rng.randrange(n)
    deals = []
    for r in range(config.num_rounds):
        deck = list(range(NUM_CARDS))
        rng.shuffle(deck)
        deals.append(E.deal_from_deck(deck, n, (first + r) % n))
    return deals


def _play_task(args: tuple[TournamentConfig, int, int]) -> dict[str, Any]:
    tc, seq, rot = args
    config = tc.rules_config()
    n = tc.num_players
    deals = deal_sequence(config, _derive(tc.seed, seq))
    lineup = tc.lineup(seq)
    seats = [lineup[(j - rot) % n] for j in range(n)]  # rotation: agent j moves rot seats left
    agents = [make_agent(spec, seed=_derive(tc.seed, seq, rot, j)) for j, spec in enumerate(seats)]
    start = time.perf_counter()
    rec = play_match(agents, config, seed=_derive(tc.seed, seq, rot),
                     deals=[[codes(h) for h in hands] for hands in deals])
    return {
        "sequence": seq,
        "rotation": rot,
        "seats": seats,
        "scores": rec.scores,
        "rounds": rec.rounds,
        "steps": rec.steps,
        "seconds": round(time.perf_counter() - start, 4),
    }


def _progress(total: int, desc: str):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is installed with the experiments extra
        return None
    return tqdm(total=total, desc=desc, unit="match", file=sys.stderr, dynamic_ncols=True)


def run_matches(tc: TournamentConfig, progress: bool = True) -> list[dict[str, Any]]:
    """Play every (deal sequence, rotation) match; results sorted by sequence and rotation."""
    tc.validate()
    tasks = [(tc, seq, rot) for seq in range(tc.num_sequences) for rot in range(tc.num_players)]
    bar = _progress(len(tasks), "tournament") if progress else None
    results = []
    if tc.workers == 1:
        for t in tasks:
            results.append(_play_task(t))
            if bar:
                bar.update()
    else:
        import multiprocessing as mp

        ctx = mp.get_context("spawn" if sys.platform == "darwin" else "fork")
        with ctx.Pool(tc.workers) as pool:
            chunk = max(1, len(tasks) // (tc.workers * 20))
            for res in pool.imap_unordered(_play_task, tasks, chunksize=chunk):
                results.append(res)
                if bar:
                    bar.update()
    if bar:
        bar.close()
    results.sort(key=lambda r: (r["sequence"], r["rotation"]))
    return results


# ---------------------------------------------------------------------------------------
# Statistics.

@dataclass
class Estimate:
    mean: float
    low: float
    high: float

    def fmt(self, digits: int = 3) -> str:
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _bootstrap(per_seq: np.ndarray, weights: np.ndarray, reps: int, rng: np.random.Generator
               ) -> Estimate:
    """Weighted mean over deal sequences with a percentile bootstrap over sequences."""
    mask = weights > 0
    if not mask.any():
        return Estimate(float("nan"), float("nan"), float("nan"))
    mean = float((per_seq * weights).sum() / weights.sum())
    k = len(per_seq)
    idx = rng.integers(0, k, size=(reps, k))
    w = weights[idx]
    tot = w.sum(axis=1)
    ok = tot > 0
    boots = (per_seq[idx] * w).sum(axis=1)[ok] / tot[ok]
    lo, hi = np.percentile(boots, [2.5, 97.5]) if len(boots) else (mean, mean)
    return Estimate(mean, float(lo), float(hi))


def summarize(tc: TournamentConfig, results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-agent metrics with intervals, pairwise differences, head-to-head and ratings."""
    n = tc.num_players
    labels = list(dict.fromkeys(tc.agents))
    seqs = sorted({r["sequence"] for r in results})
    sidx = {s: i for i, s in enumerate(seqs)}
    k = len(seqs)
    L = len(labels)
    lidx = {a: i for i, a in enumerate(labels)}
    # Per sequence and agent: sums and counts.
    place_sum = np.zeros((k, L))
    dragon_sum = np.zeros((k, L))
    egg_sum = np.zeros((k, L))
    round_cnt = np.zeros((k, L))
    score_sum = np.zeros((k, L))
    match_cnt = np.zeros((k, L))
    place_hist = np.zeros((L, n), dtype=int)
    wins = np.zeros((L, L))
    meets = np.zeros((L, L))
    for r in results:
        si = sidx[r["sequence"]]
        seat_label = [lidx[a] for a in r["seats"]]
        for seat, a in enumerate(seat_label):
            score_sum[si, a] += r["scores"][seat]
            match_cnt[si, a] += 1
        for rd in r["rounds"]:
            order = rd["order"]
            for place, seat in enumerate(order):
                a = seat_label[seat]
                place_sum[si, a] += place + 1
                dragon_sum[si, a] += place == 0
                egg_sum[si, a] += place == n - 1
                round_cnt[si, a] += 1
                place_hist[a, place] += 1
            for x in range(n):
                for y in range(x + 1, n):
                    a, b = seat_label[order[x]], seat_label[order[y]]
                    if a != b:
                        wins[a, b] += 1
                        meets[a, b] += 1
                        meets[b, a] += 1
    rng = np.random.default_rng(_derive(tc.seed, 999) % (2**63))
    reps = tc.bootstrap
    agents_out = {}
    for a, label in enumerate(labels):
        rc, mc = round_cnt[:, a], match_cnt[:, a]
        agents_out[label] = {
            "mean_place": _bootstrap(_safe_div(place_sum[:, a], rc), rc, reps, rng),
            "dragon_rate": _bootstrap(_safe_div(dragon_sum[:, a], rc), rc, reps, rng),
            "egg_rate": _bootstrap(_safe_div(egg_sum[:, a], rc), rc, reps, rng),
            "mean_score": _bootstrap(_safe_div(score_sum[:, a], mc), mc, reps, rng),
            "matches": int(mc.sum()),
            "rounds": int(rc.sum()),
            "place_hist": place_hist[a].tolist(),
        }
    # Paired differences of mean match score over the same deal sequences.
    diffs = {}
    per_seq_score = _safe_div(score_sum, match_cnt)
    for a in range(L):
        for b in range(L):
            if a == b:
                continue
            both = (match_cnt[:, a] > 0) & (match_cnt[:, b] > 0)
            d = per_seq_score[:, a] - per_seq_score[:, b]
            diffs[f"{labels[a]} - {labels[b]}"] = _bootstrap(d, both.astype(float), reps, rng)
    h2h = np.where(meets > 0, wins / np.maximum(meets, 1), np.nan)
    ratings = _ratings(tc, results, labels)
    return {"labels": labels, "agents": agents_out, "differences": diffs,
            "head_to_head": h2h.tolist(), "ratings": ratings,
            "matches": len(results), "sequences": k}


def _safe_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.divide(x, y, out=np.zeros_like(x, dtype=float), where=y > 0)


def _ratings(tc: TournamentConfig, results: Sequence[dict[str, Any]], labels: list[str]
             ) -> dict[str, dict[str, float]]:
    """Plackett-Luce ratings (openskill) over every round's full finishing order. An agent
    that fills several seats of a table moves by the mean of its seats' updates."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    mu = {a: model.mu for a in labels}
    sigma = {a: model.sigma for a in labels}
    for r in results:
        seats = r["seats"]
        for rd in r["rounds"]:
            place = {seat: p for p, seat in enumerate(rd["order"])}
            teams = [[model.rating(mu=mu[a], sigma=sigma[a])] for a in seats]
            new = model.rate(teams, ranks=[place[j] + 1 for j in range(len(seats))])
            upd: dict[str, list[tuple[float, float]]] = {}
            for j, a in enumerate(seats):
                upd.setdefault(a, []).append((new[j][0].mu, new[j][0].sigma))
            for a, vals in upd.items():
                mu[a] = sum(v[0] for v in vals) / len(vals)
                sigma[a] = sum(v[1] for v in vals) / len(vals)
    return {a: {"mu": mu[a], "sigma": sigma[a], "low": mu[a] - 1.96 * sigma[a],
                "high": mu[a] + 1.96 * sigma[a], "ordinal": mu[a] - 3 * sigma[a]}
            for a in labels}


# ---------------------------------------------------------------------------------------
# Output.

def write_results(path: Path, results: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")


def _jsonable(x: Any) -> Any:
    if isinstance(x, Estimate):
        return asdict(x)
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def plot_summary(summary: dict[str, Any], out_dir: Path) -> list[Path]:
    """Ratings with intervals, the head-to-head heatmap and the finishing places."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = summary["labels"]
    paths = []
    fig, ax = plt.subplots(figsize=(6, 0.6 * len(labels) + 1.5))
    rt = summary["ratings"]
    ys = np.arange(len(labels))
    mus = [rt[a]["mu"] for a in labels]
    errs = [1.96 * rt[a]["sigma"] for a in labels]
    ax.errorbar(mus, ys, xerr=errs, fmt="o", capsize=4)
    ax.set_yticks(ys, labels)
    ax.set_xlabel("Plackett-Luce rating (mu, 95% interval)")
    ax.set_title("Ratings over full finishing orders")
    fig.tight_layout()
    paths.append(out_dir / "ratings.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(1.2 * len(labels) + 2.5, 1.0 * len(labels) + 1.5))
    h = np.array(summary["head_to_head"], dtype=float)
    im = ax.imshow(h, vmin=0, vmax=1, cmap="RdBu")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    for i in range(len(labels)):
        for j in range(len(labels)):
            if not np.isnan(h[i, j]):
                ax.text(j, i, f"{h[i, j]:.2f}", ha="center", va="center", fontsize=9)
    ax.set_title("Head to head: row finished above column")
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    paths.append(out_dir / "head_to_head.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    n = len(summary["agents"][labels[0]]["place_hist"])
    width = 0.8 / len(labels)
    for i, a in enumerate(labels):
        hist = np.array(summary["agents"][a]["place_hist"], dtype=float)
        ax.bar(np.arange(1, n + 1) + (i - (len(labels) - 1) / 2) * width,
               hist / max(hist.sum(), 1), width=width, label=a)
    ax.set_xlabel("finishing place (1 = Dragon, last = Egg)")
    ax.set_ylabel("share of rounds")
    ax.set_xticks(range(1, n + 1))
    ax.legend(fontsize=8)
    ax.set_title("Distribution of finishing places")
    fig.tight_layout()
    paths.append(out_dir / "places.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def markdown_report(tc: TournamentConfig, summary: dict[str, Any], plots: list[Path]) -> str:
    labels = summary["labels"]
    lines = [
        "# Tournament report", "",
        f"- agents: {', '.join(f'`{a}`' for a in labels)}",
        f"- table: {tc.num_players} players, {tc.num_rounds} rounds a match, rules "
        f"{tc.rules or 'default'}",
        f"- {summary['matches']} matches = {summary['sequences']} duplicate deal sequences x "
        f"{tc.num_players} rotations, seed {tc.seed}",
        "- intervals: 95% percentile bootstrap over deal sequences "
        f"({tc.bootstrap} resamples)", "",
        "| agent | mean place | Dragon rate | Egg rate | mean match score | rating (mu ± 1.96σ) |",
        "|---|---|---|---|---|---|",
    ]
    for a in labels:
        m = summary["agents"][a]
        rt = summary["ratings"][a]
        lines.append(f"| `{a}` | {m['mean_place'].fmt(2)} | {m['dragon_rate'].fmt()} | "
                     f"{m['egg_rate'].fmt()} | {m['mean_score'].fmt()} | "
                     f"{rt['mu']:.2f} ± {1.96 * rt['sigma']:.2f} |")
    lines += ["", "## Differences in mean match score (row - column, paired by deals)", "",
              "| pair | difference | excludes zero |", "|---|---|---|"]
    for key, est in summary["differences"].items():
        a, b = key.split(" - ")
        if labels.index(a) < labels.index(b):
            sig = "yes" if est.low > 0 or est.high < 0 else "no"
            lines.append(f"| `{a}` - `{b}` | {est.fmt()} | {sig} |")
    lines += ["", "## Head to head", "",
              "Share of rounds in which the row agent finished above the column agent.", "",
              "| | " + " | ".join(f"`{a}`" for a in labels) + " |",
              "|---" * (len(labels) + 1) + "|"]
    h = summary["head_to_head"]
    for i, a in enumerate(labels):
        cells = ["-" if (h[i][j] is None or (isinstance(h[i][j], float) and math.isnan(h[i][j])))
                 else f"{h[i][j]:.3f}" for j in range(len(labels))]
        lines.append(f"| `{a}` | " + " | ".join(cells) + " |")
    lines += [""] + [f"![{p.stem}]({p.name})" for p in plots]
    return "\n".join(lines) + "\n"


def run_tournament(tc: TournamentConfig, progress: bool = True) -> dict[str, Any]:
    """Play, summarize and (with ``out_dir``) write results.jsonl, summary.json, report.md and
    the plots. Returns the summary."""
    results = run_matches(tc, progress=progress)
    summary = summarize(tc, results)
    if tc.out_dir:
        out = Path(tc.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_results(out / "results.jsonl", results)
        (out / "config.json").write_text(json.dumps(asdict(tc), indent=1))
        (out / "summary.json").write_text(json.dumps(_jsonable(summary), indent=1))
        plots = plot_summary(summary, out)
        (out / "report.md").write_text(markdown_report(tc, summary, plots))
    return summary


# ---------------------------------------------------------------------------------------
# Command line.

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("agents", nargs="+", help="agent specs, e.g. heuristic ismcts:iterations=200")
    p.add_argument("--players", type=table_size, default=4, help="table size 2..8")
    p.add_argument("--matches", type=int_range(1), default=200,
                   help="matches to play (rounded up to whole rotations)")
    p.add_argument("--rounds", type=int_range(1), default=3, help="rounds per match")
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--workers", type=int_range(1), default=os.cpu_count() or 1)
    p.add_argument("--rule", type=rule_flag, action="append", default=[], metavar="FLAG=VALUE",
                   help="a rule flag, e.g. --rule pass_locks_out=true (repeatable)")
    p.add_argument("--bootstrap", type=int_range(100), default=2000)
    p.add_argument("--out", default="runs/tournament", help="output folder")
    p.add_argument("--no-progress", action="store_true")


def run_from_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    tc = TournamentConfig(agents=args.agents, num_players=args.players, matches=args.matches,
                          seed=args.seed, num_rounds=args.rounds, rules=dict(args.rule),
                          workers=args.workers, bootstrap=args.bootstrap, out_dir=args.out)
    try:
        tc.validate()
    except (AgentSpecError, ConfigError, ValueError) as exc:
        parser.error(str(exc))
    summary = run_tournament(tc, progress=not args.no_progress)
    print(markdown_report(tc, summary, []))
    print(f"wrote {args.out}/report.md, results.jsonl, summary.json and plots")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.tournament",
                                     description="Duplicate-deal tournament between agents.")
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv), parser)


if __name__ == "__main__":
    raise SystemExit(main())
