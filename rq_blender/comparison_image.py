# SPDX-License-Identifier: GPL-3.0-or-later
"""A line plot drawn with numpy into an image datablock (Blender ships no matplotlib).

`plot_lines` is pure numpy: axes with tick labels, a legend, and each series in its own
`STYLES` entry (colour, width, dash). The series are drawn widest first, so a curve lying on
another one shows as a thinner (or dashed) line inside it and both stay visible. Text uses
the bitmap font of ``glyphs.json`` (`font`). Pixels are RGBA in sRGB (the image is a byte
image), rows bottom to top as Blender stores them; `store` writes them into
``bpy.data.images``, packed and with a fake user so the plot is saved with the file and
saving asks nothing about it.
"""

from __future__ import annotations

import json
import math
import pathlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import bpy
import numpy as np

BACKGROUND = (0.11, 0.11, 0.11, 1.0)
GRID = (0.22, 0.22, 0.22, 1.0)
AXIS = (0.55, 0.55, 0.55, 1.0)
TEXT = (0.88, 0.88, 0.88, 1.0)


@dataclass(frozen=True)
class Style:
    """How one series is drawn: sRGB colour, line width in pixels, and ``dash`` as (on, off)
    lengths in pixels along the curve (None: solid)."""

    color: tuple[float, float, float, float]
    width: int
    dash: tuple[int, int] | None = None


# One style per series, in order: widths decrease so later curves draw inside earlier ones.
# Colours from the Okabe-Ito palette (distinct with the common colour-vision deficiencies).
STYLES = (
    Style((0.902, 0.624, 0.0, 1.0), 8),  # orange, wide
    Style((0.337, 0.706, 0.914, 1.0), 5),  # sky blue
    Style((0.0, 0.620, 0.451, 1.0), 3, (14, 6)),  # bluish green, long dashes
    Style((0.800, 0.475, 0.655, 1.0), 2, (6, 5)),  # reddish purple, short dashes
    Style((0.941, 0.894, 0.259, 1.0), 2, (2, 4)),  # yellow, dotted
    Style((0.835, 0.369, 0.0, 1.0), 1),  # vermillion, thin
)


@dataclass(frozen=True)
class Font:
    """The bitmap font (``glyphs.json``, written by ``tools/make_glyphs.py``): ``glyphs[char]
    = (advance, rows)``, ``rows`` ``height * advance`` hex digits of 4-bit coverage (0 ..
    15), row-major from the top; the baseline is ``ascent`` rows down."""

    height: int
    ascent: int
    glyphs: dict[str, tuple[int, str]]

    def glyph(self, char: str) -> tuple[int, str]:
        """``(advance, rows)`` of ``char``; unknown characters as '?'."""
        return self.glyphs.get(char, self.glyphs["?"])


@cache
def font() -> Font:
    """The font, read once from ``glyphs.json`` next to this module."""
    data = json.loads(pathlib.Path(__file__).with_name("glyphs.json").read_text("utf-8"))
    glyphs = {char: (int(advance), rows) for char, (advance, rows) in data["glyphs"].items()}
    return Font(int(data["height"]), int(data["ascent"]), glyphs)


def text_width(text: str) -> int:
    """Width in pixels of ``text`` in the `font` (unknown characters as '?')."""
    return sum(font().glyph(c)[0] for c in text)


def draw_text(
    canvas: np.ndarray, x: int, top: int, text: str, color: tuple[float, ...] = TEXT
) -> None:
    """Blend ``text`` into ``canvas`` (h, w, 4), rows top to bottom, its box's top-left
    corner at column ``x``, row ``top``; clipped at the edges."""
    height, width = canvas.shape[:2]
    rgb = np.asarray(color[:3], dtype=np.float32)
    for char in text:
        advance, rows = font().glyph(char)
        alpha = (
            np.frombuffer(bytes.fromhex("".join("0" + d for d in rows)), dtype=np.uint8)
            .reshape(font().height, advance)
            .astype(np.float32)
            / 15.0
        )
        y0, x0 = max(top, 0), max(x, 0)
        y1, x1 = min(top + font().height, height), min(x + advance, width)
        if y1 > y0 and x1 > x0:
            a = alpha[y0 - top : y1 - top, x0 - x : x1 - x, None]
            block = canvas[y0:y1, x0:x1, :3]
            canvas[y0:y1, x0:x1, :3] = block * (1.0 - a) + rgb * a
        x += advance


def nice_ticks(low: float, high: float, count: int = 5) -> tuple[np.ndarray, int]:
    """Ticks at a 1, 2, 2.5 or 5 times a power of ten step, about ``count`` of them within
    [low, high], and the decimals their labels need."""
    span = high - low if high > low else 1.0
    magnitude = 10.0 ** math.floor(math.log10(span / count))
    step = next(m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= span / count)
    ticks = np.arange(math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9) + 1) * step
    decimals = max(0, -math.floor(math.log10(step) + 1e-9) + (1 if step / magnitude == 2.5 else 0))
    return ticks, decimals


