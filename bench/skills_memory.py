"""Skill bundles in bounded memory: the server's peak RSS for each step of the bundle flow.

    python bench/skills_memory.py [--zeros-mib 190] [--frontmatter-mib 30]

Against a real `wsctl serve` on 127.0.0.1, for each bundle (built on disk with the project's
own tar writer, never whole in memory):
- zeros:  SKILL.md + one file of --zeros-mib MiB of zeros (about 190 KiB gzipped; under the
          200 MiB unpacked limit), the case that took the server to 548 MB before;
- max:    the largest bundle the limits allow: 1,000 files, 50 MiB packed (48 MiB of random
          bytes that do not compress) and about 194 MiB unpacked (the rest zeros);
- frontmatter: a SKILL.md with --frontmatter-mib MiB of frontmatter (refused: over 64 KiB).
Steps: presigned PUT of the archive, POST validate, POST publish, presigned GET of the live
bundle (streamed to disk). Printed per step: wall time and the server's peak RSS during it
(/proc/<pid>/status VmHWM, reset before each step through clear_refs). Target: < 150 MB.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import MiB, Scratch, make_workspace, mib, reset_hwm, vm_hwm, vm_rss
from workspacectl.formats.tar_stream import write_bundle


class Zeros(io.RawIOBase):
    def __init__(self, size: int):
        self.left = size

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return b"\0" * n


def skill_md(name: str, frontmatter_bytes: int = 0) -> bytes:
    pad = "".join(f"  k{i}: {'x' * 90}\n" for i in range(frontmatter_bytes // 100)) if frontmatter_bytes else ""
    head = f"---\nname: {name}\ndescription: Memory bench. Use when measuring.\n"
    return ((head + "metadata:\n" + pad) if pad else head).encode() + b"---\n# Bench\n"


def build(path: Path, files: list[tuple[str, int, object]]) -> int:
    """files: (path, size, opener); written through the project's tar writer."""
    with path.open("wb") as out:
        for chunk in write_bundle((p, size, 0, opener) for p, size, opener in files):
            out.write(chunk)
    return path.stat().st_size


def zeros_bundle(path: Path, name: str, zeros: int) -> int:
    md = skill_md(name)
    return build(path, [("SKILL.md", len(md), lambda: io.BytesIO(md)),
                        ("assets/zeros.bin", zeros, lambda: Zeros(zeros))])


def max_bundle(path: Path, name: str) -> int:
    md = skill_md(name)
    files: list = [("SKILL.md", len(md), lambda: io.BytesIO(md))]
    each = 200 * 1024
    for i in range(999):
        if i < 245:       # 245 x 200 KiB = 47.9 MiB of random bytes: the packed size stays under 50 MiB
            files.append((f"assets/random-{i:03d}.bin", each, lambda: io.BytesIO(os.urandom(each))))
        else:
            files.append((f"references/zeros-{i:03d}.md", each, lambda: Zeros(each)))
    return build(path, files)


def frontmatter_bundle(path: Path, name: str, size: int) -> int:
    md = skill_md(name, size)
    return build(path, [("SKILL.md", len(md), lambda: io.BytesIO(md))])


def step(pid: int, fn):
    reset_hwm(pid)
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0, vm_hwm(pid)


def run(label: str, archive: Path, client: httpx.Client, pid: int, name: str, rows: list) -> None:
    sid = client.post("/v1/skills", json={"name": name, "description": "Memory bench."}).json()["id"]
    up = client.post(f"/v1/skills/{sid}/bundle-upload-url").json()

    def put():
        with archive.open("rb") as fh:
            r = httpx.put(up["url"], content=iter(lambda: fh.read(MiB), b""), trust_env=False, timeout=600,
                          headers={"Content-Length": str(archive.stat().st_size)})
        return r.status_code

    def post(what):
        return lambda: client.post(f"/v1/skills/{sid}/{what}", json={"uploadId": up["uploadId"]})

    def download():
        url = client.get(f"/v1/skills/{sid}/bundle-url").json()["url"]
        total = 0
        with httpx.stream("GET", url, trust_env=False, timeout=600) as r:
            for chunk in r.iter_bytes():
                total += len(chunk)
        return total

    status, wall, peak = step(pid, put)
    rows.append((label, "upload (PUT)", status, wall, peak))
    r, wall, peak = step(pid, post("validate"))
    rows.append((label, "validate", f"{r.status_code} valid={r.json().get('valid')}", wall, peak))
    r, wall, peak = step(pid, post("publish"))
    rows.append((label, "publish", r.status_code, wall, peak))
    if r.status_code == 201:
        got, wall, peak = step(pid, download)
        rows.append((label, "download (GET)", f"{got / MiB:.0f} MiB gz", wall, peak))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--zeros-mib", type=int, default=190)
    ap.add_argument("--frontmatter-mib", type=int, default=30)
    args = ap.parse_args()
    with Scratch("wsctl-bench-skills-mem-") as s:
        ws_path, token, _ = make_workspace(s.tmp)
        server = s.serve(ws_path)
        pid = server.proc.pid
        client = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}, trust_env=False,
                              timeout=600)
        bundles = [
            ("zeros", "mem-zeros", lambda p: zeros_bundle(p, "mem-zeros", args.zeros_mib * MiB)),
            ("max", "mem-max", lambda p: max_bundle(p, "mem-max")),
            ("frontmatter", "mem-frontmatter",
             lambda p: frontmatter_bundle(p, "mem-frontmatter", args.frontmatter_mib * MiB)),
        ]
        rows: list = []
        print(f"server idle: {mib(vm_rss(pid))} RSS", flush=True)
        for label, name, make in bundles:
            archive = s.tmp / f"{label}.tar.gz"
            size = make(archive)
            print(f"{label}: {size / MiB:.2f} MiB packed", flush=True)
            run(label, archive, client, pid, name, rows)
        print(f"\n{'bundle':<12} {'step':<16} {'answer':<22} {'wall s':>7} {'server peak':>12}")
        for label, what, answer, wall, peak in rows:
            print(f"{label:<12} {what:<16} {answer!s:<22} {wall:>7.2f} {mib(peak):>12}")
        worst = max(r[4] for r in rows)
        print(f"\nworst server peak: {mib(worst)} ({'under' if worst < 150e6 else 'OVER'} the 150 MB target)")
        client.close()


if __name__ == "__main__":
    main()
