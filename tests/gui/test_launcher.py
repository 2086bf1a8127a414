"""The ``tiny-agent-gui`` command: options answered before Qt starts, the system check, the desktop entry, the log.

Subprocess tests run ``python -m tiny_agent_gui`` (the script's entry point) with a temporary HOME and XDG folders.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from tiny_agent_gui import desktop_entry, startup_notice, system_check
from tiny_agent_gui.diagnostics import app_version, safe_url
from tiny_agent_gui.logs import LOG_FILE_NAME, redact, setup_logging

SECRET = "sk-proj-DO-NOT-LEAK-0123456789abcdef"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TINY_AGENT_", "XDG_"))}
    env |= {
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "home" / ".local" / "share"),
        "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
        "XDG_STATE_HOME": str(tmp_path / "home" / ".local" / "state"),
    }
    env.update(extra)
    return env


def _run(tmp_path: Path, *args: str, unset: tuple[str, ...] = (), **extra: str) -> subprocess.CompletedProcess[str]:
    env = _env(tmp_path, **extra)
    for name in unset:
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "tiny_agent_gui", *args], env=env, capture_output=True, text=True, timeout=120
    )


# -- command line -----------------------------------------------------------------------------------------------


def test_version(tmp_path: Path) -> None:
    result = _run(tmp_path, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"tiny-agent-gui {app_version()}\n"
    assert app_version() != "unknown"


def _fake_notify_send(tmp_path: Path, body: str = 'printf "%s\\n" "$@" > "$0.args"') -> Path:
    """A ``notify-send`` in its own folder (put first on PATH) that writes its arguments to ``notify-send.args``:
    the tests never call the real one."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    program = folder / "notify-send"
    program.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    program.chmod(0o755)
    return program


def _log_text(tmp_path: Path) -> str:
    return (tmp_path / "home" / ".local" / "state" / "tiny-agent-desktop" / "log" / LOG_FILE_NAME).read_text("utf-8")


def test_no_display_is_one_line_and_exit_2(tmp_path: Path) -> None:
    program = _fake_notify_send(tmp_path)
    path = f"{program.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = _run(tmp_path, unset=("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"), PATH=path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("tiny-agent-gui: no display:")
    assert "QT_QPA_PLATFORM=offscreen" in result.stderr
    # a double-clicked app has no terminal: the same line is in the log file and in a desktop notification
    assert f"ERROR tiny_agent_gui.launcher: tiny-agent desktop {app_version()} cannot start: {result.stderr}" in (
        _log_text(tmp_path)
    )
    title, *body = Path(f"{program}.args").read_text(encoding="utf-8").split("--\n", 1)[1].splitlines()
    assert title == "tiny-agent desktop cannot start"
    assert body[0].startswith("no display:")
    assert body[-1].startswith("The log file: ")
    assert body[-1].endswith(LOG_FILE_NAME)


