"""An SB3 ``VecEnv`` on the batched engine, for MaskablePPO and the rest of Stable-Baselines3.

:class:`SB3VectorEnv` wraps :class:`dragons_egg_env.vector_env.SingleAgentVectorEnv` (one
learner seat per match, batched opponents) in SB3's ``VecEnv`` interface:
``env_method("action_masks")`` returns one mask per env, which is what
``sb3_contrib.common.maskable.utils.get_action_masks`` stacks, so ``MaskablePPO`` trains on it
unchanged::

    from dragons_egg.agents.batched import AgentPolicy
    from dragons_egg.experiments.training.sb3_vec import SB3VectorEnv
    from sb3_contrib import MaskablePPO

    vec = SB3VectorEnv(num_envs=64, opponents=[AgentPolicy("heuristic")], seed=0)
    MaskablePPO("MlpPolicy", vec).learn(100_000)

Autoreset follows SB3: a finished episode's ``done`` comes with the next episode's first
observation, and ``infos[i]["terminal_observation"]`` holds the learner's last observation of
the finished match (the engine restarts a match within the step and keeps no terminal
observation; episodes end by termination only, so nothing bootstraps from it).
``infos[i]["episode"]`` (``r``, ``l``, ``t``) is what ``Monitor`` would give, so SB3 logs
``ep_rew_mean``; ``infos[i]["final_info"]`` has the finished episode's learner ``seat`` and
``final_scores`` (``infos[i]["seat"]`` is already the next episode's). The env is one
object: ``get_attr``/``set_attr``/other ``env_method`` calls act on the one
:class:`SingleAgentVectorEnv` and return its answer once per index.
"""

from __future__ import annotations

import time
from collections.abc import Sized
from typing import Any, cast

import numpy as np

from dragons_egg_env.extras import explain
from dragons_egg_env.vector_env import SingleAgentVectorEnv

try:
    from stable_baselines3.common.vec_env import VecEnv
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn
except ModuleNotFoundError as _exc:  # a MissingExtraError naming the train extra
    raise explain(_exc, "dragons_egg.experiments.training.sb3_vec", "train") from None


class SB3VectorEnv(VecEnv):
    """SB3 ``VecEnv`` view of a :class:`SingleAgentVectorEnv` (given, or built from
    ``**kwargs``: ``num_envs``, ``opponents``, rules, ``seed``, ...)."""

    def __init__(self, venv: SingleAgentVectorEnv | None = None, **kwargs: Any) -> None:
        if venv is None:
            venv = SingleAgentVectorEnv(**kwargs)
        elif kwargs:
            raise ValueError("pass either a SingleAgentVectorEnv or its arguments, not both")
        self.venv = venv
        self._actions: np.ndarray | None = None
        self._t0 = time.time()
        super().__init__(venv.num_envs, venv.single_observation_space,
                         venv.single_action_space)

    def reset(self) -> np.ndarray:
        seed = self._seeds[0]
        obs, info = self.venv.reset(seed=seed)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{"seat": int(s)} for s in info["seat"]]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(-1)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_async() before step_wait()")
        actions, self._actions = self._actions, None
        if actions.dtype.kind == "f" and np.all(actions == np.round(actions)):
            actions = actions.astype(np.int64)
        obs, reward, term, trunc, infos = self.venv.step(actions)
        dones = term | trunc
        seats = infos["seat"]
        out: list[dict[str, Any]] = [{"seat": int(s)} for s in seats]
        if dones.any():
            final = infos["final_info"]
            now = round(time.time() - self._t0, 6)
            for b in np.flatnonzero(dones):
                out[b]["terminal_observation"] = infos["final_obs"][b]
                out[b]["TimeLimit.truncated"] = bool(trunc[b] and not term[b])
                out[b]["episode"] = {"r": float(final["episode_return"][b]),
                                     "l": int(final["episode_length"][b]), "t": now}
                out[b]["final_info"] = {"seat": int(final["seat"][b]),
                                        "final_scores": final["final_scores"][b]}
        return obs, reward.astype(np.float32), dones, out

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self.venv, attr_name)
        return [value] * len(cast(Sized, self._get_indices(indices)))  # a range or a list

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        idx = list(self._get_indices(indices))
        if method_name == "action_masks":
            masks = self.venv.action_masks()
            return [masks[i] for i in idx]
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result] * len(idx)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(cast(Sized, self._get_indices(indices)))  # a range or a list

    def get_images(self) -> list[None]:
        return [None] * self.num_envs


__all__ = ["SB3VectorEnv"]
