"""``python -m tiny_agent_gui``: the same as the ``tiny-agent-gui`` command."""

import sys

from tiny_agent_gui.launcher import main

if __name__ == "__main__":
    sys.exit(main())
