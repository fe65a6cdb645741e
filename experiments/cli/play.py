"""``dragons-egg play``: a terminal game against bots, and ``dragons-egg replay``: step through a
saved match. Both take their input and output as arguments so tests can script them.

``play`` is written for someone who has never played: ``?`` (or ``h``) explains the game with
the match's own rules, every pile clear, completed set, Egg hand-off and player going out is
narrated, the player's own move is echoed, a turn where passing is the only move is passed
for them (saying so), an ask or give that is not legal says why, and in the Tarokka deck
the cards are listed apart and may be typed by name (``5 of Coins``, ``Master of Swords``).
``q``, end of input and Ctrl-C all end the match early and save it as a replay.
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from dragons_egg.agents import AgentSpecError, check_spec_for_table, make_agent
from dragons_egg.agents.base import Agent
from dragons_egg.experiments.common.args import int_range, rule_flag, table_size
from dragons_egg_env import engine as E
from dragons_egg_env.actions import ASK_BASE, GIVE_BASE, PASS, decode, describe
from dragons_egg_env.cards import (
    CARD_INDEX,
    DRAGON_CODES,
    EGG,
    TAROKKA_SUITS,
    card_name,
)
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.dragons_egg_v0 import raw_env
from dragons_egg_env.render import cards_text, render_text
from dragons_egg_env.replay import Move, ReplayError, iter_replay, load_replay, replay_moves

HELP = ("Type the number of a move, or 'pass'. In the tribute, type a card to ask for or give "
        "back: its code (1F, BEAST) or, in the Tarokka deck, its name ('5 of Coins', "
        "'Master of Swords', 'Artifact'). '?' or 'h' explains the game; 'q' (or Ctrl-C) quits "
        "and saves the match as a replay.")


class QuitGame(Exception):
    """The player quit."""


# -- the rules, explained ------------------------------------------------------------------
def rules_text(config: RulesConfig, deck_style: str = "dragon") -> str:
    """How to play, for someone who never has, following this match's rule flags."""
    n = config.num_players
    lines = [
        "How to play Dragon's Egg",
        "- Goal: get rid of all your cards first. The first player out is the Dragon; the "
        "last player left holds the Egg and loses the round.",
        "- 1 is the strongest number and 10 the weakest.",
        "- The leader plays one or more cards of one number onto the empty pile. To play on "
        "top, put down at least as many cards of the same or a stronger (lower) number: two "
        "5s beat two 7s, but not three 7s. Or pass"
        + ("; passing locks you out of the pile until it clears."
           if config.pass_locks_out else "; you may still play the next time round."),
        "- When everyone else passes, the pile clears and whoever played last leads again.",
        "- Completing a set: whoever holds all the cards of the top number that are not on "
        "the pile may put them down" + (", even out of turn" if config.completion_out_of_turn
                                         else " in their turn")
        + "; the pile clears and they lead.",
        "- Dragon cards (Beast, Darklord, Horseman, Executioner) go onto any pile with cards "
        "in it, in your own turn; they clear it and you lead. They cannot lead.",
        "- The Egg can never be played, and its holder cannot go out. Whoever holds it and "
        "clears a pile hands it to the next player on the left.",
    ]
    if config.tribute_asks:
        lines.append(
            f"- Tribute (from round 2): the Dragon asks last round's Egg holder for up to "
            f"{config.tribute_asks} card(s), naming one card it does not hold at a time (a "
            "miss still counts), then gives back one card of its choice for each card received"
            + (", the Egg included." if config.egg_in_tribute else " (never the Egg)."))
    if config.reward_scheme == "rank":
        lines.append(f"- Each round scores +1 for first place down to -1 for last, evenly "
                     f"spaced over the {n} places; a match has {config.num_rounds} round(s).")
    else:
        lines.append(f"- Each round scores +1 for the Dragon, -1 for the Egg holder, 0 for "
                     f"everyone else; a match has {config.num_rounds} round(s).")
    if deck_style == "tarokka":
        lines.append("- Tarokka deck: Swords, Glyphs, Coins and Stars are the suits, each "
                     "suit's Master is its 10, and the Artifact is the Egg.")
    lines.append("Rules in full: docs/rules.md.")
    return "\n".join(lines)


# -- cards and moves as text ---------------------------------------------------------------
def _move_text(env: raw_env, action: int, deck_style: str) -> str:
    s = env.engine_state
    kind, a, b = decode(action)
    if kind == "pass":
        return {E.ASK: "stop asking", E.COMPLETE: "decline", E.GIVE: "pass"}.get(s.phase, "pass")
    if kind in ("ask", "give"):
        return ("ask for " if kind == "ask" else "give back ") + card_name(a, deck_style)
    cards = cards_text(E.action_cards(s, action), deck_style)
    if kind == "dragons":
        return f"play {'a dragon card' if a == 1 else f'{a} dragon cards'} ({cards})"
    return f"play {b} x {a} ({cards})"