def _stroke(
    canvas: np.ndarray,
    xs: np.ndarray,
    ys: np.ndarray,
    style: Style,
    clip: tuple[int, int, int, int],
) -> None:
    """Draw the polyline (xs, ys) (pixel coordinates, rows top to bottom) with ``style``,
    clipped to ``clip`` = (left, top, right, bottom), exclusive at right and bottom."""
    # Points at most half a pixel apart along the line, then a disc at each visible one.
    steps = np.hypot(np.diff(xs), np.diff(ys))
    parts = np.maximum(np.ceil(steps / 0.5).astype(int), 1)
    start = np.repeat(np.arange(len(steps)), parts)
    fraction = np.concatenate([np.arange(n) / n for n in parts])
    px = np.append(xs[start] + fraction * np.diff(xs)[start], xs[-1])
    py = np.append(ys[start] + fraction * np.diff(ys)[start], ys[-1])
    if style.dash is not None:
        along = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(px), np.diff(py)))])
        on = along % sum(style.dash) < style.dash[0]
        px, py = px[on], py[on]
    radius = style.width / 2.0
    reach = math.ceil(radius)
    dy, dx = np.mgrid[-reach : reach + 1, -reach : reach + 1]
    inside = dx**2 + dy**2 <= radius**2 + 1e-9
    cols = (np.round(px)[:, None] + dx[inside][None, :]).astype(int).ravel()
    rows = (np.round(py)[:, None] + dy[inside][None, :]).astype(int).ravel()
    left, top, right, bottom = clip
    keep = (cols >= left) & (cols < right) & (rows >= top) & (rows < bottom)
    canvas[rows[keep], cols[keep]] = style.color


def plot_lines(
    t: np.ndarray,
    series: Mapping[str, np.ndarray],
    x_label: str = "",
    y_label: str = "",
    width: int = 800,
    height: int = 420,
) -> np.ndarray:
    """Draw each series (shape (M,), over ``t`` (M,), increasing) in `STYLES` order, with
    axes, tick labels, ``x_label`` under the x axis, ``y_label`` above the y axis and a
    legend naming the series by their keys.

    Returns
    -------
    ndarray, shape (height, width, 4), float32
        sRGB RGBA; row 0 is the bottom. The y axis spans 0 .. a round value at or above the
        largest value; the x axis spans t[0] .. t[-1].
    """
    line = font().height
    canvas = np.empty((height, width, 4), dtype=np.float32)
    canvas[:] = BACKGROUND
    values = [np.nan_to_num(np.asarray(v, dtype=np.float64)) for v in series.values()]
    largest = max((float(v.max()) for v in values if v.size), default=0.0)
    y_ticks, y_decimals = nice_ticks(0.0, largest if largest > 0 else 1.0)
    if y_ticks[-1] < largest:
        y_ticks = np.append(y_ticks, y_ticks[-1] + (y_ticks[1] - y_ticks[0]))
    y_top = float(y_ticks[-1])
    t0, t1 = float(t[0]), float(t[-1])
    x_ticks, x_decimals = nice_ticks(t0, t1, 8)
    y_texts = [f"{v:.{y_decimals}f}" for v in y_ticks]
    legend_width = 44 + max((text_width(name) for name in series), default=0) + 12
    left = max(text_width(s) for s in y_texts) + 12
    top, right, bottom = line + 12, width - legend_width - 16, height - 2 * line - 10
    plot = (left, top, right, bottom)

    def row_of(v: np.ndarray | float) -> np.ndarray:
        return bottom - 1 - np.asarray(v) / y_top * (bottom - top - 1)

    def col_of(x: np.ndarray | float) -> np.ndarray:
        return left + (np.asarray(x) - t0) / ((t1 - t0) or 1.0) * (right - left - 1)

    for value, text in zip(y_ticks, y_texts, strict=True):
        row = round(float(row_of(value)))
        canvas[row, left:right] = GRID
        canvas[row, left - 4 : left] = AXIS
        draw_text(canvas, left - 6 - text_width(text), row - line // 2, text)
    for value in x_ticks:
        col = round(float(col_of(value)))
        canvas[bottom : bottom + 4, col] = AXIS
        text = f"{value:.{x_decimals}f}"
        draw_text(canvas, col - text_width(text) // 2, bottom + 5, text)
    canvas[top:bottom, left - 1] = AXIS
    canvas[bottom, left - 1 : right] = AXIS
    draw_text(canvas, (left + right - text_width(x_label)) // 2, bottom + 5 + line, x_label)
    draw_text(canvas, max(left - 20, 2), 4, y_label)

    columns = np.arange(left, right, dtype=np.float64)
    times = t0 + (columns - left) / max(right - left - 1, 1) * (t1 - t0)
    for style, v in zip(STYLES, values, strict=False):
        _stroke(canvas, columns, row_of(np.interp(times, t, v)), style, plot)

    legend_left = right + 16
    for k, (style, name) in enumerate(zip(STYLES, series, strict=False)):
        row = top + 6 + k * (line + 8) + line // 2
        _stroke(
            canvas,
            np.array([legend_left, legend_left + 32.0]),
            np.array([row, row], float),
            style,
            (0, 0, width, height),
        )
        draw_text(canvas, legend_left + 40, row - line // 2, name)
    return np.ascontiguousarray(canvas[::-1])


def store(name: str, pixels: np.ndarray) -> bpy.types.Image:
    """Write sRGB RGBA ``pixels`` (h, w, 4), row 0 the bottom, into the image ``name``
    (created, or replaced when its size differs), packed into the file with a fake user: it
    is saved with the file and stays until deleted."""
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
    image.pack()
    image.use_fake_user = True
    return image
