#!/bin/sh
# Install tiny-agent desktop for the current user (no root needed), from the unpacked tarball:
#
#   ./install.sh [FOLDER]      FOLDER defaults to ~/.local/opt/tiny-agent-desktop
#
# Copies the app to FOLDER, then lets the app add itself to the desktop's launcher: the .desktop entry (with the
# absolute path of FOLDER/tiny-agent-gui), the icon sizes and the AppStream file, under ${XDG_DATA_HOME:-~/.local/share}.
# Settings, keys, sessions and logs are not touched. FOLDER/uninstall.sh undoes it.
set -eu
here=$(cd "$(dirname "$0")" && pwd -P)
dest=${1:-${HOME:?HOME is not set}/.local/opt/tiny-agent-desktop}

if [ ! -x "$here/tiny-agent-gui" ]; then
    echo "install.sh: run it from the unpacked tiny-agent-desktop folder (tiny-agent-gui is not beside it)" >&2
    exit 1
fi
mkdir -p "$(dirname "$dest")"
dest=$(cd "$(dirname "$dest")" && pwd -P)/$(basename "$dest")
if [ "$dest" != "$here" ]; then
    if [ -e "$dest" ] && [ ! -x "$dest/tiny-agent-gui" ]; then
        echo "install.sh: $dest exists and is not a tiny-agent desktop installation; choose another folder" >&2
        exit 1
    fi
    rm -rf "$dest.new"
    cp -R "$here" "$dest.new"
    rm -rf "$dest"
    mv "$dest.new" "$dest"
fi
"$dest/tiny-agent-gui" --install-desktop-entry
echo "tiny-agent desktop is installed in $dest; start it from your desktop's application launcher."
# Say now, not at the first double-click, when a library the window needs is missing.
if ! problem=$("$dest/tiny-agent-gui" --check-system); then
    echo "warning: $problem" >&2
fi
