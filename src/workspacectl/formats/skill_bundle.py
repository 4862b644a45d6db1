"""The skill bundle format (CONTRACT §8): reading archives and folders, validating, packing.

Pure functions, no database: the server and `wsctl skill validate|publish` use the same rules.

A bundle is a set of files by path. SKILL.md holds YAML frontmatter between `---`
lines with the fields of the Agent Skills specification, checked as its reference validator
`skills-ref` checks them. Archives handed out are canonical: entries at the root, sorted, mtime
0, owner 0, mode 0644 (0755 for executables). A version's sha256 is the SHA-256 of that
canonical tar before gzip, so a client can tell whether a folder equals the live version.
"""
from __future__ import annotations

import codecs
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from workspacectl.formats import tar_stream as tar
from workspacectl.formats import walk

MAX_PACKED = 50 * 1024 * 1024
MAX_UNPACKED = 200 * 1024 * 1024
MAX_FILES = 1000
LIMITS = tar.Limits(max_files=MAX_FILES, max_bytes=MAX_UNPACKED)
MAX_FRONTMATTER = 64 * 1024     # bytes of YAML between the '---' lines, checked before parsing
SKILL_MD = "SKILL.md"
KNOWN_FOLDERS = ("scripts", "references", "assets")
FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
SKIPPED_NAMES = {".git", "__pycache__", ".DS_Store"}
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def problem(path: str, message: str) -> dict:
    # an archive name that is not UTF-8 arrives with lone surrogates, which no JSON answer can carry
    return {"path": path.encode("utf-8", "replace").decode("utf-8"), "message": message}


# ------------------------------------------------------------------ names and paths

def name_problem(name: object) -> str | None:
    """Why `name` is not a valid skill name (skills-ref rules), or None."""
    if not isinstance(name, str) or not name.strip():
        return "The name must be a non-empty string."
    if len(name) > 64:
        return "The name must be at most 64 characters."
    if name != name.lower():
        return "The name must be lowercase."
    if name.startswith("-") or name.endswith("-"):
        return "The name must not start or end with a hyphen."
    if "--" in name:
        return "The name must not contain consecutive hyphens."
    if not _NAME.match(name):
        return "The name may hold only lowercase letters, digits and hyphens."
    return None


def path_problem(path: str) -> str | None:
    """Why `path` may not name a file in a bundle, or None: the archive reader's rule (what a
    pull can write: relative, UTF-8, no control characters, at most 1024 bytes and 255 a part),
    no drive letter, and none of the names a folder read skips."""
    if (why := tar.path_problem(path)) is not None:
        return f"The path {why}."
    if re.match(r"^[A-Za-z]:", path):
        return "Absolute paths are not allowed."
    if any(p in SKIPPED_NAMES for p in path.split("/")):
        return f"The path must not hold {', '.join(sorted(SKIPPED_NAMES))}."
    return None


def case_clashes(paths: Iterable[str]) -> list[dict]:
    """Paths a case-insensitive or normalizing filesystem (macOS, Windows) would make one file:
    a pull there could not write both."""
    seen: dict[str, str] = {}
    out = []
    for path in sorted(paths):
        key = unicodedata.normalize("NFC", path).casefold()
        if key in seen:
            out.append(problem(path, f"Differs from '{seen[key][:120]}' only in case or Unicode form; "
                                     "a pull on macOS or Windows could not write both. Rename one."))
        else:
            seen[key] = path
    return out


# ------------------------------------------------------------------ frontmatter

def split_frontmatter(text: str) -> tuple[str, str] | None:
    """(yaml text, body) when text starts with a `---` line and has a closing one, else None."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1:])
    return None


def load_yaml(text: str) -> Any:
    """The frontmatter as skills-ref reads it (strictyaml): every scalar is a string, so
    `description: 42`, `metadata: {version: 1.0}` or `description: yes` are text, not numbers or
    booleans. PyYAML's BaseLoader builds only dicts, lists and strings."""
    import yaml

    return yaml.load(text, Loader=yaml.BaseLoader)


@dataclass(frozen=True)
class MdText:
    """What validation needs of SKILL.md, read as a stream: the text of its first
    MAX_FRONTMATTER + 1 KiB bytes, whether it is whole, UTF-8, and its line count."""
    head: str
    complete: bool
    utf8: bool
    lines: int


_HEAD = MAX_FRONTMATTER + 1024


def read_md(chunks: Iterable[bytes]) -> MdText:
    decoder = codecs.getincrementaldecoder("utf-8")()
    head: list[bytes] = []
    kept = lines = total = 0
    utf8 = True
    for chunk in chunks:
        lines += chunk.count(b"\n")
        total += len(chunk)
        if kept < _HEAD:
            head.append(chunk[:_HEAD - kept])
            kept += len(head[-1])
        if utf8:
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError:
                utf8 = False
    if utf8:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            utf8 = False
    raw = b"".join(head)
    complete = total == kept
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(raw, final=complete)
    return MdText(text, complete, utf8, lines)


