"""Forensic SQLite salvage, in-process: inspect and recover damaged databases.

The recovery library of ``sqlite-salvage`` (Rust), called without a subprocess::

    import salvage

    facts = salvage.inspect("state.db")                 # dict, as `salvage inspect --json`
    try:
        report = salvage.recover("state.db", "recovered.db")
    except salvage.LossDetected as e:                   # output withheld: rows are missing
        print(e.report.tables, e.report.incomplete)
    report = salvage.recover("state.db", "again.db", allow_partial=True)
    for line in salvage.export_chroma("recovered.sqlite3"):
        collection.upsert(ids=[line["id"]], ...)
    for event in salvage.timeline("recovered.db"):     # as `salvage timeline`'s CSV rows
        print(event["datetime"], event["timestamp_desc"])
    for entry in salvage.scan(["extraction/"], "case-7", allow_partial=True):
        print(entry.path, entry.outcome, entry.rows)    # each database as it is done

The source is only read, nothing is written beside it, and the output is committed only
once verified. A recovery with loss raises ``LossDetected`` (carrying the report) unless
``allow_partial`` is true; then ``report.loss_detected`` says so.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, TypeVar

from . import _salvage
from ._salvage import Refused, SalvageError

__all__ = [
    "inspect",
    "recover",
    "commit",
    "export_chroma",
    "timeline",
    "export_xlsx",
    "scan",
    "ScanEntry",
    "LossReport",
    "TableReport",
    "LostRows",
    "SalvageError",
    "Refused",
    "LossDetected",
    "NotVerified",
]

__version__ = _salvage.__version__

_T = TypeVar("_T")

# The library words its refusals for the command line; here they name the Python calls.
_CLI_TO_PYTHON = [
    (re.compile(r"`salvage commit (\S+) --report (\S+)`"), r"`salvage.commit('\1', report='\2')`"),
    (re.compile(r"`salvage commit (\S+)`"), r"`salvage.commit('\1')`"),
    (re.compile(r"`salvage recover (\S+) -o (\S+)`"), r"`salvage.recover('\1', '\2')`"),
    (re.compile(r"--as-of (\d+)"), r"as_of=\1"),
    (re.compile(r"--as-of"), "as_of"),
    (re.compile(r"--profile"), "profile="),
    (re.compile(r"--collection"), "collection="),
    (re.compile(r"--allow-partial"), "allow_partial=True"),
]


def _python_words(text: str) -> str:
    for pattern, replacement in _CLI_TO_PYTHON:
        text = pattern.sub(replacement, text)
    return text


def _pythonic(call: Callable[..., _T], *args: Any) -> _T:
    """Calls the native ``call``; an error it raises names Python's arguments, not the
    command line's flags, in its message and its ``hint``."""
    try:
        return call(*args)
    except SalvageError as e:
        e.args = tuple(_python_words(a) if isinstance(a, str) else a for a in e.args)
        hint = getattr(e, "hint", None)
        e.hint = None if hint is None else _python_words(hint)
        if not hasattr(e, "path"):
            e.path = None
        raise


@dataclass(frozen=True)
class LostRows:
    """Bounds of the rows a table lost (``lost_rows`` in the report)."""

    lower_bound: int
    upper_bound: Optional[int]
    proven_by_index: int
    proven_by_text: int


@dataclass(frozen=True)
class TableReport:
    """What one table got back (an entry of the report's ``tables``)."""

    name: str
    status: str
    rows_in_output: Optional[int]
    rows_written: int
    rows_from_orphans: int
    rows_damaged: int
    placeholders: int
    rows_partial: int
    lost_rows: Optional[LostRows]

    @classmethod
    def _of(cls, t: dict[str, Any]) -> "TableReport":
        lost = t.get("lost_rows")
        return cls(
            name=t["name"],
            status=t["status"],
            rows_in_output=t.get("rows_in_output"),
            rows_written=t["rows_written"],
            rows_from_orphans=t["rows_from_orphans"],
            rows_damaged=t["rows_damaged"],
            placeholders=t["placeholders"],
            rows_partial=t["rows_partial"],
            lost_rows=None
            if lost is None
            else LostRows(
                lower_bound=lost["lower_bound"],
                upper_bound=lost.get("upper_bound"),
                proven_by_index=lost["proven_by_index"],
                proven_by_text=lost["proven_by_text"],
            ),
        )


@dataclass(frozen=True)
class LossReport:
    """A recovery's loss report (docs/report.md), typed; ``raw`` is the whole JSON."""

    outcome: str
    complete: bool
    partial: bool
    loss_detected: bool
    verified: bool
    committed: bool
    dest: str
    incomplete: str
    report_path: str
    loss: list[str]
    tables: list[TableReport] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def table(self, name: str) -> TableReport:
        """The entry of the table ``name``."""
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)


