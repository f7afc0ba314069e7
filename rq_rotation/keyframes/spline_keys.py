# SPDX-License-Identifier: GPL-3.0-or-later
"""RQ-spline interpolation written as ordinary Bezier F-curve keys (plays without Python).

The target is the core's spline (`rq_rotation.rq_spline`: hidden keys where a segment spans
more than half a turn, and each piece near a ``2 pi k`` shell reparameterized as a group into
the chart of that shell). Each piece is a cubic Bezier curve in its own chart, and an F-curve
reproduces a cubic exactly: a key at each end, FREE handles at the thirds in time holding the
piece's inner control points (Blender's ``x(s)`` is then linear in ``s``). Every array below
is flat over all pieces of all curves.

1. *Charts.* Each piece is written in its own chart (exact), and each chart change as a
   *held jump*: a key with CONSTANT interpolation, then the next key `JUMP_GAP` frames later
   in the new chart (same rotation), on every channel of the vector at the same frames.
   ``FCurve.update`` merges keys less than 0.01 frames apart (measured on 4.2 and 5.0: only
   ``update`` merges, but every tool calls it), so the hold cannot be shorter, and the
   rotation stands still for it: a deviation of about ``|omega| JUMP_GAP / 2`` (``omega`` the
   angular velocity in radians per frame; 0.05 degrees at 10 degrees per frame). Where that
   would exceed `JUMP_SHARE` of the tolerance (`_written_charts`: a fast spin through the
   shell), the pieces from that change to the nearest cheap boundary in the other chart's
   run (or the whole run) are *lifted* into the keys' chart instead (step 3).
2. *Exact pieces* (`_exact_keys`). For a jump at frame ``t`` between pieces L and R: the key
   at ``t`` starts R exactly; L is split `WARP_SPAN` frames before ``t`` (one more key), the
   CONSTANT key at ``t - JUMP_GAP`` holds L's rotation at ``t - JUMP_GAP/2``, the middle of
   the hold, and L's last part is written over ``[t - WARP_SPAN, t - JUMP_GAP]`` as its part
   up to ``t - JUMP_GAP/2`` (a time warp of ``JUMP_GAP/2`` near the change, `_Layout`). Where
   L is too short, the CONSTANT key at ``t`` holds L's end and R starts ``JUMP_GAP`` later
   (deviation up to ``|omega| JUMP_GAP``).
3. *Lifted pieces* (`_lifted_keys`, only where step 1 says so). The target's values are
   lifted into the keys' chart: the equivalent vectors lie on the axis, ``2 pi n`` apart, and
   the lift takes the one on the side of the same piece without reparameterization (exactly
   that equivalent beyond `EXACT_LIFT` from the identity). Knots
   start at the piece boundaries with FREE handles along the lift's tangent; the curves are
   evaluated as Blender does at dense samples and the worst sample of each interval out of
   tolerance becomes a knot, until all are within it. (Next to the identity with a turning
   axis the lift swings along the shell faster than keys can follow: it crosses the shell
   like the raw piece instead, off by at most ``|w|``, reported; that is why jumps come
   first.)

Each curve is fitted both ways (every change held; costly changes lifted) and keeps the one
closer to its spline. Every key at a given key time keeps its rotation exactly (at a jump the
key there is in the chart of the piece after it), and `SplineKeys.max_error` is measured on
the written keys, evaluated as Blender does (`fcurve_math.evaluate_segments`, float32),
against the core's spline: at `SEGMENT_CHECKS` of every segment and hold, densely along the
warped parts, and at the dense samples of lifted runs. What is left beyond the tolerance is a
fast turn (a few radians per frame) next to the identity on a shell with a turning axis,
where neither a hold nor one continuous chart can follow; the operator reports it.

The continuity filter (``pose.rq_continuity_filter``) treats a held jump (a CONSTANT key and
a key at most ``continuity.JUMP_WINDOW`` frames later, `continuity.held_jumps`) as a chart
change and starts again after it, so running it after this keeps the charts. Run it before:
this keeps the keys' windings wherever the core's spline does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .. import (
    bezier_control_points,
    bezier_derivatives,
    bezier_values,
    quat_angle_between,
    rq_angular_velocity,
    rq_to_quat,
)
from .._checks import norm
from ..modes import RQ
from ..splines import Kind, rq_spline_pieces
from . import fcurve_math
from .refine import channel_distances

# Frames between the two keys of a held jump (Blender merges keys closer than 0.01 frames;
# `_jump_gaps` adds float32 rounding at large frame numbers).
JUMP_GAP = 0.0101
# A piece ending at a jump is split this many frames before its end (`_split_before_jumps`).
WARP_SPAN = 0.1
# A jump is held before its chart change only where the piece before keeps at least this
# many frames of its own (so that ``FCurve.update`` keeps every key).
MIN_KEY_GAP = 0.0101
# A jump whose hold would turn by more than this fraction of the tolerance is not made: the
# run of pieces is lifted into the keys' chart instead.
JUMP_SHARE = 0.8
# Fractions of each written segment (a piece's body or a hold) where the deviation is
# measured; also `NEAR_KEYS` frames after its left key and before its right key: inside
# Blender's exact-hit threshold (a key's value a little away from it) and just outside (where
# a hold's deviation is largest).
SEGMENT_CHECKS = (0.0, 0.25, 0.5, 0.75, 1.0)
NEAR_KEYS = (0.99 * fcurve_math.EXACT_THRESHOLD, 1.5 * fcurve_math.EXACT_THRESHOLD)
WARPED_CHECKS = 32

# Lifted runs (step 3 of the module docstring). Pieces are checked at samples at least this
# dense (per frame) and close enough that the target turns by at most `MAX_SAMPLE_TURN`
# (radians) from one to the next.
SAMPLES_PER_FRAME = 1
MAX_SAMPLE_TURN = 0.08
# Interior check points of a piece in the keys' chart (exact by construction: a guard against
# float32 evaluation, not against the shape).
NATIVE_CHECKS = 3
# `fit_many` fits curves in batches of about this many keys: the passes over all pieces are
# memory-bound, and on 1000 curves of 1000 frames (28,000 keys) their arrays outgrow the
# caches (1.4-1.5x the time per curve of 100 curves at once, measured), while batches much
# smaller pay numpy's per-call overhead more often. The results are the same.
FIT_BATCH_KEYS = 2048
# Knots inserted at least this far apart (frames).
LIFT_KEY_GAP = 0.02
# At most this many refinement passes (each adds a knot to every interval out of tolerance).
MAX_PASSES = 24
# A tangent of the lift is replaced by a finite difference of the lifted samples where it is
# not finite or more than this many times longer (next to the identity, where the rate of the
# lifted vector is unbounded).
TANGENT_BLOWUP = 10.0
# Where the lift is off the target (see `_lift`), keys are added until the curve is within
# this many times the lift's own error.
LIFT_SLACK = 1.5
# Lifted values of consecutive samples at most about this far apart (RQ distance), samples
# at least `MIN_SAMPLE_GAP` frames apart, after at most `MAX_SUBDIVISIONS` rounds.
MAX_LIFT_STEP = 0.15
MIN_SAMPLE_GAP = 1e-4
MAX_SUBDIVISIONS = 8
# `_largest_angles`: RQ vectors this far apart (radians) or more are not used for its bound.
NEAR_PAIR = 1.0
# The lift follows the target's axis where it is within the first angle (radians) of the keys'
# chart's axis, and that axis beyond the second (see `_lift`).
AXES_AGREE = (math.radians(10.0), math.radians(2.0))
# ... but only where the target is within the first angle (radians) of the identity, fully
# beyond the second: further out the exact equivalent is smooth enough to follow.
EXACT_LIFT = (0.3, 0.6)

# Operator enum -> core spline kind.
KINDS: dict[str, Kind] = {
    'CATMULL_ROM': "catmull_rom",
    'HERMITE': "hermite",
    'BEZIER': "bezier",
    'BSPLINE': "bspline",
}


@dataclass
class SplineKeys:
    """Bezier F-curve keys for the k components of a parameter (3 for an RQ vector, the
    swing as ``(r_x, 0, r_z)``, 1 for a twist).

    Attributes
    ----------
    times : ndarray, shape (n,)
    values : ndarray, shape (n, k)
    handle_left, handle_right : ndarray, shape (n, k, 2)
        Per component, the ``(frame, value)`` handle points.
    added : int
        Keys beyond the keys given: the core's hidden keys, one per held jump, knots of
        lifted runs.
    max_error : float
        Largest rotation angle (radians) between the F-curves and the target at the checks.
    interpolation : ndarray of int, shape (n,), optional
        ``fcurve_math`` codes (CONSTANT at the first key of each held jump); all BEZIER when
        None.
    jumps : int
        Held jumps (chart changes).
    """

    times: np.ndarray
    values: np.ndarray
    handle_left: np.ndarray
    handle_right: np.ndarray
    added: int
    max_error: float
    interpolation: np.ndarray | None = None
    jumps: int = 0


@dataclass
class SplineInput:
    """One RQ curve to fit.

    Attributes
    ----------
    times : ndarray, shape (K,)
        Strictly increasing key frames (K >= 2; K >= 3 for the B-spline).
    keys : ndarray, shape (K, 3)
        RQ keys (the B-spline's de Boor points), windings as the animator keyed them; a swing
        ``(r_x, r_z)`` as ``(r_x, 0, r_z)``.
    angular_velocities : ndarray, shape (K, 3), optional
        World-frame angular velocities at the keys, for ``'hermite'``.
    """

    times: np.ndarray
    keys: np.ndarray
    angular_velocities: np.ndarray | None = None


def _handles(
    times: np.ndarray, values: np.ndarray, tangents: np.ndarray, curve: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Handles at 1/3 of each neighbouring interval along ``tangents``; (n, k, 2) each.

    ``curve`` (n,): which curve each key is on (sorted; at least 2 keys each), for the keys
    of many curves at once; a curve's first and last keys take the interval on their inner
    side. Without it, all keys are one curve's."""
    h = np.diff(times)
    before = np.concatenate([h[:1], h])
    after = np.concatenate([h, h[-1:]])
    if curve is not None:
        change = np.flatnonzero(curve[1:] != curve[:-1])  # key ``change`` ends a curve
        before[change + 1] = h[change + 1]
        after[change] = h[change - 1]
    before = before[:, None] / 3.0
    after = after[:, None] / 3.0
    left = np.stack(
        [np.broadcast_to(times[:, None] - before, values.shape), values - tangents * before],
        axis=-1,
    )
    right = np.stack(
        [np.broadcast_to(times[:, None] + after, values.shape), values + tangents * after], axis=-1
    )
    return left, right


def _grid(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, k)``: ``counts[i]`` entries ``k = 0 .. counts[i]-1`` owned by each ``i``;
    shapes (sum(counts),)."""
    owner = np.repeat(np.arange(len(counts)), counts)
    return owner, np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)


@dataclass
class _Pieces:
    """The pieces of every target spline, flat: ``curve`` (P,) says whose."""

    curve: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    control_points: np.ndarray  # (P, 4, 3), in each piece's chart
    charts: np.ndarray  # (P,) the shell index of each piece's chart

    @property
    def first(self) -> np.ndarray:
        """The first piece of its curve (P,)."""
        return np.append(True, self.curve[1:] != self.curve[:-1])

    @property
    def last(self) -> np.ndarray:
        """The last piece of its curve (P,)."""
        return np.append(self.curve[1:] != self.curve[:-1], True)


def _pieces(
    inputs: Sequence[SplineInput], kind: Kind, reparameterize_segments: bool = True
) -> _Pieces:
    """The pieces of the core's spline of every input (`rq_spline_pieces`)."""
    return _Pieces(
        *rq_spline_pieces(
            [(item.times, item.keys, item.angular_velocities) for item in inputs],
            kind,
            reparameterize_segments,
        )
    )


def _jump_gaps(t: np.ndarray) -> np.ndarray:
    """`JUMP_GAP` (t,) widened where float32 rounding of frames near ``t`` could bring two
    keys that far apart under 0.01 frames."""
    return JUMP_GAP + 2.0 * np.spacing(np.abs(t).astype(np.float32)).astype(np.float64)


def _sub_bezier(cp: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Control points (P, 4, 3) of the Bezier pieces ``cp`` (P, 4, 3) restricted to the
    parameters ``[a, b]`` (P,), reparameterized over [0, 1] (exact for cubics)."""
    pa, pb = bezier_values(cp, a), bezier_values(cp, b)
    third = ((b - a) / 3.0)[:, None]
    part = np.stack(
        [
            pa,
            pa + third * bezier_derivatives(cp, a),
            pb - third * bezier_derivatives(cp, b),
            pb,
        ],
        axis=1,
    )
    return np.where(((a == 0.0) & (b == 1.0))[:, None, None], cp, part)  # whole: as given


def _split_before_jumps(
    pieces: _Pieces, written: np.ndarray, raw: np.ndarray | None
) -> tuple[_Pieces, np.ndarray, np.ndarray | None]:
    """``(pieces, written, raw)`` with each piece that ends at a chart change (of
    ``written``) and is long enough split `WARP_SPAN` frames before its end, so that the
    hold's time warp (`_Layout`) stays where the angular speed is the one at the change."""
    _, jump = _runs(pieces.first, written)
    h = pieces.ends - pieces.starts
    split = np.append(jump[1:], False) & (h > WARP_SPAN + JUMP_GAP + 2.0 * MIN_KEY_GAP)
    if not split.any():
        return pieces, written, raw
    rows = np.repeat(np.arange(len(h)), 1 + split)
    tail = np.zeros(len(rows), dtype=bool)
    tail[1:] = rows[1:] == rows[:-1]  # the second part of a split piece
    cut = 1.0 - WARP_SPAN / h[rows]
    a = np.where(tail, cut, 0.0)
    b = np.where(split[rows] & ~tail, cut, 1.0)
    starts = np.where(tail, pieces.ends[rows] - WARP_SPAN, pieces.starts[rows])
    ends = np.where(split[rows] & ~tail, pieces.ends[rows] - WARP_SPAN, pieces.ends[rows])
    parts = _Pieces(
        pieces.curve[rows],
        starts,
        ends,
        _sub_bezier(pieces.control_points[rows], a, b),
        pieces.charts[rows],
    )
    return (parts, written[rows], None if raw is None else _sub_bezier(raw[rows], a, b))


def _runs(first: np.ndarray, charts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(run, jump)`` (P,): the run of equal charts each piece is in, and whether a chart
    change starts at it."""
    jump = ~first & (charts != np.roll(charts, 1))
    return np.cumsum(first | jump) - 1, jump


def _written_charts(pieces: _Pieces, tolerance: float) -> np.ndarray:
    """The chart each piece is written in (P,): its own, or 0 (the keys' chart) where a jump
    into or out of its chart would turn by more than `JUMP_SHARE` of the tolerance (about
    ``|omega| JUMP_GAP / 2`` at the change). Such a jump moves into the run of pieces in the
    other chart, to its first boundary where a jump is cheap (the pieces passed are lifted),
    or the whole run is lifted."""
    cp, h = pieces.control_points, pieces.ends - pieces.starts
    omega = norm(rq_angular_velocity(cp[:, 0], 3.0 * (cp[:, 1] - cp[:, 0]) / h[:, None]))
    costly = omega * _jump_gaps(pieces.starts) / 2.0 > JUMP_SHARE * tolerance
    first = pieces.first
    written = pieces.charts.copy()
    while True:  # each round lifts at least one piece
        _, jump = _runs(first, written)
        bad = np.flatnonzero(jump & costly)
        if not len(bad):
            return written
        b = int(bad[0])
        # Lift the piece after the change, and on into its run until a cheap boundary, if
        # its chart is not 0; else the piece before, and back.
        step, p = (1, b) if written[b] != 0 else (-1, b - 1)
        chart = written[p]
        while True:
            written[p] = 0
            nxt = p + step
            if nxt < 0 or nxt >= len(written) or (first[nxt] if step > 0 else first[p]):
                break
            if written[nxt] != chart or not costly[max(p, nxt)]:
                break
            p = nxt


@dataclass
class _KeyRows:
    """Keys of many curves, flat (``curve`` (n,) says whose), in no particular order."""

    curve: np.ndarray
    time: np.ndarray
    value: np.ndarray  # (n, 3)
    left_time: np.ndarray
    left: np.ndarray  # (n, 3)
    right_time: np.ndarray
    right: np.ndarray  # (n, 3)
    code: np.ndarray

    def where(self, mask: np.ndarray) -> _KeyRows:
        """The keys where ``mask`` (n,) holds."""
        return _KeyRows(*(getattr(self, name)[mask] for name in _KeyRows.__dataclass_fields__))

    @staticmethod
    def join(parts: Sequence[_KeyRows]) -> _KeyRows:
        """All keys, sorted by curve and time."""
        joined = _KeyRows(
            *(
                np.concatenate([getattr(p, name) for p in parts])
                for name in _KeyRows.__dataclass_fields__
            )
        )
        order = np.lexsort((joined.time, joined.curve))
        return _KeyRows(*(getattr(joined, name)[order] for name in _KeyRows.__dataclass_fields__))


@dataclass
class _Layout:
    """Where each piece goes on the F-curves, for the charts ``written`` (P,): a chart change
    (``jump`` (P,), at the piece's start) is held before it where the piece before has room
    (that piece then ends `JUMP_GAP` early, warped to end at the middle of the hold), else
    after it (the piece starts `JUMP_GAP` late, cut). Piece ``p`` covers the frames
    ``[tau_a, tau_z]`` with its part ``[u_a, u_z]``."""

    jump: np.ndarray
    tau_a: np.ndarray
    tau_z: np.ndarray
    u_a: np.ndarray
    u_z: np.ndarray

    @staticmethod
    def of(pieces: _Pieces, written: np.ndarray) -> _Layout:
        _, jump = _runs(pieces.first, written)
        h = pieces.ends - pieces.starts
        gap = _jump_gaps(pieces.starts)
        before = jump & (np.roll(h, 1) - gap >= MIN_KEY_GAP)
        start_shift = np.where(jump & ~before, gap, 0.0)
        end_shift = np.append(np.where(before[1:], gap[1:], 0.0), 0.0)
        return _Layout(
            jump,
            pieces.starts + start_shift,
            pieces.ends - end_shift,
            start_shift / h,
            1.0 - 0.5 * end_shift / h,
        )

    def part(self, control_points: np.ndarray) -> np.ndarray:
        """The parts (P, 4, 3) of pieces ``control_points`` (P, 4, 3) this layout writes."""
        return _sub_bezier(control_points, self.u_a, self.u_z)


def _exact_keys(pieces: _Pieces, layout: _Layout, write: np.ndarray) -> _KeyRows:
    """Keys reproducing the pieces ``write`` (P,) in their own charts as laid out, with the
    CONSTANT key of each jump that follows one."""
    count = len(pieces.starts)
    tau_a, tau_z, jump = layout.tau_a, layout.tau_z, layout.jump
    cp = layout.part(pieces.control_points)
    third = (tau_z - tau_a) / 3.0
    held = np.append(jump[1:], False)  # the piece ends with the CONSTANT key of a jump
    previous = np.maximum(np.arange(count) - 1, 0)
    shared = ~(pieces.first | jump)  # the start key is the previous piece's end
    # Two key slots per piece: its start (always), its end (last piece, or before a jump).
    emit = np.stack([write, write & (pieces.last | held)], axis=1)

    def slots(start: np.ndarray, end: np.ndarray) -> np.ndarray:
        return np.stack([start, end], axis=1)[emit]

    return _KeyRows(
        curve=slots(pieces.curve, pieces.curve),
        time=slots(tau_a, tau_z),
        value=slots(cp[:, 0], cp[:, 3]),
        left_time=slots(np.where(shared, (tau_z - third)[previous], tau_a - third), tau_z - third),
        left=slots(np.where(shared[:, None], cp[previous, 2], 2.0 * cp[:, 0] - cp[:, 1]), cp[:, 2]),
        right_time=slots(tau_a + third, tau_z + third),
        right=slots(cp[:, 1], 2.0 * cp[:, 3] - cp[:, 2]),
        code=slots(
            np.full(count, fcurve_math.BEZIER),
            np.where(held, fcurve_math.CONSTANT, fcurve_math.BEZIER),
        ),
    )


@dataclass
class _LiftPieces:
    """Pieces to lift into the keys' chart, flat: ``curve`` (P,) numbers their runs.

    ``offset`` (P, 3) lifts each piece into the keys' chart: ``raw - control_points`` at the
    start, ``2 pi n`` along the axis for a piece in chart ``n`` (`_lift`); zero for a piece
    already in that chart (a *native* piece).
    """

    curve: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    control_points: np.ndarray  # (P, 4, 3), in each piece's chart
    raw: np.ndarray  # (P, 4, 3), the same pieces in the keys' chart
    offset: np.ndarray

    @property
    def native(self) -> np.ndarray:
        return ~self.offset.any(axis=1)


def _subdivide(
    piece: np.ndarray, u: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Samples sorted by ``(piece, u)`` with ``counts[i] - 1`` more spread evenly between
    samples ``i`` and ``i + 1`` (``counts`` (N-1,), 1 between pieces)."""
    owner, k = _grid(counts)
    fraction = k / counts[owner]
    new_u = u[:-1][owner] + fraction * np.diff(u)[owner]
    return np.append(piece[:-1][owner], piece[-1]), np.append(new_u, u[-1])


def _target(pieces: _LiftPieces, piece: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The target's values and derivatives per frame (N, 3) each, in the pieces' charts."""
    cp = pieces.control_points[piece]
    h = (pieces.ends - pieces.starts)[piece]
    return bezier_values(cp, u), bezier_derivatives(cp, u) / h[:, None]


def _samples(pieces: _LiftPieces) -> tuple[np.ndarray, np.ndarray]:
    """Samples ``(piece, u)`` (N,) sorted by curve and time: the start of every piece, the
    end of each curve's last; `NATIVE_CHECKS` interior points of a native piece; elsewhere at
    least
    `SAMPLES_PER_FRAME` per frame, the target turning by at most `MAX_SAMPLE_TURN` and the
    lifted value (`_lift`) moving by at most about `MAX_LIFT_STEP` from one to the next (down
    to `MIN_SAMPLE_GAP` frames: the lift swings along a shell where the target passes near the
    identity with a turning axis)."""
    h = pieces.ends - pieces.starts
    native = pieces.native
    counts = np.where(
        native, NATIVE_CHECKS + 1, np.maximum(1, np.ceil(h * SAMPLES_PER_FRAME))
    ).astype(np.intp)
    piece, k = _grid(counts + 1)  # both ends of every piece, for now
    u = k / counts[piece]
    dense = ~native[piece[:-1]] & (piece[1:] == piece[:-1])
    cp = pieces.control_points
    turn = quat_angle_between(*(lambda q: (q[:-1], q[1:]))(rq_to_quat(bezier_values(cp[piece], u))))
    piece, u = _subdivide(
        piece, u, np.where(dense, np.maximum(1, np.ceil(turn / MAX_SAMPLE_TURN)), 1).astype(np.intp)
    )
    done = np.zeros(len(piece), dtype=bool)  # samples of pieces that need no more
    for _ in range(MAX_SUBDIVISIONS):
        rows = np.flatnonzero(~done)
        p, pu = piece[rows], u[rows]
        lifted, _ = _lift(pieces, p, pu, _target(pieces, p, pu)[0])
        step = norm(np.diff(lifted, axis=0))
        split = (
            (p[1:] == p[:-1]) & (step > MAX_LIFT_STEP) & (np.diff(pu) * h[p[:-1]] > MIN_SAMPLE_GAP)
        )
        if not split.any():
            break
        counts = np.where(split, np.minimum(np.ceil(step / MAX_LIFT_STEP), 64), 1)
        active = np.zeros(len(pieces.curve), dtype=bool)
        active[p[1:][split]] = True
        finished = rows[~active[p]]
        p, pu = _subdivide(p, pu, counts.astype(np.intp))
        piece = np.concatenate([piece[done], piece[finished], p[active[p]]])
        u = np.concatenate([u[done], u[finished], pu[active[p]]])
        done = np.arange(len(piece)) < len(piece) - int(active[p].sum())
    order = np.lexsort((u, piece))
    piece, u = piece[order], u[order]
    last = np.append(pieces.curve[1:] != pieces.curve[:-1], True)
    keep = (u < 1.0) | last[piece]
    return piece[keep], u[keep]


def _lift(
    pieces: _LiftPieces, piece: np.ndarray, u: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Lifted values ``w + radius d`` (N, 3) of the target values ``w`` (N, 3) at samples
    ``(piece, u)`` (N,), and the directions ``d`` (N, 3) (see `_Pieces`; 0 in native pieces).

    The equivalent vectors of ``w`` lie on its axis: ``d = +-w/|w|`` is exact, with the sign
    of the raw piece's direction ``r`` (the same piece in the keys' chart), so that the lift
    meets the raw piece at both ends. Where the two axes disagree (the angle between ``+-w``
    and ``r`` beyond `AXES_AGREE`: only next to the identity, where a turning axis would swing
    the lift along the shell faster than keys can follow) ``d`` turns smoothly to ``r``: the
    lift crosses the shell like the raw piece, off the target by at most ``|w|``.
    """
    radius = norm(pieces.offset)[piece]
    raw = bezier_values(pieces.raw[piece], u)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw_direction = raw / norm(raw)[:, None]
        unit = np.nan_to_num(w / norm(w)[:, None])
    cos = np.sum(unit * raw_direction, axis=1, keepdims=True)
    low, high = np.cos(AXES_AGREE)
    weight = np.clip((np.abs(cos) - low) / (high - low), 0.0, 1.0)
    weight = weight * weight * (3.0 - 2.0 * weight)  # smoothstep
    # Away from the identity the exact equivalent is followed whatever the raw piece does.
    far = np.clip(
        (norm(w)[:, None] - EXACT_LIFT[0]) / (EXACT_LIFT[1] - EXACT_LIFT[0]),
        0.0,
        1.0,
    )
    weight = np.maximum(weight, far * far * (3.0 - 2.0 * far))
    direction = weight * np.where(cos < 0.0, -unit, unit) + (1.0 - weight) * raw_direction
    direction /= norm(direction)[:, None]  # the two are < 90 deg apart
    direction = np.where((radius > 0.0)[:, None], np.nan_to_num(direction), 0.0)
    return w + radius[:, None] * direction, direction


def _tangents(
    time: np.ndarray,
    w: np.ndarray,
    dw: np.ndarray,
    direction: np.ndarray,
    radius: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
) -> np.ndarray:
    """``dv/dt`` (N, 3) of the lifted values ``v = w + radius d`` with ``d = +-w/|w|``:
    ``dw +- radius (dw - e (e . dw)) / |w|`` with ``e = w/|w|`` (exact; ``dw`` in native
    pieces), or a finite difference of the lifted samples where that blows up (see
    `TANGENT_BLOWUP`) or ``d`` is not along ``w`` (turning to the keys' chart, `_lift`)."""
    with np.errstate(all="ignore"):
        unit = w / norm(w)[:, None]
        sign = np.sign(np.sum(direction * unit, axis=1, keepdims=True))
        swing = (
            radius[:, None]
            * sign
            / norm(w)[:, None]
            * (dw - unit * np.sum(unit * dw, axis=1, keepdims=True))
        )
    out = dw + np.where((radius > 0.0)[:, None], swing, 0.0)
    values = w + radius[:, None] * direction
    rows = np.arange(len(time))
    owner = np.searchsorted(first, rows, side="right") - 1
    before = np.maximum(rows - 1, first[owner])
    after = np.minimum(rows + 1, last[owner])
    difference = (values[after] - values[before]) / (time[after] - time[before])[:, None]
    size = norm(out)
    bad = ~np.isfinite(size) | (size > TANGENT_BLOWUP * (norm(difference) + 1.0))
    bad |= (radius > 0.0) & (np.abs(np.sum(direction * unit, axis=1)) < 1.0 - 1e-9)  # blended
    return np.where(bad[:, None], difference, out)


def _bezier_between(
    t: np.ndarray,
    left_t: np.ndarray,
    left_v: np.ndarray,
    left_m: np.ndarray,
    right_t: np.ndarray,
    right_v: np.ndarray,
    right_m: np.ndarray,
) -> np.ndarray:
    """Blender's evaluation (m, 3) at ``t`` (m,) of the segments from the keys
    ``(left_t, left_v)`` to ``(right_t, right_v)`` with tangents ``left_m``/``right_m``
    (handles at the thirds, as `_handles` writes them)."""
    third = (right_t - left_t) / 3.0
    x = np.stack([left_t, left_t + third, right_t - third, right_t], axis=1)
    y = np.stack(
        [left_v, left_v + left_m * third[:, None], right_v - right_m * third[:, None], right_v],
        axis=1,
    )
    return fcurve_math.evaluate_segments(t, x, y)


def _lifted_keys(
    pieces: _LiftPieces, tolerance: float, planar: bool
) -> tuple[_KeyRows, np.ndarray]:
    """Keys (`_KeyRows`, ``curve`` numbering the runs) following the runs of ``pieces``
    lifted into the keys' chart, and the largest deviation of each run (step 3 of the module
    docstring)."""
    piece, u = _samples(pieces)
    w, dw = _target(pieces, piece, u)
    _, direction = _lift(pieces, piece, u, w)
    time = pieces.starts[piece] + u * (pieces.ends - pieces.starts)[piece]
    radius = norm(pieces.offset)[piece]
    values = w + radius[:, None] * direction
    target_q = rq_to_quat(w)
    curve = pieces.curve[piece]
    first = np.flatnonzero(np.insert(curve[1:] != curve[:-1], 0, True))
    last = np.append(first[1:] - 1, len(curve) - 1)
    tangents = _tangents(time, w, dw, direction, radius, first, last)
    if planar:
        values[:, 1] = 0.0
        tangents[:, 1] = 0.0
    # Where the lift itself is off (see `_lift`), keys can bring the curve to the lift only.
    reachable = np.maximum(tolerance, LIFT_SLACK * quat_angle_between(rq_to_quat(values), target_q))
    kept = u == 0.0
    kept[last] = True
    error = np.zeros(len(time))
    rows = np.arange(len(time))  # the samples whose interval changed (all, at first)
    for refinement in range(MAX_PASSES + 1):  # the last pass only measures
        knots = np.flatnonzero(kept)
        right = knots[np.searchsorted(knots, rows)]
        left = knots[np.searchsorted(knots, rows, side="right") - 1]
        inside = ~kept[rows]
        fitted = values[rows].astype(np.float32).astype(np.float64)  # a key gives its value
        lt, rt = left[inside], right[inside]
        fitted[inside] = _bezier_between(
            time[rows[inside]],
            time[lt],
            values[lt],
            tangents[lt],
            time[rt],
            values[rt],
            tangents[rt],
        )
        error[rows] = quat_angle_between(rq_to_quat(fitted), target_q[rows])
        room = (time[rows] - time[left] >= LIFT_KEY_GAP) & (
            time[right] - time[rows] >= LIFT_KEY_GAP
        )
        bad = (error[rows] > reachable[rows]) & inside & room
        if not bad.any() or refinement == MAX_PASSES:
            break
        # The worst bad sample of each interval (named by its left knot) becomes a knot; the
        # samples of those intervals are measured again.
        candidates = np.flatnonzero(bad)
        candidates = candidates[np.lexsort((-error[rows[candidates]], left[candidates]))]
        chosen = candidates[np.append(True, np.diff(left[candidates]) != 0)]
        owner, k = _grid(right[chosen] - left[chosen] + 1)
        kept[rows[chosen]] = True
        rows = left[chosen][owner] + k
    worst = np.maximum.reduceat(error, first)
    # The deviation also covers the middle between consecutive samples (keys included).
    inner = np.flatnonzero(curve[1:] == curve[:-1])
    mid_piece = piece[inner]
    mid_u = 0.5 * (u[inner] + np.where(piece[inner + 1] == mid_piece, u[inner + 1], 1.0))
    mid_time = pieces.starts[mid_piece] + mid_u * (pieces.ends - pieces.starts)[mid_piece]
    knots = np.flatnonzero(kept)
    lt = knots[np.searchsorted(knots, inner, side="right") - 1]
    rt = knots[np.searchsorted(knots, inner + 1)]
    mid_fitted = _bezier_between(
        mid_time, time[lt], values[lt], tangents[lt], time[rt], values[rt], tangents[rt]
    )
    mid_error = quat_angle_between(
        rq_to_quat(mid_fitted),
        rq_to_quat(bezier_values(pieces.control_points[mid_piece], mid_u)),
    )
    np.maximum.at(worst, curve[inner], mid_error)
    rows = np.flatnonzero(kept)
    handle_left, handle_right = _handles(time[rows], values[rows], tangents[rows], curve[rows])
    keys = _KeyRows(
        curve=curve[rows],
        time=time[rows],
        value=values[rows],
        left_time=handle_left[:, 0, 0],
        left=handle_left[..., 1],
        right_time=handle_right[:, 0, 0],
        right=handle_right[..., 1],
        code=np.full(len(rows), fcurve_math.BEZIER),
    )
    return keys, worst


def _deviations(pieces: _Pieces, keys: _KeyRows, curves: int) -> np.ndarray:
    """Largest rotation angle (curves,) between the keys (sorted by curve and time),
    evaluated as Blender does, and the target: at `SEGMENT_CHECKS` of every segment between
    consecutive keys and `NEAR_KEYS` from its ends."""
    seg = np.flatnonzero(keys.curve[1:] == keys.curve[:-1])
    x0, x3 = keys.time[seg], keys.time[seg + 1]
    x = np.stack([x0, keys.right_time[seg], keys.left_time[seg + 1], x3], axis=1)
    y = np.stack(
        [keys.value[seg], keys.right[seg], keys.left[seg + 1], keys.value[seg + 1]], axis=1
    )
    near = np.array(NEAR_KEYS)
    t = np.concatenate(
        [
            x0[:, None] + np.array(SEGMENT_CHECKS) * (x3 - x0)[:, None],
            x0[:, None] + near,
            x3[:, None] - near,
        ],
        axis=1,
    )
    segment = np.repeat(np.arange(len(seg)), t.shape[1])
    # A body before a hold is time-warped (`_exact_keys`): its deviation grows along it with
    # the angular speed, so it gets `WARPED_CHECKS` more.
    warped = np.flatnonzero(keys.code[seg + 1] == fcurve_math.CONSTANT)
    more = x0[warped, None] + np.arange(1, WARPED_CHECKS) / WARPED_CHECKS * (x3 - x0)[warped, None]
    t = np.concatenate([t.ravel(), more.ravel()])
    segment = np.concatenate([segment, np.repeat(warped, WARPED_CHECKS - 1)])
    t = np.clip(t, x0[segment], x3[segment]).astype(np.float32).astype(np.float64)  # frames
    fitted = fcurve_math.evaluate_segments(t, x, y, keys.code[seg], segment=segment)
    # The target: the piece of the same curve containing t (curves overlap in time: each
    # curve's frames are mapped into [c, c + 1/2] for one search).
    curve = keys.curve[seg][segment]
    first = np.flatnonzero(pieces.first)
    last = np.flatnonzero(pieces.last)
    low = pieces.starts[first]
    span = pieces.ends[last] - low + 1.0
    piece = (
        np.searchsorted(
            pieces.curve + 0.5 * (pieces.starts - low[pieces.curve]) / span[pieces.curve],
            curve + 0.5 * (t - low[curve]) / span[curve],
            side="right",
        )
        - 1
    )
    piece = np.clip(piece, first[curve], last[curve])
    u = np.clip((t - pieces.starts[piece]) / (pieces.ends - pieces.starts)[piece], 0.0, 1.0)
    # The pieces' control points gathered straight into contiguous (4, 3, m) rows, passed as
    # their (m, 4, 3) view: `bezier_values` computes on those rows without reading across.
    points = np.take(pieces.control_points.transpose(1, 2, 0), piece, axis=2)
    return _largest_angles(curve, fitted, bezier_values(points.transpose(2, 0, 1), u), curves)


def _largest_angles(
    curve: np.ndarray, fitted: np.ndarray, target: np.ndarray, curves: int
) -> np.ndarray:
    """The largest rotation angle (curves,) between RQ vectors ``fitted`` and ``target``
    (m, 3) of the same ``curve`` (m,), computed exactly only where it may be the largest.

    The exponential map never lengthens a path (`refine.channel_distances`), so the angle
    between ``exp(a)`` and ``exp(b)`` is at most ``|a - b|``. A lower bound of each curve's
    largest angle is its angle at the farthest pair closer than `NEAR_PAIR` (pairs farther
    apart are mostly a hold's two charts: far apart, the same rotation); pairs closer than
    that bound (less 1e-12 for the angles' rounding) cannot be the largest and are skipped.
    The result is the same, bit for bit, as the angle at every pair.
    """
    distance = channel_distances(RQ, target, fitted)
    near = np.where(distance < NEAR_PAIR, distance, -1.0)
    farthest = np.full(curves, -1.0)
    np.maximum.at(farthest, curve, near)
    top = near == farthest[curve]
    worst = np.zeros(curves)
    np.maximum.at(worst, curve[top], _angles(fitted[top], target[top]))
    rest = ~top & (distance + 1e-12 >= worst[curve])
    np.maximum.at(worst, curve[rest], _angles(fitted[rest], target[rest]))
    return worst


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation angles (m,) between RQ vectors ``a`` and ``b`` (m, 3)."""
    return quat_angle_between(rq_to_quat(a), rq_to_quat(b))


def fit_many(
    inputs: Sequence[SplineInput], kind: Kind, tolerance: float, planar: bool = False
) -> list[SplineKeys]:
    """Bezier keys that follow the core's RQ splines within ``tolerance`` (radians): each
    piece in its own chart, with held jumps at the chart changes, or lifted into the keys'
    chart where a jump would cost too much (see the module docstring).
    `SplineKeys.max_error` says how close each curve is.

    Parameters
    ----------
    inputs : sequence of SplineInput
        The curves, fitted together (all pieces of all curves in one pass).
    kind : str
        A core spline kind (values of `KINDS`).
    tolerance : float
        Radians.
    planar : bool
        The keys are swings ``(r_x, 0, r_z)``: the written y component is 0 (the spline stays
        in that plane: the core's splitting and reparameterization keep it).

    Returns
    -------
    list of SplineKeys
        One per input, in order.
    """
    if not inputs:
        return []
    keys = np.cumsum([len(item.times) for item in inputs])
    # Each batch ends with the curve that takes its keys past a multiple of `FIT_BATCH_KEYS`.
    ends = np.flatnonzero(np.diff(keys // FIT_BATCH_KEYS, append=-1)) + 1
    return [
        result
        for start, end in zip([0, *ends[:-1].tolist()], ends.tolist(), strict=True)
        for result in _fit_batch(inputs[start:end], kind, tolerance, planar)
    ]


def _fit_batch(
    inputs: Sequence[SplineInput], kind: Kind, tolerance: float, planar: bool
) -> list[SplineKeys]:
    """`fit_many` of the curves of one batch."""
    pieces = _pieces(inputs, kind)
    # Every change held (exact pieces), and where some change is costly, runs lifted instead;
    # each curve takes whichever follows its spline more closely.
    keys, worst = _fit(pieces, pieces.charts, None, tolerance, planar)
    written = _written_charts(pieces, tolerance)
    if (written != pieces.charts).any():
        # Only the curves with a lifted piece are fitted again (numbered among themselves),
        # with their pieces without reparameterization.
        lifting = np.unique(pieces.curve[written != pieces.charts])
        mine = np.isin(pieces.curve, lifting)
        subset = _Pieces(
            np.searchsorted(lifting, pieces.curve[mine]),
            pieces.starts[mine],
            pieces.ends[mine],
            pieces.control_points[mine],
            pieces.charts[mine],
        )
        raw = _pieces([inputs[c] for c in lifting.tolist()], kind, False).control_points
        lifted_keys, lifted_worst = _fit(subset, written[mine], raw, tolerance, planar)
        lifted_keys.curve = lifting[lifted_keys.curve]
        better = np.zeros(len(inputs), dtype=bool)
        better[lifting] = lifted_worst < worst[lifting]
        keys = _KeyRows.join(
            [keys.where(~better[keys.curve]), lifted_keys.where(better[lifted_keys.curve])]
        )
        worst[lifting] = np.where(better[lifting], lifted_worst, worst[lifting])
    counts = np.bincount(keys.curve, minlength=len(inputs))
    jumps = np.bincount(
        keys.curve, weights=keys.code == fcurve_math.CONSTANT, minlength=len(inputs)
    ).astype(np.intp)
    # (n, 3, 2) handle points of every key, sliced per curve below.
    handle_left, handle_right = (
        np.stack([np.broadcast_to(frames[:, None], values.shape), values], axis=-1)
        for frames, values in ((keys.left_time, keys.left), (keys.right_time, keys.right))
    )
    code = keys.code.astype(np.int32)
    results = []
    for c, (lo, hi) in enumerate(
        zip((np.cumsum(counts) - counts).tolist(), np.cumsum(counts).tolist(), strict=True)
    ):
        results.append(
            SplineKeys(
                keys.time[lo:hi],
                keys.value[lo:hi],
                handle_left[lo:hi],
                handle_right[lo:hi],
                hi - lo - len(inputs[c].times),
                float(worst[c]),
                code[lo:hi],
                int(jumps[c]),
            )
        )
    return results


def _fit(
    pieces: _Pieces, written: np.ndarray, raw: np.ndarray | None, tolerance: float, planar: bool
) -> tuple[_KeyRows, np.ndarray]:
    """Keys (sorted by curve and time) writing each piece in the chart ``written`` (P,), and
    each curve's largest deviation. ``raw`` (P, 4, 3): the pieces without reparameterization,
    needed where ``written`` is not the piece's own chart (lifted runs)."""
    curves = int(pieces.curve[-1]) + 1
    pieces, written, raw = _split_before_jumps(pieces, written, raw)
    layout = _Layout.of(pieces, written)
    run, _ = _runs(pieces.first, written)
    lifted = np.zeros(run[-1] + 1, dtype=bool)
    lifted[run[written != pieces.charts]] = True
    lifted = lifted[run]  # whole runs, their pieces already in the keys' chart included
    parts = [_exact_keys(pieces, layout, ~lifted)]
    worst = np.zeros(curves)
    if lifted.any():
        assert raw is not None
        rows = np.flatnonzero(lifted)
        runs, number = np.unique(run[rows], return_inverse=True)
        cp = pieces.control_points[rows]
        lift_keys, run_worst = _lifted_keys(
            _LiftPieces(
                number,
                layout.tau_a[rows],
                layout.tau_z[rows],
                _sub_bezier(cp, layout.u_a[rows], layout.u_z[rows]),
                _sub_bezier(raw[rows], layout.u_a[rows], layout.u_z[rows]),
                raw[rows, 0] - cp[:, 0],
            ),
            tolerance,
            planar,
        )
        run_curve = pieces.curve[np.searchsorted(run, runs)]
        run_last = pieces.last[np.searchsorted(run, runs, side="right") - 1]
        final = np.append(lift_keys.curve[1:] != lift_keys.curve[:-1], True)
        lift_keys.code[final & ~run_last[lift_keys.curve]] = fcurve_math.CONSTANT  # jump next
        lift_keys.curve = run_curve[lift_keys.curve]
        parts.append(lift_keys)
        np.maximum.at(worst, run_curve, run_worst)
    keys = _KeyRows.join(parts)
    if planar:
        keys.value[:, 1] = keys.left[:, 1] = keys.right[:, 1] = 0.0
    return keys, np.maximum(worst, _deviations(pieces, keys, curves))


def fit_scalar(
    times: np.ndarray, keys: np.ndarray, kind: Kind, rates: np.ndarray | None = None
) -> SplineKeys:
    """Bezier keys (k = 1) of the scalar cubic of ``kind`` through (or, B-spline, near)
    ``keys`` (K,) at ``times`` (K,): the core's Bezier control points of the same kind
    (`rq_rotation.bezier_control_points`, no reparameterization: a twist is an angle),
    reproduced exactly by keys at the knots with handles at the thirds. ``rates`` (K,):
    ``d/dt`` at the keys for ``'hermite'``."""

    def vectors(a: np.ndarray) -> np.ndarray:
        return np.stack([a, np.zeros_like(a), np.zeros_like(a)], axis=1)

    segments = bezier_control_points(
        times, vectors(keys), kind, tangents=None if rates is None else vectors(rates)
    )[:, :, :1]  # (K-1, 4, 1)
    h = np.diff(times)[:, None]
    values = np.concatenate([segments[:, 0], segments[-1:, 3]])
    tangents = np.concatenate(
        [
            3.0 * (segments[:, 1] - segments[:, 0]) / h,
            3.0 * (segments[-1:, 3] - segments[-1:, 2]) / h[-1:],
        ]
    )
    handle_left, handle_right = _handles(times, values, tangents)
    return SplineKeys(times, values, handle_left, handle_right, 0, 0.0)


def rates_of(
    channels_values: Callable[[np.ndarray], np.ndarray], times: np.ndarray, step: float = 1e-3
) -> np.ndarray:
    """``d/dt`` (K, k) of the current animation at the key ``times``: differences of
    ``channels_values(t) -> (m, k)``, central inside, one-sided at the first and last key."""
    low = np.maximum(times - step, times[0])
    high = np.minimum(times + step, times[-1])
    return (channels_values(high) - channels_values(low)) / (high - low)[:, None]


def angular_velocities_of(
    channels_values: Callable[[np.ndarray], np.ndarray], times: np.ndarray
) -> np.ndarray:
    """World angular velocities (K, 3) of the current RQ animation ``channels_values(t) ->
    (m, 3)`` at the key ``times`` (`rates_of` through ``rq_angular_velocity``)."""
    return rq_angular_velocity(channels_values(times), rates_of(channels_values, times))
