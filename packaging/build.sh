#!/usr/bin/env bash
# Build the onedir bundle and its tarball from this checkout (see packaging/README.md).
#
#   packaging/build.sh        ->  dist/tiny-agent-desktop/tiny-agent-gui
#                                 dist/tiny-agent-desktop-<version>-linux-x86_64.tar.gz
#
# The app is built from a wheel installed into a build venv of its own (build/bundle-venv), never from the
# editable development install: PyInstaller cannot see a package that an editable install hides behind an import
# hook, and the development venv holds the test tools, which must not end up in the bundle.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PYTHON=${PYTHON:-python3}
venv=build/bundle-venv
src=build/bundle-src
wheels=build/bundle-wheel
name=tiny-agent-desktop
start=$(date +%s)

# 1. A clean source tree: the files git knows (tracked, and new files that are not ignored), nothing else, so
#    stray build output or caches in the checkout cannot leak into the wheel.
rm -rf "$src" "$wheels"
mkdir -p "$src" "$wheels"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' file; do
        [ -e "$file" ] && printf '%s\0' "$file"
    done | tar --null -T - -cf - | tar -xf - -C "$src"
else  # an unpacked source archive: everything but build output, venvs and caches
    tar --exclude=./build --exclude=./dist --exclude=./.venv --exclude='*.egg-info' --exclude=__pycache__ \
        --exclude=.git -cf - . | tar -xf - -C "$src"
fi

# 2. The build venv: PyInstaller and the app's wheel with its runtime dependencies only.
if [ ! -x "$venv/bin/python" ]; then
    "$PYTHON" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
fi
"$venv/bin/python" -m pip install --quiet 'pyinstaller>=6.22,<7'
"$venv/bin/python" -m pip wheel --quiet --no-deps --wheel-dir "$wheels" "./$src"
wheel=$(ls "$wheels"/tiny_agent_desktop-*.whl)
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
"$venv/bin/python" -m pip install --quiet "$wheel"
version=$("$venv/bin/python" -c 'from importlib.metadata import version; print(version("tiny-agent-desktop"))')

# 3. The onedir bundle.
rm -rf "dist/$name"
"$venv/bin/pyinstaller" --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller \
    packaging/tiny-agent-desktop.spec
cp packaging/install.sh packaging/uninstall.sh "dist/$name/"
chmod +x "dist/$name/install.sh" "dist/$name/uninstall.sh"

# 4. The tarball (one top-level folder, the bundle itself).
tarball="dist/$name-$version-linux-x86_64.tar.gz"
rm -f "$tarball"
tar -C dist -czf "$tarball" "$name"

# The bundle carries the X libraries the build machine has; say which the target will have to provide itself.
if gap=$(DISPLAY=:0 QT_QPA_PLATFORM=xcb "dist/$name/tiny-agent-gui" --check-system); then :; else
    echo "note: this build machine lacks libraries of the xcb plugin, so the bundle does not carry them and the target needs them: ${gap#*: }"
fi

echo "built dist/$name/tiny-agent-gui ($(du -sh "dist/$name" | cut -f1)) and $tarball ($(du -h "$tarball" | cut -f1)) in $(($(date +%s) - start)) s"
