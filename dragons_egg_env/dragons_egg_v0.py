"""Dragon's Egg, a climbing card game for 2 to 8 players, as a PettingZoo AEC environment.

Every player tries to empty its hand first and become the Dragon; the last player left holds
the Egg. Rules: ``docs/rules.md`` (R1..R34).

| Import             | ``from dragons_egg_env import dragons_egg_v0``          |
|--------------------|---------------------------------------------------------|
| Actions            | Discrete(134), masked                                   |
| Parallel API       | No (turn-based)                                         |
| Manual control     | No                                                      |
| Agents             | ``agents = ["player_0", ..., "player_{n-1}"]``          |
| Agents count       | 2..8 (default 4)                                        |
| Action shape       | (1,)                                                    |
| Action values      | 0..133                                                  |
| Observation shape  | ``{"observation": (size,), "action_mask": (134,)}``     |
| Observation values | ``observation`` in [-1, 1] (float32), mask 0/1 (int8)   |

Agents
    ``player_0`` .. ``player_{n-1}`` sit at seats 0..n-1; "to the left" is the next seat. A
    player who has gone out stays in ``env.agents`` and is skipped; all agents terminate together
    when the match (``num_rounds`` rounds) ends.

Observation
    A dict: ``"observation"`` is a float32 vector whose named slices are listed in
    ``docs/observation.md`` (generated from :func:`dragons_egg_env.observation.layout`), and
    ``"action_mask"`` is an int8 vector with a 1 for each legal action of the agent to act (all
    zeros for the others). The mask is also in ``infos[agent]["action_mask"]``. Seats in the
    vector are relative to the observer and padded to ``max_players``. An observation holds only
    what that player may know: its hand, the pile, the cards played this round, hand sizes, who
    is out and in which place, who passed, the Egg's holder where it is known to the observer,
    the phase, the round, the scores and the observer's own tribute knowledge. ``state()``
    returns every hand too, for centralised critics.

Actions
    See :mod:`dragons_egg_env.actions` and ``docs/actions.md``: ``PASS``,
    ``play(number, count)``, ``play_dragons(count)``, ``ask(card)``, ``give(card)``.

Rewards
    At the end of each round every agent receives its round reward (R27): with the default
    ``rank`` scheme ``1 - 2p/(n-1)`` for finishing place ``p`` (the Dragon +1, the Egg holder -1);
    with ``dragon_egg`` +1 / -1 / 0. The step that ends a round puts ``round_result`` in every
    agent's info. ``env()`` ends the match with -1 for an agent that makes an illegal move
    (others 0); ``raw_env()`` raises :class:`IllegalMoveError` instead.

Arguments
    ``dragons_egg_v0.env(num_players=4, num_rounds=3, render_mode=None, max_players=None,
    deck_style="dragon", **rule_flags)``: the rule flags are the fields of
    :class:`dragons_egg_env.config.RulesConfig` (``opening_ten_of_fire_alone``,
    ``pass_locks_out``, ``completion_out_of_turn``, ``dragons_per_play``, ``tribute_asks``,
    ``egg_in_tribute``, ``reward_scheme``). An unknown name or a bad value is a ``ValueError``.
    ``help(dragons_egg_v0.env)`` and ``inspect.signature`` list every keyword argument with its
    type and default (built from ``RulesConfig``'s fields), and type checkers read them from
    :class:`EnvKwargs` (``**kwargs: Unpack[EnvKwargs]``).
    ``render_mode``: ``"ansi"`` (returns text), ``"human"`` (prints it) or ``"rgb_array"``
    (returns the spectator view as an RGB ``uint8`` array, drawn with Pillow: ``pip install
    'dragons-egg[render]'``); ``render_table(viewer)`` / ``render_image(viewer)`` draw one
    player's view. ``max_players``: pad the observation to that many seats (default:
    ``num_players``). ``deck_style``: ``"dragon"`` or ``"tarokka"`` (R2) for rendering.

    ``reset(seed=None, options={"deals": [deal_round_0, ...]})`` plays the given deals (each one
    list of card codes per seat) in the first rounds and deals the later rounds at random (from
    the seed); other option keys are ignored. ``seed`` is ``None`` or a non-negative integer (a
    numpy integer too); ``options`` is ``None`` or a dict. More deals than ``num_rounds``, a
    single deal's hands without the per-round list around them, bools, floats, strings, bytes and
    negative seeds are errors.

Actions and agents
    ``step`` takes what ``Discrete(134).contains`` accepts (an ``int`` or numpy integer, a 0-d
    integer array) except bools; whole-number floats are out of the action space, as Gymnasium
    has it. Every method that takes an agent name refuses an unknown one with an
    :class:`UnknownAgentError` that lists the agents; every method that reads the match
    (``observe``, ``last``, ``hand``, ``scores``, ``phase``, ...) raises :class:`OrderError`
    before ``reset()``.

Version history
    * v0: initial release.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import random
import secrets
import stat
import typing
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypedDict, Union, cast, overload

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils.env_logger import EnvLogger
from typing_extensions import NotRequired, Self, Unpack

from . import engine as E
from ._rule_flags import RuleFlags
from .actions import NUM_ACTIONS, describe
from .cards import DECK_STYLES, codes, mask_of
from .config import MAX_PLAYERS, RulesConfig
from .observation import Encoder, MaskVector, ObsArray, ObsVector, mask_array
from .render import render_text
from .replay_format import ENV_NAME, ReplayCheck, build_replay

#: ``render_mode`` values (``raw_env.metadata["render_modes"]``).
RenderMode = Literal["ansi", "human", "rgb_array"]
#: ``deck_style`` values (:data:`dragons_egg_env.cards.DECK_STYLES`).
DeckStyle = Literal["dragon", "tarokka"]


class EnvKwargs(RuleFlags, total=False):
    """Every keyword argument of :func:`env` and :class:`raw_env`: the rule flags (the fields of
    :class:`~dragons_egg_env.config.RulesConfig`, :class:`RuleFlags`) and the env's own
    options. For type checkers: ``env(**kwargs: Unpack[EnvKwargs])``."""

    #: ``"ansi"`` (text), ``"human"`` (prints it), ``"rgb_array"`` (an image; Pillow). Default
    #: None.
    render_mode: RenderMode | None
    #: Pad observations to this many seats (num_players..8). Default None: num_players.
    max_players: int | None
    #: The card names of the render (R2). Default "dragon".
    deck_style: DeckStyle


class ObsDict(TypedDict):
    """What :meth:`raw_env.observe` returns (one-dimensional arrays, typed as such)."""

    #: The observation vector (``docs/observation.md``), ``(size,)`` float32.
    observation: ObsVector
    #: 1 for each legal action of the agent to act, all zeros for the others; ``(134,)`` int8.
    action_mask: MaskVector


class RoundResultInfo(TypedDict):
    """``info["round_result"]``, in every agent's info after the step that ends a round: how
    the round ended (R25, R29), with agent names."""

    #: The round, counted from 0 (as :meth:`raw_env.round_index`).
    round: int
    #: Every agent in finishing order, the Dragon first and the Egg holder last (R25).
    finish_order: list[str]
    #: The round's Dragon, who went out first.
    dragon: str
    #: Who held the Egg at the end.
    egg: str
    #: The round ended in a deadlock (R24).
    deadlock: bool


class StepInfo(TypedDict):
    """An agent's info (``env.infos[agent]``, the last item of :meth:`raw_env.last`)."""

    #: The agent's action mask (the same array as ``observe(agent)["action_mask"]``).
    action_mask: MaskVector
    #: Only after the step that ended a round.
    round_result: NotRequired[RoundResultInfo]


