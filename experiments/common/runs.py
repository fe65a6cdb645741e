"""Run folders, shared by every trainer: a folder holds one run, never two mixed and never one
overwritten unless told (:func:`claim_run_dir`); resuming a run in its folder with its saved
settings and the changes recorded (:func:`resumed_settings`, ``config_history.json``); Ctrl-C
(and SIGTERM, :func:`stops_on_sigterm`) held off during an update and turned into a
checkpoint (:class:`HeldInterrupts`, :class:`RunInterrupted`); and what a run writes, the
same for every trainer (:class:`RunOutput`): the evaluations in ``eval.csv``, the learning
curve and TensorBoard's scalars."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import io
import json
import math
import numbers
import os
import shlex
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

from dragons_egg.experiments.common.settings import flat_values, get_path, replace_paths

from .files import atomic_path, disk_error, disk_error_line, write_atomically, write_whole
from .plots import save_png

# ---------------------------------------------------------------------------------------
# Resuming a run: its folder, its settings, the changes.

def checkpoint_run_dir(checkpoint: str | Path) -> Path:
    """The run folder a checkpoint belongs to (absolute): the folder above it when it lies in
    a ``checkpoints/`` folder, else the folder that holds it; it must hold the run's
    ``config.json`` (a ``ValueError`` otherwise)."""
    folder = checkpoint_folder(checkpoint)
    if not (folder / "config.json").is_file():
        raise ValueError(f"checkpoint {checkpoint} is not in a run folder (no config.json in "
                         f"{folder}); give --out-dir and --run-name for the folder to continue "
                         "in")
    return folder


def _plain(value: Any) -> Any:
    """``value`` as JSON has it (tuples as lists)."""
    return json.loads(json.dumps(value))


def config_changes(old: Any, new: Any) -> dict[str, list[Any]]:
    """The settings that differ between two settings dataclasses, ``{name: [old, new]}``
    (JSON values; a group's settings by their own names, :func:`.settings.flat_values`)."""
    a, b = (_plain(_json_form(flat_values(x))) for x in (old, new))
    return {k: [a.get(k), v] for k, v in b.items() if a.get(k) != v}


def _json_form(values: dict[str, Any]) -> dict[str, Any]:
    """Values as JSON holds them (a dataclass value, such as the rules, as its object)."""
    return {k: dataclasses.asdict(v) if dataclasses.is_dataclass(v) and not isinstance(v, type)
            else v for k, v in values.items()}


def resumed_settings(saved: Any, parsed: Any, given: Iterable[str], checkpoint: str | Path,
                     frozen: dict[str, str]) -> Any:
    """The settings a resumed run continues with: the checkpoint's ``saved`` ones, with those
    ``given`` explicitly taken from ``parsed``. A name in ``frozen`` (with the reason) may not
    change: a ``ValueError`` names its flag. Unless ``out_dir`` or ``run_name`` is given, the
    run continues in the checkpoint's run folder (:func:`checkpoint_run_dir`)."""
    given = set(given)
    for name, why in frozen.items():  # paths: "seed", "ppo.hidden"
        if name in given and _plain(get_path(parsed, name)) != _plain(get_path(saved, name)):
            flag = name.rpartition(".")[2].replace("_", "-")
            raise ValueError(f"--{flag} cannot change on resume ({why}): the checkpoint has "
                             f"{get_path(saved, name)!r}")
    cfg = replace_paths(saved, {k: get_path(parsed, k) for k in sorted(given)})
    if not given & {"out_dir", "run_name"}:
        folder = checkpoint_run_dir(checkpoint)
        if cfg.run_dir.resolve() != folder:
            out_dir = (cfg.out_dir if Path(cfg.out_dir).resolve() == folder.parent
                       else str(folder.parent))
            cfg = dataclasses.replace(cfg, out_dir=out_dir, run_name=folder.name)
    return cfg


def resume_entry(samples: int, checkpoint: str | Path, changes: dict[str, list[Any]],
                 unit: str = "samples") -> dict[str, Any]:
    """An entry of a run's config history: resumed at ``samples`` from ``checkpoint`` with
    these ``changes`` (``{name: [old, new]}``); also printed, one line per change."""
    import time

    print(f"resuming {checkpoint} at {samples:,} {unit}" + (
        "; settings changed:" if changes else " with its saved settings"), file=sys.stderr)
    for name, (old, new) in changes.items():
        print(f"  {name}: {old!r} -> {new!r}", file=sys.stderr)
    return {"event": "resume", unit: samples, "checkpoint": str(checkpoint),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "changes": changes}


def start_entry(unit: str = "samples") -> dict[str, Any]:
    """The first entry of a run's config history: the run started."""
    import time

    return {"event": "start", unit: 0, "time": time.strftime("%Y-%m-%dT%H:%M:%S")}


def write_run_config(run_dir: Path, cfg: Any, history: list[dict[str, Any]]) -> None:
    """``config.json`` (the settings, exactly the fields of the dataclass, so that ``--config``
    reads it back) and ``config_history.json`` (when the run started and each resume, with
    the settings it changed) in the run folder."""
    write_atomically(run_dir / "config.json", json.dumps(dataclasses.asdict(cfg), indent=1))
    write_atomically(run_dir / "config_history.json", json.dumps(history, indent=1) + "\n")


# ---------------------------------------------------------------------------------------
# A run folder holds one run: never two mixed, never one overwritten unless told.

def run_files(run_dir: Path, patterns: Iterable[str]) -> list[Path]:
    """What a run left in ``run_dir``: the entries matching ``patterns`` (globs, such as
    ``config.json``, ``checkpoints``, ``eval-before-resume-*.csv``), a folder only when it is
    not empty."""
    found: list[Path] = []
    if not run_dir.is_dir():
        return found
    for pattern in patterns:
        for p in sorted(run_dir.glob(pattern)):
            if p not in found and not (p.is_dir() and not any(p.iterdir())):
                found.append(p)
    return found


def listing(paths: Sequence[Path]) -> str:
    """``paths`` named in a message: a file by its name, a folder with how many files it
    holds."""
    def one(p: Path) -> str:
        if not p.is_dir():
            return p.name
        n = sum(1 for q in p.rglob("*") if not q.is_dir())
        return f"{p.name}/ ({n} file{'s' * (n != 1)})"
    return ", ".join(one(p) for p in paths)


def _remove_run(run_dir: Path, found: Sequence[Path]) -> None:
    """``--overwrite``: the earlier run's entries ``found`` in ``run_dir``, said and removed."""
    print(f"--overwrite: removing the run in {run_dir}: {listing(found)}",
          file=sys.stderr, flush=True)
    for p in found:
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()


def claim_output(out: str | Path, patterns: Iterable[str], *, overwrite: bool = False,
                 what: str = "results", clear: bool = False,
                 way_on: str = "give another folder, or --overwrite to replace them") -> Path:
    """``out`` as a folder a command may write its results in, checked before it does any
    work: made if missing (a ``ValueError`` saying why when it cannot be), and a
    ``ValueError`` naming what it holds when it holds entries of ``patterns`` (an earlier
    run's ``what``), unless ``overwrite``: a rerun never writes over earlier results
    unasked. With ``clear``, ``overwrite`` first removes those entries (said), for a command
    whose files are numbered (``checkpoint_10``) and so would not all be replaced. ``way_on``
    ends the message: what the command offers instead (a command without ``--overwrite``
    names its ``--resume``)."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{out} is a file, not a folder")
    found = run_files(path, patterns)
    if found and not overwrite:
        raise ValueError(f"{out} holds earlier {what} ({listing(found)}): {way_on}")
    if found and clear:
        _remove_run(path, found)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot make the folder {out}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"the folder {out} is not writable")
    return path


def checkpoint_folder(checkpoint: str | Path) -> Path:
    """The folder a checkpoint's run would be in (absolute): the one above its
    ``checkpoints/`` folder, or the one that holds it."""
    path = Path(checkpoint).resolve()
    return path.parent.parent if path.parent.name == "checkpoints" else path.parent


def claim_run_dir(run_dir: Path, patterns: Iterable[str], *,
                  latest: Callable[[Path], Path | None], resume: str | Path | None = None,
                  overwrite: bool = False, resume_flags: str = "") -> None:
    """Make sure a run may write in ``run_dir`` without mixing with another: a folder with
    files of a run (:func:`run_files` of ``patterns``) is a ``ValueError`` that names both
    ways on, ``--resume`` with its latest checkpoint (``latest(run_dir)``) or a new
    ``--run-name``, unless ``resume`` continues that very run (the checkpoint lies in it) or
    ``overwrite`` is given: then the old run's files are said and removed, first, and nothing
    else in the folder is touched. ``overwrite`` cannot remove the run ``resume`` continues.
    ``resume_flags`` follow ``--resume CHECKPOINT`` in the message (what the trainer's resume
    needs besides, such as ``--trust-checkpoint``)."""
    found = run_files(run_dir, patterns)
    if resume is not None and checkpoint_folder(resume) == run_dir.resolve():
        if overwrite:
            raise ValueError(f"--overwrite would delete the run that --resume {resume} "
                             f"continues ({run_dir}): leave --overwrite out")
        return
    if not found:
        return
    if overwrite:
        _remove_run(run_dir, found)
        return
    if resume is not None:
        raise ValueError(f"{run_dir} already holds another run ({listing(found)}): "
                         f"continuing {resume} there would mix the two; give a new --run-name "
                         "(or --overwrite to delete that run first)")
    ckpt = latest(run_dir)
    if ckpt is None:
        raise ValueError(f"{run_dir} already holds a run, with no checkpoint to resume "
                         f"({listing(found)}): give a new --run-name, or --overwrite to "
                         "delete it first")
    raise ValueError(f"{run_dir} already holds a run ({listing(found)}): continue it with "
                     f"--resume {shlex.quote(str(ckpt))}{resume_flags}, or start another "
                     "with a new --run-name (--overwrite deletes it first)")


#: The help of ``--overwrite``, the same in both trainers.
OVERWRITE_HELP = ("start the run even where the run folder holds one: its files (config, "
                  "checkpoints, evaluations, policies, logs) are removed first, and said; "
                  "without it such a folder is an error that names --resume and --run-name")


# ---------------------------------------------------------------------------------------
# Ctrl-C: the trainer saves a checkpoint and says how to resume.

#: The signals that stop a long command as Ctrl-C does: SIGINT, and SIGTERM and SIGHUP once
#: :func:`stops_on_sigterm` has made them raise ``KeyboardInterrupt`` (the stop a scheduler
#: sends: SLURM's preemption, ``kill``, ``docker stop``, ``timeout``; a closed terminal).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM,
                *((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()))


def _signal_name(signum: int) -> str:
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


#: The process that installed :func:`_sigterm` (a worker forked from it inherits the handler).
_SIGTERM_OWNER = [0]


def _sigterm(signum: int, frame: Any) -> None:
    if os.getpid() != _SIGTERM_OWNER[0]:  # a forked worker: the signal ends it, as by default
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise KeyboardInterrupt


#: The signals :func:`sigterm_interrupts` makes stop a command as Ctrl-C does: SIGTERM (a
#: scheduler's stop) and, where the platform has it, SIGHUP (a closed terminal or SSH
#: session).
TERM_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                     if hasattr(signal, name))


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within: SIGTERM and SIGHUP (:data:`TERM_SIGNALS`) raise ``KeyboardInterrupt`` in the
    main thread, as Ctrl-C does, so a long command stopped by a scheduler or a closed terminal
    saves what it has finished and says how to resume (exit status 130) instead of dying at
    once; a worker process forked meanwhile still ends on them (a pool stops its workers
    so). A command started with SIGINT ignored (``cmd &`` in a script: the shell ignores it
    for background jobs) gets Ctrl-C's usual ``KeyboardInterrupt`` back. Only in the main
    thread, and for each signal only where it has its default action (SIGINT: where it is
    ignored); the handlers before are given back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken = [sig for sig in TERM_SIGNALS if signal.getsignal(sig) is signal.SIG_DFL]
    sigint_ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    _SIGTERM_OWNER[0] = os.getpid()
    for sig in taken:
        signal.signal(sig, _sigterm)
    if sigint_ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for sig in taken:
            signal.signal(sig, signal.SIG_DFL)
        if sigint_ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def stops_on_sigterm(main: Callable[..., int]) -> Callable[..., int]:
    """A command's ``main`` run within :func:`sigterm_interrupts`: SIGTERM stops it as Ctrl-C
    does. A stop signal the command does not handle itself (or one that comes after it has
    handled one and said what it saved) ends it with status 130 and the word ``interrupted``,
    not a traceback."""
    @functools.wraps(main)
    def wrapped(*args: Any, **kwargs: Any) -> int:
        try:
            with sigterm_interrupts():
                return main(*args, **kwargs)
        except KeyboardInterrupt:  # one the command did not handle, or one after it had
            print("interrupted", file=sys.stderr, flush=True)
            return 130
        finally:
            forget_caught_interrupts()
    return wrapped


def forget_caught_interrupts() -> None:
    """Let a ``python -m`` process that caught a ``KeyboardInterrupt`` end with the status it
    returns. CPython marks an interrupt "unhandled" when it leaves an ``exec`` or ``eval`` of
    source text (``collections.namedtuple`` and ``dataclasses`` run one for each class they
    make, so a Ctrl-C or SIGTERM during an import such as matplotlib's can do it), even when
    code above catches it; after a normal exit, the process then kills itself with SIGINT
    (status -2 instead of 130 or 0). Running source text again clears the mark: CPython resets
    it at the start of every such run."""
    exec("")  # noqa: S102 - source text on purpose: it is what clears the mark


def ignore_interrupts() -> None:
    """A pool worker's initializer: Ctrl-C reaches the parent, which stops the workers (and
    keeps what they finished)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def sigterm_kept() -> Iterator[None]:
    """Within: code that installs a SIGTERM handler of its own (``ray.init`` installs one that
    exits at once, and ``ray.shutdown`` leaves it) does not keep it: the handler before is put
    back after, :func:`sigterm_interrupts`'s within a command, the caller's own (the default
    action, most often) where a library user calls the trainer in their process."""
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if before is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, before)