class LossDetected(SalvageError):
    """Rows are missing and the output was withheld (kept as ``report.incomplete``):
    read ``report``, then accept it with ``salvage.commit(report.incomplete)`` (no rerun)
    or recover again with ``allow_partial=True``."""

    def __init__(self, report: LossReport):
        super().__init__(
            f"loss detected: output withheld as {report.incomplete}; "
            + "; ".join(report.loss[:3])
        )
        self.report = report
        self.path: Optional[str] = report.incomplete
        self.hint: Optional[str] = (
            f"accept it with salvage.commit({report.incomplete!r}), "
            "or recover again with allow_partial=True"
        )

    def __reduce__(self) -> Any:
        return (type(self), (self.report,))


class NotVerified(SalvageError):
    """The output failed verification or the source changed during the run: it must not
    be used; it is kept as ``report.incomplete`` for inspection."""

    def __init__(self, report: LossReport):
        super().__init__(f"output not verified: kept as {report.incomplete}")
        self.report = report
        self.path: Optional[str] = report.incomplete
        self.hint: Optional[str] = "read report.loss: the output must not be used"

    def __reduce__(self) -> Any:
        return (type(self), (self.report,))


def inspect(path: str, sha256: bool = False) -> dict[str, Any]:
    """Inspects a database file read-only: header, pages, b-trees, findings (the JSON of
    ``salvage inspect --json``, docs/inspect.md)."""
    return json.loads(_pythonic(_salvage.inspect, os.fspath(path), sha256))


def recover(
    src: "str | os.PathLike[str]",
    dest: "str | os.PathLike[str]",
    allow_partial: bool = False,
    profile: str = "auto",
    report: "Optional[str | os.PathLike[str]]" = None,
    *,
    report_path: "Optional[str | os.PathLike[str]]" = None,
    carve: bool = False,
    history: bool = False,
    provenance: bool = False,
    as_of: Optional[int] = None,
    case: Optional[str] = None,
    examiner: Optional[str] = None,
    progress: Optional[Callable[[dict[str, Any]], Any]] = None,
) -> LossReport:
    """Recovers every row still in ``src`` into the new database ``dest`` (which must not
    exist), and writes the loss report beside it (``dest + ".report.json"``, or
    ``report_path``; ``report`` is its older name).

    ``allow_partial`` commits the output even when rows are missing. ``profile`` is
    ``auto``, ``none``, ``agent``, ``chroma``, a catalogue name or a profile file's path.
    ``carve`` keeps the deleted records still on disk (``salvage_carved``), ``history``
    every version of every row the logs hold (``salvage_history``); ``provenance`` what
    every row is and where it was read (``salvage_provenance``: page, cell offset, log
    frame, file offset) and a view per table of its live, rebuilt, carved and logged rows
    together (``salvage_rows_TABLE``); ``as_of`` recovers the
    database as it was after that commit of its write-ahead log. ``case`` and ``examiner``
    are written into the report's ``run``.

    ``progress``, a callable, is given each step as a dict: ``{"kind": "stage", "stage":
    "recovering `messages`"}``, ``{"kind": "read", "pages", "of", "rows"}`` (the rows read
    from the file's tables, every few hundred pages), ``{"kind": "surveyed", "steps",
    "of"}``, ``{"kind": "finished", "work"}``; counts only grow. It may be called from
    another thread. An exception it raises stops the run.

    Ctrl-C (or any signal whose handler raises) stops the run at its next stage or within
    a few hundred pages: nothing is committed, the partial output is removed, and the
    exception (``KeyboardInterrupt``) is raised here.

    Raises ``Refused`` for a request refused before anything was created,
    ``LossDetected`` when rows are missing and ``allow_partial`` is false (the output is
    withheld), ``NotVerified`` when the output must not be used, ``SalvageError`` when
    the run could not go on. Each carries ``path`` and ``hint`` (or ``None``)."""
    chosen = report_path if report_path is not None else report
    outcome, text, report_path_, incomplete = _pythonic(
        _salvage.recover,
        os.fspath(src),
        os.fspath(dest),
        None if chosen is None else os.fspath(chosen),
        allow_partial,
        profile,
        carve,
        history,
        as_of,
        case,
        examiner,
        progress,
        provenance,
    )
    report_path = report_path_
    result = _report(outcome, text, str(dest), incomplete, report_path)
    if outcome == "withheld":
        raise LossDetected(result)
    if outcome == "not_verified":
        raise NotVerified(result)
    return result


def commit(
    incomplete: str, report: Optional[str] = None, examiner: Optional[str] = None
) -> LossReport:
    """Commits an output a recovery withheld (``LossDetected.report.incomplete``), accepting
    the loss its report records, without running the recovery again (``salvage commit``):
    refused (``Refused``) unless the file is the one its run verified and SQLite's
    integrity check passes on it again. The report is rewritten to say so, and who
    accepted the loss (``examiner``) with it."""
    outcome, text, report_path, incomplete = _pythonic(
        _salvage.commit,
        str(incomplete), None if report is None else str(report), examiner
    )
    dest = str(incomplete)[: -len(".incomplete")]
    return _report(outcome, text, dest, incomplete, report_path)


