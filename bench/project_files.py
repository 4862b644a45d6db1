"""Project (specialist) file bundles: upload and download speed and peak memory.

    python bench/project_files.py [--small 2000] [--binary-mib 4] [--big-mib 200] [--list-files 5000]

Bundles (made on disk, never in memory):
- small: --small files of 0.5-4 KiB text plus --binary-mib MiB of random binary in 1 MiB files
- big:   one file of --big-mib MiB written from os.urandom chunks

Each is uploaded as a folder (`wsctl specialist files bundle upload ID DIR`, packed on the fly)
and downloaded (`... bundle download ID -o FILE`) through
- local: the engine in the CLI process (WSCTL_WORKSPACE)
- http:  the CLI against a real `wsctl serve` on 127.0.0.1 (WSCTL_SERVER)
Printed: wall time, MB/s of file content, the CLI process's peak RSS (wait4 ru_maxrss) and, over
HTTP, the server's peak RSS during that transfer (VmHWM, reset before each). Streaming shows as
peak RSS that does not grow with the bundle. Then `files list` of a project holding --list-files.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    MiB,
    Scratch,
    int_options,
    local_env,
    make_workspace,
    median,
    mib,
    remote_env,
    reset_hwm,
    run_cli,
    vm_hwm,
    vm_rss,
)


def make_small(folder: Path, n: int, binary_mib: int) -> int:
    rnd = __import__("random").Random(7)
    total = 0
    for i in range(n):
        d = folder / f"dir{i % 40:02d}" / f"sub{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        size = rnd.randint(512, 4096)
        text = (f"file {i} " * (size // 7 + 1))[:size]
        (d / f"note-{i:05d}.txt").write_text(text)
        total += size
    (folder / "bin").mkdir()
    for i in range(binary_mib):
        (folder / "bin" / f"blob-{i}.bin").write_bytes(os.urandom(MiB))
        total += MiB
    return total


def make_big(folder: Path, size_mib: int) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "big.bin", "wb") as f:
        for _ in range(size_mib):
            f.write(os.urandom(MiB))
    return size_mib * MiB


def make_many(folder: Path, n: int) -> None:
    for i in range(n):
        d = folder / f"d{i % 50:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}.txt").write_text(f"{i}\n")


def create_project(env: dict, name: str) -> str:
    return json.loads(run_cli(["specialist", "create", name, "--json"], env).out)["project"]["id"]


def main() -> int:
    args = int_options(__doc__, {"--small": 2000, "--binary-mib": 4, "--big-mib": 200, "--list-files": 5000})
    with Scratch("wsctl-bench-files-") as scratch:
        tmp = scratch.tmp
        t0 = time.perf_counter()
        ws_path, token, _ = make_workspace(tmp)
        data = tmp / "data"
        small_bytes = make_small(data / "small", args.small, args.binary_mib)
        big_bytes = make_big(data / "big", args.big_mib)
        make_many(data / "many", args.list_files)
        print(f"setup {time.perf_counter() - t0:.1f} s; {os.cpu_count()} CPUs")
        server = scratch.serve(ws_path)
        spid = server.proc.pid
        envs = {"local": local_env(tmp, ws_path), "http": remote_env(tmp, server.url, token)}
        base = run_cli(["specialist", "list", "--json"], envs["local"])
        print(f"baseline: CLI `specialist list` local peak RSS {mib(base.maxrss)}; "
              f"idle server RSS {mib(vm_rss(spid))}\n")
        bundles = [("small", data / "small", small_bytes, args.small + args.binary_mib),
                   ("big", data / "big", big_bytes, 1)]
        print(f"{'door':<6} {'bundle':<22} {'op':<9} {'wall s':>7} {'MB/s':>7} {'CLI peak':>9} {'server peak':>12}")
        for door in ("local", "http"):
            env = envs[door]
            for label, folder, nbytes, nfiles in bundles:
                pid = create_project(env, f"{door}-{label}")
                shown = f"{label} {nfiles} f, {nbytes / MiB:.0f} MiB"
                for op in ("upload", "download"):
                    out = tmp / f"{door}-{label}.tar.gz"
                    cmd = (["specialist", "files", "bundle", "upload", pid, folder, "--json"] if op == "upload"
                           else ["specialist", "files", "bundle", "download", pid, "-o", out, "--json"])
                    reset_hwm(spid)
                    r = run_cli(cmd, env)
                    srv = mib(vm_hwm(spid)) if door == "http" else "-"
                    print(f"{door:<6} {shown:<22} {op:<9} {r.wall:7.2f} {nbytes / 1e6 / r.wall:7.1f} "
                          f"{mib(r.maxrss):>9} {srv:>12}")
                    if op == "upload":
                        body = json.loads(r.out)
                        assert body["added"] == nfiles, body
                    else:
                        out.unlink()
        print()
        pid = create_project(envs["local"], "many")
        run_cli(["specialist", "files", "bundle", "upload", pid, data / "many"], envs["local"])
        for door in ("local", "http"):
            walls = []
            for _ in range(3):
                r = run_cli(["specialist", "files", "list", pid, "--json"], envs[door])
                walls.append(r.wall)
            n = len(json.loads(r.out)["files"])
            assert n == args.list_files, n
            print(f"files list ({n} files, every page) {door:<6} median {median(walls):6.2f} s   "
                  f"min {min(walls):6.2f} s   CLI peak {mib(r.maxrss)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
