"""Where agents meet the memory: keys and what each key sees, write jobs, the operations behind
the HTTP API, the MCP server and the OpenAI-compatible chat endpoint."""
