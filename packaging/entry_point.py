"""Entry script of the PyInstaller bundle: the ``tiny-agent-gui`` command (system check and log before Qt)."""

import sys

from tiny_agent_gui.launcher import main

if __name__ == "__main__":
    sys.exit(main())
