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
        elif isinstance(event, events.ToolCallDelta):
            self.tool_call_delta.emit(event)
        elif isinstance(event, events.RunStarted):
            self.run_started.emit(event)
        elif isinstance(event, events.StepStarted):
            self.step_started.emit(event)
        elif isinstance(event, events.StepFinished):
            self.step_finished.emit(event)
        elif isinstance(event, events.ToolCallProposed):
            self.tool_call_proposed.emit(event)
        elif isinstance(event, events.ApprovalNeeded):
            self.approval_needed.emit(event)
        elif isinstance(event, events.ToolStarted):
            self.tool_started.emit(event)
        elif isinstance(event, events.ToolOutput):
            self.tool_output.emit(event)
        elif isinstance(event, events.ToolFinished):
            self.tool_finished.emit(event)
        elif isinstance(event, events.RunFinished):
            self.run_finished.emit(event)
        elif isinstance(event, events.DialectLearned):
            self.dialect_learned.emit(event)
        elif isinstance(event, events.ToolsDropped):
            self.tools_dropped.emit(event)
