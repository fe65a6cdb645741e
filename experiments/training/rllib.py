"""Dragon's Egg on Ray RLlib (new API stack): the environment, masked modules and a league.

Needs the ``rllib`` extra (``pip install 'dragons-egg[rllib]'``; tested with ray 2.60).

- :class:`DragonsEggMultiAgentEnv`: ``dragons_egg_v0.env`` through RLlib's own PettingZoo
  wrapper (:class:`ray.rllib.env.wrappers.pettingzoo_env.PettingZooEnv`), with each observation
  a dict ``{"observations": vector, "action_mask": mask}``, the keys masking modules expect.
  Every seat's rewards reach it through PettingZoo's cumulative rewards; at the end of a match
  every seat receives its final reward.
- :class:`MaskedPPOTorchRLModule`: PPO's default torch module with illegal actions masked out
  of the logits (our own; the modules under ``ray.rllib.examples`` are not a stable API).
- :class:`MaskedRandomRLModule` and :class:`HeuristicRLModule`: opponents as modules (RLlib's
  own random module ignores masks); they are never trained.
- :class:`LeagueCallback`: self-play with a league: every ``snapshot_every`` iterations,
  once ``main`` beats its table on average, a frozen copy of it joins the league; the
  baselines stay.
- :func:`league_mapping_fn`: per episode, ``main`` takes one seat (drawn from the episode id)
  and every other seat draws a league member.
- :func:`ppo_config`: a :class:`~ray.rllib.algorithms.ppo.PPOConfig` wiring it together.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable
from typing import Any, cast

import gymnasium as gym
import numpy as np
from pettingzoo.utils.wrappers import BaseWrapper

from dragons_egg_env.actions import NUM_ACTIONS
from dragons_egg_env.config import RulesConfig
from dragons_egg_env.dragons_egg_v0 import env, raw_env
from dragons_egg_env.extras import explain

try:
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
        DefaultPPOTorchRLModule,
    )
    from ray.rllib.callbacks.callbacks import RLlibCallback
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModule, RLModuleSpec
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
except ModuleNotFoundError as _exc:  # a MissingExtraError naming the rllib extra
    raise explain(_exc, "dragons_egg.experiments.training.rllib", "rllib") from None

MAIN = "main"
BASELINES = ("random", "heuristic")
_NEG = -1e9  # logit of an illegal action


class _RLlibKeys(BaseWrapper[str, Any, Any]):
    """Renames the observation keys to the ones RLlib's masking modules read."""

    def __init__(self, wrapped: raw_env) -> None:
        super().__init__(wrapped)
        inner = cast(gym.spaces.Dict, wrapped.observation_space(wrapped.possible_agents[0]))
        self._space = gym.spaces.Dict({
            "observations": inner["observation"],
            "action_mask": gym.spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
        })

    def observation_space(self, agent: str) -> gym.Space[Any]:
        return self._space

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        obs = cast(dict[str, np.ndarray], self.env.observe(agent))  # the env's, never None
        return {"observations": obs["observation"],
                "action_mask": obs["action_mask"].astype(np.float32)}