def table_text(env: raw_env, viewer: str | None, deck_style: str) -> str:
    """The table as ``viewer`` may see it (``None``: every hand): the environment's own text
    rendering (``dragons_egg_env.render``)."""
    seat = None if viewer is None else env.agent_name_mapping[viewer]
    return render_text(env.engine_state, env.possible_agents, seat, deck_style)


_SUIT_WORDS = {name.lower(): k for k, name in enumerate(TAROKKA_SUITS)}
_SUIT_WORDS.update({name.lower()[:-1]: k for k, name in enumerate(TAROKKA_SUITS)})
_NAMED = {"artifact": EGG, "the artifact": EGG, "egg": EGG,
          **{code.lower(): 40 + k for k, code in enumerate(DRAGON_CODES)}}
_CARD_NAME = re.compile(r"^(?:the\s+)?(\d+|master)\s*(?:of\s+)?([a-z]+)$")


def card_from_text(text: str) -> int | None:
    """A card from its code (``5F``, ``beast``) or its Tarokka name (``5 of Coins``,
    ``master of swords``, ``artifact``); ``None`` if it names no card."""
    t = " ".join(text.strip().lower().split())
    if t.upper() in CARD_INDEX:
        return CARD_INDEX[t.upper()]
    if t in _NAMED:
        return _NAMED[t]
    m = _CARD_NAME.match(t)
    if m and m.group(2) in _SUIT_WORDS:
        number = 10 if m.group(1) == "master" else int(m.group(1))
        if 1 <= number <= 10:
            return (number - 1) * 4 + _SUIT_WORDS[m.group(2)]
    return None


# -- reading the player's move -------------------------------------------------------------
def _why_not(s: E.State, seat: int, card: int, deck_style: str) -> str:
    """Why asking for or giving back ``card`` is not legal now (R31, R33)."""
    name = card_name(card, deck_style)
    bit = 1 << card
    if s.phase == E.ASK:
        if card == EGG:
            return "The Egg can never be asked for: ask for another card."
        if s.hands[seat] & bit:
            return f"You already hold {name}: ask for a card you do not have."
        if s.asked & bit:
            return f"You have already asked for {name}: each card can be asked for once."
        return f"{name} cannot be asked for now."
    if s.phase == E.GIVE:
        if not s.hands[seat] & bit:
            return f"You do not hold {name}: give back a card from your hand."
        if card == EGG:
            return "The Egg cannot be given back in the tribute (rule egg_in_tribute is off)."
        return f"{name} cannot be given back now."
    return (f"Cards are named only in the tribute (asking and giving back); now type the "
            f"number of a move. ({name} is not a move.)")


def _parse_choice(text: str, legal: list[int], s: E.State | None = None, seat: int = 0,
                  deck_style: str = "dragon") -> int | str:
    """An action from the player's input, or a message saying what is wrong with it."""
    t = text.strip()
    if not t:
        return "Please type a move (? for help)."
    if t.isdigit():
        k = int(t)
        if legal and ASK_BASE <= legal[-1] < GIVE_BASE and k != 1:
            return "Type a card to ask for it, or 1 / pass to stop asking."
        if 1 <= k <= len(legal):
            return legal[k - 1]
        return f"There is no move {k}: choose 1..{len(legal)}."
    low = t.lower()
    if low in ("pass", "p", "stop", "decline"):
        return PASS if PASS in legal else "You cannot pass now: choose one of the moves."
    card = card_from_text(t)
    if card is None:
        return f"I did not understand {t!r}. {HELP}"
    for base in (ASK_BASE, GIVE_BASE):
        if base + card in legal and (card != EGG or base == GIVE_BASE):  # R31: never the Egg
            return base + card
    if s is None:
        return f"{card_name(card, deck_style)} is not a legal ask or give now."
    return _why_not(s, seat, card, deck_style)


def _only_pass_reason(s: E.State, seat: int) -> str:
    if s.phase == E.ASK:
        return "There is nothing left to ask for, so you stop asking."
    if not s.plays:
        return "You have no numbered card to lead with, so you pass."
    if s.locked >> seat & 1:
        return "You are locked out of this pile, so you pass."
    return "You cannot beat the pile, so you pass."


