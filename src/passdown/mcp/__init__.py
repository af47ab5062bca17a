"""passdown inside the agents: the MCP server (stdio and, through `passdown.mcp._http`, HTTP).

    tools.ScopedTools   the tool logic, bound to one scope, no MCP types (tested directly)
    lifecycle           load the latest handoff, mark it claimed/completed (over the Store API)
    server              the MCP wiring: tool schemas, error conversion, stdio transport

Nothing here imports the `mcp` SDK at package import time; `server` does, lazily used by
`passdown mcp` and `passdown serve`.
"""
