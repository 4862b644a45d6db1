"""Import every shared OpenAPI document into a fresh workspace and print times and counts.

    python bench/catalog_import.py [DIR]      (default /work/shared/data/openapi)

Per document: size, operations, parse time (JSON/YAML -> record, markdown included) and store
time (one replace_service transaction, including the search index when that module exists).
The store step runs twice: the second run is a re-import (replace) of the same service.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data/openapi")
    from workspacectl.engine.catalog import builtins, services
    from workspacectl.engine.catalog.importer import parse_document
    from workspacectl.engine.workspaces.folder import Workspace

    docs = sorted(p for p in src.iterdir() if p.suffix in (".json", ".yaml", ".yml"))
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        ws, _ = Workspace.create(Path(tmp) / "ws", "bench", "Bench", "bench@example.com")
        print(f"workspace create (built-in catalog load): {time.perf_counter() - started:.2f} s")
        conn = ws.conn()
        print(f"{'document':16} {'MB':>6} {'ops':>5} {'parse s':>8} {'store s':>8} {'replace s':>9}")
        totals = [0, 0.0, 0.0, 0.0]
        for p in docs:
            text = p.read_text()
            t0 = time.perf_counter()
            record = parse_document(text, "openapi", "bench-" + p.stem, p.name)
            t1 = time.perf_counter()
            services.replace_service(conn, record, source="import")
            t2 = time.perf_counter()
            services.replace_service(conn, record, source="import")
            t3 = time.perf_counter()
            n = len(record["operations"])
            print(f"{p.name:16} {len(text) / 1e6:6.2f} {n:5d} {t1 - t0:8.2f} {t2 - t1:8.2f} {t3 - t2:9.2f}")
            totals[0] += n
            totals[1] += t1 - t0
            totals[2] += t2 - t1
            totals[3] += t3 - t2
        print(f"{'total':16} {'':>6} {totals[0]:5d} {totals[1]:8.2f} {totals[2]:8.2f} {totals[3]:9.2f}")
        stored = conn.execute("SELECT count(*) FROM operations WHERE service LIKE 'bench-%'").fetchone()[0]
        print(f"operations stored: {stored}; database size: {(ws.db_path.stat().st_size) / 1e6:.1f} MB")
        t0 = time.perf_counter()
        for _ in range(100):
            builtins.ensure_builtin_catalog(conn)
        print(f"ensure_builtin_catalog when unchanged: {(time.perf_counter() - t0) * 10:.2f} ms per call")
        conn.close()


if __name__ == "__main__":
    main()