def frontmatter_problem(md: MdText) -> str | None:
    """A frontmatter over MAX_FRONTMATTER bytes, found before any YAML is parsed."""
    if not md.head.startswith("---"):
        return None
    parts = split_frontmatter(md.head)
    if parts is not None and len(parts[0].encode("utf-8")) <= MAX_FRONTMATTER:
        return None
    if parts is None and md.complete:
        return None   # no closing line: parse_frontmatter says so
    return (f"The frontmatter is over {MAX_FRONTMATTER // 1024} KiB (or has no closing '---' line); "
            "keep it short and move detail into the body or references/.")


def parse_frontmatter(text: str) -> tuple[dict | None, list[str]]:
    """(metadata, errors) of SKILL.md's text."""
    import yaml

    parts = split_frontmatter(text)
    if parts is None:
        return None, ["SKILL.md must start with YAML frontmatter between '---' lines."]
    try:
        meta = load_yaml(parts[0])
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        return None, [f"The frontmatter is not valid YAML{where}; quote values holding ':' or '#'."]
    except RecursionError:
        return None, ["The frontmatter nests too deeply."]
    if not isinstance(meta, dict):
        return None, ["The frontmatter must be a YAML mapping of fields."]
    errors = []
    if _holds_nul(meta):
        errors.append("The frontmatter holds a NUL character (a \\0 or \\x00 escape); remove it.")
    unknown = [str(k) for k in meta if k not in FIELDS]
    if unknown:
        errors.append(f"Unexpected fields in frontmatter: {', '.join(sorted(unknown))}. "
                      f"Allowed: {', '.join(FIELDS)}.")
    if "name" not in meta:
        errors.append("The frontmatter needs a 'name'.")
    elif (why := name_problem(meta["name"])) is not None:
        errors.append(why)
    desc = meta.get("description")
    if "description" not in meta:
        errors.append("The frontmatter needs a 'description'.")
    elif not isinstance(desc, str) or not desc.strip():
        errors.append("The description must be a non-empty string.")
    elif len(desc) > 1024:
        errors.append("The description must be at most 1024 characters.")
    if "license" in meta and not (isinstance(meta["license"], str) and meta["license"].strip()):
        errors.append("The license must be a non-empty string.")
    comp = meta.get("compatibility")
    if "compatibility" in meta and not (isinstance(comp, str) and 1 <= len(comp) <= 500):
        errors.append("The compatibility must be a string of 1 to 500 characters.")
    md = meta.get("metadata")
    if "metadata" in meta and not (isinstance(md, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in md.items())):
        errors.append("The metadata must map names to plain values (no nested lists or mappings).")
    tools = meta.get("allowed-tools")
    if "allowed-tools" in meta and not (isinstance(tools, str) or (
            isinstance(tools, list) and all(isinstance(t, str) for t in tools))):
        errors.append("allowed-tools must be a space-separated string of tool names.")
    return meta, errors


def _holds_nul(value: Any) -> bool:
    """A string, key or nested value holding NUL, which YAML spells "\\0": no store keeps such text
    alike (PostgreSQL text cannot hold it), so it is refused on both."""
    return any("\x00" in s for s in walk.strings(value))


def set_frontmatter(text: str, updates: dict) -> str:
    """SKILL.md text with the given frontmatter fields replaced (the YAML is re-dumped)."""
    import yaml

    parts = split_frontmatter(text)
    if parts is None:
        return text
    meta = load_yaml(parts[0])
    if not isinstance(meta, dict):
        return text
    meta.update(updates)
    dumped = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1_000_000)
    return f"---\n{dumped}---\n{parts[1]}"


def set_frontmatter_head(head: bytes, updates: dict) -> bytes | None:
    """The first bytes of SKILL.md with frontmatter fields replaced (the rest of the file follows
    unchanged), or None when it has no frontmatter or already holds those values."""
    import yaml

    text = codecs.getincrementaldecoder("utf-8")().decode(head)   # a character cut at the end stays out
    parts = split_frontmatter(text)
    if parts is None:
        return None
    try:
        meta = load_yaml(parts[0])
    except (yaml.YAMLError, RecursionError):
        return None
    if not isinstance(meta, dict) or all(meta.get(k) == val for k, val in updates.items()):
        return None
    start = len(text) - len(parts[1])
    return set_frontmatter(text[:start], updates).encode("utf-8") + head[len(text[:start].encode("utf-8")):]


# ------------------------------------------------------------------ validation

