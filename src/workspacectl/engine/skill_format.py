"""The skill bundle format (CONTRACT §8): reading archives and folders, validating, packing.

Pure functions, no database: the server and `wsctl skill validate|publish` use the same rules.

A bundle is a set of files {path: BundleFile}. SKILL.md holds YAML frontmatter between `---`
lines with the fields of the Agent Skills specification, checked as its reference validator
`skills-ref` checks them. Archives handed out are canonical: entries at the root, sorted, mtime
0, owner 0, mode 0644 (0755 for executables). A version's sha256 is the SHA-256 of that
canonical tar before gzip, so a client can tell whether a folder equals the live version.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

MAX_PACKED = 50 * 1024 * 1024
MAX_UNPACKED = 200 * 1024 * 1024
MAX_FILES = 1000
MAX_ENTRIES = MAX_FILES * 5     # headers of any kind (folders too): each is held while reading
SKILL_MD = "SKILL.md"
KNOWN_FOLDERS = ("scripts", "references", "assets")
FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
SKIPPED_NAMES = {".git", "__pycache__", ".DS_Store"}
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class BundleFile:
    data: bytes
    executable: bool = False


def problem(path: str, message: str) -> dict:
    # an archive name that is not UTF-8 arrives with lone surrogates, which no JSON answer can carry
    return {"path": path.encode("utf-8", "replace").decode("utf-8"), "message": message}


# ------------------------------------------------------------------ names and paths

def name_problem(name) -> str | None:
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
    """Why `path` may not name a file in a bundle, or None. Relative POSIX, no empty or dot parts."""
    if not path or len(path) > 1024:
        return "The path must be 1 to 1024 characters."
    if "\\" in path or "\x00" in path:
        return "The path must use '/' separators and hold no NUL."
    if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in path):
        return "The path must hold no control characters."
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:   # a name that was not UTF-8 in the archive, or a lone surrogate
        return "The path must be valid UTF-8."
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return "Absolute paths are not allowed."
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "The path must not hold empty, '.' or '..' parts."
    if any(p in SKIPPED_NAMES for p in parts):
        return f"The path must not hold {', '.join(sorted(SKIPPED_NAMES))}."
    return None


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


def load_yaml(text: str):
    """The frontmatter as skills-ref reads it (strictyaml): every scalar is a string, so
    `description: 42`, `metadata: {version: 1.0}` or `description: yes` are text, not numbers or
    booleans. PyYAML's BaseLoader builds only dicts, lists and strings."""
    import yaml

    return yaml.load(text, Loader=yaml.BaseLoader)  # noqa: S506  (BaseLoader constructs no objects)


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


# ------------------------------------------------------------------ validation

def validate_bundle(files: dict[str, BundleFile], skill_name: str | None = None,
                    folder: str | None = None) -> tuple[list[dict], list[dict], dict | None]:
    """(errors, warnings, frontmatter) of a whole bundle. skill_name: the name it must carry."""
    errors, warnings = [], []
    if len(files) > MAX_FILES:
        errors.append(problem("", f"The bundle holds {len(files)} files; the limit is {MAX_FILES}."))
    for path in files:
        if (why := path_problem(path)) is not None:
            errors.append(problem(path, why))
        elif path != SKILL_MD and path.split("/")[0] not in KNOWN_FOLDERS:
            warnings.append(problem(path, "Outside scripts/, references/ and assets/; agents may ignore it."))
    meta = None
    if SKILL_MD not in files:
        errors.append(problem(SKILL_MD, "The bundle needs a SKILL.md at its root."))
        return errors, warnings, None
    try:
        text = files[SKILL_MD].data.decode("utf-8")
    except UnicodeDecodeError:
        errors.append(problem(SKILL_MD, "SKILL.md must be UTF-8 text."))
        return errors, warnings, None
    meta, fm_errors = parse_frontmatter(text)
    errors.extend(problem(SKILL_MD, m) for m in fm_errors)
    name = meta.get("name") if meta else None
    if skill_name is not None and isinstance(name, str) and name != skill_name:
        errors.append(problem(SKILL_MD, f"The frontmatter name '{name[:64]}' must equal the skill's name "
                                        f"'{skill_name}'; rename one of them."))
    if folder and isinstance(name, str) and folder != name:
        warnings.append(problem("", f"The folder '{folder}' differs from the skill name '{name[:64]}'."))
    if text.count("\n") > 500:
        warnings.append(problem(SKILL_MD, "SKILL.md is over 500 lines; move detail into references/."))
    return errors, warnings, meta if not errors else None


# ------------------------------------------------------------------ reading