class IllegalMoveError(ValueError):
    """An agent chose an action that is not legal now (raised by ``raw_env``)."""


class ActionOutOfBoundsError(ValueError):
    """An action outside the action space (0..NUM_ACTIONS-1, an integer)."""


class OrderError(AssertionError):
    """The API was used out of order (for example ``step`` before ``reset``), as PettingZoo's
    ``OrderEnforcingWrapper`` reports it."""


class UnknownAgentError(KeyError, ValueError):
    """An agent name that is not one of the env's agents (the message lists them). A
    ``KeyError`` (as the dict lookup it replaces) and a ``ValueError``."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def action_index(action: Any) -> int | None:
    """``action`` as a Python int when it is an integer as ``Discrete.contains`` takes one
    (``int``, numpy integer, 0-d integer array), bools excepted; ``None`` otherwise (floats,
    whole-number ones too, strings, ``None``). The range is not checked."""
    if isinstance(action, (int, np.integer)):
        return None if isinstance(action, bool) else int(action)
    if isinstance(action, np.ndarray) and action.shape == () \
            and np.issubdtype(action.dtype, np.integer):
        return int(action)
    return None


def match_seed(seed: Any) -> int:
    """``reset``'s seed as a Python int: a non-negative integer (numpy integers too). Bools,
    floats, strings, bytes and other types are a ``TypeError``, negative seeds a
    ``ValueError`` (``random.Random`` would play ``-s`` as ``s``)."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        value = int(seed)
        if value < 0:
            raise ValueError(f"seed must be a non-negative integer or None, got {value}")
        return value
    raise TypeError(f"seed must be a non-negative integer or None, got "
                    f"{type(seed).__name__} {seed!r}")


