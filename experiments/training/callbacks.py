"""Hooks on a training run, in the sense of Stable-Baselines3's callbacks
(``stable_baselines3.common.callbacks.BaseCallback``): an object whose methods the trainer calls
at fixed points of its run, to watch it, add figures to its evaluations or act on it.

Both trainers call them: the self-play trainer (:class:`~.selfplay.Run`, ``callbacks=``) and the
SB3 trainer (:func:`~.train_ppo.train`, ``callbacks=``). Both runs are a
:class:`~.lifecycle.TrainerRun`, which holds the :class:`CallbackList` (``run.callbacks``) and
calls ``on_run_start``, ``on_eval_end``, ``on_checkpoint`` and ``on_run_end`` from its own
methods; each trainer calls ``on_rollout_end`` and ``on_update_end`` where its loop has them
(the SB3 trainer from the SB3 callback ``model.learn`` calls, which forwards to its run). The
plug-ins of the self-play trainer that act around the loop register the same way
(:func:`~.search_targets.SearchTargetsPlugin`: the search targets loaded at the start of the run,
their figures added to each evaluation). Each hook gets the trainer's run object (``run``: the
self-play :class:`~.selfplay.Run`, or the SB3 trainer's :class:`~.train_ppo.SB3Run`, which
holds ``cfg``, ``model``, ``run_dir`` and ``history``); every method does nothing by default.

=====================  ==========================================================================
hook                   when
=====================  ==========================================================================
``on_run_start``       the run is built (settings checked, folder claimed, learner made; a
                       resume's state loaded by the SB3 trainer, not yet by self-play), before the
                       first rollout
``on_rollout_end``     a rollout is collected, before the update on it (``info``: the trainer's
                       figures of the rollout)
``on_update_end``      an update is done (``stats``: its figures, as TensorBoard gets them)
``on_eval_end``        an evaluation's row is made, before it is written (``row``: add figures
                       to it here; they go to ``eval.csv`` and the history)
``on_checkpoint``      a checkpoint was written (``path``)
``on_run_end``         the run is over (``final``: its final file)
=====================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


class TrainerCallback:
    """A hook on a training run (the module docstring); subclass it and override the hooks
    you need."""

    def on_run_start(self, run: Any) -> None:
        """The run is built, before its first rollout."""

    def on_rollout_end(self, run: Any, info: dict[str, Any]) -> None:
        """A rollout is collected, before the update on it."""

    def on_update_end(self, run: Any, stats: dict[str, Any]) -> None:
        """An update is done; ``stats`` are its figures."""

    def on_eval_end(self, run: Any, row: dict[str, Any]) -> None:
        """An evaluation's ``row``, before it is written: figures added here are kept."""

    def on_checkpoint(self, run: Any, path: Path) -> None:
        """A checkpoint was written to ``path``."""

    def on_run_end(self, run: Any, final: Path) -> None:
        """The run is over; ``final`` is its final policy or checkpoint."""


class CallbackList(TrainerCallback):
    """Several callbacks called in turn, in their order."""

    def __init__(self, callbacks: Iterable[TrainerCallback] = ()) -> None:
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            if not isinstance(cb, TrainerCallback):
                raise TypeError(f"a callback is a TrainerCallback, got {cb!r}")

    def on_run_start(self, run: Any) -> None:
        for cb in self.callbacks:
            cb.on_run_start(run)

    def on_rollout_end(self, run: Any, info: dict[str, Any]) -> None:
        for cb in self.callbacks:
            cb.on_rollout_end(run, info)

    def on_update_end(self, run: Any, stats: dict[str, Any]) -> None:
        for cb in self.callbacks:
            cb.on_update_end(run, stats)

    def on_eval_end(self, run: Any, row: dict[str, Any]) -> None:
        for cb in self.callbacks:
            cb.on_eval_end(run, row)

    def on_checkpoint(self, run: Any, path: Path) -> None:
        for cb in self.callbacks:
            cb.on_checkpoint(run, path)

    def on_run_end(self, run: Any, final: Path) -> None:
        for cb in self.callbacks:
            cb.on_run_end(run, final)


__all__ = ["CallbackList", "TrainerCallback"]
