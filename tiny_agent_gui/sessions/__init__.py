"""The session list pane (SPEC §7, left): lazily loaded, searchable, filtered by workspace, with status marks."""

from tiny_agent_gui.sessions.delegate import SessionRowDelegate
from tiny_agent_gui.sessions.model import SessionListModel, SessionStatus, status_of
from tiny_agent_gui.sessions.pane import SessionListPane

__all__ = ["SessionListModel", "SessionListPane", "SessionRowDelegate", "SessionStatus", "status_of"]