def test_diagnostics_print_versions_and_folders_without_secrets(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    url = f"https://me:{SECRET}@llm.example.com/v1?key={SECRET}"
    profile = {"id": "p", "provider": "custom", "name": "P", "baseUrl": url, "model": "m", "keyEnv": "MY_KEY"}
    settings = {"version": 1, "profiles": [profile], "activeProfile": "p"}
    (config / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    result = _run(tmp_path, "--diagnostics", TINY_AGENT_CONFIG_DIR=str(config), MY_KEY=SECRET)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("tiny-agent desktop diagnostics\n")
    assert f"Version: {app_version()}\n" in result.stdout
    assert "Price table: genai-prices " in result.stdout
    assert f"Settings: {config / 'settings.json'}\n" in result.stdout
    assert "baseUrl: https://llm.example.com/v1\n" in result.stdout
    assert "keyEnv: MY_KEY\n" in result.stdout
    assert SECRET not in result.stdout + result.stderr


def test_check_system_passes_offscreen(tmp_path: Path) -> None:
    result = _run(tmp_path, "--check-system", QT_QPA_PLATFORM="offscreen")
    assert result.returncode == 0
    assert "are there" in result.stdout


@pytest.mark.slow
def test_screenshot_offscreen_writes_the_png_and_the_log(tmp_path: Path) -> None:
    shot = tmp_path / "window.png"
    result = _run(tmp_path, "--screenshot", str(shot), QT_QPA_PLATFORM="offscreen", OPENAI_API_KEY=SECRET)
    assert result.returncode == 0, result.stderr
    assert shot.read_bytes().startswith(b"\x89PNG")
    log = tmp_path / "home" / ".local" / "state" / "tiny-agent-desktop" / "log" / LOG_FILE_NAME
    text = log.read_text(encoding="utf-8")
    assert f"tiny-agent desktop {app_version()} starting" in text
    assert "exiting with status 0" in text
    assert SECRET not in text


def test_install_and_remove_the_desktop_entry(tmp_path: Path) -> None:
    result = _run(tmp_path, "--install-desktop-entry")
    assert result.returncode == 0, result.stderr
    share = tmp_path / "home" / ".local" / "share"
    entry = share / "applications" / "tiny-agent-desktop.desktop"
    text = entry.read_text(encoding="utf-8")
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    command = exec_line.removeprefix("Exec=")
    assert command.split()[0].startswith("/"), command  # absolute: works whatever PATH the desktop has
    assert "Icon=tiny-agent-desktop" in text
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / "tiny-agent-desktop.svg").is_file()
    assert (share / "metainfo" / "io.github.tiny_agent.desktop.metainfo.xml").is_file()
    if shutil.which("desktop-file-validate"):
        validated = subprocess.run(["desktop-file-validate", str(entry)], capture_output=True, text=True)
        assert validated.returncode == 0, validated.stdout + validated.stderr

    removed = _run(tmp_path, "--remove-desktop-entry")
    assert removed.returncode == 0, removed.stderr
    assert not entry.exists()
    assert not list((share / "icons").rglob("tiny-agent-desktop.*"))
    assert not (share / "metainfo" / "io.github.tiny_agent.desktop.metainfo.xml").exists()


# -- desktop entry ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argument", "quoted"),
    [
        ("/opt/app/tiny-agent-gui", "/opt/app/tiny-agent-gui"),
        ("/home/a b/app", '"/home/a b/app"'),
        ("/x/100%/app", "/x/100%%/app"),
        ('/x/"q"$`/app', '"/x/\\\\"q\\\\"\\\\$\\\\`/app"'),
        ("/x/back\\slash", '"/x/back\\\\\\\\slash"'),
    ],
)
def test_exec_quoting_follows_the_desktop_entry_spec(argument: str, quoted: str) -> None:
    assert desktop_entry.exec_quote(argument) == quoted


def test_the_entry_gets_an_absolute_exec_and_try_exec() -> None:
    text = desktop_entry.desktop_entry_text(["/opt/my apps/tiny-agent-gui"])
    assert 'Exec="/opt/my apps/tiny-agent-gui"' in text
    assert 'TryExec="/opt/my apps/tiny-agent-gui"' in text
    assert text.count("Exec=") == 2  # Exec and TryExec, the template's bare Exec replaced


def test_install_uses_png_sizes_when_present(tmp_path: Path) -> None:
    share = tmp_path / "bundle-share"
    for size in ("16x16", "48x48"):
        (share / "icons" / size).mkdir(parents=True)
        (share / "icons" / size / "tiny-agent-desktop.png").write_bytes(b"png " + size.encode())
    layout = desktop_entry.Layout(tmp_path / "data")
    written = desktop_entry.install(layout, ["/opt/app/tiny-agent-gui"], share=share, refresh=False)
    assert layout.desktop_file in written
    assert (layout.icon_theme / "48x48" / "apps" / "tiny-agent-desktop.png").read_bytes() == b"png 48x48"
    assert (layout.icon_theme / "scalable" / "apps" / "tiny-agent-desktop.svg").is_file()
    assert set(desktop_entry.remove(layout, refresh=False)) == set(written)


def test_layout_follows_xdg_data_home(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert desktop_entry.Layout.for_user(env).data_home == tmp_path / "xdg"
    assert desktop_entry.Layout.for_user({"HOME": str(tmp_path)}).data_home == tmp_path / ".local" / "share"


# -- system check -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, True),
        ({"DISPLAY": ":0"}, True),
        ({"QT_QPA_PLATFORM": "xcb"}, True),
        ({"QT_QPA_PLATFORM": "offscreen"}, False),
        ({"QT_QPA_PLATFORM": "minimal"}, False),
        ({"QT_QPA_PLATFORM": "wayland;xcb"}, False),
        ({"QT_QPA_PLATFORM": "vnc:size=800x600"}, False),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, False),
        ({"WAYLAND_DISPLAY": "wayland-0", "QT_QPA_PLATFORM": "xcb"}, True),
    ],
)
def test_the_check_applies_only_where_qt_uses_xcb(env: dict[str, str], expected: bool) -> None:
    assert system_check.uses_xcb(env) is expected


