"""Before Qt starts: is there a display, can the xcb platform plugin load, are there fonts? (No Qt import here.)

When the xcb plugin cannot load its system libraries, Qt prints "xcb-cursor0 or libxcb-cursor0 is needed" whatever
library is really missing, and aborts the process (exit 134); with no display at all the same message appears.
Without ``libGL`` the import of Qt's GUI module fails with a traceback, and without any font every text is an
empty box. :func:`check` finds the real gap first and returns one line naming the missing Debian packages, so the
launcher can print it and exit with status 2.

The display and xcb library checks apply only where Qt would use xcb: on Linux, with ``QT_QPA_PLATFORM`` unset or
naming ``xcb`` first, and outside a Wayland session (``WAYLAND_DISPLAY``), where Qt uses its Wayland plugin. For
``offscreen``, ``minimal`` and the other platforms only the GUI module's own libraries are checked.
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

__all__ = [
    "DEBIAN_PACKAGES",
    "FONT_DIRS",
    "check",
    "debian_packages",
    "fonts_installed",
    "missing_libraries",
    "platform_name",
    "qt_dir",
    "uses_xcb",
]

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
    return sys.platform.startswith("linux") and platform_name(env) == "xcb"


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


def platform_name(env: Mapping[str, str]) -> str:
    """The platform plugin Qt would try first: ``QT_QPA_PLATFORM``'s first entry, else ``wayland`` in a Wayland
    session, else ``xcb``."""
    requested = env.get("QT_QPA_PLATFORM", "").strip()
    if requested:
        return requested.split(";")[0].split(":")[0].strip()
    return "wayland" if env.get("WAYLAND_DISPLAY", "").strip() else "xcb"


FONT_DIRS = ("/usr/share/fonts", "/usr/local/share/fonts")
"""System font folders (the user's ``~/.local/share/fonts`` and ``~/.fonts`` are searched too)."""

_FONT_SUFFIXES = (".ttf", ".otf", ".ttc", ".pfb", ".pcf", ".pcf.gz", ".woff", ".woff2")


def fonts_installed(env: Mapping[str, str]) -> bool:
    """Whether any font file exists where fontconfig looks (with none, every text shows as empty boxes)."""
    home = Path(env.get("HOME") or Path.home())
    data_home = env.get("XDG_DATA_HOME", "").strip() or str(home / ".local" / "share")
    for folder in (*FONT_DIRS, str(Path(data_home) / "fonts"), str(home / ".fonts")):
        for _root, _dirs, files in os.walk(folder):
            if any(name.lower().endswith(_FONT_SUFFIXES) for name in files):
                return True
    return False


def _missing_message(what: str, missing: list[str]) -> str:
    packages = debian_packages(missing)
    return (
        f"tiny-agent-gui: {what} needs system libraries that are missing ({', '.join(missing)}); "
        f"install them with: sudo apt-get install {' '.join(packages)}"
    )


def check(env: Mapping[str, str] | None = None) -> str | None:
    """``None`` when the window can start, else one line saying what is missing and how to install it.

    For xcb: a display, then every library of the xcb plugin. For any platform: the libraries Qt's GUI module
    needs (``libGL``, ``libEGL``…: without them the import itself fails). For a window on X11 or Wayland: at least
    one font. Other platforms (``offscreen``, ``minimal``…) get only the library check of the GUI module.
    """
    env = os.environ if env is None else env
    if not sys.platform.startswith("linux"):
        return None
    xcb = uses_xcb(env)
    if xcb and not env.get("DISPLAY", "").strip():
        return (
            "tiny-agent-gui: no display: neither DISPLAY nor WAYLAND_DISPLAY is set. Start it from a desktop session "
            "(or over ssh -X); QT_QPA_PLATFORM=offscreen runs it without a visible window."
        )
    folder = qt_dir()
    if folder is not None:
        plugin = folder / "plugins" / "platforms" / "libqxcb.so"
        gui = folder / "lib" / "libQt6Gui.so.6"
        if xcb and plugin.is_file():
            missing = missing_libraries(plugin, env)
            if missing:
                return _missing_message("the Qt window (xcb)", missing)
        elif gui.is_file():
            missing = missing_libraries(gui, env)
            if missing:
                return _missing_message("Qt", missing)
    if platform_name(env) in ("xcb", "wayland") and not fonts_installed(env):
        return (
            "tiny-agent-gui: no fonts are installed, so every text would show as empty boxes; install them with: "
            "sudo apt-get install fonts-dejavu-core"
        )
    return None
