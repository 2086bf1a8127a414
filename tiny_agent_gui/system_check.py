"""Before Qt starts: is there a display, and can the xcb platform plugin load? (No Qt import here.)

When the xcb plugin cannot load its system libraries, Qt prints "xcb-cursor0 or libxcb-cursor0 is needed" whatever
library is really missing, and aborts the process (exit 134); with no display at all the same message appears.
:func:`check` finds the real gap first and returns one line naming the missing Debian packages, so the launcher can
print it and exit with status 2.

The check applies only where Qt would use xcb: on Linux, with ``QT_QPA_PLATFORM`` unset or naming ``xcb`` first,
and outside a Wayland session (``WAYLAND_DISPLAY``), where Qt uses its Wayland plugin. ``offscreen``, ``minimal``
and the other platforms are left alone.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["DEBIAN_PACKAGES", "check", "debian_packages", "missing_libraries", "qt_dir", "uses_xcb"]

DEBIAN_PACKAGES: Mapping[str, str] = {
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-render.so.0": "libxcb-render0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-shm.so.0": "libxcb-shm0",
    "libxcb-sync.so.1": "libxcb-sync1",
    "libxcb-util.so.1": "libxcb-util1",
    "libxcb-xfixes.so.0": "libxcb-xfixes0",
    "libxcb-xinput.so.0": "libxcb-xinput0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxcb-glx.so.0": "libxcb-glx0",
    "libxcb.so.1": "libxcb1",
    "libX11-xcb.so.1": "libx11-xcb1",
    "libX11.so.6": "libx11-6",
    "libXau.so.6": "libxau6",
    "libXdmcp.so.6": "libxdmcp6",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libGLX.so.0": "libglx0",
    "libOpenGL.so.0": "libopengl0",
    "libGLdispatch.so.0": "libglvnd0",
    "libfontconfig.so.1": "libfontconfig1",
    "libfreetype.so.6": "libfreetype6",
    "libdbus-1.so.3": "libdbus-1-3",
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libgobject-2.0.so.0": "libglib2.0-0",
    "libgio-2.0.so.0": "libglib2.0-0",
    "libpng16.so.16": "libpng16-16",
    "libz.so.1": "zlib1g",
    "libzstd.so.1": "libzstd1",
    "libexpat.so.1": "libexpat1",
}
"""Library file name → the Debian/Ubuntu package that ships it (the xcb plugin's libraries and theirs)."""

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found", re.MULTILINE)
_DLOPEN_ERROR = re.compile(r"(\S+\.so[.\d]*): cannot open shared object file")


def uses_xcb(env: Mapping[str, str]) -> bool:
    """Whether Qt would pick its xcb platform plugin with this environment (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    requested = env.get("QT_QPA_PLATFORM", "").strip()
    if requested:
        first = requested.split(";")[0].split(":")[0].strip()
        return first == "xcb"
    return not env.get("WAYLAND_DISPLAY", "").strip()


def qt_dir() -> Path | None:
    """The ``Qt`` folder of PySide6 (libraries and plugins), in a venv or in the bundle, without loading Qt."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None:
        folder = Path(bundle) / "PySide6" / "Qt"
        return folder if folder.is_dir() else None
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "Qt"
        if folder.is_dir():
            return folder
    return None


def missing_libraries(plugin: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """The system libraries ``plugin`` (a shared object) needs and the dynamic loader cannot find.

    Loading the plugin is tried first (fast; it loads what Qt would load anyway). Only if that fails, ``ldd`` lists
    every missing library, transitive ones included; without ``ldd`` the loader's error names the first one.
    """
    try:
        ctypes.CDLL(str(plugin))
    except OSError as error:
        first = _DLOPEN_ERROR.search(str(error))
        fallback = [first.group(1)] if first else [str(error)]
    else:
        return []
    ldd = shutil.which("ldd")
    if ldd is None:
        return fallback
    try:
        result = subprocess.run(
            [ldd, str(plugin)], capture_output=True, text=True, timeout=10, env=dict(env or os.environ), check=False
        )
    except (OSError, subprocess.SubprocessError):
        return fallback
    found = list(dict.fromkeys(_NOT_FOUND.findall(result.stdout)))
    return found or fallback


def debian_packages(libraries: Iterable[str]) -> list[str]:
    """The Debian packages that ship ``libraries`` (a library with no known package is named as it is)."""
    return list(dict.fromkeys(DEBIAN_PACKAGES.get(name, name) for name in libraries))


def check(env: Mapping[str, str] | None = None) -> str | None:
    """``None`` when the window can start, else one line saying what is missing and how to install it."""
    env = os.environ if env is None else env
    if not uses_xcb(env):
        return None
    if not env.get("DISPLAY", "").strip():
        return (
            "tiny-agent-gui: no display: neither DISPLAY nor WAYLAND_DISPLAY is set. Start it from a desktop session "
            "(or over ssh -X); QT_QPA_PLATFORM=offscreen runs it without a visible window."
        )
    folder = qt_dir()
    plugin = folder / "plugins" / "platforms" / "libqxcb.so" if folder is not None else None
    if plugin is None or not plugin.is_file():
        return None  # a Qt without the xcb plugin: let Qt report what it has
    missing = missing_libraries(plugin, env)
    if not missing:
        return None
    packages = debian_packages(missing)
    return (
        f"tiny-agent-gui: the Qt window (xcb) needs system libraries that are missing ({', '.join(missing)}); "
        f"install them with: sudo apt-get install {' '.join(packages)}"
    )
