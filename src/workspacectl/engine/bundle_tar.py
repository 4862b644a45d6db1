"""tar.gz bundles, read and written as streams: never a whole archive in memory.

read_bundle() checks every entry of an uploaded archive and stages the file contents as blobs
(engine/blobs.py) without publishing anything: the caller commits all of it or none. It refuses
the whole archive (ApiError) on a link, a device or fifo, an unsafe path, conflicting duplicate
entries, or limits passed; the size limits are enforced while inflating, so a small gzip that
inflates to gigabytes is stopped early (413).

write_bundle() yields a tar.gz of regular files at the archive root, chunk by chunk.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from workspacectl.engine import blobs
from workspacectl.errors import ApiError

MAX_PATH_BYTES = 1024
MAX_PART_BYTES = 255
SMALL = 256 * 1024          # members up to this size are hashed in memory before touching disk
_PER_ENTRY_OVERHEAD = 4096  # tar header, pax header for a long name, padding
MAX_EXT_HEADER = 64 * 1024  # a pax or GNU long-name header: tarfile reads it whole into memory


@dataclass(frozen=True)
class Limits:
    max_files: int
    max_bytes: int          # sum of the regular files' sizes

    @property
    def max_entries(self) -> int:   # directories and all, so a flood of headers stays bounded
        return self.max_files * 5

    @property
    def max_stream(self) -> int:    # the inflated tar stream
        return self.max_bytes + self.max_entries * _PER_ENTRY_OVERHEAD + (1 << 20)


def size_text(n: int) -> str:
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n} bytes"


def bad(message: str) -> ApiError:
    return ApiError("invalid_request", message)


def check_path(raw, what: str = "path") -> str:
    """A relative POSIX path: no empty, '.', or '..' parts, not absolute, no backslash, NUL or
    control character, valid UTF-8, at most 1024 bytes (255 a part). Answers it unchanged."""
    if not isinstance(raw, str) or not raw:
        raise bad(f"The {what} is empty; give a relative path such as docs/readme.md.")
    shown = repr(raw[:120])
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:
        raise bad(f"The {what} {shown} is not valid UTF-8; rename the file.") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise bad(f"The {what} {shown}... is over {MAX_PATH_BYTES} bytes; shorten it.")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in raw):
        raise bad(f"The {what} {shown} holds a control character; rename the file.")
    if "\\" in raw:
        raise bad(f"The {what} {shown} holds a backslash; use '/' between folders.")
    if raw.startswith("/"):
        raise bad(f"The {what} {shown} is absolute; give a path relative to the specialist's files.")
    for part in raw.split("/"):
        if part in ("", ".", ".."):
            raise bad(f"The {what} {shown} has an empty, '.' or '..' part; give a plain relative path.")
        if len(part.encode("utf-8")) > MAX_PART_BYTES:
            raise bad(f"The {what} {shown} has a name over {MAX_PART_BYTES} bytes; shorten it.")
    return raw


def _entry_path(name: str, is_dir: bool) -> str | None:
    """A member name made a file path: a leading './' (as `tar -C dir .` writes) is dropped;
    None for the archive root itself."""
    while name.startswith("./"):
        name = name[2:]
    if is_dir:
        name = name.rstrip("/") if name not in ("", ".") else ""
        if not name:
            return None
    return check_path(name, "archive entry")


class ExtHeaderTooLarge(tarfile.TarError):
    pass


class BoundedTarInfo(tarfile.TarInfo):
    """tarfile reads a pax or GNU long-name/long-link header's data whole into memory, whatever
    size it declares: a few KiB of gzip could make it hold gigabytes. Refuse one over MAX_EXT_HEADER
    before it is read (pass as tarfile.open(..., tarinfo=BoundedTarInfo))."""

    def _proc_member(self, tarfile_):
        if self.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE,
                         tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK) and self.size > MAX_EXT_HEADER:
            raise ExtHeaderTooLarge(f"an extended header of {self.size} bytes")
        return super()._proc_member(tarfile_)


class _Inflated(io.RawIOBase):
    """The gzip body inflated, read by tarfile; stops at cap bytes with 413, and turns every
    gzip failure into 400."""

    def __init__(self, raw: BinaryIO, cap: int):
        self.gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self.cap, self.total = cap, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:
            data = self.gz.read(len(b))
        except (OSError, EOFError, zlib.error):
            raise bad("The body is not a complete gzip-compressed tar archive; send a .tar.gz file.") from None
        self.total += len(data)
        if self.total > self.cap:
            raise ApiError("payload_too_large", "The bundle inflates past the size limit; "
                                                "split it into smaller bundles.")
        b[:len(data)] = data
        return len(data)


def _refuse_type(m: tarfile.TarInfo) -> ApiError:
    kind = ("a symbolic link" if m.issym() else "a hard link" if m.islnk() else
            "a device" if m.ischr() or m.isblk() else "a fifo" if m.isfifo() else
            "a sparse file" if m.issparse() else f"an entry of type {m.type!r}")
    return bad(f"The bundle holds {kind} ({m.name[:120]!r}); only regular files and folders are accepted.")


def _stage_member(data: BinaryIO, size: int, folder: Path, staged: dict) -> tuple[str, int]:
    """Stage one member's content unless the same content is staged already; (sha256, size)."""
    if size <= SMALL:
        content = data.read(size)
        got = (hashlib.sha256(content).hexdigest(), len(content))
        if got[0] not in staged:
            staged[got[0]] = blobs.stage_bytes(folder, content)
    else:
        s = blobs.stage(folder, data)
        got = (s.sha256, s.size)
        if got[0] in staged:
            s.discard()
        else:
            staged[got[0]] = s
    if got[1] != size:
        raise bad("The archive ends inside a file; send a complete .tar.gz file.")
    return got


