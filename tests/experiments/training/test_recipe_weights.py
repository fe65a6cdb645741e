"""The shipped recipe's short seeded runs give the weights pinned in data/recipe_weights.json.

Issue 46 moves the research methods (tribute counterfactual, tribute table, egg
counterfactual, search targets) into plug-ins; these runs pin the weights they trained before that change,
bit for bit, so the move cannot change what the recipe learns. The digests depend on numpy's,
numba's and torch's float arithmetic, which depends on the CPU's vector instructions too: each
run records the digest of each kind of machine CI has run on (``machines`` in the file). ``make``
installs the versions they were taken on (``constraints.txt``, torch in the Makefile), and a
digest that differs says which installed versions differ from those.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

DATA = json.loads((Path(__file__).parent / "data" / "recipe_weights.json").read_text())
ROOT = Path(__file__).resolve().parents[3]


def installed_versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in DATA["versions"]}


def version_note() -> str:
    """What a failed digest says: the installed versions that are not the recorded ones."""
    differ = {k: v for k, v in installed_versions().items() if v != DATA["versions"][k]}
    return (f"installed versions differ from those the digests were taken on: {differ} "
            f"(recorded {DATA['versions']})" if differ else
            "the installed versions are the recorded ones: the training arithmetic changed")


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
    assert weights_digest(tmp_path / name / "final.npz") in run["digests"], version_note()


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
    assert weights_digest(tmp_path / "D" / "final.npz") in run["digests"], version_note()


def test_digest_sees_one_weight_change(tmp_path: Path) -> None:
    """The digest is not blind: one changed weight changes it."""
    a = {"w": np.arange(6, dtype=np.float32), "meta": np.array("{}")}
    np.savez(tmp_path / "a.npz", **a)
    a["w"][3] += np.float32(1e-6)
    np.savez(tmp_path / "b.npz", **a)
    assert weights_digest(tmp_path / "a.npz") != weights_digest(tmp_path / "b.npz")


def test_the_development_install_pins_the_recorded_versions() -> None:
    """``constraints.txt`` (numpy, numba) and the Makefile's torch are the versions the digests
    were taken on, so that ``make test`` on a fresh machine reproduces them."""
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    recorded = DATA["versions"]
    assert pins["numpy"] == recorded["numpy"] and pins["numba"] == recorded["numba"]
    torch_pin = recorded["torch"].split("+")[0]
    assert f"torch=={torch_pin}" in (ROOT / "Makefile").read_text()
