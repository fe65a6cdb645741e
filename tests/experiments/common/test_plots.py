"""save_png: palette PNGs, written whole (experiments/common/plots.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

from dragons_egg.experiments.common.plots import DPI, save_png


def test_a_plot_is_saved_as_a_palette_png_of_the_figure_size(tmp_path: Path) -> None:
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.imshow(np.arange(100).reshape(10, 10), cmap="magma_r")
    out = save_png(fig, tmp_path / "plot.png")
    plt.close(fig)
    assert out == tmp_path / "plot.png"
    with Image.open(out) as im:
        assert im.format == "PNG" and im.mode == "P"
        assert im.size == (4 * DPI, 3 * DPI)
        assert len(im.getcolors(256) or []) > 10  # the colour map survives the palette
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]  # no temporary file left


def test_saving_over_a_plot_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "plot.png"
    path.write_bytes(b"not a png")
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    save_png(fig, path, dpi=50)
    plt.close(fig)
    with Image.open(path) as im:
        assert im.size == (100, 100)