def test_missing_libraries_are_named_with_their_debian_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = ["libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-shape.so.0", "libweird.so.9"]
    monkeypatch.setattr(system_check, "missing_libraries", lambda plugin, env=None: missing)
    message = system_check.check({"DISPLAY": ":0"})
    assert message is not None
    assert "\n" not in message
    assert message.endswith("sudo apt-get install libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 libweird.so.9")


def test_no_problem_when_nothing_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(system_check, "missing_libraries", lambda plugin, env=None: [])
    assert system_check.check({"DISPLAY": ":0"}) is None
    assert system_check.check({"QT_QPA_PLATFORM": "offscreen"}) is None


def test_offscreen_checks_only_the_gui_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[str] = []

    def missing(plugin: Path, env: object = None) -> list[str]:
        checked.append(plugin.name)
        return ["libGL.so.1", "libEGL.so.1"]

    monkeypatch.setattr(system_check, "missing_libraries", missing)
    message = system_check.check({"QT_QPA_PLATFORM": "offscreen"})
    assert checked == ["libQt6Gui.so.6"]
    assert message is not None
    assert message.startswith("tiny-agent-gui: Qt needs system libraries that are missing (libGL.so.1, libEGL.so.1)")
    assert message.endswith("sudo apt-get install libgl1 libegl1")


def test_a_window_without_fonts_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(system_check, "missing_libraries", lambda plugin, env=None: [])
    monkeypatch.setattr(system_check, "FONT_DIRS", (str(tmp_path / "system-fonts"),))
    env = {"HOME": str(tmp_path), "DISPLAY": ":0"}
    message = system_check.check(env)
    assert message is not None
    assert message.endswith("sudo apt-get install fonts-dejavu-core")
    assert system_check.check({**env, "QT_QPA_PLATFORM": "offscreen"}) is None  # no window, no text to show
    (tmp_path / ".local" / "share" / "fonts").mkdir(parents=True)
    (tmp_path / ".local" / "share" / "fonts" / "Some.TTF").write_bytes(b"")
    assert system_check.check(env) is None


def test_the_xcb_plugin_is_found_and_checked_for_real() -> None:
    folder = system_check.qt_dir()
    assert folder is not None
    plugin = folder / "plugins" / "platforms" / "libqxcb.so"
    assert plugin.is_file()
    missing = system_check.missing_libraries(plugin)  # whatever this machine lacks; every name is a library
    assert all(".so" in name for name in missing)
    assert system_check.missing_libraries(folder / "no-such-plugin.so") != []


# -- log --------------------------------------------------------------------------------------------------------


def test_the_log_file_is_info_and_masks_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINY_AGENT_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.delenv("TINY_AGENT_LOG_LEVEL", raising=False)
    path = setup_logging()
    assert path == tmp_path / "logs" / LOG_FILE_NAME
    log = logging.getLogger("tiny_agent_gui.test")
    log.debug("a debug line")
    log.info("request with Authorization: Bearer %s and key %s", SECRET, SECRET)
    try:
        raise ValueError(f"bad key {SECRET}")
    except ValueError:
        log.exception("failed")
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = path.read_text(encoding="utf-8")
    assert "a debug line" not in text
    assert "request with Authorization" in text
    assert "ValueError" in text
    assert SECRET not in text
    assert (tmp_path / "logs").stat().st_mode & 0o077 == 0