def validate_bundle(paths: Iterable[str], md: MdText | None, skill_name: str | None = None,
                    folder: str | None = None) -> tuple[list[dict], list[dict], dict | None]:
    """(errors, warnings, frontmatter) of a whole bundle: its paths and SKILL.md (None: absent).
    skill_name: the name it must carry."""
    paths = list(paths)
    errors, warnings = [], []
    if len(paths) > MAX_FILES:
        errors.append(problem("", f"The bundle holds {len(paths)} files; the limit is {MAX_FILES}."))
    for path in paths:
        if (why := path_problem(path)) is not None:
            errors.append(problem(path, why))
        elif path != SKILL_MD and path.split("/")[0] not in KNOWN_FOLDERS:
            warnings.append(problem(path, "Outside scripts/, references/ and assets/; agents may ignore it."))
    errors.extend(case_clashes(paths))
    if md is None:
        errors.append(problem(SKILL_MD, "The bundle needs a SKILL.md at its root."))
        return errors, warnings, None
    if not md.utf8:
        errors.append(problem(SKILL_MD, "SKILL.md must be UTF-8 text."))
        return errors, warnings, None
    if (why := frontmatter_problem(md)) is not None:
        errors.append(problem(SKILL_MD, why))
        return errors, warnings, None
    meta, fm_errors = parse_frontmatter(md.head)
    errors.extend(problem(SKILL_MD, m) for m in fm_errors)
    name = meta.get("name") if meta else None
    if skill_name is not None and isinstance(name, str) and name != skill_name:
        errors.append(problem(SKILL_MD, f"The frontmatter name '{name[:64]}' must equal the skill's name "
                                        f"'{skill_name}'; rename one of them."))
    if folder and isinstance(name, str) and folder != name:
        warnings.append(problem("", f"The folder '{folder}' differs from the skill name '{name[:64]}'."))
    if md.lines > 500:
        warnings.append(problem(SKILL_MD, "SKILL.md is over 500 lines; move detail into references/."))
    return errors, warnings, meta if not errors else None


# ------------------------------------------------------------------ reading

def archive_problems(e: tar.ArchiveError) -> list[dict]:
    """An archive the reader refused whole, as validation errors."""
    return [problem(e.path, e.message)]


def strip_top_folder(files: dict) -> tuple[dict, str | None]:
    """An archive may hold its entries under one top folder: (files at the root, that folder)."""
    if SKILL_MD in files or not files:
        return files, None
    tops = {p.split("/", 1)[0] for p in files}
    if len(tops) == 1 and all("/" in p for p in files):
        top = tops.pop()
        return {p.split("/", 1)[1]: f for p, f in files.items()}, top
    return files, None


@dataclass(frozen=True)
class FolderFile:
    full: Path
    size: int
    executable: bool


def read_folder(root: Path) -> tuple[dict[str, FolderFile], list[dict]]:
    """The files of a skill folder, as a bundle would hold them (.git, __pycache__, .DS_Store
    skipped); contents are read later, as a stream."""
    files: dict[str, FolderFile] = {}
    errors: list[dict] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_NAMES)
        for d in list(dirnames):
            if os.path.islink(os.path.join(dirpath, d)):
                errors.append(problem(Path(dirpath, d).relative_to(root).as_posix(), "Links are not allowed in a bundle."))
                dirnames.remove(d)
        for name in sorted(filenames):
            if name in SKIPPED_NAMES:
                continue
            full = Path(dirpath, name)
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                errors.append(problem(rel, "Links are not allowed in a bundle."))
                continue
            if not full.is_file():
                errors.append(problem(rel, "Only regular files and folders are allowed in a bundle."))
                continue
            size = full.stat().st_size
            total += size
            if total > MAX_UNPACKED or len(files) >= MAX_FILES:
                errors.append(problem("", f"The folder is over the limits ({MAX_FILES} files, "
                                          f"{MAX_UNPACKED // (1024 * 1024)} MiB)."))
                return files, errors
            files[rel] = FolderFile(full, size, os.access(full, os.X_OK))
    return files, errors


# ------------------------------------------------------------------ packing

def canonical_entries(files: dict, open_: Callable[[str], BinaryIO]) -> list[tuple]:
    """Entries for bundle_tar's writer in canonical form: sorted, mtime 0, owner 0, mode 0644
    (0755 for executables). files: {path: anything with .size and .executable};
    open_(path) opens a file's content."""
    return [(p, files[p].size, 0, (lambda p=p: open_(p)), 0o755 if files[p].executable else 0o644)
            for p in sorted(files)]


def digest(entries: list[tuple]) -> str:
    """A version's sha256: of the canonical tar before gzip."""
    return tar.tar_sha256(entries)


def pack(entries: list[tuple]) -> Iterator[bytes]:
    """The canonical tar.gz, chunk by chunk."""
    return tar.write_bundle(entries)


def pack_hashed(entries: list[tuple]) -> tuple[Iterator[bytes], Callable[[], str]]:
    """pack(), and the version's sha256 (digest()) from the same pass: the tar is made once."""
    return tar.write_bundle_hashed(entries)
