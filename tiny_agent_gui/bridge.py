"""Adapts the core agent's plain-Python events into Qt signals (the GUI holds no business rules).

:class:`AgentBridge` is the ``on_event`` sink of an :class:`~tiny_agent_core.agent.loop.Agent`. Every event is
re-emitted as one typed signal, synchronously and in order; views connect to the signals they show. Text deltas
are the one high-rate stream: they are passed straight through (O(1) each) and views coalesce repaints.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from tiny_agent_core.agent import events


class AgentBridge(QObject):
    """Qt signals for the agent's events."""

    run_started = Signal(object)
    """:class:`~tiny_agent_core.agent.events.RunStarted`."""
    step_started = Signal(object)
    """:class:`~tiny_agent_core.agent.events.StepStarted`."""
    text_delta = Signal(str, str)
    """``(step_id, text)``: assistant text as it streams in."""
    tool_call_delta = Signal(object)
    """:class:`~tiny_agent_core.agent.events.ToolCallDelta`."""
    step_finished = Signal(object)
    """:class:`~tiny_agent_core.agent.events.StepFinished`."""
    tool_call_proposed = Signal(object)
    """:class:`~tiny_agent_core.agent.events.ToolCallProposed`."""
    approval_needed = Signal(object)
    """:class:`~tiny_agent_core.agent.events.ApprovalNeeded`."""
    tool_started = Signal(object)
    """:class:`~tiny_agent_core.agent.events.ToolStarted`."""
    tool_output = Signal(object)
    """:class:`~tiny_agent_core.agent.events.ToolOutput`: live output of a running tool."""
    tool_finished = Signal(object)
    """:class:`~tiny_agent_core.agent.events.ToolFinished`."""
    run_finished = Signal(object)
    """:class:`~tiny_agent_core.agent.events.RunFinished`."""
    dialect_learned = Signal(object)
    """:class:`~tiny_agent_core.agent.events.DialectLearned`: the server needs a repaired request form."""
    tools_dropped = Signal(object)
    """:class:`~tiny_agent_core.agent.events.ToolsDropped`: the server left the offered tools out of the prompt."""

    def sink(self, event: events.AgentEvent) -> None:
        """The agent's ``on_event`` callback: re-emit ``event`` as its signal."""
        if isinstance(event, events.TextDelta):
            self.text_delta.emit(event.step_id, event.text)
            return
        name = _SIGNAL_OF.get(type(event))
        if name is not None:
            getattr(self, name).emit(event)


_SIGNAL_OF: dict[type[events.AgentEvent], str] = {
    events.ToolCallDelta: "tool_call_delta",
    events.RunStarted: "run_started",
    events.StepStarted: "step_started",
    events.StepFinished: "step_finished",
    events.ToolCallProposed: "tool_call_proposed",
    events.ApprovalNeeded: "approval_needed",
    events.ToolStarted: "tool_started",
    events.ToolOutput: "tool_output",
    events.ToolFinished: "tool_finished",
    events.RunFinished: "run_finished",
    events.DialectLearned: "dialect_learned",
    events.ToolsDropped: "tools_dropped",
}
"""The signal (by attribute name) each event type is re-emitted as; text deltas have their own two-argument one."""