class HeldInterrupts:
    """Ctrl-C (SIGINT, and SIGTERM within :func:`sigterm_interrupts`) held off while a step
    that must not be cut runs (an update: weights half changed, samples not counted):
    :meth:`start` holds, :meth:`stop` lets go, raising the ``KeyboardInterrupt`` that came
    meanwhile, where the trainer's state is whole again. The first stop signal while held
    says so; a second one stops at once, and :attr:`torn` says the state is then not fit to
    save. Only in the main thread (signals are delivered there); elsewhere, or for a signal
    that is ignored or has its default action, it does nothing."""

    def __init__(self, what: str = "this update") -> None:
        self.what = what
        #: A second stop signal cut the held step: the state is not whole.
        self.torn = False
        self._pending = False
        self._old: dict[int, Any] = {}

    def start(self) -> None:
        if self._old or threading.current_thread() is not threading.main_thread():
            return
        self._pending = False
        for sig in STOP_SIGNALS:
            old = signal.getsignal(sig)
            if old in (signal.SIG_IGN, signal.SIG_DFL):
                continue
            self._old[sig] = old if old is not None else signal.default_int_handler
            signal.signal(sig, self._handler)

    def _handler(self, signum: int, frame: Any) -> None:
        name = _signal_name(signum)
        if self._pending:
            self.torn = True
            self.release()
            raise KeyboardInterrupt
        self._pending = True
        print(f"{name}: saving a checkpoint after {self.what} ({name} again stops at once, "
              "without saving)", file=sys.stderr, flush=True)

    def release(self) -> None:
        """Let go without raising (a held stop signal is forgotten)."""
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}

    def stop(self) -> None:
        """Let go; a Ctrl-C that came while held is raised here."""
        pending, self._pending = self._pending, False
        self.release()
        if pending:
            raise KeyboardInterrupt

    def __enter__(self) -> HeldInterrupts:
        self.start()
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is None:
            self.stop()
        else:
            self._pending = False
            self.release()


