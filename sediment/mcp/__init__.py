"""The MCP server (extra sediment[mcp]): tools, answers, request ids."""
