"""The MCP server (extra [mcp]): tools, answers, request ids."""
