"""``dragons-egg play``: a terminal game against bots, and ``dragons-egg replay``: step through a
saved match. Both take their input and output as arguments so tests can script them."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from agents import AgentSpecError, make_agent, parse_spec
from dragons_egg_env import engine as E
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, PASS, describe
from dragons_egg_env.cards import CARD_CODES, EGG, card_index, card_name, codes, iter_cards
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.dragons_egg_v0 import raw_env
from dragons_egg_env.replay import ReplayError, iter_replay, load_replay
from experiments.cli_args import int_range, rule_flag, table_size

HELP = ("Type the number of a move, a card code to ask for or give (e.g. 1F, BEAST), 'pass', "
        "'h' for this help, or 'q' to quit (the match is saved as a replay).")


class QuitGame(Exception):
    """The player quit."""


def _move_text(env: raw_env, action: int, deck_style: str) -> str:
    s = env.engine_state
    cards = E.action_cards(s, action)
    text = describe(action)
    if cards:
        text += " (" + " ".join(card_name(c, deck_style) for c in iter_cards(cards)) + ")"
    return text


def _parse_choice(text: str, legal: list[int]) -> int | str:
    """An action from the player's input, or an error message."""
    t = text.strip()
    if not t:
        return "Please type a move (h for help)."
    if t.isdigit():
        k = int(t)
        if legal and ASK_BASE <= legal[-1] < GIVE_BASE and k != 1:
            return "Type a card code to ask for it, or 1 / pass to stop asking."
        if 1 <= k <= len(legal):
            return legal[k - 1]
        return f"There is no move {k}: choose 1..{len(legal)}."
    low = t.lower()
    if low in ("pass", "p", "stop", "decline"):
        return PASS if PASS in legal else "You cannot pass now."
    try:
        card = card_index(t)
    except ValueError:
        return f"I did not understand {t!r}. {HELP}"
    for base in (ASK_BASE, GIVE_BASE):
        a = base + card
        if card != EGG or base == GIVE_BASE:  # R31: the Egg is never asked for
            if a in legal:
                return a
    return f"{CARD_CODES[card]} is not a legal ask or give now."


def play_game(args: argparse.Namespace, read: Callable[[str], str], out: TextIO) -> int:
    config = RulesConfig.from_kwargs({**dict(args.rule), "num_players": args.players,
                                      "num_rounds": args.rounds})
    n = config.num_players
    if not 0 <= args.seat < n:
        raise ValueError(f"--seat must be 0..{n - 1} for a table of {n}")
    bots = list(args.bots) or ["heuristic"]
    lineup = {}
    others = [q for q in range(n) if q != args.seat]
    for k, q in enumerate(others):
        lineup[q] = make_agent(bots[k % len(bots)], seed=args.seed * 100 + q)
    env = raw_env(deck_style=args.deck_style, **config.to_dict())
    env.reset(seed=args.seed)
    me = env.possible_agents[args.seat]
    for q, bot in lineup.items():
        bot.start_match(q, config, env.max_players)
    save = Path(args.save or f"runs/play-seed{args.seed}-{int(time.time())}.json")
    print(f"You are {me}. Bots: " + ", ".join(f"{env.possible_agents[q]}={b.label}"
                                              for q, b in lineup.items()), file=out)
    print(HELP, file=out)
    quit_early = False
    try:
        for agent in env.agent_iter():
            if env.terminations[agent]:
                env.step(None)
                continue
            q = env.agent_name_mapping[agent]
            phase = env.phase()
            if q == args.seat:
                action = _ask_human(env, me, phase, read, out, args.deck_style)
            else:
                obs = env.observe(agent)
                action = lineup[q].act(obs["observation"], obs["action_mask"])
                if phase in ("ask", "give"):
                    # R34: the exchange is private to the two players of the tribute.
                    s = env.engine_state
                    if args.seat in (s.dragon, s.victim):
                        print(f"  {agent} {_move_text(env, action, args.deck_style)}", file=out)
                    else:
                        print(f"  {agent} takes part in the tribute", file=out)
                elif phase == "complete":
                    if action != PASS:  # R12: a declined offer to someone else is not shown
                        print(f"  {agent} completes the set out of turn: "
                              f"{_move_text(env, action, args.deck_style)}", file=out)
                else:
                    print(f"  {agent}: {_move_text(env, action, args.deck_style)}", file=out)
            env.step(action)
            info = env.infos.get(me, {})
            if "round_result" in info:
                res = info["round_result"]
                print(f"\nRound {res['round'] + 1} over: " + " > ".join(res["finish_order"])
                      + (" (deadlock)" if res["deadlock"] else "")
                      + f"; Dragon {res['dragon']}, Egg {res['egg']}", file=out)
                for bot in lineup.values():
                    bot.end_round(res)
    except QuitGame:
        quit_early = True
        print("You quit.", file=out)
    save.parent.mkdir(parents=True, exist_ok=True)
    env.save_replay(str(save))
    if not quit_early:
        print("\nFinal scores: " + ", ".join(f"{a} {sc:+.2f}" for a, sc in env.scores.items()),
              file=out)
    print(f"Match saved to {save} (dragons-egg replay {save})", file=out)
    return 0


