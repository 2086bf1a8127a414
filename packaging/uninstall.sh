#!/bin/sh
# Remove tiny-agent desktop installed by install.sh: the launcher entry, icons and AppStream file, then the app's
# folder (the one this script is in). Settings, keys in the keyring, sessions and logs are kept (see the README,
# "Uninstall", to remove them too).
set -eu
here=$(cd "$(dirname "$0")" && pwd -P)
if [ ! -x "$here/tiny-agent-gui" ]; then
    echo "uninstall.sh: tiny-agent-gui is not beside this script; nothing removed" >&2
    exit 1
fi
"$here/tiny-agent-gui" --remove-desktop-entry
rm -rf "$here"
echo "removed $here"
echo "kept: settings (~/.config/tiny-agent-desktop), data and sessions (~/.local/share/tiny-agent-desktop), logs (~/.local/state/tiny-agent-desktop) and keys in the keyring"
