"""A match against the bots in the browser (the Play page): the server holds the match and
sends the page only what the human's seat may know.

:class:`PlaySession` keeps the environment and the bots. Every payload it makes
(:meth:`PlaySession.payload`) is built from the human's observation alone
(:func:`~dragons_egg.experiments.web.frames.observation_view`: own hand, hand sizes, the
pile, the Egg where the seat knows it, the tribute only to its two players), its legal moves
(its action mask), the optional hints (the shipped network's move probabilities for that
observation) and public facts: the round results and a log of the moves as the human saw
them (a tribute the human is not in and a completion offer to another seat read "acts").
The match is saved as a replay when it ends or when the human leaves
(:meth:`PlaySession.leave`), atomically, under the save folder.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dragons_egg.agents import AgentSpecError, check_spec_for_table, make_agent
from dragons_egg.agents.base import Agent
from dragons_egg.agents.consent import check_consent
from dragons_egg_env import engine as E
from dragons_egg_env.actions import decode
from dragons_egg_env.config import ConfigError, RulesConfig
from dragons_egg_env.dragons_egg_v0 import raw_env
from dragons_egg_env.observation import pad

from .frames import hidden_from, move_text, observation_view

#: The most matches the server holds at once (the oldest finished ones are dropped first).
MAX_SESSIONS = 64


#: A move's verb as the human's own ("You play ...").
_YOU = {"plays": "play", "passes": "pass", "asks": "ask", "gives": "give", "stops": "stop",
        "declines": "decline"}


def own_move_text(s: E.State, action: int) -> str:
    """A move in words as the human's own (``play 2 x 7 (7E 7F)``, ``ask for BEAST``)."""
    verb, _, rest = move_text(s, action).partition(" ")
    return _YOU.get(verb, verb) + (f" {rest}" if rest else "")


class PlayError(ValueError):
    """A request the Play page cannot honour (a bad setting, spec or move): one line."""


@dataclass(frozen=True)
class PlaySettings:
    """A new match's settings as the Play page's form sends them."""

    players: int = 4
    rounds: int = 3
    seed: int = 0
    seat: int = 0
    bots: tuple[str, ...] = ("heuristic",)
    rules: tuple[tuple[str, Any], ...] = ()
    hints: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlaySettings:
        """The settings of a request body; a :class:`PlayError` naming a bad one."""
        def integer(key: str, default: int) -> int:
            value = data.get(key, default)
            if isinstance(value, str) and value.strip().lstrip("-").isdigit():
                value = int(value)
            if isinstance(value, bool) or not isinstance(value, int):
                raise PlayError(f"{key} must be a whole number, got {value!r}")
            return value

        bots = data.get("bots", ["heuristic"])
        if isinstance(bots, str):
            bots = bots.split()
        if not isinstance(bots, list) or not all(isinstance(b, str) for b in bots):
            raise PlayError(f"bots must be a list of agent specs, got {bots!r}")
        rules = data.get("rules", {})
        if not isinstance(rules, dict):
            raise PlayError(f"rules must be an object of rule flags, got {rules!r}")
        seed = integer("seed", 0)
        if seed < 0:
            raise PlayError(f"seed must be >= 0, got {seed}")
        return cls(players=integer("players", 4), rounds=integer("rounds", 3), seed=seed,
                   seat=integer("seat", 0), bots=tuple(b.strip() for b in bots if b.strip())
                   or ("heuristic",), rules=tuple(sorted(rules.items())),
                   hints=bool(data.get("hints", False)))

    def config(self) -> RulesConfig:
        """The rules; a :class:`PlayError` for a bad flag or value."""
        flags = dict(self.rules)
        try:
            parsed = {k: RulesConfig.parse_value(k, v) if isinstance(v, str) else v
                      for k, v in flags.items() if k not in ("num_players", "num_rounds")}
            return RulesConfig.from_kwargs({**parsed, "num_players": self.players,
                                            "num_rounds": self.rounds})
        except (ConfigError, ValueError, TypeError) as exc:
            raise PlayError(str(exc)) from None


