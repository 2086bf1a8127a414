#!/usr/bin/env bash
# Smoke test of the built bundle (`make bundle-test` builds it first): run it, install it, check the launcher entry.
#
# Everything runs with a temporary HOME and XDG folders, so the user's settings, data and launcher are untouched.
# Needs: desktop-file-validate (Debian: desktop-file-utils); appstreamcli (appstream) is used when present.
set -euo pipefail
cd "$(dirname "$0")/.."
app=dist/tiny-agent-desktop
binary=$app/tiny-agent-gui
check_python=build/bundle-venv/bin/python  # has PySide6 (QImage) to look at the screenshot
fail() { echo "bundle-test: FAIL: $*" >&2; exit 1; }

[ -x "$binary" ] || fail "$binary is missing (run packaging/build.sh)"
command -v desktop-file-validate >/dev/null || fail "desktop-file-validate is missing (apt-get install desktop-file-utils)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" XDG_DATA_HOME="$tmp/home/.local/share"
export XDG_STATE_HOME="$tmp/home/.local/state" XDG_CACHE_HOME="$tmp/home/.cache"
unset TINY_AGENT_CONFIG_DIR TINY_AGENT_DATA_DIR TINY_AGENT_LOG_DIR
mkdir -p "$HOME"

# 1. --version answers without starting Qt.
version=$("$check_python" -c 'from importlib.metadata import version; print(version("tiny-agent-desktop"))')
out=$("$binary" --version)
[ "$out" = "tiny-agent-gui $version" ] || fail "--version printed '$out', expected 'tiny-agent-gui $version'"
echo "ok: --version: $out"

# 2. --diagnostics: the bundled price table's version and the folders are there (no window needed).
out=$(QT_QPA_PLATFORM=offscreen "$binary" --diagnostics)
case "$out" in *"Price table: genai-prices "*"Settings: $XDG_CONFIG_HOME/tiny-agent-desktop/settings.json"*) ;;
    *) fail "--diagnostics printed: $out" ;; esac
echo "ok: --diagnostics: $(printf '%s\n' "$out" | grep -E '^(Keyring|Bash sandbox):' | tr '\n' ' ')"

# 3. No display and no offscreen platform: one line naming the problem and exit 2 (not Qt's abort, 134).
set +e
out=$(env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$binary" 2>&1)
status=$?
set -e
[ "$status" -eq 2 ] || fail "without a display the exit status was $status, expected 2 ($out)"
case "$out" in *"no display"*) ;; *) fail "without a display it said: $out" ;; esac
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "without a display it printed more than one line: $out"
echo "ok: no display -> exit 2, one line"

# 4. The window, offscreen: a screenshot of it, and the log file.
shot="$tmp/window.png"
start=$(date +%s%N)
QT_QPA_PLATFORM=offscreen "$binary" --screenshot "$shot" 2>"$tmp/stderr" || fail "the bundle failed: $(cat "$tmp/stderr")"
milliseconds=$((($(date +%s%N) - start) / 1000000))
QT_QPA_PLATFORM=offscreen "$check_python" - "$shot" <<'PY' || fail "the screenshot does not show the window"
import sys
from PySide6.QtGui import QGuiApplication, QImage

app = QGuiApplication([])
image = QImage(sys.argv[1])
assert not image.isNull(), "not a PNG"
assert image.width() >= 800 and image.height() >= 500, f"too small: {image.width()}x{image.height()}"
colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
assert len(colours) >= 20, f"only {len(colours)} colours: an empty or unpainted window"
print(f"ok: screenshot {image.width()}x{image.height()}, {len(colours)} colours sampled")
PY
log="$XDG_STATE_HOME/tiny-agent-desktop/log/tiny-agent-desktop.log"
grep -q "tiny-agent desktop $version starting" "$log" || fail "no start line in $log"
echo "ok: launch to saved screenshot in ${milliseconds} ms; log file written"

# 5. install.sh into the temporary HOME: the entry validates and starts the installed binary.
"$app/install.sh" >"$tmp/install.out" 2>&1 || fail "install.sh failed: $(cat "$tmp/install.out")"
installed="$HOME/.local/opt/tiny-agent-desktop"
entry="$XDG_DATA_HOME/applications/tiny-agent-desktop.desktop"
[ -f "$entry" ] || fail "install.sh wrote no $entry"
desktop-file-validate "$entry" || fail "desktop-file-validate rejected $entry"
exec_path=$(sed -n 's/^Exec=//p' "$entry")
[ "$exec_path" = "$installed/tiny-agent-gui" ] || fail "Exec=$exec_path, expected $installed/tiny-agent-gui"
[ -x "$exec_path" ] || fail "Exec points at $exec_path, which is not an executable file"
[ "$("$exec_path" --version)" = "tiny-agent-gui $version" ] || fail "the installed binary does not run"
for icon in scalable/apps/tiny-agent-desktop.svg 48x48/apps/tiny-agent-desktop.png 256x256/apps/tiny-agent-desktop.png; do
    [ -f "$XDG_DATA_HOME/icons/hicolor/$icon" ] || fail "icon $icon not installed"
done
metainfo="$XDG_DATA_HOME/metainfo/io.github.tiny_agent.desktop.metainfo.xml"
[ -f "$metainfo" ] || fail "AppStream file not installed"
if command -v appstreamcli >/dev/null; then
    appstreamcli validate --no-net "$metainfo" >/dev/null || fail "appstreamcli rejected $metainfo"
fi
echo "ok: install.sh: $entry validates, Exec=$exec_path runs, icons and AppStream file installed"

# 6. uninstall.sh removes the entry, the icons, the AppStream file and the app, and nothing else.
"$installed/uninstall.sh" >/dev/null || fail "uninstall.sh failed"
[ ! -e "$entry" ] && [ ! -e "$metainfo" ] && [ ! -e "$installed" ] || fail "uninstall.sh left files behind"
[ -z "$(find "$XDG_DATA_HOME/icons" -name 'tiny-agent-desktop.*')" ] || fail "uninstall.sh left icons behind"
[ -f "$log" ] || fail "uninstall.sh removed the log"
echo "ok: uninstall.sh removed the entry, icons, AppStream file and the app; the log is kept"
echo "bundle-test: all checks passed"
