"""What are tribute choices worth? The same play policy with different tribute policies.

Every seat plays with one play policy (``--play``, default: the shipped learned agent,
``ppo``). What the Dragon does in the tribute (R30..R34) comes from a *tribute policy*:

- ``none``: ask for nothing (pass at once);
- ``random``: uniform asks, uniform gives;
- ``heuristic``: the rules H8/H9 of ``agents/heuristic.py`` (dragon cards and low numbers;
  give back the weakest single card);
- ``learned``: the choices of the agent given by ``--tribute`` (default ``ppo``, the shipped
  learned agent) in the ask and give phases, whatever the play policy is; so a learned
  tribute can be measured under the heuristic's play as well as under its own;
- ``learned-ask`` and ``learned-give``: the learned asks with the heuristic's give-back, and
  the heuristic's asks with the learned give-back, which tell where a difference between
  ``learned`` and ``heuristic`` comes from.

Each deal sequence (two rounds) is played once per tribute policy. Round 1 does not involve
the tribute, and every agent is deterministic given its seed, so round 1 and the Dragon are the
same in every variant; only the tribute, and what follows from it, differs. The measure is the
Dragon's reward in round 2 (R27), with 95% bootstrap intervals over deal sequences, and each
policy's paired difference to ``heuristic``. Heatmaps show which cards the learned policy asks
for and gives back.

``python -m dragons_egg.experiments.evaluation.tribute [--play ppo] [--tribute ppo] [--deals 300]
[--workers 2] [--policies heuristic,learned] [--out runs/tribute]`` (the deal sequences are
split among ``--workers`` processes; each has its own seeds, so the results do not depend on
it; ``--policies`` plays only some tribute policies, ``heuristic`` among them, with the
rewards they get in the full run).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg.agents import AgentSpecError, check_spec_for_table, make_agent, parse_spec
from dragons_egg.agents.base import Agent
from dragons_egg.agents.heuristic import HeuristicAgent
from dragons_egg.agents.runner import play_match
from dragons_egg.experiments.common.args import int_range
from dragons_egg.experiments.evaluation.tournament import bootstrap, deal_sequence, derive
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, PASS
from dragons_egg_env.cards import BEAST, CARD_CODES, EGG, NUM_CARDS, NUM_NUMBERS, SUITS, codes
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.engine import Phase
from dragons_egg_env.extras import require_cli
from dragons_egg_env.observation import OBS_PHASES, layout

TRIBUTE_POLICIES = ("none", "random", "heuristic", "learned", "learned-ask", "learned-give")


class TributeMix(Agent):
    """Plays with ``play``; in the ask and give phases uses the tribute policy ``tribute``
    (``learned``: the agent ``learner``) and records what it asks for and gives."""

    name = "tribute-mix"

    def __init__(self, play: Agent, tribute: str, seed: int | None = None,
                 learner: Agent | None = None) -> None:
        super().__init__(seed)
        if tribute not in TRIBUTE_POLICIES:
            raise ValueError(f"unknown tribute policy {tribute!r}; choose from "
                             f"{', '.join(TRIBUTE_POLICIES)}")
        self.play = play
        self.tribute = tribute
        self.learner = play if learner is None else learner
        self.heuristic = HeuristicAgent(seed=seed)
        self.asked: list[int] = []
        self.given: list[int] = []

    def start_match(self, seat, config, max_players=None) -> None:
        super().start_match(seat, config, max_players)
        self.play.start_match(seat, config, max_players)
        if self.learner is not self.play:
            self.learner.start_match(seat, config, max_players)
        self.heuristic.start_match(seat, config, max_players)
        self._phase = layout(self.max_players)["phase"]

    def end_round(self, result) -> None:
        self.play.end_round(result)
        if self.learner is not self.play:
            self.learner.end_round(result)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        phase = OBS_PHASES[int(np.flatnonzero(observation[self._phase])[0])]
        if phase not in (Phase.ASK, Phase.GIVE):  # play / complete
            return self.play.act(observation, action_mask)
        legal = [int(a) for a in np.flatnonzero(action_mask)]
        if self.tribute == "none":
            a = PASS if PASS in legal else legal[0]
        elif self.tribute == "random":
            a = legal[self.rng.randrange(len(legal))]
        elif self.tribute == "learned" or self.tribute == f"learned-{phase.name.lower()}":
            a = self.learner.act(observation, action_mask)
        else:  # heuristic, or the heuristic's half of learned-ask / learned-give
            a = self.heuristic.act(observation, action_mask)
        if ASK_BASE <= a < GIVE_BASE:
            self.asked.append(a - ASK_BASE)
        elif a >= GIVE_BASE:
            self.given.append(a - GIVE_BASE)
        return a


def _learner(tribute: str | Callable[[int], Agent], seed: int) -> Agent:
    """A seat's ``learned`` tribute agent, from a spec or a factory of a seed."""
    return make_agent(tribute, seed=seed) if isinstance(tribute, str) else tribute(seed)