class RunInterrupted(KeyboardInterrupt):
    """A trainer stopped by Ctrl-C, after saving ``checkpoint`` at ``count`` ``unit``
    (samples, timesteps); ``checkpoint`` is ``None`` when nothing could be saved (a second
    Ctrl-C cut an update), and ``last`` is then the run's latest checkpoint, if any. A
    ``KeyboardInterrupt``, so that code that stops on one still does."""

    def __init__(self, checkpoint: Path | None, count: int, unit: str,
                 last: Path | None = None) -> None:
        super().__init__(f"interrupted at {count:,} {unit}")
        self.checkpoint, self.count, self.unit, self.last = checkpoint, count, unit, last

    def line(self, prog: str, resume_flags: str = "") -> str:
        """One line: where it saved and the command that resumes the run (``prog --resume
        CHECKPOINT`` and ``resume_flags``)."""
        if self.checkpoint is not None:
            return (f"interrupted at {self.count:,} {self.unit}: saved {self.checkpoint}; "
                    f"resume with: {prog} --resume {shlex.quote(str(self.checkpoint))}"
                    f"{resume_flags}")
        if self.last is None:
            return "interrupted during an update: nothing saved, and the run has no checkpoint"
        return (f"interrupted during an update: nothing saved since the last checkpoint; resume "
                f"with: {prog} --resume {shlex.quote(str(self.last))}{resume_flags}")