def _ask_human(env: raw_env, me: str, phase: str, read: Callable[[str], str], out: TextIO,
               deck_style: str) -> int:
    legal = env.legal_actions()
    s = env.engine_state
    seat = env.agent_name_mapping[me]
    if legal == [PASS]:
        print(f"\n{_only_pass_reason(s, seat)}", file=out)
        return PASS
    print("\n" + table_text(env, me, deck_style), file=out)
    _print_menu(env, legal, phase, out, deck_style)
    while True:
        try:
            text = read("your move> ")
        except EOFError:
            raise QuitGame from None
        low = text.strip().lower()
        if low in ("q", "quit", "exit"):
            raise QuitGame
        if low in ("h", "help", "?", "rules"):
            print(rules_text(env.config, deck_style) + "\n" + HELP, file=out)
            continue
        choice = _parse_choice(text, legal, s, seat, deck_style)
        if isinstance(choice, int):
            print(f"  You: {_move_text(env, choice, deck_style)}", file=out)
            return choice
        print(choice, file=out)


def _print_menu(env: raw_env, legal: list[int], phase: str, out: TextIO,
                deck_style: str) -> None:
    s = env.engine_state
    if phase == "ask":
        victim = env.possible_agents[s.victim]
        print(f"You are the Dragon: ask {victim} for up to {s.asks_left} more card(s), one at "
              f"a time (type a card code such as 1F or BEAST"
              + (", or a name such as 5 of Coins" if deck_style == "tarokka" else "")
              + "), or pass to stop asking.", file=out)
        if s.asked:
            print(f"  asked so far: {cards_text(s.asked, deck_style)}; received: "
                  f"{cards_text(s.hits, deck_style) if s.hits else 'nothing'}", file=out)
        print("  1) pass (stop asking)", file=out)
        asks = sum(1 << (a - ASK_BASE) for a in legal if a != PASS)
        print("  you may ask for: " + cards_text(asks, deck_style), file=out)
        return
    if phase == "give":
        print(f"Give back one card for each card received ({s.gives_left} to go): type its "
              f"number below or name the card.", file=out)
    elif phase == "complete":
        print("You can complete the set out of turn! Play it, or pass to decline.", file=out)
    for k, a in enumerate(legal, start=1):
        print(f"  {k}) {_move_text(env, a, deck_style)}", file=out)
    if len(legal) == 1:
        print("  (your only move: type 1)", file=out)


# -- narration -----------------------------------------------------------------------------
@dataclass
class _Before:
    """What the narration compares with after a step."""

    phase: int
    plays: int
    egg_holder: int
    finish: int
    rounds: int
    hits: int
    top_rank: int


def _snapshot(s: E.State) -> _Before:
    return _Before(s.phase, len(s.plays), s.egg_holder, len(s.finish), len(s.results), s.hits,
                   s.top_rank)


def _ordinal(k: int) -> str:
    return f"{k}{'st' if k == 1 else 'nd' if k == 2 else 'rd' if k == 3 else 'th'}"


def _narrate(env: raw_env, before: _Before, actor: int, action: int, me: int,
             deck_style: str) -> list[str]:
    """What happened in a step, beyond the move itself: a tribute ask's hit or miss (to the
    two tribute players), players going out, a pile clearing (why, and who leads) and the Egg
    changing hands (public from its first hand-off, R19/R20)."""
    s = env.engine_state
    names = env.possible_agents

    def who(q: int) -> str:
        return "you" if q == me else names[q]

    def cap(q: int) -> str:
        return "You" if q == me else names[q]

    if len(s.results) > before.rounds:
        return []  # the round is over: its result is printed next
    lines = []
    kind, a, _ = decode(action)
    if kind == "ask" and me in (s.dragon, s.victim):
        got = s.hits != before.hits
        lines.append(f"  {cap(s.victim)} "
                     + (("hand" if s.victim == me else "hands") + " it over." if got else
                        ("do" if s.victim == me else "does") + " not have it."))
    for q in s.finish[before.finish:]:
        lines.append(f"  {cap(q)} {'are' if q == me else 'is'} out, in "
                     f"{_ordinal(s.finish.index(q) + 1)} place!")
    if before.plays and not s.plays and before.phase in (E.PLAY, E.COMPLETE):
        lead = (f"{who(s.current)} {'lead' if s.current == me else 'leads'} next"
                if s.phase == E.PLAY and s.current >= 0 else "")
        if kind == "pass":
            why = "Everyone else passed"
        elif kind == "dragons":
            why = f"{cap(actor)} played a dragon card"
        else:
            why = f"{cap(actor)} completed the set of {before.top_rank}s"
        lines.append(f"  {why}: the pile clears" + (f"; {lead}." if lead else "."))
    if (s.egg_holder != before.egg_holder and before.phase in (E.PLAY, E.COMPLETE)
            and s.egg_holder >= 0):
        lines.append(f"  {cap(before.egg_holder)} held the Egg and cleared the "
                     f"pile, so the Egg passes to {who(s.egg_holder)}.")
    return lines


