"""Memory: guides and notes, the memory agent and its folding policies."""
