"""A binary upload's body spooled to a temp file (memory up to 1 MiB, then disk), bounded: shared by
the gzip uploads under /v1 (app.py) and the presigned skill uploads (skill_transfer_pages.py).
"""
from __future__ import annotations

import tempfile

from fastapi import Request
from starlette.requests import ClientDisconnect

from workspacectl.errors import ApiError


async def spool_body(request: Request, limit: int) -> tempfile.SpooledTemporaryFile[bytes]:
    """A binary upload (a tar.gz bundle) into a temp file, spilling to disk past 1 MiB: the
    engine reads it as a stream and applies its own limits. Over `limit` bytes: 413."""
    declared = request.headers.get("content-length")
    too_large = ApiError("payload_too_large", f"The upload is over {limit // (1 << 20)} MiB; split it.")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large
    f = tempfile.SpooledTemporaryFile(max_size=1 << 20)
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large
            f.write(chunk)
    except ClientDisconnect:
        f.close()
        raise ApiError("invalid_request", "The request body ended early.") from None
    except BaseException:
        f.close()
        raise
    f.seek(0)
    return f
