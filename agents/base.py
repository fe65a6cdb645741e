"""The agent protocol shared by every agent, and the match runner that feeds agents.

An agent is constructed with its options and a seed. At the start of a match it is told its
seat, the rules and the observation padding (:meth:`Agent.start_match`); at each of its turns
it sees only its own observation vector and action mask (:meth:`Agent.act`) and returns an
action; at the end of each round it is told how the round ended (:meth:`Agent.end_round`).
Agents never read the environment's hidden state.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import numpy.typing as npt

from dragons_egg_env.config import RulesConfig
from dragons_egg_env.observation import MaskArray, ObsArray, ObsView, decode_observation


class Agent:
    """Base class for agents. Subclasses implement :meth:`act`."""

    #: Registry name of the agent kind (``"random"``, ``"heuristic"``, ...).
    name: str = "agent"

    #: The agent's action depends on its observation and action mask alone (and its random
    #: generator): no memory across moves, rounds or matches, and the rules only as far as
    #: decoding the observation needs them. Such an agent can play seats of many matches at
    #: once from one object (the self-play league, ``dragons_egg.experiments.training.selfplay``'s
    #: ``league_agents``).
    memoryless: bool = False

    #: The spec the agent was made from, when :func:`dragons_egg.agents.make_agent` made it
    #: (:attr:`label` falls back to :attr:`name` without it).
    spec: str

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.seat = 0
        self.config = RulesConfig()
        self.max_players = self.config.num_players

    # (*args: Any, **options: Any: a subclass declares its own options as keyword parameters.)
    @classmethod
    def check_options(cls, *args: Any, **options: Any) -> None:
        """Check an agent's options when its spec is read, before anything heavy loads.

        Called by :func:`dragons_egg.agents.parse_spec` with every option of the constructor but
        ``seed`` (the spec's values, converted, over the defaults); raise ``ValueError`` with a
        one-line message naming the bad option. Cheap checks only (a file exists, a number
        is in range): no model loading, no torch or ray. The default accepts everything."""

    @classmethod
    def table_limit(cls, *args: Any, **options: Any) -> int | None:
        """The largest table this agent can play with these options (``None``: any table).

        :func:`dragons_egg.agents.check_spec_for_table` calls it with the same options as
        :meth:`check_options`; a learned policy reads the table size it was trained for from
        its checkpoint here, cheaply."""
        return None

    @property
    def label(self) -> str:
        """How the agent is named in reports (its registry spec, by default)."""
        return str(getattr(self, "spec", self.name))

    def start_match(self, seat: int, config: RulesConfig, max_players: int | None = None) -> None:
        """A match starts: this agent sits at ``seat`` at a table with ``config``'s rules."""
        self.seat = seat
        self.config = config
        self.max_players = max_players or config.num_players

    def act(self, observation: ObsArray, action_mask: MaskArray) -> int:
        """Choose an action given the agent's own observation vector and action mask (int8
        from the AEC env, bool from the batched engine)."""
        raise NotImplementedError

    def act_batch(self, observations: ObsArray, action_masks: MaskArray
                  ) -> npt.NDArray[np.int64]:
        """The actions of a memoryless agent for rows of independent decisions (observations
        padded to this agent's ``max_players``, and their masks), as an int64 array.

        The default calls :meth:`act` row by row. An agent that overrides it promises the
        same actions as :meth:`act` row by row, only faster, so a caller may batch the seats
        of many matches into one call (``dragons_egg.agents.batched.AgentPolicy``, the self-play
        league). Agents that are not :attr:`memoryless` raise ``TypeError``: their rows depend
        on what each of them saw before."""
        if not self.memoryless:
            raise TypeError(f"{type(self).__name__} keeps state across moves; act_batch is for "
                            "memoryless agents")
        return np.fromiter((self.act(o, m) for o, m in zip(observations, action_masks,
                                                            strict=True)),
                           np.int64, len(observations))

    def end_round(self, result: dict[str, Any]) -> None:
        """A round ended; ``result`` is the env's ``round_result`` info (agent names)."""

    def view(self, observation: ObsArray) -> ObsView:
        """The observation decoded into game terms."""
        return decode_observation(observation, num_rounds=self.config.num_rounds,
                                  max_players=self.max_players)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.label} seed={self.seed}>"


def legal_from_mask(action_mask: MaskArray) -> list[int]:
    """The legal actions of a mask, ascending."""
    return [int(a) for a in np.flatnonzero(action_mask)]


def one_line(exc: BaseException, limit: int = 160) -> str:
    """``"Type: message"`` of an exception on one line (its first line, shortened), for
    one-line errors about files a library failed to load."""
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else ""
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