def interrupted_exit(exc: KeyboardInterrupt, prog: str, resume_flags: str = "") -> int:
    """Say in one line how a trainer stopped on Ctrl-C (:class:`RunInterrupted`, or an
    interrupt before a checkpoint could be saved) and return the exit status 130 (128 +
    SIGINT)."""
    print(exc.line(prog, resume_flags) if isinstance(exc, RunInterrupted)
          else "interrupted before a checkpoint could be saved: nothing saved", file=sys.stderr,
          flush=True)
    return 130


def disk_full_exit(exc: BaseException, prog: str, last: Path | None, resume_flags: str = "",
                   prefix: str = "error: ", kept: str = "") -> int:
    """Say in one line (after ``prefix``) that the disk refused a trainer's write
    (:func:`~.files.disk_error_line`: what it said and the file) and where the run's last
    complete state is: its checkpoint ``last`` (whole: checkpoints take their name only once
    written) and the command that resumes from it, ``prog --resume CHECKPOINT`` and
    ``resume_flags``, as after a Ctrl-C; or that it has none (or ``kept``, what else to
    say). Returns the exit status 1."""
    err = disk_error(exc)
    assert err is not None
    if last is None:
        line = disk_error_line(err, kept or "the run has no checkpoint yet, nothing to "
                                            "resume: free space and start it again "
                                            "(--overwrite replaces the files it wrote)")
    else:
        line = disk_error_line(err, f"the last complete checkpoint is {last}",
                               f"{prog} --resume {shlex.quote(str(last))}{resume_flags}")
    print(prefix + line, file=sys.stderr, flush=True)
    return 1