class Hints:
    """The shipped network's move probabilities for an observation (``ppo``'s policy file,
    :mod:`dragons_egg.agents.netpolicy`), loaded once."""

    def __init__(self) -> None:
        from dragons_egg.agents.netpolicy import cached_policy
        from dragons_egg.agents.ppo import SHIPPED

        self.net = cached_policy(SHIPPED)

    def probabilities(self, obs: np.ndarray[Any, Any], mask: np.ndarray[Any, Any],
                      max_players: int) -> dict[int, float] | None:
        """Action -> probability for the legal actions; ``None`` when the network cannot
        play a table this large."""
        m = self.net.max_players
        if max_players > m:
            return None
        x = pad(obs, max_players, m) if max_players < m else obs
        z = np.asarray(self.net.logits(x, mask), dtype=np.float64)
        legal = np.flatnonzero(mask)
        w = np.exp(z[legal] - z[legal].max())
        p = w / w.sum()
        return {int(a): round(float(q), 4) for a, q in zip(legal, p, strict=True)}


class PlaySession:
    """One match of a human against bots, held by the server."""

    def __init__(self, settings: PlaySettings, save_dir: Path,
                 allowed: Sequence[str] = (), hints: Hints | None = None) -> None:
        config = settings.config()
        n = config.num_players
        if not 0 <= settings.seat < n:
            raise PlayError(f"seat must be 0..{n - 1} for a table of {n}")
        try:
            # a spec typed in the page is not typed on the command line: one that runs code
            # needs `dragons-egg serve --allow-code SPEC`
            check_consent(settings.bots, "the Play page", allowed)
            for spec in settings.bots:
                check_spec_for_table(spec, n)
        except (AgentSpecError, ValueError) as exc:
            raise PlayError(str(exc)) from None
        self.id = secrets.token_urlsafe(9)
        self.settings = settings
        self.seat = settings.seat
        self.lock = threading.Lock()
        self.env = raw_env(**config.to_dict())
        self.env.reset(seed=settings.seed)
        self.names = self.env.possible_agents
        self.bots: dict[int, Agent] = {}
        others = [q for q in range(n) if q != self.seat]
        try:
            for k, q in enumerate(others):
                bot = make_agent(settings.bots[k % len(settings.bots)],
                                 seed=settings.seed * 100 + q)
                bot.start_match(q, config, self.env.max_players)
                self.bots[q] = bot
        except (AgentSpecError, ValueError) as exc:
            raise PlayError(str(exc)) from None
        self.labels = ["you" if q == self.seat else self.bots[q].label for q in range(n)]
        self.hints = hints if settings.hints else None
        self.save_dir = save_dir
        self.saved: Path | None = None
        #: the moves as the human saw them: ``{"step": k, "text": ...}`` (k: the move's index)
        self.log: list[dict[str, Any]] = []
        self.steps = 0
        self.left = False
        self.started = time.time()
        self._bots_play()

    # -- the match ------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.env.engine_state.phase == E.DONE

    def _line(self, actor: int, action: int) -> str | None:
        """A move as the human sees it (before it is made)."""
        s = self.env.engine_state
        who = "You" if actor == self.seat else self.names[actor]
        if hidden_from(s, actor, self.seat):
            return None if s.phase == E.COMPLETE else f"{who} takes part in the tribute"
        if s.phase == E.COMPLETE and decode(action)[0] == "pass":
            return None if actor != self.seat else "You decline the completion"
        text = own_move_text(s, action) if actor == self.seat else move_text(s, action)
        return f"{who} {text}"

    def _step(self, actor: int, action: int) -> None:
        line = self._line(actor, action)
        k = self.steps
        if line:
            self.log.append({"step": k, "text": line})
        before = len(self.env.engine_state.results)
        self.env.step(action)
        self.steps += 1
        s = self.env.engine_state
        if len(s.results) > before:
            res = s.results[-1]
            self.log.append({"step": k, "text": f"Round {res.round + 1} over: "
                             + " > ".join(self.names[q] for q in res.order)
                             + (" (deadlock)" if res.deadlock else "")})
            info = self.env.infos.get(self.names[self.seat], {})
            result = info.get("round_result")
            if result is not None:
                for bot in self.bots.values():
                    bot.end_round(result)

    def _bots_play(self) -> None:
        """Let the bots move until it is the human's turn or the match is over (then it is
        saved)."""
        env = self.env
        while not self.done and env.engine_state.current != self.seat:
            q = env.engine_state.current
            obs = env.observe(self.names[q])
            self._step(q, int(self.bots[q].act(obs["observation"], obs["action_mask"])))
        if self.done:
            self.save()

    def move(self, action: Any) -> None:
        """The human's move; a :class:`PlayError` for one that is not legal now."""
        if self.done or self.left:
            raise PlayError("the match is over")
        if isinstance(action, bool) or not isinstance(action, int):
            raise PlayError(f"a move is an action number, got {action!r}")
        legal = E.legal_mask(self.env.engine_state)
        if not 0 <= action < 134 or not legal >> action & 1:
            raise PlayError(f"action {action} is not one of your legal moves")
        self._step(self.seat, action)
        self._bots_play()

    def leave(self) -> Path:
        """The human leaves: the match so far is saved (a partial replay)."""
        self.left = True
        return self.save()

    def save(self) -> Path:
        """Write the match as a replay under the save folder (once per state; atomic)."""
        if self.saved is None:
            self.save_dir.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self.started))
            self.saved = self.save_dir / f"play-{stamp}-seed{self.settings.seed}-{self.id}.json"
        self.env.save_replay(self.saved)
        return self.saved

    # -- what the page gets -----------------------------------------------------------------
    def legal_moves(self) -> list[dict[str, Any]]:
        """The human's legal moves now, with labels (empty when it is not its turn)."""
        s = self.env.engine_state
        if self.done or self.left or s.current != self.seat:
            return []
        out = []
        for a in E.legal_actions(s):
            out.append({"action": a, "label": own_move_text(s, a), "kind": decode(a)[0]})
        return out

    def payload(self) -> dict[str, Any]:
        """Everything the page is sent about the match: the human's view (its observation),
        its legal moves, the hints, the public log and results, and the saved replay."""
        me = self.names[self.seat]
        obs = self.env.observe(me)
        rounds = self.env.config.num_rounds
        legal = self.legal_moves()
        hints = None
        if self.hints is not None and legal:
            hints = self.hints.probabilities(obs["observation"], obs["action_mask"],
                                             self.env.max_players)
        s = self.env.engine_state
        return {
            "id": self.id, "seat": self.seat, "names": self.names, "labels": self.labels,
            "step": self.steps,
            "view": observation_view(obs["observation"], self.seat, self.names, rounds),
            "legal": legal,
            "hints": None if hints is None else [{"action": a, "p": p}
                                                 for a, p in hints.items()],
            "log": [dict(x) for x in self.log],
            "results": [{"round": r.round + 1, "order": list(r.order), "deadlock": r.deadlock,
                         "rewards": [round(x, 6) for x in r.rewards]} for r in s.results],
            "done": self.done, "left": self.left,
            "saved": str(self.saved) if self.saved is not None else None,
        }


