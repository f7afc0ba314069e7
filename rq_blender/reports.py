# SPDX-License-Identifier: GPL-3.0-or-later
"""How operators tell the animator what they did: a short headline for the status bar, and
details for the Info editor.

Blender's status bar shows an operator's last report, cut to the bar's width, and the Info
editor lists them all in order. So `report` sends the details first (as INFO) and the
headline last. Headlines should stay within `STATUS_LENGTH` characters; they name modes and
interpolations by their UI labels (`labels` of an enum's items), never by identifiers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import bpy

# What fits the status bar of a 1920-pixel-wide window next to the other status items.
STATUS_LENGTH = 70


def labels(items: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """``{identifier: label}`` of an EnumProperty's items, so reports use the UI's words."""
    return {identifier: label for identifier, label, _ in items}


def plural(count: int, noun: str) -> str:
    """``"1 bone"``, ``"2 bones"``."""
    return f"{count} {noun}{'s' * (count != 1)}"


def name_list(names: Sequence[str], shown: int = 3) -> str:
    """``"A, B and C"`` or ``"A, B, C and 4 more"``: names (in order, repeats dropped) that
    stay short in a headline."""
    unique = list(dict.fromkeys(names))
    if len(unique) > shown:
        return f"{', '.join(unique[:shown])} and {len(unique) - shown} more"
    if len(unique) > 1:
        return f"{', '.join(unique[:-1])} and {unique[-1]}"
    return "".join(unique)


def noted(
    headline: str, details: list[str], notes: Sequence[str], tag: str
) -> tuple[str, list[str]]:
    """``(headline, details)`` with ``"; tag"`` on the headline and ``notes`` after the
    details when there are notes; unchanged otherwise."""
    if not notes:
        return headline, details
    return f"{headline}; {tag}", [*details, *notes]


def report(
    operator: bpy.types.Operator, level: str, headline: str, details: Sequence[str] = ()
) -> None:
    """Report ``details`` (INFO, for the Info editor), then ``headline`` at ``level``
    ('INFO' or 'WARNING'), which the status bar shows."""
    for detail in details:
        operator.report({'INFO'}, detail)
    operator.report({level}, headline)  # type: ignore[arg-type]