# ---------------------------------------------------------------------------------------
# What a run writes: the evaluations (eval.csv), the learning curve, TensorBoard.

def json_ready(value: Any) -> Any:
    """``value`` with every NaN (an interval left out) as ``None``, for strict JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    return value


def _cells(row: dict[str, Any]) -> dict[str, Any]:
    """A row for the CSV: NaN (an interval left out; a float or a numpy number) as an empty
    cell, the one way the file holds it (:func:`read_eval_csv` refuses the text ``nan``)."""
    return {k: "" if isinstance(v, numbers.Number) and v != v else v for k, v in row.items()}


def write_eval_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """``rows`` as a CSV file with every column any of them has (:func:`atomic_path`)."""
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, restval="")
        w.writeheader()
        w.writerows(_cells(r) for r in rows)


def append_eval_csv(path: Path, row: dict[str, Any]) -> None:
    """Append ``row`` to an ``eval*.csv`` (a header first when the file is new or empty) under
    the file's header, a column the row lacks left empty (NaN to :func:`read_eval_csv`). A row
    with a column the file lacks (other evaluation opponents after a resume) rewrites the file
    with every column (:func:`write_eval_csv`), so that no value lands under another's header."""
    header: list[str] | None = None
    if path.is_file() and path.stat().st_size:
        with open(path, newline="", encoding="utf-8") as f:
            header = next(csv.reader(f), None)
    if header is not None and not set(row) <= set(header):
        write_eval_csv(path, [*read_eval_csv(path), row])
        return
    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=header or list(row), restval="")
    if header is None:
        w.writeheader()
    w.writerow(_cells(row))
    with open(path, "ab", buffering=0) as f:  # the row whole or not at all (a full disk)
        write_whole(f, text.getvalue().encode("utf-8"))


