"""The MCP tools, one module a group; :func:`hindsight.mcp_edge.mcp_server.build_mcp_server` registers them.

Each group module has one ``register(server, engine, access)`` that adds its tools to the server. What the
groups share (the caller and bank check, the error mapping, the argument types, the output models) lives in
:mod:`.access` and :mod:`.outputs`, so a tool's published schema does not depend on the module it is in.
"""
