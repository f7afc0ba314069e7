# SPDX-License-Identifier: GPL-3.0-or-later
"""A real Blender 5.2 GUI under Xvfb, in the Debian sid root built by ``tools/gui_root.sh``.

The test process (outside the root) drives it:

- `GuiBlender.start` installs the extension zip built by Blender's own tool into a fresh user
  folder (a background Blender run that also turns the splash screen off), starts Xvfb and
  Blender with ``blender_driver.py``, and waits for the window;
- `GuiBlender.run` sends a Python snippet to the running Blender and returns its ``result``;
- `GuiBlender.xdotool` sends real X input events; `GuiBlender.screenshot` grabs the X screen
  (Blender's own screenshot operator draws black under software GL).

Everything the session writes lives in one folder inside the root's ``/tmp``, removed at the
end; screenshots and Blender's console log are copied to ``build/gui/`` as artifacts.
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib
import shutil
import subprocess
import time
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[2]
VENVS = pathlib.Path(os.environ.get("RQ_VENVS", REPO / ".venvs"))
ARTIFACTS = REPO / "build" / "gui"
ADDON_MODULE = "bl_ext.user_default.rq_rotations"
SCREEN = (1600, 1000)
SKIP_EXIT_CODE = 77  # tools/gui_root.sh: cannot build the root here (not root)


class GuiUnavailableError(Exception):
    """The GUI root cannot be built on this machine (the tests skip with this message)."""


def ensure_root() -> pathlib.Path:
    """Build (or reuse) the Debian sid root; returns its path."""
    result = subprocess.run(
        ["bash", str(REPO / "tools" / "gui_root.sh")], capture_output=True, text=True, check=False
    )
    if result.returncode == SKIP_EXIT_CODE:
        raise GuiUnavailableError(result.stderr.strip())
    if result.returncode != 0:
        raise RuntimeError(f"tools/gui_root.sh failed:\n{result.stderr}")
    return pathlib.Path(result.stdout.strip().splitlines()[-1])


def build_zip(output_dir: pathlib.Path) -> pathlib.Path:
    """The extension zip, built by the Blender 5.2 wheel's ``blender_ext.py`` (installs in 4.2+)."""
    python = VENVS / "bpy-5.2" / "bin" / "python"
    if not python.exists():
        raise GuiUnavailableError(f"no {python}: run `bash dev.sh test`")
    script = (
        "import pathlib, sys\n"
        f"sys.path.insert(0, {str(REPO / 'tools')!r})\n"
        "from blender_extension import build_zip, use_temporary_user_resources\n"
        "use_temporary_user_resources()\n"
        "print(build_zip(pathlib.Path(sys.argv[1])))\n"
    )
    result = subprocess.run(
        [str(python), "-c", script, str(output_dir)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"building the zip failed:\n{result.stdout}{result.stderr}")
    return pathlib.Path(result.stdout.strip().splitlines()[-1])


# Run in a background Blender before the GUI starts: install and enable the zip, and save
# preferences without the "Quick Setup" splash that would cover a fresh user's window.
SETUP_SCRIPT = """
import sys
import bpy
preferences = bpy.context.preferences
preferences.view.show_splash = False
bpy.ops.extensions.package_install_files(
    filepath=sys.argv[-1], repo="user_default", enable_on_install=True)
if "{module}" not in preferences.addons:
    raise SystemExit("the extension did not install")
bpy.ops.wm.save_userpref()
"""


class GuiBlender:
    """One Blender GUI process with its own X display, user folder and home."""

    def __init__(self, root: pathlib.Path, zip_path: pathlib.Path):
        self.root = root
        self.zip_path = zip_path
        self.inside = f"/tmp/rq-gui-{os.getpid()}"  # the session folder, as seen in the root
        self.work = root / self.inside.lstrip("/")
        self.display = self._free_display()
        self.processes: list[subprocess.Popen[bytes]] = []
        self.mounted_proc = False
        self.counter = itertools.count()
        self.log_path = self.work / "blender.log"

    # -- life cycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Install the extension, start Xvfb and Blender, and wait for the window."""
        proc = self.root / "proc"
        if not os.path.ismount(proc):
            subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=True)
            self.mounted_proc = True
        shutil.rmtree(self.work, ignore_errors=True)
        for sub in ("home", "user", "inbox", "outbox"):
            (self.work / sub).mkdir(parents=True)
        shutil.copy(self.zip_path, self.work / self.zip_path.name)
        for helper in ("blender_driver.py", "gui_scenes.py"):
            shutil.copy(pathlib.Path(__file__).with_name(helper), self.work)
        setup = self.work / "setup.py"
        setup.write_text(SETUP_SCRIPT.format(module=ADDON_MODULE))
        installed = subprocess.run(
            self._inside(
                "blender",
                "-b",
                "--python",
                f"{self.inside}/setup.py",
                "--",
                f"{self.inside}/{self.zip_path.name}",
            ),
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if installed.returncode != 0:
            raise RuntimeError(
                f"installing the extension failed:\n{installed.stdout}{installed.stderr}"
            )
        width, height = SCREEN
        self._spawn(
            self._inside(
                "Xvfb",
                f":{self.display}",
                "-screen",
                "0",
                f"{width}x{height}x24",
                "-nolisten",
                "tcp",
            ),
            self.work / "xvfb.log",
        )
        self._wait_for(self.root / f"tmp/.X11-unix/X{self.display}", "Xvfb's socket", 30)
        self._spawn(
            self._inside(
                "blender",
                "-noaudio",
                "--window-geometry",
                "0",
                "0",
                str(width),
                str(height),
                "--python",
                f"{self.inside}/blender_driver.py",
            ),
            self.log_path,
        )
        self._wait_for(self.work / "ready", "Blender's window", 180)

    def stop(self) -> None:
        """Quit Blender and Xvfb, keep the console log, remove the session folder."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        if self.log_path.exists():
            shutil.copy(self.log_path, ARTIFACTS / "blender-console.log")
        shutil.rmtree(self.work, ignore_errors=True)
        if self.mounted_proc:
            subprocess.run(["umount", str(self.root / "proc")], check=False)

    # -- driving --------------------------------------------------------------------------

    def run(self, code: str, timeout: float = 120.0) -> Any:
        """Run ``code`` in Blender's main thread; returns what it assigned to ``result``."""
        name = f"{next(self.counter):04d}"
        partial = self.work / "inbox" / f"{name}.partial"
        partial.write_text(code)
        partial.rename(self.work / "inbox" / f"{name}.py")
        reply_path = self.work / "outbox" / f"{name}.json"
        self._wait_for(reply_path, f"Blender's reply to snippet {name}", timeout)
        reply = json.loads(reply_path.read_text())
        if not reply["ok"]:
            raise AssertionError(f"snippet failed inside Blender:\n{reply['traceback']}")
        return reply["result"]

    def xdotool(self, *args: str) -> None:
        """Send X input events (``xdotool`` inside the root, on Blender's display)."""
        subprocess.run(self._inside("xdotool", *args), check=True, capture_output=True)

    def screenshot(self, name: str, box: list[int] | None = None) -> pathlib.Path:
        """Grab the X screen (or ``box`` = [x, y, width, height] of it) into build/gui/."""
        crop = f"-crop {box[2]}x{box[3]}+{box[0]}+{box[1]} +repage " if box else ""
        inside_png = f"{self.inside}/{name}.png"
        subprocess.run(
            self._inside("sh", "-c", f"xwd -root -silent | convert xwd:- {crop}{inside_png}"),
            check=True,
            capture_output=True,
        )
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        target = ARTIFACTS / f"{name}.png"
        shutil.copy(self.work / f"{name}.png", target)
        return target

    def log_text(self) -> str:
        """Everything Blender has printed so far (stdout and stderr)."""
        return self.log_path.read_text(errors="replace")

    # -- helpers --------------------------------------------------------------------------

    def _inside(self, *command: str) -> list[str]:
        """``command`` run in the root, in a clean environment for this session."""
        return [
            "chroot",
            str(self.root),
            "/usr/bin/env",
            "-i",
            "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG=C.UTF-8",
            f"HOME={self.inside}/home",
            f"DISPLAY=:{self.display}",
            f"BLENDER_USER_RESOURCES={self.inside}/user",
            f"RQ_GUI_DIR={self.inside}",
            *command,
        ]

    def _spawn(self, command: list[str], log: pathlib.Path) -> None:
        with log.open("wb") as output:
            self.processes.append(
                subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
            )

    def _free_display(self) -> int:
        for number in range(90, 190):
            if (
                not (self.root / f"tmp/.X11-unix/X{number}").exists()
                and not (self.root / f"tmp/.X{number}-lock").exists()
            ):
                return number
        raise RuntimeError("no free X display number in 90..189")

    def _wait_for(self, path: pathlib.Path, what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not path.exists():
            dead = [p for p in self.processes if p.poll() is not None]
            if dead:
                tail = self.log_text()[-3000:] if self.log_path.exists() else ""
                raise RuntimeError(
                    f"waiting for {what}: a process ended ({dead[0].args[-1]},"
                    f" code {dead[0].returncode})\n{tail}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} after {timeout} s")
            time.sleep(0.05)