def _deal_range(task: tuple) -> dict[str, Any]:
    """Deal sequences ``lo..hi-1`` under each tribute policy of ``policies`` (a worker's unit
    of work)."""
    play_spec, tribute, num_players, seed, tribute_asks, lo, hi, policies = task
    config = RulesConfig(num_players=num_players, num_rounds=2, tribute_asks=tribute_asks)
    rewards = {t: np.zeros(hi - lo) for t in policies}
    asked = np.zeros(NUM_CARDS, dtype=int)
    given = np.zeros(NUM_CARDS, dtype=int)
    dragons = []
    for i, d in enumerate(range(lo, hi)):
        hands = deal_sequence(config, derive(seed, d))
        deal_codes = [[codes(h) for h in r] for r in hands]
        seen = set()
        for t in policies:
            agents = [TributeMix(make_agent(play_spec, seed=derive(seed, d, q)), t,
                                 seed=derive(seed, d, q, 1),
                                 learner=_learner(tribute, derive(seed, d, q, 2)))
                      for q in range(num_players)]
            rec = play_match(agents, config, seed=derive(seed, d), deals=deal_codes)
            dragon = rec.rounds[0]["order"][0]
            seen.add(dragon)
            rewards[t][i] = rec.rounds[1]["rewards"][dragon]  # R27, as the engine scored it
            if t == "learned":
                for c in agents[dragon].asked:
                    asked[c] += 1
                for c in agents[dragon].given:
                    given[c] += 1
        if len(seen) != 1:
            raise RuntimeError(f"deal {d}: round 1 differed between tribute policies "
                               f"(Dragons {sorted(seen)}); the play policy must be "
                               "deterministic")
        dragons.append(seen.pop())
    return {"rewards": rewards, "asked": asked, "given": given, "dragons": dragons}


#: Deal sequences per unit of work when the analysis runs on several processes.
DEALS_PER_TASK = 25


def check_policies(policies: Sequence[str]) -> tuple[str, ...]:
    """``policies`` in :data:`TRIBUTE_POLICIES` order; a ``ValueError`` naming an unknown one,
    or a set without ``heuristic`` (every difference is taken to it)."""
    unknown = [t for t in policies if t not in TRIBUTE_POLICIES]
    if unknown:
        raise ValueError(f"unknown tribute policy {unknown[0]!r}; choose from "
                         f"{', '.join(TRIBUTE_POLICIES)}")
    if "heuristic" not in policies:
        raise ValueError("the tribute policies must include heuristic: every difference is "
                         "taken to it")
    return tuple(t for t in TRIBUTE_POLICIES if t in policies)


