"""A small program using ``salvage`` as a typed library: ``mypy --strict`` checks it in
the test suite, so that the package's types (``py.typed``, the native module's stub) stay
true for the programs that call it."""

from __future__ import annotations

import sys
from typing import Any

import salvage


def main(src: str, dest: str) -> int:
    seen: list[int] = []

    def progress(event: dict[str, Any]) -> None:
        if event["kind"] == "read":
            seen.append(int(event["rows"]))

    try:
        report: salvage.LossReport = salvage.recover(src, dest, allow_partial=True, progress=progress)
    except salvage.Refused as e:
        print(f"refused: {e} ({e.hint})", file=sys.stderr)
        return 2
    for table in report.tables:
        rows: int | None = table.rows_in_output
        print(table.name, table.status, rows)
    facts: dict[str, Any] = salvage.inspect(src)
    print(facts["verdict"]["summary"], len(seen))
    return 3 if report.loss_detected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