def restore_eval_csv(path: Path, history: list[dict[str, Any]], samples: int,
                     key: str = "samples") -> None:
    """On resume: make ``eval.csv`` hold the checkpoint's evaluations (``history``, each
    with its ``key``: samples or timesteps), so that the new rows continue them.

    The file is read against its schema first (:func:`check_eval_csv`): a damaged one is a
    :class:`DamagedEvalCsv` naming the file and line, before any training, and nothing is
    written. The checkpoint holds the run's evaluations (with a digest): the file is kept
    when its rows are the checkpoint's (by ``key``), and otherwise replaced by them. Rows the
    file has beyond them (evaluations after the checkpoint, whose training the resumed run
    does again) are kept aside in ``eval-before-resume-<samples>.csv`` (``-2``, ``-3``, ...
    when that name is taken), a name the learning curve does not read, and that is said; so is
    a file of two sets of columns (versions before 0.4 appended the rows of other evaluation
    opponents under the old header), which is whole numbers under the wrong header, not
    damage."""
    try:
        rows: list[dict[str, Any]] | None = check_eval_csv(path)
        problem = "had evaluations the checkpoint (at {samples:,} {key}) does not have"
    except DamagedEvalCsv:
        raise
    except ValueError as exc:
        rows, problem = None, f"could not be read ({exc})"
    if rows is not None and [r.get(key) for r in rows] == [h.get(key) for h in history]:
        return
    if rows is None or rows:
        aside = path.with_name(f"eval-before-resume-{samples}.csv")
        n = 1
        while aside.exists():
            n += 1
            aside = path.with_name(f"eval-before-resume-{samples}-{n}.csv")
        path.replace(aside)
        print(f"{path} {problem.format(samples=samples, key=key)}: it now holds the "
              f"checkpoint's {len(history)}; the file as it was is {aside}", file=sys.stderr)
    if history:
        write_eval_csv(path, history)
    elif path.exists():
        path.unlink()


class DamagedEvalCsv(ValueError):
    """An ``eval*.csv`` line that is not an evaluation row (:func:`read_eval_csv`'s schema):
    the message names the file, the line and the column."""


#: The columns that count the run (a row's key): whole numbers, never empty.
COUNT_COLUMNS = ("samples", "timesteps")
_ROW_MODELS: dict[tuple[str, ...], Any] = {}


def _row_model(header: tuple[str, ...]) -> Any:
    """The pydantic model of a row under ``header`` (made once per header): a count column
    (:data:`COUNT_COLUMNS`) a whole number >= 0, every other cell a finite number or empty
    (NaN: an interval left out, or a column the row did not have)."""
    if header not in _ROW_MODELS:
        from pydantic import BeforeValidator, ConfigDict, Field, create_model

        count = Annotated[int, Field(ge=0)]
        cell = Annotated[Annotated[float, Field(allow_inf_nan=False)] | None,
                         BeforeValidator(lambda text: None if text == "" else text)]
        fields: dict[str, Any] = {
            f"c{j}": (count if name in COUNT_COLUMNS else cell, Field(alias=name))
            for j, name in enumerate(header)}
        _ROW_MODELS[header] = create_model(
            "EvalRow", __config__=ConfigDict(extra="forbid", frozen=True), **fields)
    return _ROW_MODELS[header]


