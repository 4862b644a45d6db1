"""The engine: the whole API logic. Every door (local CLI, HTTP server) calls it."""
