"""``python -m tiny_agent_core`` runs the ``tiny-agent`` command line."""

import sys

from tiny_agent_core.cli import main

sys.exit(main())
