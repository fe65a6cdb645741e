"""Writing plots: every figure the experiments save goes through :func:`save_png`.

Plots are stored as 256-colour palette PNGs (no dithering), which keeps the records in
``results/`` within their size budget: matplotlib's charts use few colours, and a palette
file takes about half the bytes of the full-colour one for the same picture at this size.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING

from .files import atomic_path

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: the resolution every saved plot uses
DPI = 110


def save_png(fig: Figure, path: str | os.PathLike[str], dpi: int = DPI) -> Path:
    """Save ``fig`` to ``path`` as a palette PNG, written whole or not at all.

    The file is written beside ``path`` and renamed over it
    (:func:`~dragons_egg.experiments.common.files.atomic_path`), so a reader never meets half
    a plot. Returns the path written.
    """
    from PIL import Image

    out = Path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    buf.seek(0)
    with Image.open(buf) as im:
        palette = im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT,
                                             dither=Image.Dither.NONE)
    with atomic_path(out) as tmp:
        palette.save(tmp, format="PNG", optimize=True)
    return out
