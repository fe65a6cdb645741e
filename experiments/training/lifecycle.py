"""The run lifecycle every trainer shares: :class:`TrainerRun`, the base of the self-play
trainer's :class:`~.selfplay.Run` and the SB3 trainer's :class:`~.train_ppo.SB3Run`.

The base holds what a run is around its learning, each piece built on
:mod:`dragons_egg.experiments.common.runs`:

=====================  ==========================================================================
piece                  what the base holds
=====================  ==========================================================================
settings               ``cfg``, validated before anything is written (:meth:`TrainerRun.begin`)
run folder             ``run_dir``, locked for this process while the run lives
                       (:class:`~dragons_egg.experiments.common.locks.FolderLock`: one writer
                       per folder) and claimed for one run (:data:`TrainerRun.RUN_FILES`, the
                       trainer's ``latest_checkpoint`` named in the refusal, ``--overwrite``),
                       with its :data:`TrainerRun.SUBFOLDERS`
unit                   :data:`TrainerRun.UNIT`: what the run counts (``samples``, ``timesteps``)
interrupts             ``hold`` (:class:`~dragons_egg.experiments.common.runs.HeldInterrupts`:
                       Ctrl-C waits for the update in progress) and :meth:`TrainerRun.interrupted`,
                       the :class:`~dragons_egg.experiments.common.runs.RunInterrupted` to raise
hooks                  ``callbacks`` (:class:`~.callbacks.CallbackList`), called by the base's
                       :meth:`~TrainerRun.run_started`, :meth:`~TrainerRun.record_eval`,
                       :meth:`~TrainerRun.checkpoint_written` and :meth:`~TrainerRun.run_ended`;
                       the trainer calls ``on_rollout_end`` and ``on_update_end`` where its loop
                       has them
history                ``history`` (the evaluation rows) and ``config_history`` (the start, each
                       resume with the settings it changed: :meth:`TrainerRun.resumed`), written
                       with ``config.json`` (:meth:`TrainerRun.open_output`)
run output             ``output`` (:class:`~dragons_egg.experiments.common.runs.RunOutput`:
                       ``eval.csv``, read against its schema and restored on resume, the
                       learning curve, TensorBoard)
command line           :meth:`TrainerRun.command`, both ``main``'s: a refused start is one line
                       and exit status 2, Ctrl-C one line (the resume command) and 130, a
                       full disk one line (the file, the last checkpoint, the resume command)
                       and 1
=====================  ==========================================================================

A trainer adds how it learns (:meth:`TrainerRun.train`), its checkpoint format and what it
loads on resume, and when it evaluates and saves.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from dragons_egg.experiments.common.files import disk_full
from dragons_egg.experiments.common.locks import FolderLock
from dragons_egg.experiments.common.runs import (
    DamagedEvalCsv,
    HeldInterrupts,
    RunInterrupted,
    RunOutput,
    check_eval_csv,
    claim_run_dir,
    config_changes,
    disk_full_exit,
    interrupted_exit,
    resume_entry,
    start_entry,
    write_run_config,
)
from dragons_egg.experiments.training.callbacks import CallbackList, TrainerCallback
from dragons_egg.experiments.training.scaffold import (
    agent_specs,
    consent_flags,
    folder_consent_flags,
)


class TrainerRun:
    """A training run's lifecycle (the module docstring). A trainer subclasses it, sets the
    class attributes, and in its constructor calls :meth:`begin` first (settings and folder:
    nothing is built before they pass), then, once its learner is built and a resume's state
    loaded (:meth:`resumed`), :meth:`open_output`; :meth:`run_started` where its hooks' run
    starts."""

    #: What a run writes in its folder (globs): one of them there means the folder holds a
    #: run, and ``--overwrite`` removes exactly these.
    RUN_FILES: ClassVar[tuple[str, ...]] = ()
    #: The folders :meth:`begin` makes in the run folder.
    SUBFOLDERS: ClassVar[tuple[str, ...]] = ("checkpoints",)
    #: What the run counts: ``samples`` or ``timesteps`` (the history's and eval.csv's key).
    UNIT: ClassVar[str] = "samples"
    #: What a command that resumes a run of this trainer adds after ``--resume CHECKPOINT``
    #: (and then an ``--allow-code SPEC`` for each agent spec of the run that runs code:
    #: :func:`~.scaffold.consent_flags`).
    RESUME_FLAGS: ClassVar[str] = ""
    #: How :meth:`command` ends a refused start: ``False``, ``error: ...`` and the status 2
    #: returned; ``True``, ``PROG: error: ...`` and ``SystemExit(2)``, as the trainer's
    #: command-line errors (both are exit status 2 from a shell).
    EXIT_ON_ERROR: ClassVar[bool] = False

    cfg: Any
    run_dir: Path
    hold: HeldInterrupts
    callbacks: CallbackList
    history: list[dict[str, Any]]
    config_history: list[dict[str, Any]]
    output: RunOutput

    @staticmethod
    def latest_checkpoint(run_dir: Path) -> Path | None:
        """The checkpoint a run in ``run_dir`` continues from, if it has one (named when a
        folder holding a run is refused, and when a second Ctrl-C leaves nothing saved)."""
        raise NotImplementedError

    # -- the run's start -------------------------------------------------------------------
    def begin(self, cfg: Any, resume: str | Path | None = None, overwrite: bool = False,
              callbacks: Iterable[TrainerCallback] = ()) -> None:
        """``cfg`` validated (its ``ValueError`` names the setting), the run folder claimed
        (:func:`~dragons_egg.experiments.common.runs.claim_run_dir`: a new run, a resume in
        the checkpoint's own folder or in one with no run, or ``overwrite``) with its
        :data:`SUBFOLDERS`, a resume's ``eval.csv`` read against its schema (a damaged one is
        a ``ValueError`` naming the file and line:
        :func:`~dragons_egg.experiments.common.runs.check_eval_csv`); then the hold on Ctrl-C,
        the ``callbacks`` and an empty history whose config history starts now."""
        cfg.validate()
        self.cfg = cfg
        self.run_dir = cfg.run_dir
        # one writer per folder (another run, a tournament, an --overwrite of it) for as
        # long as this run lives: refused at once, naming the holder's pid
        self.lock = FolderLock(self.run_dir, "run folder").acquire()
        weakref.finalize(self, self.lock.release)
        # the resume it names needs --allow-code for that run's specs that run code
        with self.writes():
            claim_run_dir(self.run_dir, self.RUN_FILES, latest=self.latest_checkpoint,
                          resume=resume, overwrite=overwrite,
                          resume_flags=self.RESUME_FLAGS + folder_consent_flags(self.run_dir,
                                                                                cfg))
            if resume is not None:  # a damaged eval.csv is refused before anything is built
                try:
                    check_eval_csv(self.run_dir / "eval.csv")
                except DamagedEvalCsv:
                    raise
                except ValueError:  # rows of two sets of columns: open_output sets it aside
                    pass
            for sub in self.SUBFOLDERS:
                (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        #: Ctrl-C waits for the update in progress.
        self.hold = HeldInterrupts("this update")
        #: The hooks on the run (:mod:`.callbacks`).
        self.callbacks = CallbackList(callbacks)
        #: The evaluations, one row each (with the run's :data:`UNIT`).
        self.history = []
        #: When the run started and each resume, with the settings it changed.
        self.config_history = [start_entry(self.UNIT)]

    def resumed(self, checkpoint: str | Path, count: int, saved: Any,
                earlier: Iterable[dict[str, Any]]) -> None:
        """A resume from ``checkpoint`` at ``count`` (:data:`UNIT`): the config history is the
        checkpoint's (``earlier``; none in a checkpoint from before it) and this resume, with
        each setting ``cfg`` changes from the ``saved`` ones (printed)."""
        self.config_history = [*earlier, resume_entry(
            count, checkpoint, config_changes(saved, self.cfg), unit=self.UNIT)]

    def open_output(self, resume: bool, count: int,
                    scalar: Callable[[str, float, int], None] | None = None) -> None:
        """The run's output (:class:`~dragons_egg.experiments.common.runs.RunOutput`,
        ``scalar`` for a trainer with a logger of its own): on resume ``eval.csv`` made to hold
        the history at ``count``; then ``config.json`` and ``config_history.json``."""
        with self.writes():
            #: ``eval.csv``, the learning curve and TensorBoard's scalars.
            self.output = RunOutput(self.run_dir, self.UNIT, scalar=scalar)
            if resume:
                self.output.restore(self.history, count)
            write_run_config(self.run_dir, self.cfg, self.config_history)

    def run_started(self) -> None:
        """The run is built: ``on_run_start``."""
        self.callbacks.on_run_start(self)

    # -- during the run --------------------------------------------------------------------
    def record_eval(self, row: dict[str, Any]) -> dict[str, Any]:
        """An evaluation's ``row``: the hooks may add figures to it (``on_eval_end``), then it
        joins the history and ``eval.csv`` (with TensorBoard and the learning curve)."""
        self.callbacks.on_eval_end(self, row)
        self.history.append(row)
        self.output.add_eval(row)
        return row

    def checkpoint_written(self, path: Path) -> Path:
        """A checkpoint was written to ``path``: ``on_checkpoint``."""
        self.callbacks.on_checkpoint(self, path)
        return path

    def interrupted(self, count: int, save: Callable[[], Path]) -> RunInterrupted:
        """After a Ctrl-C at ``count`` (:data:`UNIT`): the checkpoint ``save()`` writes, to
        raise; nothing is saved when a second Ctrl-C cut an update (``hold.torn``), and the
        run's latest checkpoint is named instead."""
        self.hold.release()
        if self.hold.torn:
            return RunInterrupted(None, count, self.UNIT, self.latest_checkpoint(self.run_dir))
        return RunInterrupted(save(), count, self.UNIT)

    def run_ended(self, final: Path) -> Path:
        """The run is over: ``on_run_end`` with its ``final`` file."""
        self.callbacks.on_run_end(self, final)
        return final

    # -- what a trainer adds ---------------------------------------------------------------
    def train(self) -> Path:
        """Train to the end of the run; returns its final file. A Ctrl-C raises
        :meth:`interrupted`'s :class:`~dragons_egg.experiments.common.runs.RunInterrupted`."""
        raise NotImplementedError

    def done_line(self, final: Path) -> str:
        """What :meth:`command` prints on stdout when the run is over (nothing by default)."""
        return ""

    # -- the command line ------------------------------------------------------------------
    def resume_flags(self) -> str:
        """What the command that resumes this run adds after ``--resume CHECKPOINT``:
        :data:`RESUME_FLAGS`, then an ``--allow-code SPEC`` for each of its agent specs that
        runs code (a checkpoint's settings cannot give consent: the resume gives it again)."""
        return self.RESUME_FLAGS + consent_flags(agent_specs(self.cfg))

    @classmethod
    def command(cls, prog: str, start: Callable[[], TrainerRun]) -> int:
        """A trainer's ``main`` after parsing: the run ``start()`` builds, trained. A
        ``ValueError`` while it is built (a folder holding another run, a checkpoint that does
        not fit) is one line and exit status 2 (:data:`EXIT_ON_ERROR`), a Ctrl-C one line and
        130 (:func:`~dragons_egg.experiments.common.runs.interrupted_exit`, with the resume
        command where a checkpoint was saved), a disk that refuses a write (full, over its
        quota, failing: :func:`~dragons_egg.experiments.common.files.disk_error`) one line
        and 1 (:func:`~dragons_egg.experiments.common.runs.disk_full_exit`: the file, the
        run's last complete checkpoint and the command that resumes from it); else
        :meth:`done_line` and 0."""
        prefix = f"{prog}: error: " if cls.EXIT_ON_ERROR else "error: "
        run: TrainerRun | None = None
        try:
            run = start()
            final = run.train()
        except ValueError as exc:
            if run is not None:
                raise
            if cls.EXIT_ON_ERROR:
                print(f"{prog}: error: {exc}", file=sys.stderr)
                raise SystemExit(2) from None
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt as exc:  # train saved a checkpoint (RunInterrupted)
            return interrupted_exit(exc, prog, cls.RESUME_FLAGS if run is None
                                    else run.resume_flags())
        except OSError as exc:
            if not disk_full(exc):
                raise
            run = run or getattr(exc, "trainer_run", None)  # one that failed as it was built
            if run is None:
                return disk_full_exit(exc, prog, None, prefix=prefix, kept="nothing was "
                                      "trained: free space and run the same command again")
            return disk_full_exit(exc, prog, run.latest_checkpoint(run.run_dir),
                                  run.resume_flags(), prefix)
        line = run.done_line(final)
        if line:
            print(line)
        return 0

    @contextlib.contextmanager
    def writes(self) -> Iterator[None]:
        """Within (the writes of a run being built): a disk that refuses a write is an
        ``OSError`` that carries this run as ``trainer_run``, so that :meth:`command` names
        its last checkpoint."""
        try:
            yield
        except OSError as exc:
            if disk_full(exc):
                setattr(exc, "trainer_run", self)  # noqa: B010 - any OSError carries it
            raise


__all__ = ["TrainerRun"]
