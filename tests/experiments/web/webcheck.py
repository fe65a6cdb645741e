"""What the web tests check pages and payloads against: the engine's states and the seats'
observations of a replay, and the rule that the Play page receives no other seat's hidden
cards."""

import json
import re
from fractions import Fraction

from dragons_egg_env import engine as E
from dragons_egg_env.actions import decode, describe
from dragons_egg_env.cards import codes
from dragons_egg_env.observation import decode_observation
from dragons_egg_env.replay import iter_replay

CARD = re.compile(r"\b(?:10|[1-9])[EWFL]\b|\b(?:BEAST|DARKLORD|HORSEMAN|EXECUTIONER|EGG)\b")


def engine_steps(replay):
    """Per step of the replay: what the all-hands view must draw, from the engine state."""
    out = []
    for _, env in iter_replay(replay):
        s = env.engine_state
        done = s.phase == E.DONE
        out.append({
            "round": min(s.round_idx + 1, s.config.num_rounds), "phase": s.phase_name,
            "to_act": -1 if done else s.current, "egg": -1 if done else s.egg_holder,
            "pile": codes(s.pile), "hands": [codes(h) for h in s.hands],
            "scores": [round(x, 6) for x in s.scores],
        })
    return out


def seat_steps(replay, seat):
    """Per step: what seat ``seat``'s view must draw, from its observation alone."""
    out = []
    for _, env in iter_replay(replay):
        n = env.num_agents
        v = decode_observation(env.observe(f"player_{seat}")["observation"],
                               num_rounds=env.config.num_rounds)
        out.append({"hand": v.hand_cards, "sizes": [v.hand_sizes[(q - seat) % n]
                                                    for q in range(n)],
                    "egg": -1 if v.egg_holder < 0 else (seat + v.egg_holder) % n,
                    "pile": v.pile_cards})
    return out


def exact(scores):
    return [float(Fraction(x)) for x in scores]


def _known(state, seat):
    known = set(codes(state.hands[seat])) | set(codes(state.pile)) | set(codes(state.played))
    if seat in (state.dragon, state.victim):
        known |= set(codes(state.asked)) | set(codes(state.hits)) | set(codes(state.given))
    return known


def _hidden(state, seat):
    """The cards in the other seats' hands that ``seat`` does not know of."""
    return {c for q in range(state.n) if q != seat for c in codes(state.hands[q])} - \
        _known(state, seat)


def leaks(payload, states, moves, seat):
    """The other seats' hidden cards that ``payload`` (what the page was sent) names: none may
    appear beyond what the seat knows (its hand, the pile and the cards played this round, and
    the tribute exchange when it is one of its two players). ``states[k]`` is the engine state
    before move ``k`` of the saved replay (``moves[k]``, ``(seat, action)``).

    The payload is read at its step; each line of its log at the step of the move it tells,
    with that move's cards known when it is a play (public) or a tribute move of an exchange
    the seat is in. The labels of the seat's own ask moves name every card it may ask for,
    which tells nothing of who holds them, and are left out."""
    found = set()
    state = states[payload["step"]]
    shown = {k: v for k, v in payload.items() if k != "log"}
    shown["legal"] = [m for m in payload.get("legal", []) if m.get("kind") != "ask"]
    found |= set(CARD.findall(json.dumps(shown))) & _hidden(state, seat)
    for entry in payload["log"]:
        before = states[entry["step"]]
        actor, action = moves[entry["step"]]
        kind = decode(action)[0]
        public = set()
        if kind in ("play", "dragons") or seat in (before.dragon, before.victim):
            public = set(codes(E.action_cards(before, action))) if kind in ("play", "dragons") \
                else set(CARD.findall(describe(action)))
        found |= (set(CARD.findall(entry["text"])) & _hidden(before, seat)) - public
    return sorted(found)


def states_of(replay):
    """The engine state before each move of a replay, and at its end (copies)."""
    return [env.engine_state.clone() for _, env in iter_replay(replay)]
