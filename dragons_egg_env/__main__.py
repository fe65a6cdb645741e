"""A small demo that needs nothing but the env package: one seeded match of uniformly random
legal moves, rendered as text, with its results.

``python -m dragons_egg_env [--seed N] [--players N] [--rounds N] [--deck-style tarokka]``

The project's main job (training, a tournament and a report) is ``python -m
dragons_egg.experiments.cli.main_job``; the full command line is ``dragons-egg``.
"""

from __future__ import annotations

import argparse
import random
import sys

from .actions import describe
from .cards import DECK_STYLES
from .config import MAX_PLAYERS, MIN_PLAYERS, int_range
from .dragons_egg_v0 import raw_env


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m dragons_egg_env",
                                description="Play one seeded match of random agents and show it.")
    p.add_argument("--seed", type=int_range(0), default=0, help="match seed (default 0)")
    p.add_argument("--players", type=int_range(MIN_PLAYERS, MAX_PLAYERS), default=4,
                   help=f"table size {MIN_PLAYERS}..{MAX_PLAYERS}")
    p.add_argument("--rounds", type=int_range(1), default=3, help="rounds in the match")
    p.add_argument("--deck-style", choices=DECK_STYLES, default=DECK_STYLES[0])
    p.add_argument("--quiet", action="store_true", help="only print the results")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    env = raw_env(num_players=args.players, num_rounds=args.rounds, deck_style=args.deck_style)
    env.reset(seed=args.seed)
    rng = random.Random(args.seed)
    out = sys.stdout
    shown_round = -1
    for agent in env.agent_iter():
        _, _, term, trunc, _ = env.last(observe=False)
        if term or trunc:
            env.step(None)
            continue
        if env.round_number() != shown_round and not args.quiet:
            shown_round = env.round_number()
            print(f"\n=== round {shown_round} ===", file=out)
            print(env.render_table(), file=out)
        legal = env.legal_actions()
        action = legal[rng.randrange(len(legal))]
        phase = env.phase()
        nres = len(env.engine_state.results)
        env.step(action)
        if not args.quiet:
            print(f"  {agent:<9} [{phase}] {describe(action)}", file=out)
        if len(env.engine_state.results) != nres:
            res = env.infos[agent]["round_result"]
            print(f"round {res['round'] + 1} over: " + " > ".join(res["finish_order"])
                  + ("  (deadlock)" if res["deadlock"] else ""), file=out)
    print("\n=== results ===", file=out)
    scores = env.scores
    for rank, (a, sc) in enumerate(sorted(scores.items(), key=lambda kv: -kv[1]), start=1):
        print(f"{rank}. {a:<9} match score {sc:+.2f}", file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
