"""The project's one tar.gz reader and one tar.gz writer, both streams: never a whole archive
in memory. Pure: bytes and paths in, records and ApiErrors out (no database, no blobs).

read_tar() walks an uploaded archive header by header with its own parser (tarfile's is too
forgiving: a corrupt header after the first ends its walk silently, dropping the rest, and a pax
`size=-5` goes through), and yields each regular file as a Record to read in pieces. It refuses
the whole archive (ApiError, 400 or 413) on
- anything but regular files and folders: links, devices, fifos, GNU sparse files (by type or by
  pax GNU.sparse.* keys), vendor types;
- a corrupt header (checksum, a number that is not one, a negative size), a malformed pax or
  GNU long-name header, an extended header over MAX_EXT_HEADER, a truncated archive or gzip, an
  archive without its end marker, or data after it that is not zeros;
- a path that is not a plain relative UTF-8 POSIX path a filesystem can hold (check_path);
- the same path twice with different content, a path that is a file and a folder at once;
- the limits: files, headers, unpacked bytes (declared sizes are checked before reading, and
  the inflated stream is capped, so a small gzip inflating to gigabytes stops early: 413).
Every path that reads an archive (project files, skill bundles, `wsctl skill pull`) uses it,
so an archive gets the same verdict everywhere.

tar_chunks() / write_bundle() yield a tar (a tar.gz) of regular files at the archive root,
chunk by chunk; with mtime 0 and sorted entries the bytes are canonical (a skill version's sha256).
"""
from __future__ import annotations

import gzip
import hashlib
import tarfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Literal, overload

from workspacectl.errors import ApiError

CHUNK = 1 << 20
BLOCK = 512
MAX_PATH_BYTES = 1024       # whole path; with a destination folder it stays far below PATH_MAX (4096)
MAX_PART_BYTES = 255        # one name: NAME_MAX on every common filesystem
_PER_ENTRY_OVERHEAD = 4096  # tar header, pax header for a long name, padding
MAX_EXT_HEADER = 64 * 1024  # a pax or GNU long-name header for one member, all told
_POSIX_MAGIC = b"ustar\x0000"
_REGULAR = (b"0", b"\0", b"7")
_EXTENDED = (b"x", b"g", b"X", b"L", b"K")
_KINDS = {b"1": "a hard link", b"2": "a symbolic link", b"3": "a device", b"4": "a device", b"6": "a fifo",
          b"S": "a sparse file"}


@dataclass(frozen=True)
class Limits:
    max_files: int
    max_bytes: int          # sum of the regular files' sizes

    @property
    def max_entries(self) -> int:   # headers of any kind, so a flood of them stays bounded
        return self.max_files * 5

    @property
    def max_stream(self) -> int:    # the inflated tar stream
        return self.max_bytes + self.max_entries * _PER_ENTRY_OVERHEAD + (1 << 20)


def size_text(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):g} GiB"
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"


class ArchiveError(ApiError):
    """An archive refused whole; `path` names the entry at fault ("" for the archive)."""

    def __init__(self, code: str, message: str, path: str = ""):
        super().__init__(code, message)
        self.path = path


def bad(message: str, path: str = "") -> ArchiveError:
    return ArchiveError("invalid_request", message, path)


def too_large(message: str, path: str = "") -> ArchiveError:
    return ArchiveError("payload_too_large", message, path)


# ------------------------------------------------------------------ paths

def path_problem(raw: object) -> str | None:
    """Why `raw` cannot name a file in a bundle (one a pull or download can write), or None:
    a relative POSIX path, no empty, '.' or '..' parts, no backslash, NUL or control character,
    valid UTF-8, at most 1024 bytes and 255 a part."""
    if not isinstance(raw, str) or not raw:
        return "is empty; give a relative path such as docs/readme.md"
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:   # a name that was not UTF-8 in the archive, or a lone surrogate
        return "is not valid UTF-8; rename the file"
    if len(encoded) > MAX_PATH_BYTES:
        return f"is over {MAX_PATH_BYTES} bytes; shorten it"
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in raw):
        return "holds a control character; rename the file"
    if "\\" in raw:
        return "holds a backslash; use '/' between folders"
    if raw.startswith("/"):
        return "is absolute; give a relative path"
    for part in raw.split("/"):
        if part in ("", ".", ".."):
            return "has an empty, '.' or '..' part; give a plain relative path"
        if len(part.encode("utf-8")) > MAX_PART_BYTES:
            return f"has a name over {MAX_PART_BYTES} bytes; shorten it"
    return None