class Sessions:
    """The matches the server holds, by id (thread-safe)."""

    def __init__(self, save_dir: Path, allowed: Sequence[str] = ()) -> None:
        self.save_dir = save_dir
        self.allowed = tuple(allowed)
        self._by_id: dict[str, PlaySession] = {}
        self._lock = threading.Lock()
        self._hints: Hints | None = None

    def hints(self) -> Hints:
        with self._lock:
            if self._hints is None:
                self._hints = Hints()
            return self._hints

    def new(self, settings: PlaySettings) -> PlaySession:
        """Start a match (its bots move first if they act before the human)."""
        session = PlaySession(settings, self.save_dir, self.allowed,
                              self.hints() if settings.hints else None)
        with self._lock:
            if len(self._by_id) >= MAX_SESSIONS:
                old = sorted(self._by_id.values(),
                             key=lambda x: (not (x.done or x.left), x.started))[0]
                if not (old.done or old.left):
                    old.leave()
                del self._by_id[old.id]
            self._by_id[session.id] = session
        return session

    def get(self, sid: str) -> PlaySession:
        with self._lock:
            session = self._by_id.get(sid)
        if session is None:
            raise KeyError(sid)
        return session

    def leave_all(self) -> None:
        """Save every match still in play (the server stops)."""
        with self._lock:
            sessions = list(self._by_id.values())
        for s in sessions:
            with s.lock:
                if not (s.done or s.left):
                    s.leave()


__all__ = ["own_move_text", "PlayError", "PlaySettings", "PlaySession", "Sessions", "Hints",
           "MAX_SESSIONS"]
