# SPDX-License-Identifier: GPL-3.0-or-later
"""Which channels the operators act on in the Graph Editor (`parameter_curves`).

Headless Blender has no areas, so the Graph Editor's context is stood in for by an object
with its members (``area``, ``selected_editable_fcurves``, ...); the real editor is driven in
``tests/gui/test_gui_graph_editor.py``.
"""

from types import SimpleNamespace

import bpy
import rigs
import rigs_operators as ro

KEYS = [(1.0, (0.1, 0.2, 0.3)), (5.0, (0.4, 0.1, -0.2))]


def _graph_context(obj, fcurves):
    """The members of a Graph Editor context whose editable selected F-curves are ``fcurves``."""
    return SimpleNamespace(
        area=SimpleNamespace(type='GRAPH_EDITOR'),
        object=obj,
        view_layer=bpy.context.view_layer,
        selected_editable_fcurves=list(fcurves),
    )


class _Poll:
    message = ""

    @classmethod
    def poll_message_set(cls, message):
        cls.message = message


def test_graph_editor_acts_on_the_channels_it_shows_not_on_every_selected_curve(addon):
    """A curve keeps ``select`` while the editor hides it (its bone deselected under "Only
    Show Selected"): only the curves the editor lists as selected and editable count."""
    parameter_curves = ro.addon_module("rq_blender.parameter_curves")
    obj = ro.rq_rig({"A": KEYS, "B": KEYS}, chain=False)
    curves = rigs.fcurves_of(obj)
    for fcurve in curves:
        fcurve.select = True  # all selected, as new curves are
    shown = [c for c in curves if '"A"' in c.data_path]
    found = parameter_curves.target_parameters(_graph_context(obj, shown), ("rq_vector",))
    assert [(p.bone_name, p.name) for p in found] == [("A", "rq_vector")]
    # One selected component is enough: the parameter is a vector.
    found = parameter_curves.target_parameters(_graph_context(obj, shown[:1]), ("rq_vector",))
    assert [(p.bone_name, len(p.fcurves)) for p in found] == [("A", 3)]


def test_graph_editor_poll_needs_an_add_on_channel(addon):
    parameter_curves = ro.addon_module("rq_blender.parameter_curves")
    obj = ro.rq_rig({"A": KEYS}, chain=False)
    obj.keyframe_insert("location", frame=1)
    curves = rigs.fcurves_of(obj)
    location = [c for c in curves if c.data_path == "location"]
    for selected in ([], location):
        _Poll.message = ""
        assert not parameter_curves.poll_pose_or_graph(_Poll, _graph_context(obj, selected))
        assert "RQ or swing/twist" in _Poll.message
    rq = [c for c in curves if "rq_vector" in c.data_path]
    assert parameter_curves.poll_pose_or_graph(_Poll, _graph_context(obj, rq[1:2]))
