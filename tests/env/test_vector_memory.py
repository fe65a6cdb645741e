"""The batched engine checks the memory its matches will commit before it commits any
(issue 47, 3). Before, ``VectorEngine(B)`` only caught a ``MemoryError`` while allocating:
its zeroed arrays take their pages when first written, so construction passed and
``reset()`` committed the memory (200,000 matches: 247 MB after construction, 802 MB after
reset), and a number of matches the machine could not hold was killed by the kernel."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("numba")

from dragons_egg_env import vector  # noqa: E402
from dragons_egg_env.vector import VectorEngine  # noqa: E402


def test_too_many_matches_for_the_memory_are_refused_before_any_is_made(monkeypatch):
    monkeypatch.setattr(vector, "available_memory", lambda: 64 * 2**20)
    with pytest.raises(ValueError, match=r"20,000 match\(es\) of 3 round\(s\) need about "
                                         r"[\d,]+ MiB once reset and stepped, and this "
                                         r"machine has 64 MiB available: use fewer matches"):
        VectorEngine(20_000, num_players=4, num_rounds=3)
    eng = VectorEngine(1_000, num_players=4, num_rounds=3)  # what fits is made
    assert eng.memory_needed() < 64 * 2**20
    eng.reset(seed=0)


def test_the_estimate_covers_what_a_reset_and_a_step_commit():
    """``memory_needed`` is not below what the arrays take (the state alone)."""
    eng = VectorEngine(500, num_players=5, num_rounds=2)
    assert eng.memory_needed() >= sum(a.nbytes for a in eng._st)


def test_a_refused_engine_stays_far_below_a_gigabyte():
    """In a process of its own: an engine of 400,000 matches (about 2.7 GB once reset and
    stepped) on a machine said to have 1 GiB available is refused with the process's peak
    memory under 1 GB."""
    code = textwrap.dedent("""
        from dragons_egg_env import vector
        vector.available_memory = lambda: 2**30
        try:
            vector.VectorEngine(400_000, num_players=4, num_rounds=3)
        except ValueError as exc:
            print("refused:", exc)
        # VmHWM: this process's peak resident memory (kB), from its exec on (ru_maxrss
        # keeps the forking test worker's, Linux keeps it across exec)
        print(next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out[0].startswith("refused: 400,000 match(es)")
    assert int(out[-1]) * 1024 < 1e9  # VmHWM, kB
