"""A whole case scanned on a Dask distributed cluster: ``salvage scan`` with each
database recovered by a task on some worker, the summary merged into ``OUT/scan.json``.

    python dask_scan.py SOURCE... -o OUT [--scheduler tcp://HOST:8786] [--allow-partial]

Without ``--scheduler`` it starts a ``LocalCluster`` of ``--workers`` processes on this
machine. With one, the sources and OUT must be at the same paths on every worker and
here (a shared file system), and ``sqlite-salvage`` installed on the workers too. Exit
status as ``salvage scan``'s: 0 when every database is complete, 3 when some loss is
recorded, 2 when the request is refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import salvage
import salvage.cluster


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", help="folders, files, .tar, .tar.gz, .zip")
    parser.add_argument("-o", "--out", required=True, help="the scan's output folder")
    parser.add_argument("--scheduler", help="a running scheduler's address")
    parser.add_argument("--workers", type=int, default=2, help="local workers (no --scheduler)")
    parser.add_argument("--allow-partial", action="store_true")
    parser.add_argument("--carve", action="store_true")
    parser.add_argument("--history", action="store_true")
    args = parser.parse_args(argv)

    from distributed import Client, LocalCluster

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True)
        client = Client(cluster)
    try:
        entries = salvage.cluster.scan(
            client,
            args.sources,
            args.out,
            allow_partial=args.allow_partial,
            carve=args.carve,
            history=args.history,
        )
        for entry in entries:
            print(f"{entry.outcome:>10}  {entry.path}", flush=True)
    except salvage.Refused as e:
        print(f"refused: {e}", file=sys.stderr)
        return 2
    finally:
        client.close()
    summary = json.loads((Path(args.out) / "scan.json").read_text())
    lossy = summary["unreadable"] or any(e["loss"] for e in summary["entries"])
    print(f"{len(summary['entries'])} databases; summary in {Path(args.out) / 'scan.json'}")
    return 3 if lossy else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