def read_archive(data: bytes) -> tuple[dict[str, BundleFile], list[dict], str | None]:
    """(files, errors, stripped top folder) of a tar.gz. Links, devices, absolute or escaping
    paths and archives over the limits are errors; nothing is written anywhere."""
    if len(data) > MAX_PACKED:
        return {}, [problem("", f"The bundle is over {MAX_PACKED // (1024 * 1024)} MiB packed.")], None
    from workspacectl.engine.bundle_tar import MAX_EXT_HEADER, BoundedTarInfo, ExtHeaderTooLarge, _Inflated
    from workspacectl.errors import ApiError

    files: dict[str, BundleFile] = {}
    errors: list[dict] = []
    total = entries = 0
    # Read as a stream with bounds on everything tarfile would otherwise hold or inflate: the
    # inflated bytes, the number of headers (each kept in memory), extended header sizes.
    inflated = _Inflated(io.BytesIO(data), MAX_UNPACKED + MAX_ENTRIES * 4096 + (1 << 20))
    try:
        with tarfile.open(fileobj=inflated, mode="r|", tarinfo=BoundedTarInfo) as tar:
            for member in tar:
                tar.members.clear()
                entries += 1
                if entries > MAX_ENTRIES:
                    errors.append(problem("", f"The bundle holds over {MAX_ENTRIES} entries."))
                    break
                path = member.name[2:] if member.name.startswith("./") else member.name
                path = path.rstrip("/") if member.isdir() else path
                if member.isdir() or path in ("", "."):
                    if member.isdir() and path not in ("", ".") and (why := path_problem(path)):
                        errors.append(problem(path, why))
                    continue
                if member.issym() or member.islnk():
                    errors.append(problem(path, "Links are not allowed in a bundle."))
                    continue
                if not member.isfile():
                    errors.append(problem(path, "Only regular files and folders are allowed in a bundle."))
                    continue
                if (why := path_problem(path)) is not None:
                    errors.append(problem(path, why))
                    continue
                if len(files) >= MAX_FILES:
                    errors.append(problem("", f"The bundle holds over {MAX_FILES} files."))
                    break
                total += member.size
                if total > MAX_UNPACKED:
                    errors.append(problem("", f"The bundle unpacks to over {MAX_UNPACKED // (1024 * 1024)} MiB."))
                    break
                if path in files:
                    errors.append(problem(path, "The path appears twice in the archive."))
                    continue
                fh = tar.extractfile(member)
                files[path] = BundleFile(fh.read() if fh else b"", bool(member.mode & 0o111))
    except ExtHeaderTooLarge:
        return {}, [problem("", f"The bundle holds an extended (pax or long-name) header over "
                                f"{MAX_EXT_HEADER // 1024} KiB.")], None
    except ApiError as e:  # from the inflating reader: not gzip, or inflating past the limit
        message = ("The bundle inflates past the size limit." if e.code == "payload_too_large"
                   else "The upload is not a readable tar.gz archive.")
        return {}, [problem("", message)], None
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile, ValueError, UnicodeError):
        return {}, [problem("", "The upload is not a readable tar.gz archive.")], None
    if errors:
        return {}, errors, None
    return strip_top_folder(files)


def strip_top_folder(files: dict[str, BundleFile]) -> tuple[dict[str, BundleFile], list[dict], str | None]:
    if SKILL_MD in files or not files:
        return files, [], None
    tops = {p.split("/", 1)[0] for p in files}
    if len(tops) == 1 and all("/" in p for p in files):
        top = tops.pop()
        return {p.split("/", 1)[1]: f for p, f in files.items()}, [], top
    return files, [], None


def read_folder(root: Path) -> tuple[dict[str, BundleFile], list[dict]]:
    """The files of a skill folder, as a bundle would hold them (.git, __pycache__, .DS_Store skipped)."""
    files: dict[str, BundleFile] = {}
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
            total += full.stat().st_size
            if total > MAX_UNPACKED or len(files) >= MAX_FILES:
                errors.append(problem("", f"The folder is over the limits ({MAX_FILES} files, "
                                          f"{MAX_UNPACKED // (1024 * 1024)} MiB)."))
                return files, errors
            files[rel] = BundleFile(full.read_bytes(), os.access(full, os.X_OK))
    return files, errors


# ------------------------------------------------------------------ packing

def canonical_tar(files: dict[str, BundleFile]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(files):
            f = files[path]
            info = tarfile.TarInfo(path)
            info.size = len(f.data)
            info.mode = 0o755 if f.executable else 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(f.data))
    return buf.getvalue()


def digest(files: dict[str, BundleFile]) -> str:
    return hashlib.sha256(canonical_tar(files)).hexdigest()


def pack(files: dict[str, BundleFile]) -> bytes:
    """The canonical tar.gz: entries at the root, deterministic bytes."""
    return gzip.compress(canonical_tar(files), compresslevel=6, mtime=0)