def shown(raw: object) -> str:
    return repr(raw[:120]) if isinstance(raw, str) else repr(raw)


def check_path(raw: Any, what: str = "path") -> str:
    """raw unchanged when path_problem() finds nothing, else a 400 saying what is wrong."""
    if (why := path_problem(raw)) is not None:
        raise bad(f"The {what} {shown(raw)} {why}.", raw if isinstance(raw, str) else "")
    return raw


# ------------------------------------------------------------------ reading

@dataclass
class Record:
    """A regular file of the archive being read; read() its content in pieces before asking the
    reader for the next one (whatever is left unread is skipped)."""
    path: str
    size: int
    executable: bool
    _src: _Source
    _left: int
    _hash: hashlib._Hash

    def read(self, n: int = CHUNK) -> bytes:
        if self._left <= 0:
            return b""
        data = self._src.exact(min(n, self._left), f"The archive ends inside {shown(self.path)}; "
                                                    "send a complete .tar.gz file.", self.path)
        self._left -= len(data)
        self._hash.update(data)
        return data


class _Source:
    """The gzip body inflated; at most `cap` bytes (413), every gzip failure a 400."""

    def __init__(self, raw: BinaryIO, cap: int):
        self.gz = gzip.GzipFile(fileobj=raw, mode="rb")
        self.cap, self.total = cap, 0

    def read(self, n: int) -> bytes:
        try:
            data = self.gz.read(n)
        except (OSError, EOFError, zlib.error):
            raise bad("The body is not a complete gzip-compressed tar archive; send a .tar.gz file.") from None
        self.total += len(data)
        if self.total > self.cap:
            raise too_large("The bundle inflates past the size limit; split it into smaller bundles.")
        return data

    def exact(self, n: int, short: str, path: str = "") -> bytes:
        parts, got = [], 0
        while got < n:
            data = self.read(n - got)
            if not data:
                raise bad(short, path)
            parts.append(data)
            got += len(data)
        return b"".join(parts)


def _number(field: bytes) -> int | None:
    """A numeric header field: octal text, or GNU base-256 (first byte 0x80 or 0xff). None when
    it is neither; negative values come back negative for the caller to refuse."""
    if field and field[0] in (0x80, 0xFF):
        n = int.from_bytes(field[1:], "big")
        return n - (1 << (8 * len(field) - 8)) if field[0] == 0xFF else n
    text = field.split(b"\0", 1)[0].strip(b" ")
    if not text:
        return 0
    if not all(48 <= c <= 55 for c in text):
        return None
    return int(text, 8)


def _checksum_ok(block: bytes) -> bool:
    stored = _number(block[148:156])
    blanked = block[:148] + b" " * 8 + block[156:]
    unsigned = sum(blanked)
    signed = unsigned - 256 * sum(1 for c in blanked if c > 127)
    return stored is not None and stored in (unsigned, signed)


def _pax_records(data: bytes, path: str) -> dict[str, bytes]:
    """The `LEN key=value\\n` records of a pax header, strictly."""
    out: dict[str, bytes] = {}
    corrupt = bad("The bundle holds a malformed pax header; pack it with a standard tar.", path)
    pos = 0
    while pos < len(data):
        if data[pos:].strip(b"\0") == b"":   # padding some writers leave at the end
            break
        space = data.find(b" ", pos, pos + 24)
        if space < 0 or not data[pos:space].isdigit():
            raise corrupt
        end = pos + int(data[pos:space])
        if end > len(data) or end <= space + 1 or data[end - 1:end] != b"\n" or b"=" not in data[space + 1:end]:
            raise corrupt
        key, _, value = data[space + 1:end - 1].partition(b"=")
        out[key.decode("utf-8", "replace")] = value
        pos = end
    return out


