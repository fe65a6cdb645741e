"""Dragon's Egg as an OpenSpiel game: importing this module registers ``python_dragons_egg``.

Needs the ``openspiel`` extra (``pip install 'dragons-egg[openspiel]'``); nothing else in the
package imports this module or ``pyspiel``. ``docs/openspiel.md`` describes the design:

- Dealing is explicit chance: in round 1 one chance node draws the dealer (uniform over the
  seats, R4), then every round deals 45 chance nodes, one per card, each uniform over the
  cards left; the ``k``-th card dealt goes to seat ``dealer + 1 + k`` (R4). Later rounds'
  dealer is the last Egg holder (no chance node).
- Player actions are the 134 actions of :mod:`dragons_egg_env.actions` with their names.
- Rewards are per round (R27): the step that ends a round rewards every seat its round reward;
  :meth:`DragonsEggState.returns` is the match score (R28).
- The observation tensor is our observation vector (``docs/observation.md``, padded to the
  table size); the information-state tensor is the player's visible event history as
  ``(kind, a, b, c)`` tokens (see :data:`TOKEN_KINDS`).
- ``resample_from_infostate`` uses the determinisation of ``dragons_egg.agents.sampling``;
  that module lives above this package (the layers of ``docs/architecture.md``), so the
  sampler is handed in with :func:`set_world_sampler`;
  ``dragons_egg.agents.openspiel_agents.install_sampler()`` hands in that one (the
  ``openspiel-ismcts`` agent and the bot wrappers call it).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from .extras import require_imports

require_imports("dragons_egg_env.openspiel", "openspiel")

import pyspiel  # type: ignore[import-not-found, import-untyped, unused-ignore]  # noqa: E402

from . import engine as E  # noqa: E402
from .actions import ASK_BASE, GIVE_BASE, NUM_ACTIONS, PASS, describe  # noqa: E402
from .cards import CARD_CODES, NUM_CARDS, codes  # noqa: E402
from .config import MAX_PLAYERS, MIN_PLAYERS, RulesConfig  # noqa: E402
from .observation import Encoder, ObsView, decode_observation, layout  # noqa: E402

GAME_NAME = "python_dragons_egg"

#: The kinds of information-state tokens ``(kind, a, b, c)``: what one player saw of one move.
TOKEN_KINDS = {
    1: "dealer: a = the dealer's seat (public)",
    2: "a card dealt to this player: a = the card",
    3: "a card dealt to another seat: a = that seat",
    4: "a public move: a = seat, b = action, c = the cards put down (their 4-bit suit nibble)",
    5: "this player declined an offered completion (R12; private)",
    6: "a tribute ask seen by its two players: a = card, b = 1 if handed over (R32)",
    7: "the Dragon stopped asking (seen by the two players)",
    8: "a tribute card moved to the Dragon (others see the hand sizes change)",
    9: "the asks are over (others)",
    10: "a card given back, seen by the two players: a = card (R33)",
    11: "a card given back (others)",
    12: "a resampled hand of this seat: a, b, c = its card bits 0-14, 15-29, 30-44",
}

WorldSampler = Callable[[ObsView, RulesConfig, random.Random], E.State]
_world_sampler: WorldSampler | None = None


def set_world_sampler(sampler: WorldSampler) -> None:
    """Hand in the determinisation that ``resample_from_infostate`` uses (a function
    ``(view, config, rng) -> engine state`` with the observer at seat 0, as
    ``dragons_egg.agents.sampling.sample_world``)."""
    global _world_sampler
    _world_sampler = sampler


def _flag_default(name: str) -> Any:
    return RulesConfig.flag_info(name)["default"]


_FLAGS = tuple(f for f in RulesConfig.field_names() if f not in ("num_players",))
_PARAMS: dict[str, Any] = {"players": _flag_default("num_players"),
                           **{f: _flag_default(f) for f in _FLAGS}}

_GAME_TYPE = pyspiel.GameType(
    short_name=GAME_NAME,
    long_name="Python Dragon's Egg",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.REWARDS,
    max_num_players=MAX_PLAYERS,
    min_num_players=MIN_PLAYERS,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification=_PARAMS,
)


def config_from_params(params: dict[str, Any]) -> RulesConfig:
    """The :class:`RulesConfig` of an OpenSpiel parameter dict (``players`` for
    ``num_players``; every other rule flag by its own name), checked as ``env()`` checks it:
    a bad value or an unknown name is a one-line ``ConfigError``."""
    kwargs = {("num_players" if k == "players" else k): v for k, v in params.items()}
    return RulesConfig.from_kwargs(kwargs)


def max_game_length(config: RulesConfig) -> int:
    """An upper bound on the moves (chance included) of a match: per round the 45 cards dealt
    (and round 1's dealer), the tribute (R31, R33) and, per card played, the play, a pass of
    every other seat, an offered completion and the passes of a lead (R8, R12, R17)."""
    n = config.num_players
    per_round = NUM_CARDS + 1 + 2 * config.tribute_asks + 1 + NUM_CARDS * (2 * n + 2)
    return config.num_rounds * per_round


class DragonsEggGame(pyspiel.Game):  # type: ignore[misc]
    """The OpenSpiel game (``pyspiel.load_game("python_dragons_egg", {"players": 5})``)."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        full = {**_PARAMS, **(params or {})}
        self.config = config_from_params(full)
        c = self.config
        self.max_len = max_game_length(c)
        info = pyspiel.GameInfo(
            num_distinct_actions=NUM_ACTIONS,
            max_chance_outcomes=NUM_CARDS,
            num_players=c.num_players,
            min_utility=-float(c.num_rounds),
            max_utility=float(c.num_rounds),
            utility_sum=0.0,
            max_game_length=self.max_len)
        super().__init__(_GAME_TYPE, info, full)
        self.encoder = Encoder(c.num_players, c.num_players, c.num_rounds)

    def new_initial_state(self) -> DragonsEggState:
        """A match before its first deal."""
        return DragonsEggState(self)

    def make_py_observer(self, iig_obs_type: Any = None,
                         params: dict[str, Any] | None = None) -> Any:
        """The information-state observer (``perfect_recall``) or the observation one."""
        if params:
            raise ValueError(f"observation parameters are not supported; got {params}")
        if iig_obs_type is not None and iig_obs_type.perfect_recall:
            return InfoStateObserver(self)
        return ObservationObserver(self)


class _Match:
    """The Python side of a state: the engine state, the deal in progress and every player's
    visible history (copied cheaply on clone: the tokens are immutable tuples)."""

    def __init__(self, config: RulesConfig) -> None:
        self.s = E.new_match(config)
        self.n = config.num_players
        self.deck: list[int] = []  # cards dealt so far this round
        self.tokens: list[list[tuple[int, int, int, int]]] = [[] for _ in range(self.n)]
        self.public: list[tuple[int, int, int, int]] = []  # what a spectator sees
        self.rewards = [0.0] * self.n

    def __deepcopy__(self, memo: dict[int, Any]) -> _Match:
        m = _Match.__new__(_Match)
        m.s = self.s.clone()
        m.n = self.n
        m.deck = self.deck[:]
        m.tokens = [t[:] for t in self.tokens]
        m.public = self.public[:]
        m.rewards = self.rewards[:]
        return m

    def emit(self, per_seat: list[tuple[int, int, int, int] | None],
             public: tuple[int, int, int, int] | None) -> None:
        for q, tok in enumerate(per_seat):
            if tok is not None:
                self.tokens[q].append(tok)
        if public is not None:
            self.public.append(public)


def _nibble(cards: int) -> int:
    if not cards:
        return 0
    sh = ((cards & -cards).bit_length() - 1) & ~3
    return (cards >> sh) & 15


class DragonsEggState(pyspiel.State):  # type: ignore[misc]
    """A match in progress (see the module docstring)."""

    def __init__(self, game: DragonsEggGame) -> None:
        super().__init__(game)
        self.config = game.config
        self.m = _Match(game.config)

    # -- chance --------------------------------------------------------------------------
    def _dealer_pending(self) -> bool:
        s = self.m.s
        return s.phase == E.DEAL and s.round_idx == 0 and s.dealer < 0

    def current_player(self) -> int:
        """The seat to act (in ``COMPLETE``, the offered completer), chance or terminal."""
        s = self.m.s
        if s.phase == E.DONE:
            return int(pyspiel.PlayerId.TERMINAL)
        if s.phase == E.DEAL:
            return int(pyspiel.PlayerId.CHANCE)
        return int(s.current)

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """Round 1's dealer (uniform over the seats), then each card left, uniformly."""
        if self._dealer_pending():
            return [(d, 1.0 / self.m.n) for d in range(self.m.n)]
        left = sorted(set(range(NUM_CARDS)) - set(self.m.deck))
        p = 1.0 / len(left)
        return [(c, p) for c in left]

    def _legal_actions(self, player: int) -> list[int]:
        return E.legal_actions(self.m.s)

    def _apply_action(self, action: int) -> None:
        m = self.m
        s = m.s
        if s.phase == E.DEAL:  # the round rewards stay until the next player's move
            self._deal(int(action))
            return
        m.rewards = [0.0] * m.n
        self._play(int(action))

    def _deal(self, x: int) -> None:
        m, s, n = self.m, self.m.s, self.m.n
        if self._dealer_pending():
            s.dealer = x
            tok = (1, x, 0, 0)
            m.emit([tok] * n, tok)
            return
        if not m.deck and s.round_idx > 0:
            s.dealer = s.results[-1].egg
        seat = (s.dealer + 1 + len(m.deck)) % n
        m.deck.append(x)
        hidden = (3, seat, 0, 0)
        m.emit([(2, x, 0, 0) if q == seat else hidden for q in range(n)], hidden)
        if len(m.deck) == NUM_CARDS:
            dealer = s.dealer
            E.deal(s, E.deal_from_deck(m.deck, n, dealer))
            s.dealer = dealer
            m.deck = []

    def _play(self, a: int) -> None:
        m, s, n = self.m, self.m.s, self.m.n
        ph, q = s.phase, s.current
        rounds = len(s.results)
        if ph == E.PLAY or (ph == E.COMPLETE and a != PASS):
            tok = (4, q, a, _nibble(E.action_cards(s, a)))
            E.step(s, a)
            m.emit([tok] * n, tok)
        elif ph == E.COMPLETE:
            E.step(s, a)
            m.emit([(5, q, 0, 0) if r == q else None for r in range(n)], None)
        elif ph == E.ASK:
            d, v = s.dragon, s.victim
            hits = s.hits
            E.step(s, a)
            if a == PASS:
                party: tuple[int, int, int, int] = (7, 0, 0, 0)
                hit = 0
            else:
                hit = int(s.hits != hits)
                party = (6, a - ASK_BASE, hit, 0)
            if hit:
                m.emit([party if r in (d, v) else (8, 0, 0, 0) for r in range(n)], (8, 0, 0, 0))
            else:
                m.emit([party if r in (d, v) else None for r in range(n)], None)
            if s.phase != E.ASK:
                over = (9, 0, 0, 0)
                m.emit([None if r in (d, v) else over for r in range(n)], over)
        else:  # GIVE
            d, v = s.dragon, s.victim
            card = a - GIVE_BASE
            E.step(s, a)
            gave = (11, 0, 0, 0)
            m.emit([(10, card, 0, 0) if r in (d, v) else gave for r in range(n)], gave)
        if len(s.results) > rounds:
            m.rewards = list(s.results[-1].rewards)

    # -- results -------------------------------------------------------------------------
    def _action_to_string(self, player: int, action: int) -> str:
        if player == pyspiel.PlayerId.CHANCE:
            if self._dealer_pending():
                return f"dealer {action}"
            return f"deal {CARD_CODES[action]}"
        return describe(int(action))

    def is_terminal(self) -> bool:
        """The match is over (R26)."""
        return bool(self.m.s.phase == E.DONE)

    def returns(self) -> list[float]:
        """Every seat's match score so far (R28)."""
        return [float(x) for x in self.m.s.scores]

    def rewards(self) -> list[float]:
        """The round rewards of the last player's move (all zeros unless it ended a round;
        they stay through the next round's deal)."""
        return list(self.m.rewards)

    def resample_from_infostate(self, player_id: int, probability_sampler: Any) -> Any:
        """A state in ``player_id``'s information state, its hidden cards drawn by the
        determinisation handed to :func:`set_world_sampler`; the other seats' histories are
        the public ones plus their resampled hands. Only at a decision node."""
        if _world_sampler is None:
            raise RuntimeError("resample_from_infostate needs the determinisation: import "
                               "dragons_egg.agents.openspiel_agents first")
        s = self.m.s
        if s.phase in (E.DEAL, E.DONE):
            raise ValueError("resample_from_infostate works at decision nodes only")
        p, n = int(player_id), self.m.n
        game = self.get_game()
        view = decode_observation(game.encoder.encode(s, p), num_rounds=self.config.num_rounds)
        rng = random.Random(int(probability_sampler() * 2.0 ** 53))
        w = _world_sampler(view, self.config, rng)

        def seat(j: int) -> int:
            return j if j < 0 else (j + p) % n

        def seats(mask: int) -> int:
            return sum(1 << seat(j) for j in range(n) if mask >> j & 1)

        hands = [0] * n
        for j in range(n):
            hands[seat(j)] = w.hands[j]
        world = E.state_from_info(
            self.config, hands=hands, phase=w.phase, current=seat(w.current),
            turn=seat(w.turn), round_index=s.round_idx, played=s.played, pile=s.pile,
            top_number=s.top_rank, top_count=s.top_count, last_player=s.last_player,
            passed=s.passed, locked=s.locked, finish=s.finish[:], scores=s.scores[:],
            dragon=s.dragon, victim=s.victim, asked=w.asked, hits=w.hits, given=w.given,
            asks_left=w.asks_left, egg_known=seats(w.egg_known),
            plays=s.plays[:], results=s.results[:], dealer=s.dealer)
        out = self.clone()
        out.m.s = world
        for q in range(n):
            if q != p:
                h = world.hands[q]
                out.m.tokens[q] = self.m.public[:] + [
                    (12, h & 0x7FFF, h >> 15 & 0x7FFF, h >> 30 & 0x7FFF)]
        return out

    def __str__(self) -> str:
        s = self.m.s
        hands = " / ".join(" ".join(codes(h)) for h in s.hands)
        return (f"round {s.round_idx} phase {s.phase_name} to act {s.current} "
                f"scores {s.scores} hands {hands}")


def _token_text(t: tuple[int, int, int, int]) -> str:
    k, a, b, c = t
    if k == 1:
        return f"D{a}"
    if k == 2:
        return f"+{CARD_CODES[a]}"
    if k == 3:
        return f"?{a}"
    if k == 4:
        return f"{a}:{describe(b)}" + (f"/{c:x}" if c else "")
    if k == 6:
        return f"ask {CARD_CODES[a]}{'+' if b else '-'}"
    if k == 10:
        return f"give {CARD_CODES[a]}"
    if k == 12:
        h = a | b << 15 | c << 30
        return "hand " + " ".join(codes(h))
    return {5: "decline", 7: "stop", 8: "took", 9: "asks over", 11: "gave"}[k]


class InfoStateObserver:
    """The information state: the player's visible history as tokens (:data:`TOKEN_KINDS`),
    a ``(max_game_length, 4)`` tensor, zero-padded; the string names the same tokens."""

    def __init__(self, game: DragonsEggGame) -> None:
        self.max_len = game.max_len
        self.tensor = np.zeros(self.max_len * 4, np.float32)
        self.dict = {"history": self.tensor.reshape(self.max_len, 4)}

    def set_from(self, state: DragonsEggState, player: int) -> None:
        """Write ``player``'s history of ``state`` into :attr:`tensor`."""
        toks = state.m.tokens[player]
        self.tensor.fill(0.0)
        if toks:
            self.dict["history"][:len(toks)] = np.asarray(toks, np.float32)

    def string_from(self, state: DragonsEggState, player: int) -> str:
        """``player``'s history of ``state`` as text."""
        return f"p{player} " + " ".join(_token_text(t) for t in state.m.tokens[player])


class ObservationObserver:
    """The observation: our observation vector (``docs/observation.md``) for the player."""

    def __init__(self, game: DragonsEggGame) -> None:
        self.encoder = game.encoder
        self.lay = layout(game.config.num_players)
        self.tensor = np.zeros(self.encoder.size, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: DragonsEggState, player: int) -> None:
        """Write ``player``'s observation of ``state`` into :attr:`tensor`."""
        self.tensor[:] = self.encoder.encode(state.m.s, player)

    def string_from(self, state: DragonsEggState, player: int) -> str:
        """The observation as ``field=value`` pairs: binary fields list their set indices."""
        obs = self.encoder.encode(state.m.s, player)
        parts = [f"p{player}"]
        for f in self.lay.fields:
            x = obs[f.slice]
            if not x.any():
                continue
            if f.binary:
                parts.append(f"{f.name}=" + ",".join(str(i) for i in np.flatnonzero(x)))
            else:
                parts.append(f"{f.name}=" + ",".join(f"{v:.4g}" for v in x))
        return " ".join(parts)


pyspiel.register_game(_GAME_TYPE, DragonsEggGame)

__all__ = ["GAME_NAME", "TOKEN_KINDS", "DragonsEggGame", "DragonsEggState", "InfoStateObserver",
           "ObservationObserver", "config_from_params", "max_game_length", "set_world_sampler"]