def _report(outcome: str, text: str, dest: str, incomplete: str, report_path: str) -> LossReport:
    raw: dict[str, Any] = json.loads(text)
    flags = raw["flags"]
    return LossReport(
        outcome=outcome,
        complete=flags["complete"],
        partial=flags["partial"],
        loss_detected=flags["loss_detected"],
        verified=flags["verified"],
        committed=raw["output"]["committed"],
        dest=dest,
        incomplete=incomplete,
        report_path=report_path,
        loss=list(raw["evidence"]["loss"]),
        tables=[TableReport._of(t) for t in raw["tables"]],
        raw=raw,
    )


def export_chroma(path: str, collection: Optional[str] = None) -> Iterator[dict[str, Any]]:
    """The embeddings of a recovered Chroma store, one dict each, ready to upsert again:
    id, collection, document, typed metadata, and whether the row was reconstructed or
    rebuilt in part (the lines of ``salvage export``). The store is opened when this is
    called, so an error opening it is raised here, not at the first iteration; its lines are
    read as they are asked for, a few hundred ahead, so memory stays flat whatever its
    size."""
    lines = _pythonic(_salvage.export_chroma, os.fspath(path), collection)
    return (json.loads(line) for line in lines)


def export_xlsx(
    db: "str | os.PathLike[str]", to: "str | os.PathLike[str]", table: Optional[str] = None
) -> dict[str, Any]:
    """Writes a recovered database (or its ``table``) as a workbook to the new file ``to``
    (``salvage export --format xlsx``): a sheet per table, its rowid, its columns and
    ``salvage_status`` (``recovered``, ``placeholder``, ``partial``, ``damaged field``).
    Returns ``{"tables": {table: rows}, "cut": n, "big_integers": n}``: values longer than
    a cell's 32,767 characters are cut (``cut`` counts them: the workbook is then not the
    database), integers past 2^53 written as text; a damaged ``db`` is refused."""
    tables, cut, big = _pythonic(_salvage.export_xlsx, os.fspath(db), os.fspath(to), table)
    return {"tables": dict(tables), "cut": cut, "big_integers": big}


def timeline(path: str) -> Iterator[dict[str, Any]]:
    """The events of a database's stored times, one dict each with the columns of
    ``salvage timeline``'s CSV (Timesketch's ``message``, ``datetime``, ``timestamp``,
    ``timestamp_desc``, then ``table``, ``rowid``, ``column``, ``value``, ``epoch``,
    ``source``: a live row, a carved record or a log version, ``plausible``, ``time_column``, ``application``), all
    text as the CSV holds them. The database is opened when this is called (an error is
    raised here); events are read as they are asked for."""
    return _events(_pythonic(_salvage.timeline, os.fspath(path)))


def _events(records: Iterator[str]) -> Iterator[dict[str, Any]]:
    header: Optional[list] = None
    for record in records:
        row = next(csv.reader([record]))
        if header is None:
            header = row
            continue
        yield dict(zip(header, row))


@dataclass
class ScanEntry:
    """One database (or lone log) of a scan, as ``OUT/scan.json`` lists it
    (``docs/cli.md``): ``outcome`` is ``complete``, ``partial``, ``withheld``,
    ``not_verified``, ``triaged`` or ``failed``; ``output`` and ``report`` are relative to
    the scan's folder; ``raw`` holds every field."""

    path: str
    relative: str
    kind: str
    verdict: str
    outcome: str
    loss: bool
    rows: Optional[int]
    applications: list[str]
    output: Optional[str]
    report: Optional[str]
    error: Optional[str]
    raw: dict[str, Any] = field(repr=False)

    @staticmethod
    def _of(raw: dict[str, Any]) -> "ScanEntry":
        return ScanEntry(
            path=raw["path"],
            relative=raw["relative"],
            kind=raw["kind"],
            verdict=raw["verdict"],
            outcome=raw["outcome"],
            loss=raw["loss"],
            rows=raw["rows"],
            applications=list(raw["applications"]),
            output=raw["output"],
            report=raw["report"],
            error=raw["error"],
            raw=raw,
        )


def scan(
    sources: list[Any],
    out: str,
    jobs: int = 0,
    allow_partial: bool = False,
    carve: bool = False,
    history: bool = False,
    triage_only: bool = False,
) -> Iterator[ScanEntry]:
    """Finds every SQLite database under ``sources`` (folders, files, ``.tar``,
    ``.tar.gz`` and ``.zip`` archives) by its content, triages and recovers each into the
    folder ``out`` (new, or an earlier scan's, which is resumed), ``jobs`` at once
    (0: one per core), and yields each database's entry as it is done (``salvage
    scan``). ``out/scan.json`` holds the summary once the last one is yielded. A request
    refused (``Refused``) or a failure writing ``out`` is raised at the iteration that
    meets it; one bad database is an entry of outcome ``failed``, never an error."""
    lines = _salvage.scan(
        [str(s) for s in sources], str(out), jobs, allow_partial, carve, history, triage_only
    )
    for line in lines:
        yield ScanEntry._of(json.loads(line))