def _bot_line(env: raw_env, agent: str, action: int, me_seat: int, deck_style: str
              ) -> str | None:
    """What the human sees of a bot's move (R12, R34: some moves are private)."""
    s = env.engine_state
    if s.phase in (E.ASK, E.GIVE):
        if me_seat not in (s.dragon, s.victim):
            return f"  {agent} takes part in the tribute"
        kind, card, _ = decode(action)
        if kind == "ask":
            return f"  {agent} asks you for {card_name(card, deck_style)}."
        if kind == "give":
            return f"  {agent} gives you back {card_name(card, deck_style)}."
        return f"  {agent} stops asking."
    if s.phase == E.COMPLETE:
        if action == PASS:
            return None  # R12: a declined offer to someone else is not shown
        return f"  {agent} completes the set out of turn: {_move_text(env, action, deck_style)}"
    return f"  {agent}: {_move_text(env, action, deck_style)}"


# -- the match -----------------------------------------------------------------------------
def _lineup(args: argparse.Namespace, config: RulesConfig, n: int) -> dict[int, Agent]:
    bots = list(args.bots) or ["heuristic"]
    lineup: dict[int, Agent] = {}
    others = [q for q in range(n) if q != args.seat]
    for k, q in enumerate(others):
        lineup[q] = make_agent(bots[k % len(bots)], seed=args.seed * 100 + q)
    return lineup


def play_game(args: argparse.Namespace, read: Callable[[str], str], out: TextIO,
              parser: argparse.ArgumentParser | None = None) -> int:
    """Play a match in the terminal. With ``parser``, a bot that cannot be built (a corrupt
    checkpoint, a policy trained for smaller tables) is a usage error of that parser."""
    config = RulesConfig.from_kwargs({**dict(args.rule), "num_players": args.players,
                                      "num_rounds": args.rounds})
    n = config.num_players
    if not 0 <= args.seat < n:
        raise ValueError(f"--seat must be 0..{n - 1} for a table of {n}")
    env = raw_env(deck_style=args.deck_style, **config.to_dict())
    env.reset(seed=args.seed)
    try:
        lineup = _lineup(args, config, n)
        for q, bot in lineup.items():
            bot.start_match(q, config, env.max_players)
    except (AgentSpecError, ValueError) as exc:
        if parser is None:
            raise
        parser.error(str(exc))
    me = env.possible_agents[args.seat]
    save = Path(args.save or f"runs/play-seed{args.seed}-{int(time.time())}.json")
    print(f"You are {me}. Bots: " + ", ".join(f"{env.possible_agents[q]}={b.label}"
                                              for q, b in lineup.items()), file=out)
    print("New to Dragon's Egg? Type ? at any prompt for how to play.", file=out)
    print(HELP, file=out)
    quit_early = None
    try:
        _loop(env, args, lineup, me, read, out)
    except QuitGame:
        quit_early = "You quit."
    except KeyboardInterrupt:
        quit_early = "\nInterrupted."
    if quit_early:
        print(quit_early, file=out)
    try:
        save.parent.mkdir(parents=True, exist_ok=True)
        env.save_replay(str(save))
    except OSError as exc:
        print(f"Could not save the replay to {save}: {exc}", file=out)
        return 1
    if not quit_early:
        print("\nFinal scores: " + ", ".join(f"{a} {sc:+.2f}" for a, sc in env.scores.items()),
              file=out)
    print(f"Match saved to {save} (dragons-egg replay {save})", file=out)
    return 0


def _loop(env: raw_env, args: argparse.Namespace, lineup: dict[int, Agent], me: str,
          read: Callable[[str], str], out: TextIO) -> None:
    style = args.deck_style
    for agent in env.agent_iter():
        if env.terminations[agent]:
            env.step(None)
            continue
        q = env.agent_name_mapping[agent]
        phase = env.phase()
        if q == args.seat:
            action = _ask_human(env, me, phase, read, out, style)
        else:
            obs = env.observe(agent)
            action = lineup[q].act(obs["observation"], obs["action_mask"])
            line = _bot_line(env, agent, action, args.seat, style)
            if line:
                print(line, file=out)
        before = _snapshot(env.engine_state)
        env.step(action)
        for line in _narrate(env, before, q, action, args.seat, style):
            print(line, file=out)
        info = env.infos.get(me, {})
        if "round_result" in info:
            res = info["round_result"]
            print(f"\nRound {res['round'] + 1} over: " + " > ".join(res["finish_order"])
                  + (" (deadlock)" if res["deadlock"] else "")
                  + f"; Dragon {res['dragon']}, Egg {res['egg']}", file=out)
            for bot in lineup.values():
                bot.end_round(res)