def _checked_row(path: Path, line: int, header: tuple[str, ...],
                 cells: list[str]) -> dict[str, Any]:
    """One row's cells read against :func:`_row_model` (cells beyond the header, a row of two
    sets of columns, as numbers): the row, NaN for an empty cell; a :class:`DamagedEvalCsv`
    naming the column and its text when a cell is not what its column holds."""
    from pydantic import ValidationError

    names = header + tuple(f"cell {j + 1}" for j in range(len(header), len(cells)))
    names = names[:len(cells)]
    try:
        row = _row_model(names).model_validate(dict(zip(names, cells, strict=True)))
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        text = dict(zip(names, cells, strict=True)).get(name)
        raise DamagedEvalCsv(f"{path}, line {line}: {name} is {text!r}: {err['msg']}"
                             ) from None
    return {k: math.nan if v is None else v for k, v in row.model_dump(by_alias=True).items()}


def read_eval_csv(path: Path) -> list[dict[str, Any]]:
    """The rows of an ``eval*.csv`` (``samples`` and ``timesteps`` as ints, the rest as
    floats; an empty cell, an interval left out for too few deal sequences, or a column a row
    did not have, as NaN), read against the schema :func:`write_eval_csv` writes, with
    pydantic (:func:`_row_model`): a header of distinct names with a count column
    (:data:`COUNT_COLUMNS`), and under it rows of whole counts and finite numbers or empty
    cells. A line that is not so (a word where a number belongs, ``nan`` or ``inf``, text that
    is not UTF-8, junk) is a :class:`DamagedEvalCsv` naming the file, the line and the column;
    a row of numbers with another number of cells than the header (rows of two sets of
    columns in one file) a ``ValueError`` naming the file and the line."""
    if not path.is_file():
        return []
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise DamagedEvalCsv(f"{path}, line {line}: not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    lines = []
    try:
        for cells in reader:
            lines.append((reader.line_num, cells))
    except csv.Error as exc:
        raise DamagedEvalCsv(f"{path}, line {reader.line_num}: {exc}") from None
    if not lines:
        return []
    header = tuple(lines[0][1])
    if (not set(header) & set(COUNT_COLUMNS) or len(set(header)) != len(header)
            or "" in header):
        raise DamagedEvalCsv(f"{path}, line 1: {','.join(header)[:80]!r} is not a header of "
                             "evaluations (distinct names, one of them "
                             f"{' or '.join(COUNT_COLUMNS)})")
    rows = []
    for n, cells in lines[1:]:
        if not cells:
            continue
        row = _checked_row(path, n, header, cells)
        if len(cells) != len(header):
            raise ValueError(f"{path}, line {n}: {len(cells)} cells under a header of "
                             f"{len(header)} columns (rows of two sets of columns in one file)")
        rows.append(row)
    return rows


def check_eval_csv(path: Path) -> list[dict[str, Any]]:
    """A resumed run's ``eval*.csv`` read before any training (:func:`read_eval_csv`: a
    damaged file is a :class:`DamagedEvalCsv`, which says how to go on); a last line without
    its newline (an append cut off by a stop or a full disk) is dropped from the file first,
    and that is said, as the other readers of appended lines do."""
    if path.is_file():
        raw = path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            keep = raw.rfind(b"\n") + 1
            print(f"{path}: dropping a last line cut off in its write "
                  f"({len(raw) - keep} bytes)", file=sys.stderr)
            os.truncate(path, keep)  # needs no space, unlike a copy
    try:
        return read_eval_csv(path)
    except DamagedEvalCsv as exc:
        raise DamagedEvalCsv(f"{exc}; the file is damaged, and a resume does not write over "
                             "it: move it away (the resumed run writes the checkpoint's "
                             "evaluations anew) or mend it") from None


def merged_evals(run_dir: Path, key: str = "samples") -> list[dict[str, Any]]:
    """The rows of ``eval.csv`` (the in-loop evaluations) and of every
    ``eval_<opponent>.csv`` (``dragons_egg.experiments.training.evaluate_run``), merged by
    ``key`` (samples, or timesteps), in order."""
    merged: dict[int, dict[str, Any]] = {}
    for path in [run_dir / "eval.csv", *sorted(run_dir.glob("eval_*.csv"))]:
        for r in read_eval_csv(path):
            merged.setdefault(r[key], {}).update(r)
    return [merged[k] for k in sorted(merged)]


#: What the learning curve's x axis says for each unit a run counts in.
UNIT_LABELS = {"samples": "learner samples", "timesteps": "training steps"}


def redraw_curve(run_dir: Path, key: str = "samples", title: str = "") -> None:
    """``learning_curve.png`` from :func:`merged_evals`: the learner's difference to each
    evaluation opponent with its 95% interval, against ``key`` and against wall time."""
    rows = merged_evals(run_dir, key)
    if rows:
        plot_curve(rows, run_dir / "learning_curve.png", key, title)


def plot_curve(history: list[dict[str, Any]], path: Path, key: str = "samples",
               title: str = "") -> None:
    """Draw the learning curve of ``history`` (evaluation rows) to ``path``; nothing when no
    row has a difference to an opponent."""
    keys = sorted({k for row in history for k in row if k.startswith("diff_")
                   and not k.endswith(("_low", "_high"))})
    if not keys:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, x, label in ((axes[0], key, UNIT_LABELS.get(key, key)),
                         (axes[1], "seconds", "wall time (s)")):
        for k in keys:
            rows = [r for r in history if k in r and x in r]
            xs = [r[x] for r in rows]
            ax.plot(xs, [r[k] for r in rows], marker="o", label=k[5:])
            ax.fill_between(xs, [r[k + "_low"] for r in rows], [r[k + "_high"] for r in rows],
                            alpha=0.2)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_xlabel(label)
        ax.set_ylabel("mean match score difference")
        ax.legend()
    fig.suptitle(title or "learner against its evaluation opponents (95% intervals)")
    fig.tight_layout()
    save_png(fig, path)
    plt.close(fig)


class RunOutput:
    """What a trainer's run writes beside its checkpoints, the same for every trainer: one row
    per evaluation in ``eval.csv`` (:func:`append_eval_csv`), ``learning_curve.png``
    (:func:`redraw_curve`) and scalars for TensorBoard. ``key`` is the unit the run counts in
    (``samples``, or ``timesteps``). TensorBoard scalars go to ``scalar(tag, value, step)``
    when given (a trainer with a logger of its own, such as SB3's), else to a
    ``SummaryWriter`` in ``run_dir/tb`` when TensorBoard is installed, else nowhere."""

    def __init__(self, run_dir: Path, key: str = "samples", title: str = "",
                 scalar: Callable[[str, float, int], None] | None = None) -> None:
        self.dir, self.key, self.title = run_dir, key, title
        self._writer: Any = None
        if scalar is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard is optional
                pass
            else:
                self._writer = SummaryWriter(str(run_dir / "tb"))
                scalar = self._writer.add_scalar
        self._scalar = scalar

    @property
    def eval_csv(self) -> Path:
        return self.dir / "eval.csv"

    def restore(self, history: list[dict[str, Any]], count: int) -> None:
        """On resume: ``eval.csv`` made to hold the checkpoint's ``history``
        (:func:`restore_eval_csv`)."""
        restore_eval_csv(self.eval_csv, history, count, key=self.key)

    def scalars(self, prefix: str, values: dict[str, Any], step: int) -> None:
        """``prefix/name`` for each number of ``values`` that is one (NaN, an interval left
        out, is skipped)."""
        if self._scalar is None:
            return
        for k, v in values.items():
            if isinstance(v, int | float) and not isinstance(v, bool) and v == v:
                self._scalar(f"{prefix}/{k}", v, step)

    def add_eval(self, row: dict[str, Any]) -> None:
        """One evaluation (a row with the run's ``key``): appended to ``eval.csv``, its figures
        to TensorBoard under ``eval/``, and the learning curve drawn again."""
        append_eval_csv(self.eval_csv, row)
        self.scalars("eval", {k: v for k, v in row.items() if k != self.key}, row[self.key])
        self.redraw()

    def redraw(self) -> None:
        redraw_curve(self.dir, self.key, self.title)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
