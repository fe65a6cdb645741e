"""The shipped recipe's short seeded runs give the weights pinned in data/recipe_weights.json.

Issue 46 moves the research methods (tribute counterfactual, tribute table, egg
counterfactual, search targets) into plug-ins; these runs pin the weights they trained before that change,
bit for bit, so the move cannot change what the recipe learns. The digests depend on numpy's
and torch's float arithmetic on this machine type (CI runs on the same kind).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

DATA = json.loads((Path(__file__).parent / "data" / "recipe_weights.json").read_text())


def weights_digest(path: Path) -> str:
    """sha256 (16 hex digits) over a policy file's numeric arrays but ``meta``, by name."""
    h = hashlib.sha256()
    with np.load(path, allow_pickle=False) as z:
        for k in sorted(z.files):
            a = z[k]
            if k != "meta" and a.dtype.kind in "fiub":
                h.update(k.encode())
                h.update(a.tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("name", sorted(DATA["runs"]))
def test_recipe_run_gives_the_pinned_weights(name: str, tmp_path: Path) -> None:
    import torch

    from dragons_egg.experiments.training import selfplay

    threads = torch.get_num_threads()
    run = DATA["runs"][name]
    argv = [*DATA["common"], *run["args"], "--out-dir", str(tmp_path), "--run-name", name]
    try:
        assert selfplay.main(argv) == 0
    finally:
        torch.set_num_threads(threads)
    assert weights_digest(tmp_path / name / "final.npz") == run["digest"]


def test_search_targets_run_gives_the_pinned_weights(tmp_path: Path) -> None:
    """The search-targets plug-in: a folder gathered with fixed seeds, then the recipe's short
    run fitting it."""
    import torch

    from dragons_egg.experiments.training import search_targets, selfplay

    threads = torch.get_num_threads()
    run = DATA["search"]
    targets = tmp_path / "targets"
    try:
        assert search_targets.main([*run["gather"], "--out", str(targets)]) == 0
        argv = [*DATA["common"], "--search-targets", str(targets), *run["args"],
                "--out-dir", str(tmp_path), "--run-name", "D"]
        assert selfplay.main(argv) == 0
    finally:
        torch.set_num_threads(threads)
    assert weights_digest(tmp_path / "D" / "final.npz") == run["digest"]


def test_digest_sees_one_weight_change(tmp_path: Path) -> None:
    """The digest is not blind: one changed weight changes it."""
    a = {"w": np.arange(6, dtype=np.float32), "meta": np.array("{}")}
    np.savez(tmp_path / "a.npz", **a)
    a["w"][3] += np.float32(1e-6)
    np.savez(tmp_path / "b.npz", **a)
    assert weights_digest(tmp_path / "a.npz") != weights_digest(tmp_path / "b.npz")
