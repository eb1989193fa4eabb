"""The edge: the MCP server and the gRPC MemoryService, both over one engine that fans out to the layers."""
