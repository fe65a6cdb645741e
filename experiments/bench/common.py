"""The method both benchmarks share: loops built and warmed up, timed in interleaved slices on
one pinned core, the table of rates, the one table of target ratios, and the machine's
description."""

from __future__ import annotations

import gc
import os
import platform
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypedDict, Union, final

SLICES = 5
#: What the ratio table's columns mean (the scalar benchmark's, which shows both bases).
RATIO_NOTE = ("ratios: median over the rounds of the ratio of the two slices of each round, on the "
              "basis\nshown; the steps and decisions columns give both for information.")


class Skip(Exception):
    """A peer that is not installed; the message names the missing module."""


class Loop(Protocol):
    """A measurement's loop: ``run(deadline)`` plays whole episodes until the clock passes
    ``deadline`` and returns (steps, decisions, episodes); its state carries over between
    calls."""

    def run(self, deadline: float) -> tuple[int, int, int]: ...


#: A measurement: (key, label, factory(seed) -> loop), in run order.
Plan = list[tuple[str, str, Callable[[int], Loop]]]


@final
class Measurement(TypedDict):
    """The figures of one measurement that ran (:func:`measure_interleaved`)."""

    #: Median over the slices.
    steps_per_s: float
    decisions_per_s: float
    slice_steps_per_s: list[float]
    slice_decisions_per_s: list[float]
    #: (max - min) / median of the slices' steps per second.
    spread: float
    steps: int
    decisions: int
    episodes: int
    seconds: float
    steps_per_episode: float


@final
class Skipped(TypedDict):
    """A measurement whose peer is not installed: why it did not run."""

    skipped: str


#: A measurement's entry in the results: its figures, or why it was skipped.
Result = Union[Measurement, Skipped]


def warm_up(loop: Loop, seconds: float) -> None:
    """Run ``loop`` untimed for a moment: caches, lazy imports, first-call costs."""
    loop.run(time.perf_counter() + min(1.0, 0.1 * seconds))


def measure_interleaved(loops: Mapping[str, Loop], seconds: float,
                        progress: Callable[[int], None] | None = None
                        ) -> dict[str, Measurement]:
    """Time ``SLICES`` rounds; in each round every loop runs one slice of ``seconds / SLICES``
    (the order rotating from round to round), so a slow spell of the machine falls on all
    measurements alike and ratios can be taken slice by slice."""
    clock = time.perf_counter
    per = seconds / SLICES
    keys = list(loops)
    raw: dict[str, list[tuple[int, int, int, float]]] = {k: [] for k in keys}
    for r in range(SLICES):
        if progress is not None:
            progress(r)
        for j in range(len(keys)):
            key = keys[(r + j) % len(keys)]
            gc.collect()
            t0 = clock()
            n, d, e = loops[key].run(t0 + per)
            raw[key].append((n, d, e, clock() - t0))
    out: dict[str, Measurement] = {}
    for key, rows in raw.items():
        rates = [n / dt for n, _, _, dt in rows]
        drates = [d / dt for _, d, _, dt in rows]
        steps = sum(row[0] for row in rows)
        episodes = sum(row[2] for row in rows)
        med = statistics.median(rates)
        out[key] = {
            "steps_per_s": med,
            "decisions_per_s": statistics.median(drates),
            "slice_steps_per_s": rates,
            "slice_decisions_per_s": drates,
            "spread": (max(rates) - min(rates)) / med,
            "steps": steps,
            "decisions": sum(row[1] for row in rows),
            "episodes": episodes,
            "seconds": sum(row[3] for row in rows),
            "steps_per_episode": steps / episodes,
        }
    return out


