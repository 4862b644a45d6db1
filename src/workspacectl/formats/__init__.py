"""Pure codecs shared by the engine and the CLI: the skill bundle format and the streaming tar
reader/writer. Bytes and paths in, records and errors out; nothing else of ours is imported."""
