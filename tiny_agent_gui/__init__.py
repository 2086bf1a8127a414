"""tiny-agent desktop: the PySide6 window over ``tiny_agent_core``. Holds no business rules."""
