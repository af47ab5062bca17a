"""passdown inside the agents: the MCP server (stdio and, through `passdown.mcp._http`, HTTP).

    _tools.ScopedTools  the tool logic, bound to one scope, no MCP types (tested directly)
    _lifecycle          load the latest handoff, mark it claimed/completed (over the Store API)
    _server             the MCP wiring: tool schemas, error conversion
    _stdio              the stdio transport: every request answered, in order, before exit
    _handshake          answers `initialize` and the first `tools/list` before the SDK loads
    _http               the team server (`passdown serve`): MCP over HTTP, the API, the pages

All private: the doors are the `passdown mcp` and `passdown serve` commands. Nothing here
imports the `mcp` SDK at package import time; `_server` does, lazily.
"""

__all__: list[str] = []
