"""Hostile catalog imports against a real `wsctl serve`: wall time, answer and server peak RSS of each.

    python bench/hostile_imports.py

Each case is POSTed to /v1/admin/catalog; the server's peak RSS (VmHWM) is reset before each
case and read after it, so every figure is that import's own peak. Issue 14's figures before the
limits: an allOf explosion took 40 s of CPU, 300,000 parameters 476 MB, a 100,000-operation TOML
408 MB. The target: every import answers within seconds and the server stays under 300 MB.
The last lines print the worst case for time and for memory.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench._harness import MiB, Scratch, make_workspace, reset_hwm, vm_hwm, vm_rss
from tests import hostile_docs as h
from workspacectl.engine.catalog import limits


def cases() -> list[tuple[str, str, str]]:
    """(name, filename, text): issue 14's documents at full size, and the largest shapes the limits let through."""
    big_text = "# " + "x" * (limits.MAX_DOCUMENT_BYTES - 200) + "\n" + 'service = "bigtext"\nname = "B"\ncredentialType = "noAuth"\n'
    return [
        ("allOf explosion (issue: 40 s)", "a.json", h.allof_explosion(12, 8, 50)),
        ("allOf just under the document budget", "a.json", h.allof_explosion(3, 6, 150)),
        ("300,000 parameters (issue: 476 MB)", "a.json", h.many_parameters(300_000)),
        ("100,000-operation TOML (issue: 408 MB)", "a.toml", h.many_operations_toml(100_000)),
        ("2,000 operations (the limit)", "a.json", h.many_operations_openapi(limits.MAX_OPERATIONS)),
        ("2,000 TOML operations (the limit)", "a.toml", h.many_operations_toml(limits.MAX_OPERATIONS, "ops2k")),
        ("YAML billion laughs", "a.yaml", h.yaml_bomb()),
        ("YAML 296,000 events (under the limit)", "a.yaml", h.yaml_many_scalars(296_000)),
        ("TOML 298,000 tokens (under the limit)", "a.toml", h.toml_many_values(298_000)),
        ("JSON 298,000 values (under the limit)", "a.json", h.json_many_values(298_000)),
        ("JSON enum of 2,000,000 values", "a.json", h.huge_enum(2_000_000)),
        ("YAML flow nesting 100,000 deep", "a.yaml", h.deep_yaml(100_000)),
        ("JSON nesting 100,000 deep", "a.json", h.deep_json(100_000)),
        ("16 MiB TOML of comment text", "a.toml", big_text),
        ("$ref cycles", "a.json", h.ref_cycles()),
    ]


def main() -> None:
    with Scratch("wsctl-hostile-") as s:
        ws_path, token, _ = make_workspace(s.tmp)
        server = s.serve(ws_path)
        pid = server.proc.pid
        client = httpx.Client(base_url=server.url, timeout=600, trust_env=False,
                              headers={"Authorization": f"Bearer {token}"})
        print(f"server idle RSS {vm_rss(pid) / MiB:.0f} MiB")
        print(f"{'case':44} {'doc MB':>7} {'status':>6} {'wall s':>7} {'peak MiB':>9}  answer")
        worst_time = worst_rss = (0.0, "")
        for name, filename, text in cases():
            if not reset_hwm(pid):
                print("(cannot reset VmHWM on this system: peaks are cumulative)")
            t0 = time.perf_counter()
            r = client.post("/v1/admin/catalog", json={"content": text, "filename": filename})
            wall = time.perf_counter() - t0
            peak = vm_hwm(pid) / MiB
            answer = r.json()
            message = answer["error"]["message"] if "error" in answer else f"imported {answer['operationCount']} ops"
            print(f"{name:44} {len(text.encode()) / 1e6:7.1f} {r.status_code:6} {wall:7.2f} {peak:9.0f}  {message[:90]}")
            worst_time = max(worst_time, (wall, name))
            worst_rss = max(worst_rss, (peak, name))
        print(f"worst time: {worst_time[0]:.2f} s ({worst_time[1]})")
        print(f"worst peak RSS: {worst_rss[0]:.0f} MiB ({worst_rss[1]})")


if __name__ == "__main__":
    main()
