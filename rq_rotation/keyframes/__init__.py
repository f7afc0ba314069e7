# SPDX-License-Identifier: GPL-3.0-or-later
"""Algorithms on keyed animation, pure numpy: what the add-on's operators compute between
reading F-curves and writing them (``rq_blender.animdata`` is that boundary).

- `fcurve_math`: Blender's keyframe F-curve evaluation (Bezier, linear, constant, the
  extrapolations), vectorized, float32 like Blender; `fcurve_math.Keys` holds a curve's keys.
- `continuity`: continuity chains along time lines of rotations in any mode, the twist
  filter's rule, held jumps.
- `refine`: sample grids dense enough for a chain.
- `limits`: swing/twist channel values fitted to joint limits.
- `spline_keys`: the core's RQ spline laid out as ordinary Bezier keys.

Not imported by ``rq_rotation`` itself: ``import rq_rotation.keyframes.spline_keys``.
"""