def run(play_spec: str, deals: int, num_players: int, seed: int, tribute_asks: int = 2,
        tribute_spec: str | Callable[[int], Agent] | None = None, workers: int = 1,
        policies: Sequence[str] = TRIBUTE_POLICIES) -> dict[str, Any]:
    """Play every deal sequence under each tribute policy of ``policies`` (all by default);
    per-deal Dragon round-2 rewards. ``tribute_spec`` is the ``learned`` tribute policy: an
    agent spec, or a picklable function of a seed that makes the agent (one per seat; default:
    the play policy). Every deal sequence has its own seeds, so the result does not depend on
    ``workers`` (processes), nor a policy's rewards on which other policies are played."""
    policies = check_policies(policies)
    tribute_spec = play_spec if tribute_spec is None else tribute_spec
    config = RulesConfig(num_players=num_players, num_rounds=2, tribute_asks=tribute_asks)
    step = DEALS_PER_TASK if workers > 1 else max(deals, 1)
    tasks = [(play_spec, tribute_spec, num_players, seed, tribute_asks, lo,
              min(lo + step, deals), policies) for lo in range(0, deals, step)]
    try:
        from tqdm import tqdm
        bar = tqdm(total=deals, desc="tribute", unit="deal", file=sys.stderr)
    except ImportError:  # pragma: no cover
        bar = None
    parts = []
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(workers) as pool:
            for part in pool.imap(_deal_range, tasks):  # in task order
                parts.append(part)
                if bar:
                    bar.update(len(part["dragons"]))
    else:
        for task in tasks:
            parts.append(_deal_range(task))
            if bar:
                bar.update(len(parts[-1]["dragons"]))
    if bar:
        bar.close()
    return {"rewards": {t: np.concatenate([p["rewards"][t] for p in parts]) if parts else
                        np.zeros(0) for t in policies},
            "asked": sum((p["asked"] for p in parts), np.zeros(NUM_CARDS, dtype=int)),
            "given": sum((p["given"] for p in parts), np.zeros(NUM_CARDS, dtype=int)),
            "dragons": [d for p in parts for d in p["dragons"]],
            "config": config, "play": play_spec, "seed": seed,
            "tribute": tribute_spec if isinstance(tribute_spec, str) else tribute_spec(0).label}


def summarize(res: dict[str, Any], reps: int = 2000) -> dict[str, Any]:
    rng = np.random.default_rng(res["seed"])
    w = np.ones(len(res["dragons"]))
    out: dict[str, Any] = {"policies": {}, "vs_heuristic": {}}
    for t, r in res["rewards"].items():
        out["policies"][t] = bootstrap(r, w, reps, rng)
    for t, r in res["rewards"].items():
        if t != "heuristic":
            out["vs_heuristic"][t] = bootstrap(r - res["rewards"]["heuristic"], w, reps, rng)
    return out