def _decode_name(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        shown_raw = raw[:120].decode("utf-8", "backslashreplace")
        raise bad(f"The archive entry {shown_raw!r} is not valid UTF-8; rename the file.", shown_raw) from None


@overload
def _member_path(name: str, is_dir: Literal[False]) -> str: ...
@overload
def _member_path(name: str, is_dir: Literal[True]) -> str | None: ...


def _member_path(name: str, is_dir: bool) -> str | None:
    """A member name made a file path: a leading './' (as `tar -C dir .` writes) is dropped;
    None for the archive root itself."""
    while name.startswith("./"):
        name = name[2:]
    if is_dir:
        name = name.rstrip("/") if name not in ("", ".") else ""
        if not name:
            return None
    return check_path(name, "archive entry")


class _Walk:
    """State of one read_tar() pass: counts, the paths seen, and their content identity."""

    def __init__(self, limits: Limits):
        self.limits = limits
        self.entries = self.total = 0
        self.files: dict[str, tuple[str, int, bool]] = {}
        self.dirs: set[str] = set()

    def count_header(self) -> None:
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise too_large(f"The bundle has over {self.limits.max_entries} entries; split it.")

    def add_file(self, path: str, size: int) -> None:
        self.total += size
        if self.total > self.limits.max_bytes:
            raise too_large(f"The bundle's files are over {size_text(self.limits.max_bytes)} unpacked; "
                            "split it into smaller bundles.", path)
        if path not in self.files and len(self.files) >= self.limits.max_files:
            raise too_large(f"The bundle has over {self.limits.max_files} files; split it into smaller bundles.",
                            path)

    def file_done(self, path: str, identity: tuple[str, int, bool]) -> None:
        if self.files.setdefault(path, identity) != identity:
            raise bad(f"The bundle holds {shown(path)} twice with different content; keep one.", path)

    def check_clashes(self) -> None:
        """A path is a file or a folder, never both: a pull could not write it."""
        for path in self.files:
            if path in self.dirs:
                raise bad(f"The bundle holds {shown(path)} both as a file and as a folder; keep one.", path)
            parts = path.split("/")
            for i in range(1, len(parts)):
                parent = "/".join(parts[:i])
                if parent in self.files:
                    raise bad(f"The bundle holds {shown(parent)} both as a file and as a folder; keep one.", parent)


def read_tar(reader: BinaryIO, limits: Limits) -> Iterator[Record]:
    """Yield every regular file of a tar.gz stream as a Record, refusing the whole archive
    (ArchiveError) on anything the module docstring lists. Folders are checked, not yielded."""
    src = _Source(reader, limits.max_stream)
    walk = _Walk(limits)
    ext: dict[str, bytes] = {}
    long_name: bytes | None = None
    ext_bytes = 0
    while True:
        block = src.read(BLOCK)
        if len(block) < BLOCK:
            raise bad("The archive is truncated (no end-of-archive marker); send a complete .tar.gz file.")
        if block == b"\0" * BLOCK:
            if ext or long_name is not None:
                raise bad("The archive ends after an extended header; send a complete .tar.gz file.")
            break
        walk.count_header()
        if not _checksum_ok(block):
            raise bad("The archive holds a corrupt header (bad checksum); send an intact .tar.gz file.")
        kind = block[156:157]
        size = _number(block[124:136])
        if "size" in ext and kind not in _EXTENDED:   # a pax size overrides the member header's
            raw = ext["size"]
            size = int(raw) if raw.isdigit() else None
        if size is None or size < 0:
            raise bad("The archive holds a header with an invalid size; send an intact .tar.gz file.")
        if kind in _EXTENDED:
            ext_bytes += size
            if ext_bytes > MAX_EXT_HEADER:
                raise bad(f"The bundle holds an extended (pax or long-name) header over {MAX_EXT_HEADER // 1024} "
                          "KiB; pack it with a standard tar.")
            data = src.exact(size, "The archive ends inside an extended header; send a complete .tar.gz file.")
            src.exact(-size % BLOCK, "The archive is truncated; send a complete .tar.gz file.")
            if kind == b"L":
                long_name = data.split(b"\0", 1)[0]
            elif kind in (b"x", b"X", b"g"):
                records = _pax_records(data, "")
                if any(k.startswith("GNU.sparse") for k in records):
                    raise bad("The bundle holds a sparse file; only regular files and folders are accepted.")
                if kind == b"g":
                    if {"path", "linkpath", "size"} & set(records):
                        raise bad("The bundle holds a global pax header naming a path or size; "
                                  "pack it with a standard tar.")
                else:
                    ext.update(records)
            continue
        name = block[0:100].split(b"\0", 1)[0]
        if block[257:265] == _POSIX_MAGIC and block[345] != 0:
            name = block[345:500].split(b"\0", 1)[0] + b"/" + name
        if long_name is not None:
            name = long_name
        if "path" in ext:
            name = ext["path"]
        ext, long_name, ext_bytes = {}, None, 0
        text = _decode_name(name)
        if kind in (b"0", b"\0") and text.endswith("/"):
            kind = b"5"   # old tar: a folder is a regular entry whose name ends with '/'
        if kind == b"5":
            if size:
                raise bad(f"The archive holds a folder {shown(text)} with content; send an intact .tar.gz file.")
            if (path := _member_path(text, True)) is not None:
                walk.dirs.add(path)
            continue
        if kind not in _REGULAR:
            what = _KINDS.get(kind, f"an entry of type {kind.decode('latin-1')!r}")
            raise bad(f"The bundle holds {what} ({shown(text)}); only regular files and folders are accepted.",
                      text)
        path = _member_path(text, False)
        walk.add_file(path, size)
        mode = _number(block[100:108])
        record = Record(path, size, bool((mode or 0) & 0o111), src, size, hashlib.sha256())
        yield record
        while record.read():   # what the caller left unread, still hashed: duplicates compare whole
            pass
        src.exact(-size % BLOCK, f"The archive ends inside {shown(path)}; send a complete .tar.gz file.", path)
        walk.file_done(path, (record._hash.hexdigest(), size, record.executable))
    while data := src.read(CHUNK):   # after the end marker: zero padding only, and a valid gzip end
        if data.strip(b"\0"):
            raise bad("The archive has data after its end-of-archive marker; send one plain .tar.gz file.")
    walk.check_clashes()


# ------------------------------------------------------------------ writing

class _Chunker:
    """Collects compressed output and hands it on in pieces of about CHUNK bytes."""

    def __init__(self) -> None:
        self.z = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: a gzip wrapper
        self.buf: list[bytes] = []
        self.size = 0

    def feed(self, data: bytes) -> bytes | None:
        out = self.z.compress(data)
        if out:
            self.buf.append(out)
            self.size += len(out)
        if self.size >= CHUNK:
            return self.take()
        return None

    def take(self) -> bytes:
        data, self.buf, self.size = b"".join(self.buf), [], 0
        return data


Entry = tuple  # (path, size, mtime, open) or (path, size, mtime, open, mode); open() -> binary file | None


def _header(path: str, size: int, mtime: float, mode: list) -> bytes:
    info = tarfile.TarInfo(path)
    info.size, info.mtime, info.type = size, int(mtime), tarfile.REGTYPE
    info.mode = mode[0] if mode else 0o644
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def tar_length(entries: Iterable[Entry]) -> int:
    """The exact length of tar_chunks(entries) when every entry opens, without opening any: what
    a gzip download announces as X-Uncompressed-Length (docs/api.md), so a bar has a total."""
    written = 0
    for path, size, mtime, _opener, *mode in entries:
        written += len(_header(path, size, mtime, mode)) + size + (-size) % BLOCK
    written += 2 * BLOCK
    return written + (-written) % tarfile.RECORDSIZE


def tar_chunks(entries: Iterable[Entry]) -> Iterator[bytes]:
    """Yield an uncompressed tar of regular files at the root (pax headers, owner 0, mode 0644
    unless given). open() answering None (the content went away meanwhile) leaves the entry out;
    content cut short is padded with zeros so the archive stays valid."""
    written = 0
    for path, size, mtime, opener, *mode in entries:
        f = opener()
        if f is None:
            continue
        with f:
            header = _header(path, size, mtime, mode)
            written += len(header)
            yield header
            left = size
            while left > 0:
                want = min(CHUNK, left)
                data = f.read(want) or b"\0" * want
                left -= len(data)
                written += len(data)
                yield data
            pad = b"\0" * ((-size) % BLOCK)
            written += len(pad)
            yield pad
    end = b"\0" * (2 * BLOCK)
    yield end + b"\0" * ((-(written + len(end))) % tarfile.RECORDSIZE)


def gzip_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    c = _Chunker()
    for data in chunks:
        if (out := c.feed(data)) is not None:
            yield out
    yield c.take() + c.z.flush()


def write_bundle(entries: Iterable[Entry]) -> Iterator[bytes]:
    """Yield a tar.gz of the entries (see tar_chunks), chunk by chunk."""
    return gzip_chunks(tar_chunks(entries))


def write_bundle_hashed(entries: Iterable[Entry]) -> tuple[Iterator[bytes], Callable[[], str]]:
    """write_bundle, and the tar's sha256 (tar_sha256) computed in the same pass: (the chunks, a
    function answering the digest once the chunks are consumed)."""
    h = hashlib.sha256()

    def hashed() -> Iterator[bytes]:
        for chunk in tar_chunks(entries):
            h.update(chunk)
            yield chunk

    return gzip_chunks(hashed()), h.hexdigest


def tar_sha256(entries: Iterable[Entry]) -> str:
    h = hashlib.sha256()
    for chunk in tar_chunks(entries):
        h.update(chunk)
    return h.hexdigest()


def opener_of(data: bytes) -> Callable[[], BinaryIO]:
    import io

    return lambda: io.BytesIO(data)
