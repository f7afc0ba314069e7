# SPDX-License-Identifier: GPL-3.0-or-later
"""One label per operator: the panels, menus and popovers give operator buttons no text of
their own, so Blender shows the operator's ``bl_label`` there, as in the operator search (F3)
and the Graph Editor's menus. The one exception is the mode menu of the panels
(``panels/bone.draw_mode_menu``), which shows the bone's current mode as a value."""

import ast
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
UI_FILES = sorted((REPO / "panels").glob("*.py"))
VALUE_MENUS = {("bone.py", "draw_mode_menu")}


def _operator_buttons_with_text(path: pathlib.Path) -> list[str]:
    found = []
    tree = ast.parse(path.read_text())
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        if (path.name, function.name) in VALUE_MENUS:
            continue
        for call in ast.walk(function):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("operator", "operator_menu_enum")
                and any(k.arg == "text" for k in call.keywords)
            ):
                found.append(f"{path.name}:{call.lineno} in {function.name}")
    return found


def test_operator_buttons_show_the_operator_label():
    found = [where for path in UI_FILES for where in _operator_buttons_with_text(path)]
    assert not found, found
    # The files hold the buttons the check is about.
    assert sum(path.read_text().count(".operator(") for path in UI_FILES) >= 4