def heatmaps(res: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 4.2))
    for ax, key, title in ((axes[0], "asked", "asked for"), (axes[1], "given", "given back")):
        counts = res[key]
        grid = np.zeros((5, 10))
        grid[:4] = counts[:BEAST].reshape(NUM_NUMBERS, len(SUITS)).T  # rows: suits
        grid[4, :4] = counts[BEAST:EGG]
        grid[4, 4] = counts[EGG]
        im = ax.imshow(grid, cmap="magma_r")
        ax.set_xticks(range(10), [str(n) for n in range(1, 11)])
        ax.set_yticks(range(5), ["Earth", "Water", "Fire", "Lightning", "dragons/Egg"])
        ax.set_xlabel("number (dragon row: Beast, Darklord, Horseman, Executioner, Egg)")
        ax.set_title(f"learned tribute: cards {title}")
        fig.colorbar(im, ax=ax, shrink=0.7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(res: dict[str, Any], summ: dict[str, Any]) -> str:
    n = res["config"].num_players
    lines = [
        "# Tribute analysis", "",
        f"- play policy at every seat: `{res['play']}`; learned tribute policy: "
        f"`{res['tribute']}`; {n} players; "
        f"{len(res['dragons'])} duplicate deal sequences of 2 rounds; seed {res['seed']}",
        "- measure: the Dragon's reward in round 2 (after its tribute), 1 = first, -1 = last;"
        " 95% bootstrap intervals over deal sequences", "",
        "| tribute policy | Dragon's round-2 reward | difference to heuristic |",
        "|---|---|---|",
    ]
    for t in summ["policies"]:
        est = summ["policies"][t]
        diff = summ["vs_heuristic"].get(t)
        lines.append(f"| `{t}` | {est.fmt()} | {diff.fmt() if diff else '-'} |")
    vs = summ["vs_heuristic"]
    lines.append("")
    if "learned" in vs:
        d = vs["learned"]
        verdict = ("beats" if d.low > 0 else "loses to" if d.high < 0 else
                   "is not distinguishable from")
        lines.append(f"The learned tribute **{verdict}** the heuristic one (difference "
                     f"{d.fmt()}).")
    if "learned-ask" in vs:
        lines.append(f"Its asks alone (with the heuristic's give-back) differ by "
                     f"{vs['learned-ask'].fmt()}.")
    if "learned-give" in vs:
        lines.append(f"Its give-back alone (with the heuristic's asks) differs by "
                     f"{vs['learned-give'].fmt()}.")
    if "learned" not in vs:  # nothing learned was played, so no cards were recorded
        return "\n".join(lines) + "\n"
    lines += ["",
              "Most asked for by the learned policy: " + ", ".join(
                  f"{CARD_CODES[c]} ({res['asked'][c]})" for c in np.argsort(-res['asked'])[:8]
                  if res['asked'][c]),
              "",
              "Most given back: " + ", ".join(
                  f"{CARD_CODES[c]} ({res['given'][c]})" for c in np.argsort(-res['given'])[:8]
                  if res['given'][c]),
              "", "![heatmaps](tribute_heatmaps.png)"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog or "python -m dragons_egg.experiments.evaluation.tribute",
                                description="Compare tribute policies under one play policy.")
    p.add_argument("--play", default="ppo",
                   help="play policy spec at every seat (deterministic), default ppo")
    p.add_argument("--tribute", default="ppo",
                   help="the learned tribute policy: an agent spec whose ask and give choices "
                   "the 'learned' variant uses (default ppo)")
    p.add_argument("--deals", type=int_range(1), default=300)
    p.add_argument("--players", type=int_range(2, 8), default=4)
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--workers", type=int_range(1), default=1,
                   help="processes; the results do not depend on it (default 1)")
    p.add_argument("--policies", default=",".join(TRIBUTE_POLICIES),
                   help="comma-separated tribute policies to play, heuristic among them "
                   f"(default all: {','.join(TRIBUTE_POLICIES)})")
    p.add_argument("--out", default="runs/tribute")
    args = p.parse_args(argv)
    require_cli(p.prog, "experiments")  # progress bar and heatmaps
    try:
        policies = check_policies([t.strip() for t in args.policies.split(",") if t.strip()])
    except ValueError as exc:
        p.error(f"--policies: {exc}")
    for opt, spec in (("--play", args.play), ("--tribute", args.tribute)):
        try:
            parse_spec(spec)
            check_spec_for_table(spec, args.players)
            make_agent(spec, seed=0)
        except (AgentSpecError, ValueError) as exc:
            p.error(f"{opt}: {exc}")
    res = run(args.play, args.deals, args.players, args.seed, tribute_spec=args.tribute,
              workers=args.workers, policies=policies)
    summ = summarize(res)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    heatmaps(res, out / "tribute_heatmaps.png")
    text = report(res, summ)
    (out / "report.md").write_text(text)
    (out / "summary.json").write_text(json.dumps({
        "policies": {k: vars(v) for k, v in summ["policies"].items()},
        "vs_heuristic": {k: vars(v) for k, v in summ["vs_heuristic"].items()},
        "play": args.play, "tribute": args.tribute, "deals": args.deals,
        "players": args.players, "seed": args.seed, "tribute_policies": list(policies),
        "command": f"{p.prog} " + " ".join(
            sys.argv[1:] if argv is None else argv),
        "asked": res["asked"].tolist(), "given": res["given"].tolist()}, indent=1))
    print(text)
    return 0


__all__ = ["TributeMix", "TRIBUTE_POLICIES", "check_policies", "run", "summarize", "heatmaps",
           "report", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