def read_bundle(reader: BinaryIO, folder: Path, limits: Limits) -> tuple[dict, dict]:
    """Check and stage an uploaded tar.gz. Answers ({path: (sha256, size)}, {sha256: Staged})."""
    inflated = _Inflated(reader, limits.max_stream)
    files: dict[str, tuple[str, int]] = {}
    staged: dict[str, blobs.Staged] = {}
    total = entries = 0
    try:
        tf = tarfile.open(fileobj=inflated, mode="r|", encoding="utf-8", errors="surrogateescape",
                          tarinfo=BoundedTarInfo)
        while (m := tf.next()) is not None:
            tf.members.clear()  # stream mode keeps every header otherwise
            entries += 1
            if entries > limits.max_entries:
                raise ApiError("payload_too_large", f"The bundle has over {limits.max_entries} entries; split it.")
            if m.isdir():
                _entry_path(m.name, True)
                continue
            if m.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE) or m.sparse is not None:
                raise _refuse_type(m)
            path = _entry_path(m.name, False)
            total += m.size
            if total > limits.max_bytes:
                raise ApiError("payload_too_large", f"The bundle's files are over {size_text(limits.max_bytes)} "
                                                    "unpacked; split it into smaller bundles.")
            if path not in files and len(files) >= limits.max_files:
                raise ApiError("payload_too_large", f"The bundle has over {limits.max_files} files; "
                                                    "split it into smaller bundles.")
            got = _stage_member(tf.extractfile(m), m.size, folder, staged)
            if files.setdefault(path, got) != got:
                raise bad(f"The bundle holds {path[:120]!r} twice with different content; keep one.")
        tf.close()
        while inflated.read(blobs.CHUNK):  # the rest of the gzip stream must be valid and within the cap
            pass
    except ExtHeaderTooLarge:
        raise bad(f"The bundle holds an extended (pax or long-name) header over {MAX_EXT_HEADER // 1024} KiB; "
                  "pack it with a standard tar.") from None
    except tarfile.TarError:
        raise bad("The body is not a valid tar archive inside gzip; send a .tar.gz file.") from None
    _check_file_folder_clash(files)
    return files, staged


def _check_file_folder_clash(files: dict) -> None:
    for path in files:
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent in files:
                raise bad(f"The bundle holds {parent[:120]!r} both as a file and as a folder; keep one.")


class _Chunker:
    """Collects compressed output and hands it on in pieces of about CHUNK bytes."""

    def __init__(self):
        self.z = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: a gzip wrapper
        self.buf: list[bytes] = []
        self.size = 0

    def feed(self, data: bytes) -> bytes | None:
        out = self.z.compress(data)
        if out:
            self.buf.append(out)
            self.size += len(out)
        if self.size >= blobs.CHUNK:
            return self.take()
        return None

    def take(self) -> bytes:
        data, self.buf, self.size = b"".join(self.buf), [], 0
        return data


def write_bundle(entries: Iterable[tuple[str, int, float, Callable[[], BinaryIO | None]]]) -> Iterator[bytes]:
    """Yield a tar.gz of (path, size, mtime, open) entries, regular files at the root, mode 0644.
    open() answering None (the content went away meanwhile) leaves the entry out."""
    c = _Chunker()
    written = 0

    def feed(data: bytes) -> Iterator[bytes]:
        nonlocal written
        written += len(data)
        if (out := c.feed(data)) is not None:
            yield out

    for path, size, mtime, opener in entries:
        f = opener()
        if f is None:
            continue
        with f:
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode, info.type = size, int(mtime), 0o644, tarfile.REGTYPE
            yield from feed(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
            left = size
            while left > 0:
                want = min(blobs.CHUNK, left)
                data = f.read(want) or b"\0" * want  # a blob cut short still makes a valid archive
                left -= len(data)
                yield from feed(data)
            yield from feed(b"\0" * ((-size) % tarfile.BLOCKSIZE))
    end = b"\0" * (2 * tarfile.BLOCKSIZE)
    end += b"\0" * ((-(written + len(end))) % tarfile.RECORDSIZE)
    c.feed(end)
    yield c.take() + c.z.flush()
