"""How big a download is, for a progress bar: what the answer announces, counted as it arrives.

A file answers its `Content-Length`. A tar.gz made on the fly (project files, a skill bundle)
streams without one, since its compressed size is known only at the end; it announces the exact
length of the tar inside instead, `X-Uncompressed-Length` (docs/api.md), and the receiver counts
the bytes the chunks inflate to. Pure: imported by both backends and the CLI.
"""
from __future__ import annotations

import zlib
from collections.abc import Callable

UNCOMPRESSED_LENGTH = "X-Uncompressed-Length"
_STEP = 1 << 20   # inflate at most this much at a time: a small chunk may inflate to a great deal


def counter(header: Callable[[str], str | None], progress: Callable[[int], None] | None,
            total: Callable[[int | None], None] | None = None) -> Callable[[bytes], None]:
    """What to call with each chunk received. It tells total(size) the announced size at once
    (None when nothing is announced) and progress(n) the bytes of each chunk: on the wire when
    Content-Length was announced, else inflated when X-Uncompressed-Length was. Nothing is
    inflated unless progress is wanted (a falsy progress: no bar)."""
    wire, inflated = _number(header("content-length")), _number(header(UNCOMPRESSED_LENGTH))
    if total is not None:
        total(wire if wire is not None else inflated)
    if not progress:
        return lambda chunk: None
    if wire is not None or inflated is None:
        return lambda chunk: progress(len(chunk))
    return _Inflating(progress)


def _number(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


class _Inflating:
    """progress(n) with the inflated size of each gzip chunk; after a corrupt byte it stays silent
    (the archive reader refuses the download, not the bar)."""

    def __init__(self, progress: Callable[[int], None]):
        self.progress = progress
        self.z: zlib._Decompress | None = zlib.decompressobj(31)

    def __call__(self, chunk: bytes) -> None:
        if self.z is None:
            return
        n, data = 0, chunk
        try:
            while True:
                out = self.z.decompress(data, _STEP)
                n += len(out)
                data = self.z.unconsumed_tail
                if self.z.eof or (not data and len(out) < _STEP):
                    break
        except zlib.error:
            self.z = None
        if n:
            self.progress(n)