def test_a_crash_of_the_window_is_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tiny_agent_gui.app
    from tiny_agent_gui import launcher

    def crash(args: object) -> int:
        raise RuntimeError("boom: api_key=sk-live-123")

    monkeypatch.setenv("TINY_AGENT_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    monkeypatch.setattr(tiny_agent_gui.app, "run", crash)
    notified: list[tuple[str, str]] = []
    with pytest.raises(RuntimeError, match="boom"):
        launcher.main([], notify=lambda title, text: notified.append((title, text)))
    for handler in logging.getLogger().handlers:
        handler.flush()
    text = (tmp_path / "logs" / LOG_FILE_NAME).read_text(encoding="utf-8")
    assert "CRITICAL tiny_agent_gui.launcher: tiny-agent desktop stopped on an unexpected error" in text
    assert "RuntimeError: boom" in text
    [(title, message)] = notified  # shown on screen too (a lock screen may show it), with where the details are
    assert title == "tiny-agent desktop stopped on an unexpected error"
    assert message.startswith("RuntimeError: boom: api_key=<redacted>\n")
    assert "sk-live-123" not in message + text
    assert f"The log file: {tmp_path / 'logs' / LOG_FILE_NAME}" in message


def test_missing_libraries_reach_the_log_and_the_screen_with_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tiny_agent_gui import launcher

    monkeypatch.setenv("TINY_AGENT_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(system_check, "missing_libraries", lambda plugin, env=None: ["libxcb-cursor.so.0"])
    notified: list[tuple[str, str]] = []
    assert launcher.main([], notify=lambda title, text: notified.append((title, text))) == 2
    for handler in logging.getLogger().handlers:
        handler.flush()
    line = capsys.readouterr().err
    assert line.count("\n") == 1  # stderr gets the check's line only, not a second one from the log
    assert line.endswith("sudo apt-get install libxcb-cursor0\n")
    assert f"cannot start: {line}" in (tmp_path / "logs" / LOG_FILE_NAME).read_text(encoding="utf-8")
    [(title, message)] = notified
    assert title == "tiny-agent desktop cannot start"
    assert message.startswith("the Qt window (xcb) needs system libraries that are missing (libxcb-cursor.so.0)")
    assert "sudo apt-get install libxcb-cursor0" in message  # what to do next


def test_without_a_log_folder_the_notice_says_so_and_the_exit_is_still_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tiny_agent_gui import launcher

    (tmp_path / "a-file").write_text("", encoding="utf-8")
    monkeypatch.setenv("TINY_AGENT_LOG_DIR", str(tmp_path / "a-file" / "logs"))  # cannot be created
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    notified: list[tuple[str, str]] = []
    assert launcher.main([], notify=lambda title, text: notified.append((title, text))) == 2
    assert capsys.readouterr().err.startswith("tiny-agent-gui: no display:")
    [(_title, message)] = notified
    assert message.endswith("No log file could be written: start tiny-agent-gui from a terminal to see the details.")


# -- on-screen notice -------------------------------------------------------------------------------------------


def test_notify_send_gets_the_title_and_text_as_arguments(tmp_path: Path) -> None:
    program = _fake_notify_send(tmp_path)
    text = "no display; $(touch pwned) `id` * ?\nsecond line"
    assert startup_notice.notify_send("tiny-agent desktop cannot start", text, str(program))
    arguments = Path(f"{program}.args").read_text(encoding="utf-8").split("--\n", 1)
    assert "--urgency=critical" in arguments[0].splitlines()
    assert arguments[1] == f"tiny-agent desktop cannot start\n{text}\n"  # no shell: passed as it is
    assert not (tmp_path / "pwned").exists()


def test_notify_send_is_bounded_and_its_failures_are_not_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long = "x" * (startup_notice.MAX_TEXT * 3)
    program = _fake_notify_send(tmp_path)
    assert startup_notice.notify_send("t", long, str(program))
    assert len(Path(f"{program}.args").read_text(encoding="utf-8").splitlines()[-1]) == startup_notice.MAX_TEXT
    assert not startup_notice.notify_send("t", "x", str(_fake_notify_send(tmp_path, "exit 1")))
    assert not startup_notice.notify_send("t", "x", str(tmp_path / "no-such-program"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert not startup_notice.notify_send("t", "x")  # not installed: nothing to do
    monkeypatch.setattr(startup_notice, "NOTIFY_TIMEOUT", 0.2)
    assert not startup_notice.notify_send("t", "x", str(_fake_notify_send(tmp_path, "exec sleep 30")))


def test_no_message_box_where_nobody_could_close_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, qapp: QApplication
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert qapp.platformName() == "offscreen"
    startup_notice.show("tiny-agent desktop stopped", "RuntimeError: boom")  # returns: no modal box offscreen
    box = startup_notice.error_box("tiny-agent desktop stopped", "RuntimeError: boom\n\nThe log file: /x.log")
    assert (box.windowTitle(), box.text(), box.icon()) == (
        "tiny-agent desktop stopped",
        "RuntimeError: boom\n\nThe log file: /x.log",
        QMessageBox.Icon.Critical,
    )
    box.deleteLater()


def test_redact_masks_keys_and_pydantic_input_values() -> None:
    assert redact(f"api_key={SECRET}&x=1") == "api_key=<redacted>&x=1"
    assert SECRET not in redact(f'{{"x-api-key": "{SECRET}"}}')
    assert redact("input_value='my private prompt', input_type=str") == "input_value=<redacted>, input_type=str"
    assert redact("nothing to see") == "nothing to see"


def test_safe_url_drops_user_info_and_query() -> None:
    assert safe_url(f"https://me:{SECRET}@host.example:8443/v1?key={SECRET}#f") == "https://host.example:8443/v1"
    assert safe_url(None) is None