def _looks_like_one_deal(raw: Any) -> bool:
    """``raw`` is a list of hands (lists of card codes), not a list of deals."""
    first = raw[0] if raw else None
    return isinstance(first, (list, tuple)) and bool(first) and all(
        isinstance(c, (str, int)) and not isinstance(c, bool) for c in first)


def _parse_deals(raw: Any, n: int, num_rounds: int) -> list[list[int]]:
    """``options["deals"]`` (per round, one list of card codes per seat) as card bitmasks."""
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"options['deals'] must be a list of deals, got {type(raw).__name__}")
    if _looks_like_one_deal(raw):
        raise ValueError("options['deals'] is a list of deals, one per round, each a list of "
                         "hands; this looks like the hands of one deal: wrap it in a list, "
                         "options={'deals': [[hand_0, hand_1, ...]]}")
    if len(raw) > num_rounds:
        raise ValueError(f"options['deals'] holds {len(raw)} deals but the match has "
                         f"{num_rounds} round(s) (num_rounds)")
    out = []
    for r, deal_ in enumerate(raw):
        if not isinstance(deal_, (list, tuple)):
            raise ValueError(f"deal of round {r} must be a list of hands, got {deal_!r}")
        if len(deal_) != n:
            raise ValueError(f"deal of round {r} has {len(deal_)} hands; the table has {n} seats")
        hands = []
        for seat, hand in enumerate(deal_):
            if isinstance(hand, str) or not isinstance(hand, (list, tuple)):
                raise ValueError(f"deal of round {r}, seat {seat}: a hand is a list of card "
                                 f"codes, got {hand!r}")
            try:
                hands.append(mask_of(hand))
            except ValueError as exc:
                raise ValueError(f"deal of round {r}, seat {seat}: {exc}") from None
        try:
            E.check_deal(hands, n)
        except E.DealError as exc:
            raise E.DealError(f"deal of round {r}: {exc}") from None
        out.append(hands)
    return out


