"""The reducer's rules, one module per family of facts (used by :mod:`tiny_agent_core.session.reducer`).

* :mod:`.context` — :class:`~.context.FactContext`: the fact being applied, its state, and the value checks;
* :mod:`.journal` — how a transaction changes a state, undoably;
* :mod:`.header` — line 1;
* :mod:`.messages` — message shapes, role order, appending a message entry;
* :mod:`.entries` — user and assistant entries (and dispatch of every entry type);
* :mod:`.tool_calls` — ``toolStarted`` and tool results;
* :mod:`.steps` — ``stepAttempt``, ``stepFailed``, configuration snapshots;
* :mod:`.operations` — ``runStarted``, ``abortRequested``, ``operationFinished``;
* :mod:`.compaction` — ``compactionStarted``, its source digest, the compaction entry;
* :mod:`.usage` — usage facts.

Each rule takes ``(context, value)``, checks everything in the reference's order before changing anything, then
changes the state (adding to its grow-only parts directly, changing anything else through ``context.journal``: see
:mod:`.journal`) and returns the fact it accepted, typed (:mod:`tiny_agent_core.session.fact_types`), built from
the values it checked.
"""
