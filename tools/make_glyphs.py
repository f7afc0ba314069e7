# SPDX-License-Identifier: GPL-3.0-or-later
"""Write ``rq_blender/glyphs.json``: the bitmap font the comparison image draws its text with
(Blender ships no matplotlib, and ``blf`` cannot draw into an image the add-on can read).

Renders printable ASCII and the degree sign with DejaVu Sans (the font matplotlib ships;
Bitstream Vera licence, which allows this) at `SIZE` pixels with Pillow, as 4-bit coverage.
Run with the dev environment: ``.venvs/dev/bin/python tools/make_glyphs.py``.
"""

from __future__ import annotations

import json
import pathlib

import matplotlib
import numpy as np
from PIL import Image, ImageDraw, ImageFont

SIZE = 13
CHARS = "".join(chr(c) for c in range(32, 127)) + "°"
OUT = pathlib.Path(__file__).resolve().parents[1] / "rq_blender" / "glyphs.json"


def main() -> None:
    path = pathlib.Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    font = ImageFont.truetype(str(path), SIZE)
    ascent, descent = font.getmetrics()
    height = ascent + descent
    entries = []
    for char in CHARS:
        advance = max(1, round(font.getlength(char)))
        canvas = Image.new("L", (advance + 4, height), 0)
        ImageDraw.Draw(canvas).text((0, 0), char, font=font, fill=255)
        coverage = np.asarray(canvas)[:, :advance]
        levels = np.round(coverage / 255.0 * 15.0).astype(int)
        entries.append((char, advance, "".join(f"{v:x}" for v in levels.ravel())))
    data = {
        "font": f"DejaVu Sans, {SIZE} px (Bitstream Vera licence); written by tools/make_glyphs.py",
        "height": height,
        "ascent": ascent,
        "glyphs": {char: [advance, rows] for char, advance, rows in entries},
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