def pin_to_one_core() -> int | None:
    """Pin this process to its first allowed CPU; returns it (None where unsupported)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("dragons-egg", "numpy", "numba", "pettingzoo", "gymnasium", "rlcard",
                 "open-spiel", "pygame", "jax", "jaxlib", "pgx"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _fmt_rate(x: float) -> str:
    return f"{x:,.0f}"


def set_up(plan: Plan, seed: int, seconds: float) -> tuple[dict[str, Loop], dict[str, str]]:
    """Build and warm up the loop of every measurement in ``plan``; returns the loops and,
    for the measurements whose peer is not installed, why they are skipped."""
    skipped: dict[str, str] = {}
    loops: dict[str, Loop] = {}
    for i, (key, label, factory) in enumerate(plan, 1):
        print(f"[{i}/{len(plan)}] {label}: set up and warm up ...", end=" ", flush=True)
        try:
            loop = factory(seed)
        except Skip as exc:
            print(f"skipped (not installed: {exc})", flush=True)
            skipped[key] = f"not installed: {exc}"
            continue
        warm_up(loop, seconds)
        loops[key] = loop
        print("ready", flush=True)
    return loops, skipped


def print_rates(plan: Plan, results: Mapping[str, Result], note: str | None = None) -> None:
    """The table of figures, one line per measurement."""
    w = max(len(label) for _, label, _ in plan)
    head = (f"{'measurement':<{w}}  {'steps/s':>10}  {'min..max of slices':>19}  "
            f"{'decisions/s':>11}  {'steps/episode':>13}")
    print(head)
    print("-" * len(head))
    for key, label, _ in plan:
        r = results[key]
        if "skipped" in r:
            print(f"{label:<{w}}  skipped ({r['skipped']})")
            continue
        lo, hi = min(r["slice_steps_per_s"]), max(r["slice_steps_per_s"])
        span = f"{lo / 1000:,.0f}k..{hi / 1000:,.0f}k"
        print(f"{label:<{w}}  {_fmt_rate(r['steps_per_s']):>10}  {span:>19}  "
              f"{_fmt_rate(r['decisions_per_s']):>11}  {r['steps_per_episode']:>13.1f}")
    print(note or (
        "steps/s: median of the slices. AEC steps include the None steps of terminated "
        "agents;\ndou_dizhu steps include its chance actions (the deal); the engine's "
        "exclude its deals.\ndecisions/s counts neither."))


def time_plan(plan: Plan, seed: int, seconds: float, note: str | None = None
              ) -> tuple[dict[str, Loop], dict[str, str], dict[str, Result]]:
    """Set up, warm up and time every measurement of ``plan`` (both benchmarks' method) and
    print the table of rates (with ``note`` under it); returns the loops, the skipped
    measurements and every measurement's figures."""
    loops, skipped = set_up(plan, seed, seconds)
    print(f"timing: {SLICES} rounds of {len(loops)} interleaved slices of "
          f"{seconds / SLICES:.3g} s ...", flush=True)
    results: dict[str, Result] = {k: {"skipped": v} for k, v in skipped.items()}
    results.update(measure_interleaved(
        loops, seconds,
        lambda r: print(f"  round {r + 1}/{SLICES}", flush=True)))
    print()
    print_rates(plan, results, note)
    print()
    return loops, skipped, results


def _slice_ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """The slice-by-slice ratios ``a[i] / b[i]`` of two measurements' slice rates."""
    return [x / y for x, y in zip(a, b, strict=True)]


def _measured(results: Mapping[str, Result], key: str) -> Measurement:
    """The figures of the measurement ``key``, which ran."""
    r = results[key]
    if "skipped" in r:
        raise ValueError(f"measurement {key!r} did not run ({r['skipped']})")
    return r


def _ratio(results: Mapping[str, Result], name: str, num: str, den: str, target: float,
           basis: str) -> dict[str, Any]:
    """One target ratio (a row of ``TARGETS``) of two measurements that both ran; printed and
    returned as its JSON entry."""
    a, b = _measured(results, num), _measured(results, den)
    sslices = _slice_ratios(a["slice_steps_per_s"], b["slice_steps_per_s"])
    dslices = _slice_ratios(a["slice_decisions_per_s"], b["slice_decisions_per_s"])
    sratio = statistics.median(sslices)
    dratio = statistics.median(dslices)
    per_slice = dslices if basis == "decisions" else sslices
    ratio = statistics.median(per_slice)
    ok = ratio >= target
    span = f"{min(per_slice):.2f}..{max(per_slice):.2f}"
    print(f"{name:<30}  {basis:>9}  {ratio:6.2f}  {span:>11}  {sratio:6.2f}  {dratio:9.2f}"
          f"  (target >= {target:g})  {'PASS' if ok else 'MISS'}")
    return {
        "name": name, "numerator": num, "denominator": den, "target": target,
        "basis": basis, "ratio": ratio, "pass": ok, "slice_ratios": per_slice,
        "steps_ratio": sratio, "decisions_ratio": dratio,
    }


def print_ratios(targets: Sequence[tuple[str, str, str, float, str]],
                 results: Mapping[str, Result], skipped: Mapping[str, str],
                 note: str = RATIO_NOTE) -> list[dict[str, Any]]:
    """The table of ``targets`` ratios (rows as in ``TARGETS``: the scalar benchmark's, or
    ``VECTOR_TARGETS``), then ``note``; returns their JSON entries."""
    print(f"{'target ratio':<30}  {'basis':>9}  {'median':>6}  {'min..max':>11}  "
          f"{'steps':>6}  {'decisions':>9}")
    ratios: list[dict[str, Any]] = []
    for name, num, den, target, basis in targets:
        if num in skipped or den in skipped:
            print(f"{name:<30}  {'':>9}  {'n/a':>6}  {'':>11}  (target >= {target:g}; "
                  f"{den if den in skipped else num} skipped)")
            ratios.append({"name": name, "numerator": num, "denominator": den,
                           "target": target, "ratio": None, "pass": None})
        else:
            ratios.append(_ratio(results, name, num, den, target, basis))
    print(note)
    return ratios
