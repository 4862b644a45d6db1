"""The HTTP door: `wsctl serve`. Imported only by that command (FastAPI and uvicorn are heavy)."""