class raw_env(AECEnv[str, ObsDict, Union[int, None]]):
    """Dragon's Egg AEC environment (see the module docstring)."""

    metadata = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": ENV_NAME,
        "is_parallelizable": False,
        "render_fps": 2,
    }
    #: What :mod:`dragons_egg_env.replay` verified when it built this env from a replay (a
    #: ``ReplayCheck``, set at the end of ``replay()`` / ``iter_replay()``); ``None`` otherwise.
    replay_check: ReplayCheck | None = None
    #: The engine state, set by ``reset()`` (every reader checks ``_has_reset`` first and
    #: raises :class:`OrderError` before it).
    _s: E.State

    def __init__(self, render_mode: RenderMode | None = None, max_players: int | None = None,
                 deck_style: DeckStyle = "dragon", *, _terminate_illegal: bool = False,
                 **rule_flags: Unpack[RuleFlags]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # PettingZoo's has no annotations
        self.config: RulesConfig = RulesConfig.from_kwargs(rule_flags)
        n = self.config.num_players
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or "
                             f"None, got {render_mode!r}")
        if max_players is None:
            max_players = n
        if isinstance(max_players, bool) or not isinstance(max_players, int) \
                or not n <= max_players <= MAX_PLAYERS:
            raise ValueError(f"max_players must be an int in {n}..{MAX_PLAYERS} (>= num_players), "
                             f"got {max_players!r}")
        if deck_style not in DECK_STYLES:
            raise ValueError(f"deck_style must be one of {', '.join(map(repr, DECK_STYLES))}, "
                             f"got {deck_style!r}")
        self.render_mode = render_mode
        self.max_players = max_players
        self.deck_style = deck_style
        self._terminate_illegal = _terminate_illegal
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        self._encoder = Encoder(n, max_players, self.config.num_rounds)
        self._state_encoder = Encoder(n, max_players, self.config.num_rounds, state=True)
        size = self._encoder.lay.size
        # A Dict space samples dicts with exactly the keys of ObsDict.
        obs_space = cast("spaces.Space[ObsDict]", spaces.Dict({
            "observation": spaces.Box(-1.0, 1.0, (size,), np.float32),
            "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
        }))
        act_space: spaces.Space[int | None] = spaces.Discrete(NUM_ACTIONS)
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self.state_space = spaces.Box(-1.0, 1.0, (self._state_encoder.lay.size,), np.float32)
        self._zero_mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        self._zero_mask.flags.writeable = False
        self._has_reset = False
        self._has_updated = False
        self._rng: random.Random | None = None

    # -- PettingZoo API -----------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        deals: list[list[int]] = []
        if options is not None and not isinstance(options, Mapping):
            raise TypeError(f"options must be a dict (such as {{'deals': [...]}}) or None, got "
                            f"{type(options).__name__} {options!r}")
        if options and "deals" in options:
            deals = _parse_deals(options["deals"], self.config.num_players,
                                 self.config.num_rounds)
        if seed is not None:
            seed = match_seed(seed)
        else:
            # A fresh match seed: drawn from the previous match's generator (so a seeded
            # sequence of resets stays reproducible) or from the OS for the first reset. The
            # replay records it, and it alone reproduces the match's random deals.
            seed = self._rng.getrandbits(63) if self._rng is not None else secrets.randbits(63)
        self._seed = seed
        self._rng = random.Random(seed)
        self._forced_deals = deals
        self._deals: list[list[int]] = []
        self._actions: list[tuple[int, int]] = []
        self._illegal: tuple[int, int] | None = None
        self._s = E.new_match(self.config)
        self._deal_next()
        self.agents = self.possible_agents[:]
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {"action_mask": self._zero_mask} for a in self.agents}
        self._rewards_dirty = False
        self._result_in_infos = False
        self._mask_holder: str | None = None
        self._cur_mask: npt.NDArray[np.int8] | None = None
        self._select()
        self._has_reset = True
        self._has_updated = True

    def _deal_next(self) -> None:
        s = self._s
        r = s.round_idx
        if r < len(self._forced_deals):
            hands = self._forced_deals[r]
        else:
            assert self._rng is not None, "reset() seeds it before the first deal"
            hands = E.random_deal(s, self._rng)
        E.deal(s, hands)
        self._deals.append(list(hands))

    def _select(self) -> None:
        """Point ``agent_selection`` at the seat to act and refresh the info masks."""
        s = self._s
        if self._mask_holder is not None and self._mask_holder in self.infos:
            self.infos[self._mask_holder]["action_mask"] = self._zero_mask
        if s.phase == E.DONE:
            self._mask_holder = None
            self._cur_mask = None
            return
        agent = self.possible_agents[s.current]
        self.agent_selection = agent
        # One array per step, shared by infos and the acting agent's observation.
        self._cur_mask = self.infos[agent]["action_mask"] = mask_array(E.legal_mask(s))
        self._mask_holder = agent

    def step(self, action: Any) -> None:
        """Play ``action`` for ``agent_selection`` (the per-step hot path: the common case, a
        legal ``int``, runs inline; the rest is in the helpers below)."""
        if not self._has_reset:
            raise OrderError("reset() needs to be called before step.")
        if not self.agents:
            EnvLogger.warn_step_after_terminated_truncated()
            return
        self._has_updated = True
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if type(action) is int and 0 <= action < NUM_ACTIONS:  # the common case, checked cheaply
            a = action
        else:
            a = self._checked_action(agent, action)
        s = self._s
        if not (s.mask >> a) & 1:  # the mask was computed for this state by _select
            if self._terminate_illegal:
                self._end_by_illegal(agent, a)
                return
            raise IllegalMoveError(self._illegal_message(agent, a))
        if self._rewards_dirty or self._result_in_infos:
            self._clear_last_outputs()
        self._cumulative_rewards[agent] = 0.0
        nres = len(s.results)
        self._actions.append((s.current, a))
        E.step(s, a)
        if len(s.results) != nres:
            self._after_round(s)
        self._select()
        if self._rewards_dirty:
            self._accumulate_rewards()

    def _checked_action(self, agent: str, action: Any) -> int:
        """``action`` as an int in the action space (see :func:`action_index`);
        :class:`ActionOutOfBoundsError` otherwise."""
        a = action_index(action)
        if a is None or not 0 <= a < NUM_ACTIONS:
            raise ActionOutOfBoundsError(
                f"{agent}: action {action!r} is outside the action space "
                f"Discrete({NUM_ACTIONS}) (an integer 0..{NUM_ACTIONS - 1}, not a bool or a "
                f"float)")
        return a

    def _clear_last_outputs(self) -> None:
        """Forget the previous step's round rewards and ``round_result`` infos."""
        if self._rewards_dirty:
            for k in self.rewards:
                self.rewards[k] = 0.0
            self._rewards_dirty = False
        if self._result_in_infos:
            for info in self.infos.values():
                info.pop("round_result", None)
            self._result_in_infos = False

    def _after_round(self, s: E.State) -> None:
        """The step just ended a round: hand out its rewards and infos, then deal the next
        round or end the match."""
        self._round_ended(s.results[-1])
        if s.phase == E.DEAL:
            self._deal_next()
        elif s.phase == E.DONE:
            for k in self.terminations:
                self.terminations[k] = True

    def _round_ended(self, res: E.RoundResult) -> None:
        names = self.possible_agents
        for seat, r in enumerate(res.rewards):
            self.rewards[names[seat]] = r
        self._rewards_dirty = True
        info: RoundResultInfo = {
            "round": res.round,
            "finish_order": [names[q] for q in res.order],
            "dragon": names[res.dragon],
            "egg": names[res.egg],
            "deadlock": res.deadlock,
        }
        for a in self.agents:
            self.infos[a]["round_result"] = info
        self._result_in_infos = True

    def _end_by_illegal(self, agent: str, a: int, warn: bool = True) -> None:
        """End the match for ``agent``'s illegal action ``a`` (``env()``; replays of such a
        match call it too, with ``warn=False``)."""
        if warn:
            EnvLogger.warn_on_illegal_move()
        self._illegal = (self.agent_name_mapping[agent], a)
        self._cumulative_rewards[agent] = 0.0
        for k in self.agents:
            self.rewards[k] = 0.0
            self.terminations[k] = True
            self.infos[k]["action_mask"] = self._zero_mask
        self.rewards[agent] = -1.0
        self._rewards_dirty = True
        self._accumulate_rewards()
        self._deads_step_first()

    def _illegal_message(self, agent: str, a: int) -> str:
        legal = ", ".join(f"{x} ({describe(x)})" for x in E.legal_actions(self._s))
        return (f"{agent} made an illegal move: action {a} ({describe(a)}) in phase "
                f"{self.phase()!r}; legal actions: {legal}")

    def observe(self, agent: str) -> ObsDict:
        if not self._has_reset:
            raise OrderError("reset() needs to be called before observe.")
        try:
            i = self.agent_name_mapping[agent]
        except (KeyError, TypeError):
            raise self._unknown_agent(agent) from None
        s = self._s
        obs = self._encoder.encode(s, i)
        if s.current == i and self._cur_mask is not None and self._illegal is None:
            mask = self._cur_mask
        else:
            mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        return {"observation": obs, "action_mask": mask}

    # PettingZoo types last() as returning ``ObsType | None`` (None only for observe=False)
    # and the info as ``dict[str, Any]``. The overloads say what this env returns: the
    # observation for the default observe=True, None for observe=False (a plain bool: either),
    # and the info as the TypedDict it is, so that ``obs["action_mask"]`` in the usual loop
    # type-checks with no Any. The info's type narrows AECEnv's ``dict[str, Any]`` (a TypedDict
    # is no dict subtype), hence the ignore.
    @overload  # type: ignore[override]
    def last(self, observe: Literal[True] = True
             ) -> tuple[ObsDict, float, bool, bool, StepInfo]: ...

    @overload
    def last(self, observe: Literal[False]) -> tuple[None, float, bool, bool, StepInfo]: ...

    @overload
    def last(self, observe: bool = True
             ) -> tuple[ObsDict | None, float, bool, bool, StepInfo]: ...

    def last(self, observe: bool = True
             ) -> tuple[ObsDict | None, float, bool, bool, StepInfo]:
        """Observation, cumulative reward, termination, truncation and info of
        ``agent_selection`` (PettingZoo's ``last``, with the order check). The observation is
        ``None`` only with ``observe=False``, and type checkers know it: ``obs, *_ =
        env.last()`` is an :class:`ObsDict`; the info is a :class:`StepInfo`."""
        if not self._has_reset:
            raise OrderError("reset() needs to be called before last.")
        agent = self.agent_selection
        info = cast("StepInfo", self.infos[agent])  # what _select and _round_ended write
        return (self.observe(agent) if observe else None, self._cumulative_rewards[agent],
                self.terminations[agent], self.truncations[agent], info)

    def state(self) -> ObsArray:
        if not self._has_reset:
            raise OrderError("reset() needs to be called before state.")
        return self._state_encoder.encode(self._s, 0)

    def render(self) -> str | npt.NDArray[np.uint8] | None:
        if not self._has_reset:
            raise OrderError("reset() needs to be called before render.")
        if self.render_mode is None:
            gymnasium.logger.warn("render() was called without a render_mode; pass "
                                  "render_mode='ansi', 'human' or 'rgb_array' to the env.")
            return None
        if self.render_mode == "rgb_array":
            return self.render_image(viewer=None)
        text = self.render_table(viewer=None)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def render_table(self, viewer: str | None = None) -> str:
        """The table as text: ``viewer`` (an agent) sees its own hand only; ``None`` all."""
        self._need_reset("render_table")
        seat = None if viewer is None else self._seat(viewer)
        return render_text(self._s, self.possible_agents, seat, self.deck_style)

    def render_image(self, viewer: str | None = None) -> npt.NDArray[np.uint8]:
        """The table as an RGB ``uint8`` array (needs Pillow): ``viewer`` (an agent) sees its
        own hand only; ``None`` all."""
        from .render_image import render_rgb

        self._need_reset("render_image")
        seat = None if viewer is None else self._seat(viewer)
        return render_rgb(self._s, self.possible_agents, seat, self.deck_style)

    def close(self) -> None:
        pass

    def agent_iter(self, max_iter: int = 2**63) -> Iterator[str]:  # type: ignore[override]
        # PettingZoo's AECIterable is a class of its own; callers only iterate over the agents.
        if not self._has_reset:
            raise OrderError("reset() needs to be called before agent_iter.")
        return _OrderedIter(self, max_iter)

    # -- inspection ---------------------------------------------------------------------
    def _need_reset(self, what: str) -> None:
        if not self._has_reset:
            raise OrderError(f"reset() needs to be called before {what}.")

    def _unknown_agent(self, agent: Any) -> UnknownAgentError:
        return UnknownAgentError(f"unknown agent {agent!r}; the agents are "
                                 f"{', '.join(self.possible_agents)}")

    def _seat(self, agent: str) -> int:
        """Seat of ``agent``; :class:`UnknownAgentError` (listing the agents) otherwise."""
        try:
            return self.agent_name_mapping[agent]
        except (KeyError, TypeError):
            raise self._unknown_agent(agent) from None

    def observation_space(self, agent: str) -> spaces.Space[ObsDict]:
        try:
            return self.observation_spaces[agent]
        except (KeyError, TypeError):
            raise self._unknown_agent(agent) from None

    def action_space(self, agent: str) -> spaces.Space[int | None]:
        try:
            return self.action_spaces[agent]
        except (KeyError, TypeError):
            raise self._unknown_agent(agent) from None

    @property
    def unwrapped(self) -> Self:
        """The environment itself (PettingZoo's ``unwrapped``), typed as this class: ``env()``
        and ``raw_env()`` return the env with no wrapper around it (``env()`` makes its checks
        inside), so ``env.unwrapped`` is the same object and type checkers see its own methods
        (``scores``, ``save_replay``, ``hand``, ...) instead of ``AECEnv``'s."""
        return self

    @property
    def num_agents(self) -> int:
        """How many agents are in ``agents`` now (PettingZoo's ``num_agents``, typed)."""
        return len(self.agents)

    @property
    def max_num_agents(self) -> int:
        """How many agents the env can have (PettingZoo's ``max_num_agents``, typed)."""
        return len(self.possible_agents)

    @property
    def engine_state(self) -> E.State:
        """The engine state (the full hidden state; never hand it to an agent)."""
        self._need_reset("engine_state")
        return self._s

    def hand(self, agent: str) -> list[str]:
        """The card codes in ``agent``'s hand."""
        self._need_reset("hand")
        return codes(self._s.hands[self._seat(agent)])

    def pile(self) -> list[list[str]]:
        """The plays on the current pile, oldest first."""
        self._need_reset("pile")
        return [codes(c) for _, c in self._s.plays]

    def egg_holder(self) -> str:
        """The agent holding the Egg now (the hidden state: never hand it to an agent)."""
        self._need_reset("egg_holder")
        return self.possible_agents[self._s.egg_holder]

    def finish_order(self) -> list[str]:
        """Who has gone out this round, in order (the full order once the match is done)."""
        self._need_reset("finish_order")
        s = self._s
        if s.phase == E.DONE and s.results:
            return [self.possible_agents[q] for q in s.results[-1].order]
        return [self.possible_agents[q] for q in s.finish]

    def phase(self) -> str:
        """The phase now: ``"play"``, ``"complete"``, ``"ask"``, ``"give"`` or ``"done"``."""
        if not self._has_reset:
            raise OrderError("reset() needs to be called before phase.")
        return E.PHASE_NAMES[self._s.phase] if self._illegal is None else "done"

    def round_index(self) -> int:
        """The current round, counted from 0: ``0`` in the first round, ``num_rounds - 1`` in
        the last one and after the match. An index, as the ``round`` of the ``round_result``
        info is; people are shown :meth:`round_number` (the render's "round 1/3")."""
        self._need_reset("round_index")
        return min(self._s.round_idx, self.config.num_rounds - 1)

    def round_number(self) -> int:
        """The current round counted from 1 (``round_index() + 1``), as the render shows it:
        "round 1/3" in the first round of three."""
        return self.round_index() + 1

    def legal_actions(self) -> list[int]:
        """The legal actions of ``agent_selection`` (empty once the match is over)."""
        self._need_reset("legal_actions")
        return [] if self._illegal is not None else E.legal_actions(self._s)

    @property
    def scores(self) -> dict[str, float]:
        """Match score of each agent so far (R28)."""
        self._need_reset("scores")
        return {a: self._s.scores[i] for i, a in enumerate(self.possible_agents)}

    @property
    def illegal_move(self) -> tuple[str, int] | None:
        """``(agent, action)`` of the illegal move that ended the match (``env()``), else
        ``None``."""
        self._need_reset("illegal_move")
        if self._illegal is None:
            return None
        return self.possible_agents[self._illegal[0]], self._illegal[1]

    # -- replays ------------------------------------------------------------------------
    @property
    def deals(self) -> list[list[int]]:
        """The hands dealt so far, one card bitmask per seat for each round started."""
        if not self._has_reset:
            raise OrderError("reset() needs to be called before deals.")
        return [list(hands) for hands in self._deals]

    def to_replay(self) -> dict[str, Any]:
        """The match so far as a JSON-ready dict (:mod:`dragons_egg_env.replay` describes the
        format): config, seed, deals, actions, how it ended, the scores and a digest. A match
        that is not over yet is written as a partial replay."""
        if not self._has_reset:
            raise OrderError("reset() needs to be called before to_replay.")
        s = self._s
        return build_replay(self.config, self.max_players, self._seed, self._deals,
                            self._actions, s.scores, finished=s.phase == E.DONE,
                            illegal_move=self._illegal)

    def save_replay(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_replay` to ``path`` as JSON. The text goes to a new file beside it
        that then replaces ``path`` in one step, so a failed save leaves an existing file as it
        was."""
        text = json.dumps(self.to_replay(), indent=1)
        _write_atomically(os.fspath(path), text)


def _write_atomically(path: str, text: str) -> None:
    """Write ``text`` to a temporary file in ``path``'s folder, then rename it over ``path``
    (``os.replace``): readers see the old file or the new one, never a part."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # keep an existing file's mode
        except FileNotFoundError:
            pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


class _OrderedIter:
    def __init__(self, env: raw_env, max_iter: int) -> None:
        self.env = env
        self.left = max_iter

    def __iter__(self) -> _OrderedIter:
        return self

    def __next__(self) -> str:
        env = self.env
        if not env.agents or self.left <= 0:
            raise StopIteration
        if not env._has_updated:
            raise OrderError("need to call step() or reset() in a loop over `agent_iter`")
        env._has_updated = False
        self.left -= 1
        return env.agent_selection


def env(**kwargs: Unpack[EnvKwargs]) -> raw_env:
    """The environment with the safety of PettingZoo's classic envs, checked inside the env:
    an illegal move ends the match with -1 for the offender, an out-of-bounds action is an
    error, and the API must be used in order.

    Keyword arguments (:class:`EnvKwargs`): every field of
    :class:`~dragons_egg_env.config.RulesConfig` (``docs/flags.md``), then ``render_mode``,
    ``max_players`` and ``deck_style``; the signature lists each with its type and default.

    Types: PettingZoo's classic ``env()`` returns its env inside wrappers, whose ``unwrapped``
    is typed as a bare ``AECEnv``. This one returns the :class:`raw_env` itself (the checks are
    inside it), typed as such, and :attr:`raw_env.unwrapped` is that same object typed as its
    own class; so a type checker sees ``env.unwrapped.scores`` as ``dict[str, float]`` and
    ``env.unwrapped.save_replay`` as the method it is, not ``Any``. :meth:`raw_env.last`
    returns an :class:`ObsDict` (not ``ObsDict | None``) for the default ``observe=True``."""
    return raw_env(_terminate_illegal=True, **kwargs)


def _keyword_parameters() -> list[inspect.Parameter]:
    """Keyword-only parameters for the rule flags, each with its type
    (:meth:`RulesConfig.flag_type`) and default, from ``RulesConfig``'s fields."""
    return [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                              annotation=RulesConfig.flag_type(f.name))
            for f in dataclasses.fields(RulesConfig)]


def _signatures() -> tuple[inspect.Signature, inspect.Signature]:
    """The runtime signatures of :func:`env` and ``raw_env.__init__`` that ``help()`` and
    ``inspect.signature`` show: the rule flags from ``RulesConfig``'s fields and the env's own
    options (``render_mode``, ``max_players``, ``deck_style``) from ``raw_env.__init__``, with
    their defaults and types; the private ``_terminate_illegal`` is left out."""
    init = inspect.signature(raw_env.__init__)
    hints = typing.get_type_hints(raw_env.__init__)
    own = [p.replace(annotation=hints[name]) for name, p in init.parameters.items()
           if name in EnvKwargs.__annotations__]
    flags = _keyword_parameters()
    env_sig = inspect.Signature([*flags, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
                                           for p in own)], return_annotation=raw_env)
    init_sig = inspect.Signature([init.parameters["self"], *own, *flags],
                                 return_annotation=None)
    return env_sig, init_sig


# help(), inspect.signature and IDEs that read them list every keyword argument (the code's own
# signatures end in **kwargs; type checkers read EnvKwargs through Unpack instead).
env.__signature__, raw_env.__init__.__signature__ = _signatures()  # type: ignore[attr-defined]


def _register() -> None:
    """Register ``dragons_egg_v0`` with PettingZoo's registry (PettingZoo >= 1.27), so that
    ``pettingzoo.make("aec", "dragons_egg_v0")`` works once this module is imported."""
    try:
        from pettingzoo import aec_registry
        from pettingzoo import register as pz_register
    except ImportError:  # an older PettingZoo without a registry
        return
    if ENV_NAME not in aec_registry:
        pz_register("aec", ENV_NAME, entry_point=f"{__name__}:env")


_register()

__all__ = ["env", "raw_env", "IllegalMoveError", "ActionOutOfBoundsError", "OrderError",
           "UnknownAgentError", "action_index", "match_seed", "ENV_NAME", "EnvKwargs",
           "RuleFlags", "ObsDict", "StepInfo", "RoundResultInfo", "RenderMode", "DeckStyle"]
