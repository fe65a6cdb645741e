"""A Gymnasium ``VectorEnv`` on the batched engine: one learner seat per match, batched opponents.

:class:`SingleAgentVectorEnv` is :class:`dragons_egg_env.wrappers.SingleAgentEnv` for ``B``
matches at once on one :class:`dragons_egg_env.vector.VectorEngine`: in every match one seat
(drawn per episode) is the learner's, every other seat is played by an opponent drawn per
episode and seat from a pool of *batched policies*, and each :meth:`~SingleAgentVectorEnv.step`
takes one learner action per match and returns the learner's reward since its previous move.
An episode is one match; the last reward of a match (the loser's -1 included) arrives with the
step that ends it, so an episode's return is the learner's final match score (R28).

Opponents are batched policies:

- any callable ``policy(obs, mask) -> actions`` taking ``(k, obs_size)`` float32 observations
  and ``(k, 134)`` bool masks of the ``k`` matches where it is to act and returning ``k`` int
  actions (a torch policy, a frozen snapshot, a numpy rule);
- a :class:`MatchAwarePolicy` (``start_matches``, ``act_rows``, ``end_rounds``), which is also
  told the matches and seats of its rows; ``dragons_egg.agents.batched.AgentPolicy`` is one, seating
  any scalar agent (``heuristic``, ``ismcts``, ``ppo:path=...``) with one agent object per match and
  seat.

Autoreset is Gymnasium's ``SAME_STEP`` mode (``metadata["autoreset_mode"]``): the step that
ends a match returns ``terminated=True``, the match's last reward and, as the observation,
the learner's first observation in the next match of that slot; ``infos["final_obs"]`` and
``infos["final_info"]`` (with their ``_final_obs``/``_final_info`` masks) describe the
finished episode (``final_obs`` is the learner's last observation of the finished match: the
engine keeps none of a finished match's end). ``docs/vector.md`` ("The single-learner vector
env") has the details.

This module imports numba through :mod:`dragons_egg_env.vector`; nothing else in the package
imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from .actions import NUM_ACTIONS, describe
from .config import RulesConfig
from .engine import IllegalActionError
from .observation import ObsArray
from .vector import VectorEngine
from .wrappers import check_pool

#: A batched policy: ``(obs (k, obs_size) float32, mask (k, 134) bool) -> (k,) int actions``.
BatchedPolicy = Callable[[ObsArray, npt.NDArray[np.bool_]], Any]
#: Row indices: matches, or the seats of the rows' players.
Rows = npt.NDArray[np.int64]


@runtime_checkable
class MatchAwarePolicy(Protocol):
    """A batched policy that keeps state per match and seat
    (``dragons_egg.agents.batched.AgentPolicy``).

    The env calls :meth:`start_matches` when matches (re)start, :meth:`act_rows` instead of
    ``policy(obs, mask)``, and :meth:`end_rounds` when rounds end in matches where the policy
    plays a seat."""

    def start_matches(self, matches: Rows, seats: npt.NDArray[np.bool_], config: RulesConfig,
                      max_players: int) -> None:
        """Matches ``matches`` (k,) start anew; ``seats`` (k, n) bool: the seats this policy
        plays in each of them (possibly none)."""

    def act_rows(self, obs: ObsArray, mask: npt.NDArray[np.bool_], matches: Rows,
                 seats: Rows) -> Any:
        """Actions (k,) for row ``i``: match ``matches[i]``, seat ``seats[i]``."""

    def end_rounds(self, matches: Rows, results: list[dict[str, Any]]) -> None:
        """A round ended in each of ``matches``; ``results[i]`` is the ``round_result`` info
        of ``raw_env`` (agent names ``player_<seat>``) for ``matches[i]``."""


def _policy_name(policy: Any) -> str:
    return str(getattr(policy, "label", None) or getattr(policy, "__name__", None)
               or type(policy).__name__)


def _not_a_policy(p: Any) -> str | None:
    if not (isinstance(p, MatchAwarePolicy) or callable(p)):
        hint = (" (a scalar agent: wrap it in dragons_egg.agents.batched.AgentPolicy)"
                if hasattr(p, "act") else "")
        return (f"an opponent is a callable (obs, mask) -> actions or a "
                f"MatchAwarePolicy, got {p!r}{hint}")
    return None


class SingleAgentVectorEnv(gymnasium.vector.VectorEnv[ObsArray, Rows, npt.NDArray[Any]]):
    """``num_envs`` matches, one learner seat in each, the other seats batched opponents.

    Args:
        num_envs: matches played at once (``B``).
        opponents: the pool (required): batched policies (callables ``(obs, mask) ->
            actions`` or :class:`MatchAwarePolicy` objects). Each non-learner seat draws one
            per episode, uniformly or by ``weights``, from the env's generator.
        weights: one non-negative weight per opponent (not all zero).
        seats: learner seats to draw from per episode (default: every seat).
        num_players: the table size (one per env); with ``num_rounds`` and ``rule_flags``,
            the rules (:class:`RulesConfig` fields), unless ``config`` is given.
        num_rounds: rounds per match.
        config: the rules as one :class:`RulesConfig` (instead of the three above).
        **rule_flags: any other rule flag.
        max_players: observation padding (as ``dragons_egg_v0``).
        seed: seeds the engine's deals and the draws of seats and opponents (``None``: fresh
            entropy); ``reset(seed=...)`` re-seeds both.
        record: keep replays in the engine (``self.engine.finished_replay(b)``).

    Learner actions must be legal: an illegal one raises ``engine.IllegalActionError`` naming
    the match (nothing has moved then); so does an opponent's illegal action, naming the
    match, the seat and the policy. Use :meth:`action_masks` (or ``infos`` of the step).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}
    render_mode = None

    def __init__(self, num_envs: int, opponents: Sequence[BatchedPolicy | MatchAwarePolicy], *,
                 weights: Sequence[float] | None = None, seats: Sequence[int] | None = None,
                 num_players: int = 4, num_rounds: int = 3, config: RulesConfig | None = None,
                 max_players: int | None = None, seed: int | None = None, record: bool = False,
                 **rule_flags: Any) -> None:
        if config is None:
            config = RulesConfig.from_kwargs({**rule_flags, "num_players": num_players,
                                              "num_rounds": num_rounds})
        elif rule_flags:
            raise ValueError("pass either a config or rule flags, not both")
        self.engine = VectorEngine(num_envs, config, max_players=max_players, seed=seed,
                                   record=record, copy=False)
        self.config = config
        self.num_envs = self.engine.num_envs
        self.num_players = n = config.num_players
        self.max_players = self.engine.max_players
        self.seats = np.array(sorted(set(range(n) if seats is None else seats)), np.int64)
        if len(self.seats) == 0 or self.seats.min() < 0 or self.seats.max() >= n:
            raise ValueError(f"seats must be a non-empty set of seats within 0..{n - 1}, "
                             f"got {seats!r}")
        self.set_opponents(opponents, weights)
        self.single_observation_space = spaces.Box(-1.0, 1.0, (self.engine.obs_size,),
                                                   np.float32)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._rng = np.random.default_rng([self.engine.seed, 1])
        B = self.num_envs
        self.learner_seats = np.zeros(B, np.int64)
        self.owners = np.full((B, n), -1, np.int64)
        self._acc = np.zeros(B)            # learner reward since its previous move
        self._ret = np.zeros(B)            # episode return so far (reported steps)
        self._len = np.zeros(B, np.int64)  # learner moves this episode
        self._round = np.zeros(B, np.int64)
        self._ended = np.zeros(B, bool)    # an episode ended in this slot during this step
        self._last_obs = np.zeros((B, self.engine.obs_size), np.float32)
        self._final: dict[str, npt.NDArray[Any]] = {}
        self._ready = False

    # -- the pool -------------------------------------------------------------------------
    def set_opponents(self, opponents: Sequence[BatchedPolicy | MatchAwarePolicy],
                      weights: Sequence[float] | None = None) -> None:
        """Replace the opponent pool (drawn from at the next match of each slot)."""
        # (called by kind, as self._aware says: a MatchAwarePolicy's methods, else the callable)
        pool, checked = check_pool(opponents, weights, "batched policies",
                                   "dragons_egg.agents.batched.AgentPolicy", _not_a_policy)
        if checked is None:
            w = np.full(len(pool), 1.0 / len(pool))
        else:
            w = np.asarray(checked)
            w = w / w.sum()
        self.opponents = pool
        self.weights = w
        self._aware = [isinstance(p, MatchAwarePolicy) for p in pool]

    # -- Gymnasium API --------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[ObsArray, dict[str, Any]]:
        """Start a new match in every slot. ``seed`` (an int >= 0) re-seeds the deals and the
        draws of seats and opponents; ``None`` carries on. ``options`` is unused."""
        if seed is not None:
            if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
                raise TypeError(f"seed must be an int (one seed for all matches), got {seed!r}")
            self._rng = np.random.default_rng([int(seed), 1])
            self.engine.reset(seed=int(seed))
        else:
            self.engine.reset()
        self._ready = True
        self._acc[:] = 0.0
        self._ret[:] = 0.0
        self._len[:] = 0
        self._round[:] = 0
        self._new_matches(np.arange(self.num_envs))
        self._ended[:] = True  # nothing to report before the first step
        self._advance()
        self._ended[:] = False
        return self._learner_obs(), {"seat": self.learner_seats.copy(),
                                     "_seat": np.ones(self.num_envs, bool)}

    def step(self, actions: Any) -> tuple[ObsArray, npt.NDArray[np.float64],
                                          npt.NDArray[np.bool_], npt.NDArray[np.bool_],
                                          dict[str, Any]]:
        """One learner action per match; see the module docstring."""
        if not self._ready:
            raise RuntimeError("call reset() before step()")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,):
            raise ValueError(f"actions must have shape ({self.num_envs},), one learner action "
                             f"per match; got shape {acts.shape}")
        self.engine.step(acts)  # checks type, range and legality, naming the match
        self._len += 1
        self._ended[:] = False
        self._final = {"reward": np.zeros(self.num_envs),
                       "final_scores": np.zeros((self.num_envs, self.num_players)),
                       "episode_return": np.zeros(self.num_envs),
                       "episode_length": np.zeros(self.num_envs, np.int64),
                       "seat": np.zeros(self.num_envs, np.int64),
                       "final_obs": self._last_obs.copy()}
        self._collect(np.arange(self.num_envs))
        self._advance()
        term = self._ended.copy()
        reward = np.where(term, self._final["reward"], self._acc)
        self._acc[~term] = 0.0
        self._ret[~term] += reward[~term]
        obs = self._learner_obs()
        infos: dict[str, Any] = {"seat": self.learner_seats.copy(),
                                 "_seat": np.ones(self.num_envs, bool)}
        if term.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for b in np.flatnonzero(term):
                final_obs[b] = self._final["final_obs"][b]
            info = {}
            for key in ("final_scores", "episode_return", "episode_length", "seat"):
                info[key] = self._final[key]
                info[f"_{key}"] = term.copy()
            infos.update(final_obs=final_obs, _final_obs=term.copy(), final_info=info,
                         _final_info=term.copy())
        return obs, reward, term, np.zeros(self.num_envs, bool), infos

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """The learner's legal actions in every match ``(B, 134)`` bool (for MaskablePPO)."""
        return self.engine.masks.copy()

    # -- internals ------------------------------------------------------------------------
    def _learner_obs(self) -> ObsArray:
        self._last_obs[:] = self.engine.observations
        return self._last_obs.copy()

    def _new_matches(self, rows: Rows) -> None:
        """Draw the learner seat and the opponents of the new matches in ``rows``."""
        k, n = len(rows), self.num_players
        seat = self._rng.choice(self.seats, size=k)
        owners = self._rng.choice(len(self.opponents), size=(k, n), p=self.weights)
        owners[np.arange(k), seat] = -1
        self.learner_seats[rows] = seat
        self.owners[rows] = owners
        for p, policy in enumerate(self.opponents):
            if self._aware[p]:
                policy.start_matches(rows.copy(), owners == p, self.config, self.max_players)

    def _advance(self) -> None:
        """Let the opponents move until every match waits for its learner."""
        eng = self.engine
        while True:
            seats = eng.seats
            rows = np.flatnonzero(seats != self.learner_seats)
            if len(rows) == 0:
                return
            acts = self._opponent_actions(rows, seats[rows].copy())
            if len(rows) == self.num_envs:
                eng.step(acts)
            else:
                eng.step_rows(rows, acts)
            self._collect(rows)

    def _opponent_actions(self, rows: Rows, seats: Rows) -> Rows:
        eng = self.engine
        owners = self.owners[rows, seats]
        acts = np.zeros(len(rows), np.int64)
        for p in np.unique(owners):
            sel = np.flatnonzero(owners == p)
            matches = rows[sel]
            obs = eng.observations[matches]
            mask = eng.masks[matches]
            policy = self.opponents[p]
            if self._aware[p]:
                out = policy.act_rows(obs, mask, matches.copy(), seats[sel].copy())
            else:
                out = policy(obs, mask)
            acts[sel] = self._check_opponent(p, out, mask, matches, seats[sel])
        return acts

    def _check_opponent(self, p: int, out: Any, mask: npt.NDArray[np.bool_], matches: Rows,
                        seats: Rows) -> Rows:
        name = f"opponent {p} ({_policy_name(self.opponents[p])})"
        if hasattr(out, "detach"):  # a torch tensor
            out = out.detach().cpu().numpy()
        a = np.asarray(out)
        if a.shape != (len(matches),) or a.dtype.kind not in "iu":
            raise ValueError(f"{name} returned {a.dtype} actions of shape {a.shape} for "
                             f"{len(matches)} matches; expected ({len(matches)},) ints")
        a = a.astype(np.int64)
        ok = (a >= 0) & (a < NUM_ACTIONS)
        ok[ok] = mask[np.flatnonzero(ok), a[ok]]
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            b, act = int(matches[i]), int(a[i])
            what = describe(act) if 0 <= act < NUM_ACTIONS else "outside 0..133"
            legal = ", ".join(f"{x} ({describe(int(x))})" for x in np.flatnonzero(mask[i]))
            raise IllegalActionError(f"match {b}: {name} at seat {int(seats[i])} chose "
                                     f"illegal action {act} ({what}); legal: {legal}")
        return a

    def _collect(self, rows: Rows) -> None:
        """Book the last engine step of the matches ``rows``: the learner's rewards, round
        ends (to match-aware opponents) and finished matches (episode ends)."""
        eng = self.engine
        out = eng._outputs()  # copy=False: views of the engine's buffers
        k = np.arange(len(rows))
        self._acc[rows] += out.rewards[rows][k, self.learner_seats[rows]]
        ended_round = rows[out.round_ended[rows]]
        if len(ended_round):
            self._end_rounds(ended_round, out.round_order, out.round_deadlock)
        done = rows[out.done[rows]]
        if len(done) == 0:
            return
        fresh = done[~self._ended[done]]  # the learner acted in these matches: report them
        if len(fresh):
            f = self._final
            f["reward"][fresh] = self._acc[fresh]
            f["final_scores"][fresh] = out.final_scores[fresh]
            f["episode_return"][fresh] = self._ret[fresh] + self._acc[fresh]
            f["episode_length"][fresh] = self._len[fresh]
            f["seat"][fresh] = self.learner_seats[fresh]
        self._ended[done] = True
        self._acc[done] = 0.0
        self._ret[done] = 0.0
        self._len[done] = 0
        self._round[done] = 0
        self._new_matches(done)

    def _end_rounds(self, rows: Rows, order: npt.NDArray[np.int8],
                    deadlock: npt.NDArray[np.bool_]) -> None:
        if not any(self._aware):
            self._round[rows] += 1
            return
        results = []
        for b in rows:
            seats = [int(q) for q in order[b] if q >= 0]
            names = [f"player_{q}" for q in seats]
            results.append({"round": int(self._round[b]), "finish_order": names,
                            "dragon": names[0], "egg": names[-1],
                            "deadlock": bool(deadlock[b])})
        self._round[rows] += 1
        for p, policy in enumerate(self.opponents):
            if self._aware[p]:
                mine = (self.owners[rows] == p).any(axis=1)
                if mine.any():
                    policy.end_rounds(rows[mine].copy(),
                                      [r for r, m in zip(results, mine, strict=True) if m])


__all__ = ["SingleAgentVectorEnv", "MatchAwarePolicy", "BatchedPolicy"]
