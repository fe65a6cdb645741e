"""What the browser draws, built in Python: one *view* of the table per step of a replay.

A view is a plain JSON object (:func:`engine_view`, :func:`observation_view`) with the same
keys whoever looks: the round and phase, whose turn it is, the seats (hand or hand size,
score, passed, locked, out, Dragon, tribute payer, Egg), the pile, the cards played this
round and the tribute exchange. Two kinds are made:

- the *all-hands* view (:func:`engine_view`) is the engine's state as it is (every hand, the
  plays on the pile one by one, the tribute, the Egg);
- a *seat view* (:func:`observation_view`) is that seat's observation vector decoded
  (:func:`dragons_egg_env.observation.decode_observation`) and nothing else: its own hand,
  the others' hand sizes, the Egg's holder only where the seat knows it (R19), the tribute
  only to its two players (R34), the completion offer only to the offered seat (R12). A field
  the observation does not hold is ``null`` (the plays on the pile one by one: the seat sees
  the pile's cards and its top play).

:func:`replay_frames` turns a replay into frames, one per step (before each move, and once
at the end), each with the all-hands view, every seat's view and the next move as each may
see it; the whole replay is checked first (:func:`dragons_egg_env.replay.iter_replay`), so a
replay that does not verify is one :class:`~dragons_egg_env.replay.ReplayError` and no frame.
The viewer page and ``dragons-egg replay FILE --html`` draw the same frames.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from dragons_egg_env import engine as E
from dragons_egg_env.actions import decode
from dragons_egg_env.cards import card_name, codes
from dragons_egg_env.dragons_egg_v0 import raw_env
from dragons_egg_env.observation import ObsVector, decode_observation
from dragons_egg_env.replay import Move, iter_replay, load_replay, replay_moves

#: The frames format (the ``format`` of :func:`replay_frames`' result).
FRAMES_FORMAT = "dragons-egg-frames/1"


def _score(x: float) -> float:
    return round(float(x), 6)


def engine_view(s: E.State, names: Sequence[str]) -> dict[str, Any]:
    """The all-hands view of the engine state ``s`` (seats named ``names``)."""
    done = s.phase == E.DONE
    rounds = s.config.num_rounds
    seats = []
    for q in range(s.n):
        seats.append({
            "seat": q, "name": names[q], "hand": codes(s.hands[q]),
            "hand_size": s.hands[q].bit_count(), "score": _score(s.scores[q]),
            "passed": bool(s.passed >> q & 1), "locked": bool(s.locked >> q & 1) and not done,
            "out": s.finish.index(q) if q in s.finish and not done else -1,
            "dragon": q == s.dragon, "payer": q == s.victim,
            "egg": q == s.egg_holder and not done,
        })
    return {
        "viewer": None, "round": min(s.round_idx + 1, rounds), "rounds": rounds,
        "phase": s.phase_name, "to_act": -1 if done else s.current,
        "turn": -1 if done else s.turn,
        "pile": codes(s.pile), "plays": [[p, codes(c)] for p, c in s.plays],
        "top": [s.top_rank, s.top_count], "last_player": s.last_player if s.plays else -1,
        "played": codes(s.played), "egg_holder": -1 if done else s.egg_holder,
        "dragon": s.dragon, "payer": s.victim,
        "tribute": _engine_tribute(s), "seats": seats,
    }


def _engine_tribute(s: E.State) -> dict[str, Any] | None:
    if s.dragon < 0 or s.round_idx == 0:
        return None
    return {"asked": codes(s.asked), "taken": codes(s.hits), "given": codes(s.given),
            "asks_left": s.asks_left}


def observation_view(obs: ObsVector, viewer: int, names: Sequence[str], num_rounds: int
                     ) -> dict[str, Any]:
    """The view of seat ``viewer`` from its observation vector ``obs`` alone (the other
    arguments name the seats and scale the scores back, as the vector holds score /
    num_rounds); seats are absolute in the result, as in :func:`engine_view`."""
    v = decode_observation(obs, num_rounds=num_rounds)
    n = v.num_players

    def absolute(rel: int) -> int:
        return -1 if rel < 0 else (viewer + rel) % n

    done = v.phase == "done"
    seats: list[dict[str, Any]] = []
    for rel in range(n):
        q = absolute(rel)
        seats.append({
            "seat": q, "name": names[q], "hand": codes(v.hand) if rel == 0 else None,
            "hand_size": v.hand_sizes[rel], "score": _score(v.scores[rel]),
            "passed": rel in v.passed_seats, "locked": rel in v.locked_seats,
            "out": v.out_place[rel], "dragon": rel == v.dragon, "payer": rel == v.tribute_payer,
            "egg": rel == v.egg_holder,
        })
    seats.sort(key=lambda x: x["seat"])
    party = v.dragon >= 0 and 0 in (v.dragon, v.tribute_payer)
    tribute = ({"asked": v.tribute_asked_cards, "taken": v.tribute_taken_cards,
                "given": v.tribute_given_cards, "asks_left": v.asks_left} if party else None)
    return {
        "viewer": viewer, "round": min(int(round(v.round_fraction * num_rounds)) + 1,
                                       num_rounds),
        "rounds": num_rounds, "phase": v.phase, "to_act": -1 if done else absolute(v.to_act),
        "turn": -1 if done else absolute(v.to_act),
        "pile": v.pile_cards, "plays": None, "top": [max(v.top_number, 0),
                                                     max(v.top_count, 0)],
        "last_player": absolute(v.last_player), "played": v.played_cards,
        "egg_holder": absolute(v.egg_holder), "dragon": absolute(v.dragon),
        "payer": absolute(v.tribute_payer), "tribute": tribute, "seats": seats,
    }


def move_text(s: E.State, action: int, deck_style: str = "dragon") -> str:
    """A move in words for the state it is made in (``play 2 x 7 (7E 7F)``, ``ask for
    BEAST``, ``pass``)."""
    kind, a, b = decode(action)
    if kind == "pass":
        return {E.ASK: "stops asking", E.COMPLETE: "declines the completion",
                E.GIVE: "passes"}.get(s.phase, "passes")
    if kind in ("ask", "give"):
        return ("asks for " if kind == "ask" else "gives back ") + card_name(a, deck_style)
    cards = " ".join(codes(E.action_cards(s, action)))
    if kind == "dragons":
        return f"plays {'a dragon card' if a == 1 else f'{a} dragon cards'} ({cards})"
    return f"plays {b} x {a} ({cards})"


def hidden_from(s: E.State, actor: int, viewer: int) -> bool:
    """Whether ``viewer`` does not see what ``actor`` does now: a completion offer to
    another seat (R12) and the tribute to a seat not in it (R34)."""
    if s.phase == E.COMPLETE:
        return actor != viewer
    if s.phase in (E.ASK, E.GIVE):
        return viewer not in (s.dragon, s.victim)
    return False


def _next(s: E.State, move: Move, names: Sequence[str], viewer: int | None) -> str:
    seat = names.index(move.agent)
    who = names[seat]
    if move.illegal:
        return f"{who} makes an illegal move (action {move.action}), which ends the match"
    if viewer is not None and hidden_from(s, seat, viewer):
        return f"{who} acts (hidden from this seat)"
    return f"{who} {move_text(s, move.action)}"


def _results(s: E.State, names: Sequence[str]) -> list[dict[str, Any]]:
    """The rounds played so far: public (every seat sees who goes out when)."""
    return [{"round": r.round + 1, "order": list(r.order), "deadlock": r.deadlock,
             "rewards": [_score(x) for x in r.rewards]} for r in s.results]


def replay_frames(data: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, Any]:
    """Every step of a replay (a dict or a path) as frames for the viewer: ``meta`` (the
    seats, the rules, what the check proved, where each round and tribute starts, the final
    exact scores) and ``frames`` (per step: the all-hands view, each seat's view and the next
    move as each may see it). A :class:`~dragons_egg_env.replay.ReplayError` when the replay
    does not verify: nothing is built from it."""
    if isinstance(data, (str, os.PathLike)):
        data = load_replay(data)
    moves = replay_moves(data)
    frames: list[dict[str, Any]] = []
    env: raw_env | None = None
    round_starts: list[int] = []
    tribute_starts: list[int] = []
    for k, env in iter_replay(data):
        s = env.engine_state
        names = env.possible_agents
        n = env.num_agents
        rounds = env.config.num_rounds
        views = [observation_view(env.observe(a)["observation"], q, names, rounds)
                 for q, a in enumerate(names)]
        frame: dict[str, Any] = {"step": k, "round": min(s.round_idx + 1, rounds),
                                 "phase": s.phase_name, "all": engine_view(s, names),
                                 "seats": views, "results": _results(s, names)}
        if k < len(moves):
            frame["next"] = {"all": _next(s, moves[k], names, None),
                             "seats": [_next(s, moves[k], names, q) for q in range(n)]}
        else:
            frame["next"] = None
        if len(round_starts) < frame["round"]:
            round_starts.append(k)
        if s.phase == E.ASK and len(tribute_starts) < frame["round"] - 1:
            tribute_starts.append(k)
        frames.append(frame)
    assert env is not None  # iter_replay yields at least the end
    check = env.replay_check
    meta = {
        "names": env.possible_agents, "num_players": env.num_agents,
        "num_rounds": env.config.num_rounds, "rules": env.config.to_dict(),
        "seed": data.get("seed"), "moves": len(moves), "check": str(check),
        "finished": bool(check and check.finished),
        "illegal_move": list(env.illegal_move) if env.illegal_move else None,
        "scores": [str(Fraction(x)) for x in data.get("scores") or []],
        "round_starts": round_starts, "tribute_starts": tribute_starts,
    }
    return {"format": FRAMES_FORMAT, "meta": meta, "frames": frames}


__all__ = ["FRAMES_FORMAT", "engine_view", "observation_view", "move_text", "hidden_from",
           "replay_frames"]
