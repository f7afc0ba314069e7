# SPDX-License-Identifier: GPL-3.0-or-later
"""``bash dev.sh zip``: build dist/rq_rotations-<version>.zip with Blender's own tool."""

from blender_extension import REPO, build_zip, use_temporary_user_resources

if __name__ == "__main__":
    use_temporary_user_resources()
    print(build_zip(REPO / "dist"))
