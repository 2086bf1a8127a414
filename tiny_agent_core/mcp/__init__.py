"""MCP servers' tools for the agent (reference notes §7.7), with the official SDK (``mcp``).

- :mod:`.catalog`: the catalog file (the reference's ``servers`` and Claude Desktop's ``mcpServers``);
- :mod:`.servers`: :class:`~.servers.McpServers`, which connects the chosen servers and offers their tools;
- :mod:`.tool`: an MCP tool as a :class:`~tiny_agent_core.tools.base.Tool` (approval and the loop unchanged);
- :mod:`.connection`: one server through the SDK, every wait bounded (:mod:`.stdio`: a local server's transport,
  its messages bounded);
- :mod:`.limits`, :mod:`.results`, :mod:`.names`: the reference's limits, result text and names;
- :mod:`.allow`: ``--allow mcp:ALIAS[/TOOL]``;
- :mod:`.app_catalog`: the desktop's own catalog file (which servers exist, which a window connects);
  :mod:`.app_servers`: a window's servers (connected before a run, kept, closed with the window) and the settings
  page's Test; :mod:`.exchanges`: the raw calls a window keeps for its inspector.

Importing this package loads nothing; :mod:`.catalog`, :mod:`.names`, :mod:`.allow`, :mod:`.errors`,
:mod:`.app_catalog`, :mod:`.app_servers` and :mod:`.exchanges` do not load the SDK, so a settings page can read and
check a catalog cheaply (:mod:`.app_servers` imports it in a worker thread when it first connects).
"""
