"""A specialist folder upload sends only what changed: bytes sent and time.

    python bench/folder_sync.py [--mib 126] [--files 120] [--small 2000]

A folder of --files random binary files making --mib MiB in all, plus --small small text files,
is uploaded with `wsctl specialist files bundle upload ID DIR --json` through
- local: the engine in the CLI process (WSCTL_WORKSPACE)
- http:  the CLI against a real `wsctl serve` on 127.0.0.1 (WSCTL_SERVER)
three times: the first upload (everything), the same folder again (unchanged: 0 bytes must be
sent), and after one small file changed (only that file travels). Printed per run: wall time,
bytesSent from the command's summary, and its counts. The run fails if the unchanged folder
sends a single byte.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import MiB, Scratch, int_options, local_env, make_workspace, mib, remote_env, run_cli


def make_folder(folder: Path, total_mib: int, files: int, small: int) -> int:
    folder.mkdir(parents=True)
    per = total_mib * MiB // files
    total = 0
    for i in range(files):
        d = folder / f"bin{i % 8}"
        d.mkdir(exist_ok=True)
        (d / f"blob-{i:04d}.bin").write_bytes(os.urandom(per))
        total += per
    for i in range(small):
        d = folder / "notes" / f"n{i % 20:02d}"
        d.mkdir(parents=True, exist_ok=True)
        text = f"note {i}\n" * 40
        (d / f"note-{i:05d}.txt").write_text(text)
        total += len(text)
    return total


def main() -> int:
    args = int_options(__doc__, {"--mib": 126, "--files": 120, "--small": 2000})
    with Scratch("wsctl-bench-sync-") as scratch:
        tmp = scratch.tmp
        ws_path, token, _ = make_workspace(tmp)
        folder = tmp / "folder"
        size = make_folder(folder, args.mib, args.files, args.small)
        nfiles = args.files + args.small
        server = scratch.serve(ws_path)
        envs = {"local": local_env(tmp, ws_path), "http": remote_env(tmp, server.url, token)}
        print(f"folder: {nfiles} files, {size / MiB:.1f} MiB; {os.cpu_count()} CPUs\n")
        print(f"{'door':<6} {'run':<22} {'wall s':>7} {'bytes sent':>12} {'added':>6} {'updated':>8} "
              f"{'unchanged':>10} {'CLI peak':>9}")
        failed = False
        for door, env in envs.items():
            pid = json.loads(run_cli(["specialist", "create", f"sync-{door}", "--json"], env).out)["project"]["id"]
            note = folder / "notes" / "n00" / "note-00000.txt"
            note.write_text("note 0\n" * 40)
            for label in ("first upload", "unchanged folder", "one small file changed"):
                if label == "one small file changed":
                    note.write_text(f"changed at {time.time()}\n")
                r = run_cli(["specialist", "files", "bundle", "upload", pid, folder, "--json"], env)
                b = json.loads(r.out)
                print(f"{door:<6} {label:<22} {r.wall:7.2f} {b['bytesSent']:>12} {b['added']:>6} {b['updated']:>8} "
                      f"{b['unchanged']:>10} {mib(r.maxrss):>9}")
                if label == "unchanged folder" and (b["bytesSent"] != 0 or b["unchanged"] != nfiles):
                    failed = True
        if failed:
            print("FAILED: an unchanged folder sent bytes")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
