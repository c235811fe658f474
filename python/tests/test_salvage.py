"""The Python package, installed from its wheel, on databases written by SQLite and
damaged at byte level by the project's `make-fixture` (its path in SALVAGE_MAKE_FIXTURE,
or found under target/)."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import salvage

ROOT = Path(__file__).resolve().parents[2]


def make_fixture_binary() -> str:
    given = os.environ.get("SALVAGE_MAKE_FIXTURE")
    if given:
        return given
    for profile in ("debug", "release"):
        p = ROOT / "target" / profile / "make-fixture"
        if p.exists():
            return str(p)
    found = shutil.which("make-fixture")
    if not found:
        pytest.skip("no make-fixture binary (cargo build -p fixtures)")
    return found


def fixture(tmp: Path, name: str, *damage: str) -> Path:
    out = tmp / f"{name}-{len(list(tmp.iterdir()))}.db"
    args = [make_fixture_binary(), name, str(out)]
    for d in damage:
        args += ["--damage", d]
    subprocess.run(args, check=True, capture_output=True)
    return out


def root_page(db: Path, table: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0]


def count(db: Path, table: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]


def test_inspect_gives_the_json_of_the_cli_as_a_dict(tmp_path):
    db = fixture(tmp_path, "agent-4096-utf8")
    facts = salvage.inspect(str(db), sha256=True)
    assert facts["header"]["in_use"]["page_size"] == 4096
    assert len(facts["source"]["sha256"]) == 64
    names = {t["name"] for t in facts["trees"]}
    assert {"sessions", "messages"} <= names


def test_a_healthy_store_is_recovered_complete(tmp_path):
    db = fixture(tmp_path, "agent-4096-utf8")
    dest = tmp_path / "out.db"
    report = salvage.recover(str(db), str(dest))
    assert report.outcome == "complete"
    assert report.complete and report.verified and report.committed
    assert not report.loss_detected and not report.partial
    assert Path(report.report_path).exists()
    messages = report.table("messages")
    assert messages.status == "recovered"
    assert messages.rows_in_output == count(db, "messages") == count(dest, "messages")


def test_a_damaged_agent_store_is_withheld_then_recovered_with_placeholders(tmp_path):
    clean = fixture(tmp_path, "agent-4096-utf8")
    sessions = root_page(clean, "sessions")
    db = fixture(tmp_path, "agent-4096-utf8", f"zero-page:{sessions}")

    with pytest.raises(salvage.LossDetected) as withheld:
        salvage.recover(str(db), str(tmp_path / "withheld.db"))
    report = withheld.value.report
    assert report.loss_detected and not report.committed
    assert Path(report.incomplete).exists()
    assert not (tmp_path / "withheld.db").exists()
    assert any("sessions" in line for line in report.loss)

    # Accepted without a rerun: the very file, committed, the report saying so.
    accepted = salvage.commit(report.incomplete, examiner="J. Doe")
    assert accepted.committed and accepted.loss_detected
    assert accepted.raw["output"]["accepted"]["utc"].endswith("Z")
    assert accepted.raw["output"]["accepted"]["examiner"] == "J. Doe"
    assert (tmp_path / "withheld.db").exists() and not Path(report.incomplete).exists()
    with pytest.raises(salvage.Refused):
        salvage.commit(report.incomplete)

    dest = tmp_path / "partial.db"
    report = salvage.recover(str(db), str(dest), allow_partial=True)
    assert report.outcome == "partial_committed"
    assert report.partial and report.loss_detected and report.committed
    # Every message survives; the lost sessions are registered placeholders.
    assert report.table("messages").rows_written == count(clean, "messages")
    s = report.table("sessions")
    assert s.placeholders > 0 and s.rows_written == 0
    assert s.rows_in_output == count(dest, "sessions") == s.placeholders
    with sqlite3.connect(f"file:{dest}?mode=ro", uri=True) as c:
        registered = c.execute(
            "SELECT count(*) FROM salvage_placeholders WHERE tbl = 'sessions'"
        ).fetchone()[0]
    assert registered == s.placeholders


def test_refusals_are_typed_and_create_nothing(tmp_path):
    db = fixture(tmp_path, "agent-4096-utf8")
    taken = tmp_path / "taken.db"
    taken.write_bytes(b"someone else's")
    with pytest.raises(salvage.Refused, match="already exists") as refused:
        salvage.recover(str(db), str(taken))
    # A traceback names the exceptions as they are imported.
    assert refused.type.__module__ == "salvage"
    assert salvage.SalvageError.__module__ == "salvage"
    assert taken.read_bytes() == b"someone else's"
    assert not (tmp_path / "taken.db.report.json").exists()

    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("hello " * 100)
    with pytest.raises(salvage.SalvageError):
        salvage.recover(str(not_a_db), str(tmp_path / "x.db"))
    assert not (tmp_path / "x.db").exists()


def test_a_recovered_chroma_store_exports_dicts_ready_to_upsert(tmp_path):
    db = fixture(tmp_path, "vector-4096-utf8")
    dest = tmp_path / "chroma.sqlite3"
    salvage.recover(str(db), str(dest))
    lines = list(salvage.export_chroma(str(dest)))
    assert len(lines) == count(dest, "embeddings")
    first = lines[0]
    assert {"id", "collection", "document", "metadata"} <= set(first)


def test_a_chroma_export_stopped_early_lets_go_and_one_read_whole_gives_every_line(tmp_path):
    db = fixture(tmp_path, "vector-4096-utf8")
    dest = tmp_path / "chroma.sqlite3"
    salvage.recover(str(db), str(dest))
    embeddings = count(dest, "embeddings")
    # More lines than the export reads ahead: its writer waits on a full channel.
    assert embeddings > 256
    for _ in range(3):
        lines = salvage.export_chroma(str(dest))
        assert "id" in next(lines)
        del lines
    ids = [line["internal_id"] for line in salvage.export_chroma(str(dest))]
    assert len(ids) == embeddings and ids == sorted(ids)


def test_a_chroma_export_of_what_is_not_a_store_is_refused_when_called(tmp_path):
    db = fixture(tmp_path, "agent-4096-utf8")
    with pytest.raises(salvage.SalvageError):
        salvage.export_chroma(str(db))


def test_a_damaged_store_is_refused_before_its_first_line(tmp_path):
    clean = fixture(tmp_path, "vector-4096-utf8")
    db = fixture(tmp_path, "vector-4096-utf8", f"zero-page:{root_page(clean, 'embedding_metadata')}")
    with pytest.raises(salvage.Refused, match="is damaged") as refused:
        salvage.export_chroma(str(db))
    assert "salvage.recover(" in refused.value.hint


def test_a_timeline_gives_each_stored_time_as_an_event(tmp_path):
    # Chromium's history, its times in microseconds since 1601, written by make-fixture
    # from the catalogue entry; one title holds a line break and quotes.
    entry = ROOT / "recovery" / "profiles" / "catalogue" / "chromium-history.json"
    db = tmp_path / "History"
    subprocess.run(
        [make_fixture_binary(), "--application", str(entry), str(db)],
        check=True,
        capture_output=True,
    )
    with sqlite3.connect(db) as c:
        c.execute("""UPDATE urls SET title = 'a "quoted"' || char(10) || 'title' WHERE id = 1""")
        times = c.execute("SELECT count(*) FROM visits WHERE visit_time > 0").fetchone()[0]
    events = list(salvage.timeline(str(db)))
    visits = [e for e in events if e["table"] == "visits" and e["column"] == "visit_time"]
    assert len(visits) == times
    assert all(e["datetime"].endswith("+00:00") and e["source"] == "live row" for e in visits)
    assert {e["epoch"] for e in visits} == {"webkit_us"}
    url = [e for e in events if e["table"] == "urls" and e["rowid"] == "1"]
    assert url and any('a "quoted"\ntitle' in e["message"] for e in url)
    with pytest.raises(salvage.SalvageError):
        salvage.timeline(str(tmp_path / "missing.db"))


def test_a_scan_yields_each_database_as_it_is_done_and_its_summary_agrees(tmp_path):
    src = tmp_path / "extraction"
    (src / "deep" / "er").mkdir(parents=True)
    healthy = fixture(tmp_path, "agent-4096-utf8")
    damaged = fixture(tmp_path, "agent-4096-utf8", "zero-pages:1-1")
    shutil.move(str(healthy), src / "state.db")
    shutil.move(str(damaged), src / "deep" / "er" / "blob.bin")
    (src / "notes.txt").write_text("not a database")
    out = tmp_path / "case"
    entries = list(salvage.scan([src], out, jobs=2, allow_partial=True))
    by_path = {e.relative: e for e in entries}
    assert set(by_path) == {"state.db", "deep/er/blob.bin"}
    assert by_path["state.db"].outcome == "complete" and not by_path["state.db"].loss
    assert by_path["deep/er/blob.bin"].kind == "header_destroyed"
    assert by_path["deep/er/blob.bin"].outcome == "partial"
    assert by_path["deep/er/blob.bin"].rows > 0
    summary = json.loads((out / "scan.json").read_text())
    assert sorted(e["relative"] for e in summary["entries"]) == sorted(by_path)
    assert summary["skipped_files"] == 1
    # Run again: every database kept, by hash.
    again = list(salvage.scan([src], out))
    assert {e.relative for e in again} == set(by_path)
    assert json.loads((out / "scan.json").read_text())["resumed"] == 2


def test_a_scan_refused_creates_nothing(tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "mine.txt").write_text("mine")
    with pytest.raises(salvage.Refused):
        list(salvage.scan([tmp_path / "absent"], busy))
    assert [p.name for p in busy.iterdir()] == ["mine.txt"]


def test_a_scan_on_a_dask_cluster_writes_the_summary_one_machine_writes(tmp_path):
    pytest.importorskip("distributed")
    # A folder and a tar of the same databases: healthy, damaged, a header destroyed,
    # in folders, beside other files.
    src = tmp_path / "extraction"
    (src / "apps" / "agent").mkdir(parents=True)
    moves = [
        (fixture(tmp_path, "agent-4096-utf8"), src / "apps" / "agent" / "state.db"),
        (fixture(tmp_path, "vector-4096-utf8"), src / "apps" / "chroma.sqlite3"),
        (fixture(tmp_path, "agent-4096-utf8", "zero-pages:1-1"), src / "blob.bin"),
        (fixture(tmp_path, "generic-1024-autovacuum", "zero-page:3"), src / "apps" / "old.db"),
    ]
    for made, to in moves:
        shutil.move(str(made), to)
    for i in range(20):
        (src / f"note-{i}.txt").write_text("not a database " * i)
    archive = tmp_path / "phone.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(src, arcname="phone")
    sources = [str(src), str(archive)]

    alone = tmp_path / "alone"
    list(salvage.scan(sources, alone, jobs=2, allow_partial=True))
    spread = tmp_path / "spread"
    example = ROOT / "python" / "examples" / "dask_scan.py"
    run = subprocess.run(
        [sys.executable, str(example), *sources, "-o", str(spread), "--workers", "2"]
        + ["--allow-partial"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 3, run.stderr  # the damaged databases are loss
    assert "8 databases" in run.stdout, run.stdout

    def summary(out: Path) -> dict:
        s = json.loads((out / "scan.json").read_text())
        for e in s["entries"]:
            # A report holds the time of its run: its hash is each run's own.
            e.pop("report_sha256")
        return s

    assert summary(spread) == summary(alone)
    for e in summary(spread)["entries"]:
        if e["output"]:
            assert (spread / e["output"]).exists()
    assert not (spread / ".scan" / "spool").exists()
    # The tar's members' reports name the member they came from.
    member = next(e for e in summary(spread)["entries"] if e["path"].endswith("!/phone/blob.bin"))
    report = json.loads((spread / member["report"]).read_text())
    assert report["run"]["archive_member"]["member"] == "phone/blob.bin"
    assert report["run"]["archive_member"]["archive"] == str(archive)


def big_store(tmp: Path) -> Path:
    out = tmp / "big.db"
    subprocess.run(
        [make_fixture_binary(), "--big", str(out), str(48 << 20)], check=True, capture_output=True
    )
    return out


def test_a_progress_callback_is_given_growing_counts(tmp_path):
    db = big_store(tmp_path)
    events = []
    report = salvage.recover(db, tmp_path / "out.db", progress=events.append)
    assert report.complete
    reads = [e for e in events if e["kind"] == "read"]
    assert len(reads) >= 3, events[:5]
    rows = [e["rows"] for e in reads]
    assert rows == sorted(rows) and rows[-1] > rows[0]
    assert all(e["pages"] <= e["of"] for e in reads)
    stages = [e["stage"] for e in events if e["kind"] == "stage"]
    assert any(s.startswith("recovering") for s in stages) and "verifying the output" in stages


def test_an_interrupt_from_another_thread_stops_the_run_with_nothing_committed(tmp_path):
    import _thread
    import threading

    import time

    db = big_store(tmp_path)
    dest = tmp_path / "out.db"

    # Once the run has begun: its progress goes to a list's append, a method of C that
    # runs no Python code, so that the run itself must look at the interpreter's signals.
    events = []

    def interrupt():
        deadline = time.monotonic() + 60
        while not events and time.monotonic() < deadline:
            time.sleep(0.001)
        _thread.interrupt_main()

    # A process started in the background (a CI runner's `nohup`, `cmd &`) inherits
    # SIGINT ignored, and Python then leaves it so: Ctrl-C's handler is put in place here.
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            salvage.recover(db, dest, progress=events.append)
    finally:
        signal.signal(signal.SIGINT, before)
    for left in ["out.db", "out.db.incomplete", "out.db.report.json"]:
        assert not (tmp_path / left).exists(), left
    # Nothing blocks the same run asked again.
    assert salvage.recover(db, dest).complete


def test_errors_carry_their_path_and_hint_in_python_words_and_pickle(tmp_path):
    import pickle

    with pytest.raises(salvage.Refused) as refused:
        salvage.recover(tmp_path / "absent.db", tmp_path / "out.db")
    e = refused.value
    assert e.path == str(tmp_path / "absent.db") and e.hint
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is salvage.Refused and again.hint == e.hint and again.path == e.path
    clean = fixture(tmp_path, "agent-4096-utf8")
    db = fixture(tmp_path, "agent-4096-utf8", f"zero-page:{root_page(clean, 'sessions')}")
    with pytest.raises(salvage.LossDetected) as lost:
        salvage.recover(db, tmp_path / "lost.db")
    assert lost.value.path == lost.value.report.incomplete
    kept = pickle.loads(pickle.dumps(lost.value))
    assert kept.report == lost.value.report and "salvage.commit(" in kept.hint
    # The run withheld is named as Python calls it, not as the command line does.
    with pytest.raises(salvage.Refused) as blocked:
        salvage.recover(db, tmp_path / "lost.db")
    assert "salvage.commit(" in blocked.value.hint and "salvage commit" not in blocked.value.hint
    # Every option of the command line is an argument, with its help.
    import inspect as pyinspect

    params = pyinspect.signature(salvage.recover).parameters
    for name in ["report_path", "carve", "history", "as_of", "case", "examiner", "progress"]:
        assert name in params and name in salvage.recover.__doc__, name


def test_a_program_using_the_package_passes_mypy_strict():
    mypy = pytest.importorskip("mypy.api")
    example = ROOT / "python" / "examples" / "typed_use.py"
    out, err, status = mypy.run(["--strict", "--no-incremental", str(example)])
    assert status == 0, out + err


def test_a_workbook_opens_in_openpyxl_with_every_row_and_its_status(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    clean = fixture(tmp_path, "agent-4096-utf8")
    db = fixture(tmp_path, "agent-4096-utf8", f"zero-page:{root_page(clean, 'sessions')}")
    dest = tmp_path / "out.db"
    salvage.recover(db, dest, allow_partial=True)
    book_path = tmp_path / "case.xlsx"
    written = salvage.export_xlsx(dest, book_path)
    book = openpyxl.load_workbook(book_path, read_only=True)
    assert "sessions" in book.sheetnames and "messages" in book.sheetnames
    for table in ["sessions", "messages"]:
        rows = list(book[table].iter_rows(values_only=True))
        assert rows[0][0] == "rowid" and rows[0][-1] == "salvage_status"
        assert len(rows) - 1 == count(dest, table) == written["tables"][table]
    statuses = [r[-1] for r in list(book["sessions"].iter_rows(values_only=True))[1:]]
    with sqlite3.connect(f"file:{dest}?mode=ro", uri=True) as c:
        placeholders = c.execute(
            "SELECT count(*) FROM salvage_placeholders WHERE tbl = 'sessions'"
        ).fetchone()[0]
    assert placeholders > 0 and statuses.count("placeholder") == placeholders
    with pytest.raises(salvage.Refused):
        salvage.export_xlsx(dest, book_path)


def test_provenance_names_each_rows_status_and_place(tmp_path):
    clean = fixture(tmp_path, "agent-4096-utf8")
    sessions = root_page(clean, "sessions")
    db = fixture(tmp_path, "agent-4096-utf8", f"zero-page:{sessions}")
    dest = tmp_path / "out.db"
    report = salvage.recover(str(db), str(dest), allow_partial=True, carve=True, provenance=True)
    views = report.raw["provenance"]["views"]
    assert views["messages"] == "salvage_rows_messages"
    page_size = report.raw["geometry"]["page_size"]
    data = db.read_bytes()
    with sqlite3.connect(f"file:{dest}?mode=ro", uri=True) as c:
        statuses = dict(c.execute(
            "SELECT salvage_status, count(*) FROM salvage_rows_sessions GROUP BY 1"
        ).fetchall())
        assert statuses == {"placeholder": count(dest, "sessions")}
        rows = c.execute(
            "SELECT salvage_rowid, salvage_page, salvage_offset FROM salvage_rows_messages "
            "WHERE salvage_status = 'live'"
        ).fetchall()
    assert len(rows) == count(clean, "messages")
    for rowid, page, offset in rows:
        at = (page - 1) * page_size + offset
        # A table leaf cell: its payload's size, then its rowid (varints; both small here).
        n = 1
        while data[at + n - 1] & 0x80:
            n += 1
        key = 0
        for b in data[at + n : at + n + 9]:
            key = (key << 7) | (b & 0x7F)
            if not b & 0x80:
                break
        assert key == rowid