def _ask_human(env: raw_env, me: str, phase: str, read: Callable[[str], str], out: TextIO,
               deck_style: str) -> int:
    legal = env.legal_actions()
    print("\n" + env.render_table(viewer=me), file=out)
    s = env.engine_state
    if phase == "ask":
        victim = env.possible_agents[s.victim]
        print(f"You are the Dragon: ask {victim} for up to {s.asks_left} more card(s), one at "
              f"a time (type a card code such as 1F or BEAST), or pass to stop asking.", file=out)
        if s.asked:
            print(f"  asked so far: {' '.join(codes(s.asked))}; received: "
                  f"{' '.join(codes(s.hits)) or 'nothing'}", file=out)
    elif phase == "give":
        print(f"Give back one card for each card received ({s.gives_left} to go): type its "
              f"code or its number below.", file=out)
    elif phase == "complete":
        print("You can complete the set out of turn! Play it, or pass to decline.", file=out)
    if phase == "ask":
        print("  1) pass (stop asking)", file=out)
        print("  you may ask for: " + " ".join(CARD_CODES[a - ASK_BASE] for a in legal
                                               if a != PASS), file=out)
    else:
        for k, a in enumerate(legal, start=1):
            print(f"  {k}) {_move_text(env, a, deck_style)}", file=out)
    while True:
        try:
            text = read("your move> ")
        except EOFError:
            raise QuitGame from None
        if text.strip().lower() in ("q", "quit", "exit"):
            raise QuitGame
        if text.strip().lower() in ("h", "help", "?"):
            print(HELP, file=out)
            continue
        choice = _parse_choice(text, legal)
        if isinstance(choice, int):
            return choice
        print(choice, file=out)


def replay_game(args: argparse.Namespace, read: Callable[[str], str], out: TextIO) -> int:
    data = load_replay(args.file)
    viewer = args.view
    steps = iter_replay(data)
    names = None
    for k, env in steps:
        if names is None:
            names = env.possible_agents
            if viewer not in ("all", None) and viewer not in names:
                raise ReplayError(f"--view must be 'all' or one of {', '.join(names)}; "
                                  f"got {viewer!r}")
        total = len(data["actions"])
        print(f"\n--- step {k}/{total} ---", file=out)
        print(env.render_table(viewer=None if viewer in ("all", None) else viewer), file=out)
        if k < total:
            agent, action = data["actions"][k]
            s = env.engine_state
            hidden = viewer not in ("all", None) and (
                (env.phase() == "complete" and agent != viewer)
                or (env.phase() in ("ask", "give") and env.agent_name_mapping[viewer]
                    not in (s.dragon, s.victim)))
            print(f"next: {agent} " + ("acts" if hidden else _move_text(env, action, "dragon")),
                  file=out)
            if not args.all:
                try:
                    text = read("[Enter] next, q quit> ").strip().lower()
                except EOFError:
                    return 0
                if text in ("q", "quit"):
                    return 0
    return 0


def add_play_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seat", type=int_range(0), default=0, help="your seat (default 0)")
    p.add_argument("--bots", nargs="*", default=["heuristic"],
                   help="bot specs for the other seats, used in turn (default heuristic)")
    p.add_argument("--players", type=table_size, default=4)
    p.add_argument("--rounds", type=int_range(1), default=3)
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--rule", type=rule_flag, action="append", default=[], metavar="FLAG=VALUE")
    p.add_argument("--deck-style", choices=("dragon", "tarokka"), default="dragon")
    p.add_argument("--save", help="where to save the replay (default runs/play-...json)")


def check_play_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    try:
        RulesConfig.from_kwargs({**dict(args.rule), "num_players": args.players,
                                 "num_rounds": args.rounds})
        for spec in args.bots:
            parse_spec(spec)
    except (ConfigError, AgentSpecError) as exc:
        parser.error(str(exc))
    if args.seat >= args.players:
        parser.error(f"--seat must be 0..{args.players - 1} for a table of {args.players}")


def stdin_reader(prompt: str) -> str:
    return input(prompt)


__all__ = ["play_game", "replay_game", "add_play_arguments", "check_play_args", "stdin_reader"]
