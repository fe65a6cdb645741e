"""Every rule reaches the batched engine's kernels: each field of ``RulesConfig`` has an entry
in ``dragons_egg_env.vector._CONFIG_COLUMNS``, and the kernels read what each entry names (a
``C_*`` column of the config vector as ``cfg[C_...]``, or the ``prew`` argument). A new rule
flag added to ``RulesConfig`` alone fails here, named (docs/architecture.md, "A new rule
flag")."""

import ast
import dataclasses
import inspect
from functools import cache

import numpy as np
import pytest

pytest.importorskip("numba")

from vector_check import flag_values

from dragons_egg_env import _vector_kernels as K
from dragons_egg_env import engine as E
from dragons_egg_env import vector as V
from dragons_egg_env.config import RulesConfig

FIELDS = [f.name for f in dataclasses.fields(RulesConfig)]
COLUMNS = {name: getattr(K, name) for name in dir(K) if name.startswith("C_")}


@cache
def kernel_reads() -> frozenset[tuple[str, str | None]]:
    """``(array, index)`` of every subscript the kernel functions read: ``("cfg", "C_ASKS")``
    for ``cfg[C_ASKS]``, ``("prew", "place")`` for ``prew[place]`` (``None`` for an index that
    is not a name)."""
    tree = ast.parse(inspect.getsource(K))
    reads = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                    and isinstance(node.value, ast.Name):
                index = node.slice.id if isinstance(node.slice, ast.Name) else None
                reads.add((node.value.id, index))
    return frozenset(reads)


def test_every_rule_field_has_a_kernel_entry():
    missing = [name for name in FIELDS if name not in V._CONFIG_COLUMNS]
    assert not missing, (
        f"RulesConfig field(s) {', '.join(missing)} have no entry in "
        f"dragons_egg_env.vector._CONFIG_COLUMNS, so the batched engine would ignore them: add "
        f"a C_* column to _vector_kernels, read it as cfg[C_...] in the kernel branch of the "
        f"rule, and map the field to it (docs/architecture.md, 'A new rule flag')")
    stale = sorted(set(V._CONFIG_COLUMNS) - set(FIELDS))
    assert not stale, f"_CONFIG_COLUMNS has entries for no field of RulesConfig: {stale}"


@pytest.mark.parametrize("name", sorted(V._CONFIG_COLUMNS))
def test_the_kernels_read_every_entry(name):
    entry = V._CONFIG_COLUMNS[name]
    if entry.encode is None:  # an argument built from the whole config
        assert entry.name == "prew", f"{name}: {entry.name!r} is not a kernel argument"
        assert any(array == "prew" for array, _ in kernel_reads()), "no kernel reads prew"
        return
    assert entry.name in COLUMNS, f"{name}: {entry.name} is not a C_* constant of the kernels"
    assert ("cfg", entry.name) in kernel_reads(), (
        f"{name} maps to {entry.name}, which no kernel function reads as cfg[{entry.name}]: "
        f"the batched engine would ignore the flag")


def test_each_config_column_is_filled_once():
    """The fields' columns and the engine's own are distinct and are every column of cfg, and
    the kernels read each of them."""
    used = [e.name for e in V._CONFIG_COLUMNS.values() if e.encode is not None]
    used += V._ENGINE_COLUMNS
    assert len(used) == len(set(used)), f"a column is filled twice: {sorted(used)}"
    assert set(used) == set(COLUMNS), f"unfilled: {sorted(set(COLUMNS) - set(used))}"
    assert sorted(COLUMNS.values()) == list(range(K.NUM_CFG))
    unread = [c for c in COLUMNS if ("cfg", c) not in kernel_reads()]
    assert not unread, f"columns no kernel reads: {unread}"


@pytest.mark.parametrize("name", FIELDS)
def test_each_value_reaches_its_column(name):
    """Every checked value of a field (metadata: both bools, every choice, an int's low and
    high) gives the config vector, or the place rewards, a value of its own."""
    entry = V._CONFIG_COLUMNS[name]
    seen = {}
    for value in flag_values(name):
        config = RulesConfig(**{name: value})
        cfg, prew = V._kernel_config(config, 8, True)
        got = tuple(prew) if entry.encode is None else int(cfg[getattr(K, entry.name)])
        assert got not in seen, f"{name}={value!r} and {seen[got]!r} encode alike"
        seen[got] = value


def test_the_config_vector_of_the_default_rules():
    """The layout the kernels were written for (C_N, C_M, C_ROUNDS, C_ALONE, C_LOCKS, C_OOT,
    C_ANY, C_ASKS, C_GIVE, C_RECORD, C_AUTO), for two configurations."""
    cfg, prew = V._kernel_config(RulesConfig(), 6, True)
    assert cfg.tolist() == [4, 6, 3, 1, 0, 1, 0, 2, (1 << 44) - 1, 1, 1]
    assert prew.tolist() == list(E.place_rewards(RulesConfig())) == [1.0, 1 - 2 / 3,
                                                                     1 - 4 / 3, -1.0]
    other = RulesConfig(num_players=3, num_rounds=5, opening_ten_of_fire_alone=False,
                        pass_locks_out=True, completion_out_of_turn=False,
                        dragons_per_play="any", tribute_asks=44, egg_in_tribute=True,
                        reward_scheme="dragon_egg")
    cfg, prew = V._kernel_config(other, 3, False)
    assert cfg.tolist() == [3, 3, 5, 0, 1, 0, 1, 44, (1 << 45) - 1, 0, 1]
    assert prew.tolist() == [1.0, 0.0, -1.0]
    assert cfg.dtype == np.int64 and prew.dtype == np.float64


def test_the_engine_refuses_a_field_without_an_entry(monkeypatch):
    """At run time too: a field missing from the table stops the engine from being made."""
    monkeypatch.delitem(V._CONFIG_COLUMNS, "pass_locks_out")
    with pytest.raises(RuntimeError, match="'pass_locks_out' has no entry"):
        V.VectorEngine(2, num_players=3)
