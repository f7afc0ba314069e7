# SPDX-License-Identifier: GPL-3.0-or-later
"""A line plot drawn with numpy into an image datablock (Blender ships no matplotlib).

`plot_lines` is pure numpy: RGBA pixels, rows bottom to top as Blender stores them; `store`
writes them into ``bpy.data.images`` in one ``foreach_set``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import bpy
import numpy as np

BACKGROUND = (0.08, 0.08, 0.08, 1.0)
GRID = (0.25, 0.25, 0.25, 1.0)
# One colour per series, in order (RGBA, linear).
COLORS = (
    (1.0, 0.55, 0.1, 1.0),
    (0.2, 0.6, 1.0, 1.0),
    (0.3, 0.9, 0.3, 1.0),
    (0.9, 0.25, 0.6, 1.0),
    (0.9, 0.9, 0.2, 1.0),
    (0.7, 0.7, 0.7, 1.0),
)


def plot_lines(
    t: np.ndarray, series: Mapping[str, np.ndarray], width: int = 640, height: int = 320,
    margin: int = 12, grid_lines: int = 4,
) -> np.ndarray:
    """Draw each series (shape (M,), over ``t`` (M,)) as a 2-pixel line in `COLORS` order.

    Returns
    -------
    ndarray, shape (height, width, 4), float32
        Row 0 is the bottom. The y axis spans 0 .. the largest value (with a 5% headroom);
        ``grid_lines`` horizontal lines mark equal fractions of it.
    """
    image = np.empty((height, width, 4), dtype=np.float32)
    image[:] = BACKGROUND
    inner_w, inner_h = width - 2 * margin, height - 2 * margin
    for k in range(grid_lines + 1):
        image[margin + round(k * (inner_h - 1) / grid_lines), margin:width - margin] = GRID
    finite = [np.nan_to_num(np.asarray(v, dtype=np.float64)) for v in series.values()]
    top = max((float(v.max()) for v in finite if v.size), default=1.0) * 1.05 or 1.0
    columns = np.arange(inner_w)
    x_times = t[0] + (t[-1] - t[0]) * columns / max(inner_w - 1, 1)
    for color, values in zip(COLORS, finite, strict=False):
        y = np.interp(x_times, t, values) / top * (inner_h - 1)
        # Fill each column between its value and the next one's, so steep parts stay joined.
        low = np.floor(np.minimum(y, np.append(y[1:], y[-1]))).astype(int)
        high = np.ceil(np.maximum(y, np.append(y[1:], y[-1]))).astype(int) + 1
        rows = np.arange(inner_h)[:, None]
        mask = (rows >= low[None, :]) & (rows <= high[None, :])
        image[margin:margin + inner_h, margin:margin + inner_w][mask] = color
    return image


def store(name: str, pixels: np.ndarray) -> bpy.types.Image:
    """Write RGBA ``pixels`` (h, w, 4) into the image ``name`` (created, or resized)."""
    height, width = pixels.shape[:2]
    image = bpy.data.images.get(name)
    if image is None or tuple(image.size) != (width, height):
        if image is not None:
            bpy.data.images.remove(image)
        image = bpy.data.images.new(name, width, height, alpha=True)
    flat = np.ascontiguousarray(pixels, dtype=np.float32).ravel()
    # The 4.x stubs type Image.pixels as a float; 5.2's want a Sequence for foreach_set, which
    # takes any buffer (a float32 array is what makes it fast).
    image.pixels.foreach_set(flat)  # type: ignore[attr-defined, arg-type]
    image.update()
    return image


def legend(names: Sequence[str]) -> str:
    """Which colour is which series, for the report."""
    words = ("orange", "blue", "green", "pink", "yellow", "grey")
    return ", ".join(f"{word}: {name}" for word, name in zip(words, names, strict=False))
