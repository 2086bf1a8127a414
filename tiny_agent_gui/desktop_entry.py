"""Install or remove the desktop launcher entry for the current installation (no Qt import here).

``tiny-agent-gui --install-desktop-entry`` (a pip install) and the tarball's ``install.sh`` (which runs the
bundled binary with the same flag) write, under ``$XDG_DATA_HOME`` (default ``~/.local/share``):

- ``applications/tiny-agent-desktop.desktop``: the package's entry with an absolute ``Exec`` and ``TryExec`` for
  this installation's binary, so it works whatever ``PATH`` the desktop session has;
- ``icons/hicolor/scalable/apps/tiny-agent-desktop.svg``, plus the PNG sizes where the installation has them (the
  bundle does; a pip install has the SVG, which every current desktop renders);
- ``metainfo/io.github.tiny_agent.desktop.metainfo.xml``: the AppStream description software centres read.

Then the desktop database is refreshed when its tool exists. ``--remove-desktop-entry`` deletes
exactly these files. Settings, keys, sessions and logs are never touched.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DESKTOP_ID",
    "ICON_NAME",
    "METAINFO_NAME",
    "RESOURCES",
    "Layout",
    "desktop_entry_text",
    "exec_quote",
    "install",
    "launch_command",
    "remove",
]

RESOURCES = Path(__file__).resolve().parent / "resources"
"""The package's resource folder (the SVG icon, the .desktop template, the AppStream file)."""

DESKTOP_ID = "tiny-agent-desktop.desktop"
"""The desktop entry's file name (its desktop file id)."""

ICON_NAME = "tiny-agent-desktop"
"""The icon's theme name (``Icon=`` in the entry)."""

METAINFO_NAME = "io.github.tiny_agent.desktop.metainfo.xml"
"""The AppStream file's name."""

_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")
"""Characters that make an Exec argument need quotes (Desktop Entry Specification, "The Exec key")."""


def exec_quote(argument: str) -> str:
    """``argument`` as one argument of an ``Exec`` value: quoted and escaped where the spec requires, ``%`` doubled,
    and backslashes doubled once more for the string-value escaping of the key file."""
    text = argument.replace("%", "%%")
    if any(char in _RESERVED for char in text):
        text = '"' + "".join("\\" + char if char in '"`$\\' else char for char in text) + '"'
    return text.replace("\\", "\\\\")


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the entry's files go, under one XDG data folder."""

    data_home: Path

    @classmethod
    def for_user(cls, env: Mapping[str, str] | None = None) -> Layout:
        """The user's data folder: ``$XDG_DATA_HOME``, else ``~/.local/share``."""
        env = os.environ if env is None else env
        value = env.get("XDG_DATA_HOME", "").strip()
        home = Path(env.get("HOME") or Path.home())
        return cls(Path(value) if value and Path(value).is_absolute() else home / ".local" / "share")

    @property
    def desktop_file(self) -> Path:
        """``applications/tiny-agent-desktop.desktop``."""
        return self.data_home / "applications" / DESKTOP_ID

    @property
    def icon_theme(self) -> Path:
        """The hicolor icon theme folder."""
        return self.data_home / "icons" / "hicolor"

    @property
    def metainfo_file(self) -> Path:
        """The AppStream file."""
        return self.data_home / "metainfo" / METAINFO_NAME

    def icon_files(self, sizes: Sequence[str]) -> list[Path]:
        """The scalable icon and the PNGs for ``sizes`` (``"48x48"``…)."""
        files = [self.icon_theme / "scalable" / "apps" / f"{ICON_NAME}.svg"]
        files += [self.icon_theme / size / "apps" / f"{ICON_NAME}.png" for size in sizes]
        return files


def launch_command() -> list[str]:
    """The absolute command that starts this installation: the bundle's binary, the ``tiny-agent-gui`` script
    that is running, or this Python with ``-m tiny_agent_gui``."""
    if getattr(sys, "frozen", False):
        return [str(Path(sys.executable).absolute())]
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "tiny-agent-gui" and script.is_file():
        return [str(script.absolute())]
    found = shutil.which("tiny-agent-gui")
    if found is not None:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "tiny_agent_gui"]


def desktop_entry_text(command: Sequence[str], template: str | None = None) -> str:
    """The package's ``.desktop`` template with ``Exec`` (and ``TryExec``) set to ``command``."""
    template = (RESOURCES / DESKTOP_ID).read_text(encoding="utf-8") if template is None else template
    lines: list[str] = []
    for line in template.splitlines():
        if line.startswith("Exec="):
            lines.append("TryExec=" + exec_quote(command[0]))
            lines.append("Exec=" + " ".join(exec_quote(argument) for argument in command))
        elif not line.startswith("TryExec="):
            lines.append(line)
    return "\n".join(lines) + "\n"


def _bundled_share() -> Path | None:
    """The bundle's ``share`` folder (PNG icon sizes), when running from the bundle."""
    bundle = getattr(sys, "_MEIPASS", None)
    folder = Path(bundle) / "share" if bundle is not None else None
    return folder if folder is not None and folder.is_dir() else None


def _png_sizes(icons: Path | None) -> dict[str, Path]:
    if icons is None or not icons.is_dir():
        return {}
    return {
        folder.name: folder / f"{ICON_NAME}.png"
        for folder in sorted(icons.iterdir())
        if (folder / f"{ICON_NAME}.png").is_file()
    }


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(data)
    temporary.chmod(0o644)
    temporary.replace(path)


def _refresh(layout: Layout) -> None:
    """Tell the desktop about the change: the desktop database where its tool exists, and the icon theme folder's
    time (no ``gtk-update-icon-cache`` here: a cache file in the user's theme would go stale with the next icon)."""
    if shutil.which("update-desktop-database") is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            command = ["update-desktop-database", "-q", str(layout.desktop_file.parent)]
            subprocess.run(command, capture_output=True, timeout=30, check=False)
    if layout.icon_theme.is_dir():
        os.utime(layout.icon_theme)


def install(
    layout: Layout, command: Sequence[str] | None = None, share: Path | None = None, refresh: bool = True
) -> list[Path]:
    """Write the entry, the icons and the AppStream file; returns the files written.

    ``share`` is a folder with ``icons/<size>/tiny-agent-desktop.png`` (the bundle has one); by default the
    bundle's when running from it, else only the package's SVG is installed as the icon.
    """
    command = list(command) if command is not None else launch_command()
    share = share if share is not None else _bundled_share()
    written: list[Path] = []

    _write(layout.desktop_file, desktop_entry_text(command).encode("utf-8"))
    written.append(layout.desktop_file)

    pngs = _png_sizes(share / "icons" if share is not None else None)
    targets = layout.icon_files(list(pngs))
    _write(targets[0], (RESOURCES / f"{ICON_NAME}.svg").read_bytes())
    for target, source in zip(targets[1:], pngs.values(), strict=True):
        _write(target, source.read_bytes())
    written += targets

    _write(layout.metainfo_file, (RESOURCES / METAINFO_NAME).read_bytes())
    written.append(layout.metainfo_file)

    if refresh:
        _refresh(layout)
    return written


def remove(layout: Layout, refresh: bool = True) -> list[Path]:
    """Delete the entry, every icon size of the app and the AppStream file; returns the files removed."""
    candidates = [layout.desktop_file, layout.metainfo_file]
    if layout.icon_theme.is_dir():
        candidates += sorted(layout.icon_theme.glob(f"*/apps/{ICON_NAME}.*"))
    removed = []
    for path in candidates:
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed.append(path)
    if refresh and removed:
        _refresh(layout)
    return removed