# -- replays -------------------------------------------------------------------------------
def _next_text(env: raw_env, move: Move, viewer: str | None) -> str:
    """The ``next:`` line of the replay viewer: the move about to be made, as ``viewer`` may
    see it (R12, R34), and the illegal move that ended a match (``env()``) for what it was."""
    agent, action, illegal = move
    if illegal:
        return f"next: {agent} makes an illegal move, {describe(action)}, which ends the match"
    s = env.engine_state
    hidden = viewer is not None and (
        (env.phase() == "complete" and agent != viewer)
        or (env.phase() in ("ask", "give")
            and env.agent_name_mapping[viewer] not in (s.dragon, s.victim)))
    return f"next: {agent} " + ("acts" if hidden else _move_text(env, action, "dragon"))


def replay_game(args: argparse.Namespace, read: Callable[[str], str], out: TextIO) -> int:
    """Step through a saved match. The whole replay is checked first
    (:func:`dragons_egg_env.replay.iter_replay`), so a faulty file is one
    :class:`ReplayError` before anything is shown."""
    data = load_replay(args.file)
    moves = replay_moves(data)
    viewer = None if args.view in ("all", None) else args.view
    total = len(moves)
    for k, env in iter_replay(data):
        if k == 0 and viewer is not None and viewer not in env.possible_agents:
            raise ReplayError(f"--view must be 'all' or one of "
                              f"{', '.join(env.possible_agents)}; got {viewer!r}")
        print(f"\n--- step {k}/{total} ---", file=out)
        print(env.render_table(viewer=viewer), file=out)
        if k < total:
            print(_next_text(env, moves[k], viewer), file=out)
            if not args.all:
                try:
                    text = read("[Enter] next, q quit> ").strip().lower()
                except (EOFError, KeyboardInterrupt):
                    return 0
                if text in ("q", "quit"):
                    return 0
        elif moves and moves[-1].illegal:
            print(f"The match ended at {moves[-1].agent}'s illegal move.", file=out)
    return 0


# -- arguments -----------------------------------------------------------------------------
def add_play_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seat", type=int_range(0), default=0, help="your seat (default 0)")
    p.add_argument("--bots", nargs="*", default=["heuristic"],
                   help="bot specs for the other seats, used in turn (default heuristic): "
                        "random, greedy, heuristic, ismcts[:iterations=N], ppo[:path=FILE], "
                        "rllib:path=DIR, MODULE:CLASS[:key=value,...]")
    p.add_argument("--players", type=table_size, default=4)
    p.add_argument("--rounds", type=int_range(1), default=3)
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--rule", type=rule_flag, action="append", default=[], metavar="FLAG=VALUE")
    p.add_argument("--deck-style", choices=("dragon", "tarokka"), default="dragon")
    p.add_argument("--save", help="where to save the replay (default runs/play-...json)")


def check_save_path(save: str | None) -> None:
    """A ``ValueError`` when a replay could not be written to ``save`` (checked before the
    match, so a finished match is never lost to a bad path)."""
    if not save:
        return
    p = Path(save)
    if p.is_dir():
        raise ValueError(f"--save {save} is a directory; name a file such as {p / 'm.json'}")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"--save {save}: {parent} is not a directory")
            break


def check_play_args(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Check everything about a ``play`` command line before the match (usage errors of
    ``parser``): the rules, every bot spec (options, checkpoint files) and that each bot
    can play a table of this size, the seat and the save path."""
    try:
        RulesConfig.from_kwargs({**dict(args.rule), "num_players": args.players,
                                 "num_rounds": args.rounds})
        for spec in args.bots:
            check_spec_for_table(spec, args.players)
        check_save_path(args.save)
    except (ConfigError, AgentSpecError, ValueError) as exc:
        parser.error(str(exc))
    if args.seat >= args.players:
        parser.error(f"--seat must be 0..{args.players - 1} for a table of {args.players}")


def stdin_reader(prompt: str) -> str:
    return input(prompt)


__all__ = ["play_game", "replay_game", "add_play_arguments", "check_play_args",
           "check_save_path", "rules_text", "card_from_text", "table_text", "stdin_reader"]
