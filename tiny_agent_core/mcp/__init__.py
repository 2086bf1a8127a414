"""MCP servers' tools for the agent (reference notes §7.7), with the official SDK (``mcp``).

- :mod:`.catalog`: the catalog file (the reference's ``servers`` and Claude Desktop's ``mcpServers``);
- :mod:`.servers`: :class:`~.servers.McpServers`, which connects the chosen servers and offers their tools;
- :mod:`.tool`: an MCP tool as a :class:`~tiny_agent_core.tools.base.Tool` (approval and the loop unchanged);
- :mod:`.connection`: one server through the SDK, every wait bounded (:mod:`.stdio`: a local server's transport,
  its messages bounded);
- :mod:`.limits`, :mod:`.results`, :mod:`.names`: the reference's limits, result text and names;
- :mod:`.allow`: ``--allow mcp:ALIAS[/TOOL]``.

Importing this package loads nothing; :mod:`.catalog`, :mod:`.names`, :mod:`.allow` and :mod:`.errors` do not load
the SDK, so a settings page can read and check a catalog cheaply.
"""
