"""``salvage scan`` spread over a Dask distributed cluster: one task per database.

A lab whose case outgrows one machine runs the same scan on the workers of a cluster::

    from distributed import Client
    import salvage.cluster

    client = Client("tcp://scheduler:8786")
    for entry in salvage.cluster.scan(client, ["/cases/7/extraction.tar"], "/cases/7/out"):
        print(entry.path, entry.outcome)

The scan is planned here (the request checked, archives spooled into ``out``, every
database found by its content), each database is triaged and recovered by a task on
some worker (largest first), and the summary is merged here into ``out/scan.json`` and
``scan.csv``: the same summary ``salvage.scan`` writes on one machine. The sources and
``out`` must be at the same paths on every worker and here (shared storage). A scan
stopped midway and run again with the same ``out`` keeps what its tasks committed.
Dask is needed only to call ``scan`` (``pip install distributed``).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from . import _salvage, ScanEntry

__all__ = ["scan"]


def _task(options: str, task: str) -> str:
    """One database of a scan, on a worker: its entry, committed in ``out/.scan``."""
    return _salvage.scan_task(options, task)


def scan(
    client: Any,
    sources: list,
    out: str,
    allow_partial: bool = False,
    carve: bool = False,
    history: bool = False,
    triage_only: bool = False,
) -> Iterator[ScanEntry]:
    """Scans ``sources`` into ``out`` as ``salvage.scan`` does, each database a task of
    the Dask ``client``'s cluster, and yields each entry as its task ends. The summary
    is written once the last one is yielded. A refusal (``Refused``) is raised at the
    first iteration, before any task is sent; a task that fails writing ``out`` raises
    its error here and ends the scan (one bad database is an entry, never an error)."""
    from distributed import as_completed

    plan = _salvage.scan_plan(
        [str(s) for s in sources], str(out), allow_partial, carve, history, triage_only
    )
    parsed = json.loads(plan)
    options = json.dumps(parsed["options"])
    tasks = parsed["tasks"]
    # Largest first (the plan's order): the last minutes are not one big file on one core.
    futures = [
        client.submit(_task, options, json.dumps(task), pure=False, priority=len(tasks) - i)
        for i, task in enumerate(tasks)
    ]
    done = []
    for future in as_completed(futures):
        result = future.result()
        done.append(result)
        yield ScanEntry._of(json.loads(result)["entry"])
    _salvage.scan_finish(plan, done)