class DragonsEggMultiAgentEnv(PettingZooEnv):
    """The AEC environment as an RLlib ``MultiAgentEnv``; ``config`` holds the env's keyword
    arguments (``num_players``, ``num_rounds``, ``max_players``, rule flags) and optionally
    ``illegal_action``: ``"terminate"`` (default: ``dragons_egg_v0.env()``, where an illegal
    action ends the match with -1 for its maker, as RLlib's env checker, which steps unmasked
    random actions, needs) or ``"raise"`` (``raw_env()``: an error, for tests)."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        cfg = dict(config or {})
        mode = cfg.pop("illegal_action", "terminate")
        if mode not in ("terminate", "raise"):
            raise ValueError(f"illegal_action must be 'terminate' or 'raise', got {mode!r}")
        super().__init__(  # type: ignore[no-untyped-call]  # RLlib's PettingZooEnv has no hints
            _RLlibKeys(env(**cfg) if mode == "terminate" else raw_env(**cfg)))


def _mask_logits(out: dict[str, Any], mask: Any) -> dict[str, Any]:
    logits = out[Columns.ACTION_DIST_INPUTS]
    out[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(mask <= 0, _NEG)
    return out


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """PPO's default torch module over ``obs["observations"]``, with ``obs["action_mask"]``
    applied to the action logits (illegal actions get a logit of -1e9)."""

    def __init__(self, *args: Any, observation_space: gym.Space[Any] | None = None,
                 **kwargs: Any) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or \
                set(observation_space.spaces) != {"observations", "action_mask"}:
            raise ValueError("MaskedPPOTorchRLModule needs a Dict observation space with "
                             f"'observations' and 'action_mask'; got {observation_space}")
        self._dict_space = observation_space
        super().__init__(  # type: ignore[no-untyped-call]  # RLlib's RLModule has no hints here
            *args, observation_space=observation_space["observations"], **kwargs)

    def setup(self) -> None:
        super().setup()  # type: ignore[no-untyped-call]  # RLlib's setup has no hints
        self.observation_space = self._dict_space

    @staticmethod
    def _split(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        obs = batch[Columns.OBS]
        inner = dict(batch)
        inner[Columns.OBS] = obs["observations"]
        return obs["action_mask"], inner

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, inner = self._split(batch)
        return _mask_logits(super()._forward_inference(inner, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, inner = self._split(batch)
        return _mask_logits(super()._forward_exploration(inner, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, inner = self._split(batch)
        return _mask_logits(super()._forward_train(inner, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if isinstance(batch[Columns.OBS], dict):
            _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)


class _FixedPolicyModule(RLModule):
    """A module that picks actions by a fixed rule and is never trained."""

    def setup(self) -> None:
        # a dict here (the specs of ppo_config), not RLlib's DefaultModelConfig
        cfg = dict(cast(dict[str, Any], self.model_config or {}))
        self._seed = int(cfg.get("seed", 0))
        self._rng = random.Random(self._seed)

    def _actions(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        import torch

        o = batch[Columns.OBS]
        obs = np.asarray(o["observations"].cpu() if hasattr(o["observations"], "cpu")
                         else o["observations"])
        mask = np.asarray(o["action_mask"].cpu() if hasattr(o["action_mask"], "cpu")
                          else o["action_mask"])
        return {Columns.ACTIONS: torch.as_tensor(self._actions(obs, mask), dtype=torch.int64)}

    def _forward_train(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__} is never trained: leave it out of "
                                  "policies_to_train")

    def get_state(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        pass


class MaskedRandomRLModule(_FixedPolicyModule):
    """Uniform over the legal actions (``model_config={"seed": ...}``)."""

    def _actions(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        out = []
        for row in mask:
            legal = np.flatnonzero(row > 0)
            out.append(int(legal[self._rng.randrange(len(legal))]) if len(legal) else 0)
        return np.array(out)


class HeuristicRLModule(_FixedPolicyModule):
    """The ``heuristic`` agent as a module (``model_config`` holds ``max_players``,
    ``num_rounds`` and rule flags, as the env's config)."""

    def setup(self) -> None:
        super().setup()
        from dragons_egg.agents.heuristic import HeuristicAgent

        # a dict here (the specs of ppo_config), not RLlib's DefaultModelConfig
        cfg = dict(cast(dict[str, Any], self.model_config or {}))
        cfg.pop("seed", None)
        max_players = cfg.pop("max_players", None) or cfg.get("num_players", 4)
        rules = RulesConfig.from_kwargs({k: v for k, v in cfg.items()
                                         if k in RulesConfig.field_names()})
        self._agent = HeuristicAgent(seed=self._seed)
        self._agent.start_match(0, rules, max_players)

    def _actions(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.array([self._agent.act(o, m) for o, m in zip(obs, mask, strict=True)])


def _episode_hash(episode: Any, salt: str) -> int:
    return zlib.crc32(f"{getattr(episode, 'id_', episode)}/{salt}".encode())


def league_mapping_fn(league: list[str], num_players: int) -> Callable[..., str]:
    """A mapping: ``main`` at one seat per episode, league members at the others."""
    members = list(league)

    def mapping(agent_id: str, episode: Any, **kwargs: Any) -> str:
        seat = int(str(agent_id).rsplit("_", 1)[-1])
        if seat == _episode_hash(episode, "main") % num_players:
            return MAIN
        return members[_episode_hash(episode, str(seat)) % len(members)]
    return mapping


class LeagueCallback(RLlibCallback):
    """Self-play league: every ``snapshot_every`` iterations, if ``main`` has improved enough
    (its mean episode return over the iteration's episodes is above ``min_return``: it beats
    the current table on average), a frozen copy of it joins the league. The baselines stay."""

    def __init__(self, snapshot_every: int = 5, num_players: int = 4,
                 baselines: tuple[str, ...] = BASELINES, min_return: float = 0.0) -> None:
        super().__init__()
        self.snapshot_every = snapshot_every
        self.num_players = num_players
        self.min_return = min_return
        self.league = list(baselines)

    def on_train_result(self, *, algorithm: Any, result: dict[str, Any], **kwargs: Any) -> None:
        it = algorithm.iteration
        returns = (result.get("env_runners", {}).get("module_episode_returns_mean") or {})
        main_return = returns.get(MAIN, float("-inf"))
        if self.snapshot_every and it % self.snapshot_every == 0 and \
                main_return > self.min_return:
            module_id = f"main_v{it}"
            main = algorithm.get_module(MAIN)
            self.league.append(module_id)
            algorithm.add_module(
                module_id=module_id, module_spec=RLModuleSpec.from_module(main),
                new_agent_to_module_mapping_fn=league_mapping_fn(self.league, self.num_players),
                new_should_module_be_updated=[MAIN])
            algorithm.set_state({"learner_group": {"learner": {"rl_module": {
                module_id: main.get_state()}}}})
        result["league_size"] = len(self.league)


def ppo_config(env_config: dict[str, Any] | None = None, *, num_env_runners: int = 0,
               num_learners: int = 0, train_batch_size: int = 4000, minibatch_size: int = 512,
               num_epochs: int = 5, lr: float = 3e-4, snapshot_every: int = 5,
               min_return: float = 0.0, seed: int = 0,
               hidden: tuple[int, ...] = (256, 256)) -> PPOConfig:
    """PPO on Dragon's Egg: ``main`` learns against a league of baselines and snapshots."""
    env_config = dict(env_config or {})
    n = int(env_config.get("num_players", 4))
    probe = DragonsEggMultiAgentEnv({**env_config, "illegal_action": "terminate"})
    assert probe.observation_spaces is not None and probe.action_spaces is not None  # set
    obs_space = probe.observation_spaces[probe.possible_agents[0]]
    act_space = probe.action_spaces[probe.possible_agents[0]]
    probe.close()  # type: ignore[no-untyped-call]  # RLlib's PettingZooEnv has no hints
    fixed_cfg = {k: v for k, v in env_config.items() if k != "illegal_action"}
    fixed_cfg["seed"] = seed
    specs = {
        MAIN: RLModuleSpec(module_class=MaskedPPOTorchRLModule, observation_space=obs_space,
                           action_space=act_space,
                           model_config={"fcnet_hiddens": list(hidden),
                                         "head_fcnet_hiddens": [64]}),
        "random": RLModuleSpec(module_class=MaskedRandomRLModule, observation_space=obs_space,
                               action_space=act_space, model_config=fixed_cfg),
        "heuristic": RLModuleSpec(module_class=HeuristicRLModule, observation_space=obs_space,
                                  action_space=act_space, model_config=fixed_cfg),
    }
    return (
        PPOConfig()  # type: ignore[no-untyped-call]  # RLlib's PPOConfig has no hints
        .environment(DragonsEggMultiAgentEnv, env_config=env_config,
                     disable_env_checking=env_config.get("illegal_action") == "raise")
        .env_runners(num_env_runners=num_env_runners)
        .learners(num_learners=num_learners)
        .multi_agent(policies=set(specs), policy_mapping_fn=league_mapping_fn(
            list(BASELINES), n), policies_to_train=[MAIN])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .training(train_batch_size_per_learner=train_batch_size, minibatch_size=minibatch_size,
                  num_epochs=num_epochs, lr=lr)
        # RLlib takes a factory of the callback too, which its hints leave out
        .callbacks(lambda: LeagueCallback(snapshot_every, n,  # type: ignore[arg-type]
                                          min_return=min_return))
        .debugging(seed=seed)
    )


__all__ = ["DragonsEggMultiAgentEnv", "MaskedPPOTorchRLModule", "MaskedRandomRLModule",
           "HeuristicRLModule", "LeagueCallback", "league_mapping_fn", "ppo_config", "MAIN"]
