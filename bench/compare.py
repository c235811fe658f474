#!/usr/bin/env python3
"""Compare `salvage recover` with SQLite's own `.recover` on the same damaged fixtures.

For each case it builds the healthy fixture and a damaged copy (with `make-fixture`), runs
both tools on the damaged copy in the same run, and counts, per table, the rows each
output holds in the right table with exactly the original values, the rows placed in
`lost_and_found`, and rows that match no original row (garbage or invented values).

    bench/compare.py                 # all cases
    bench/compare.py zeroed-interior # cases whose name contains the word
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REF = os.path.join(ROOT, "..", "shared", "tools", "sqlite-ref")


def build():
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "salvage", "-p", "fixtures", "--bins"],
                   cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "release")


def btree_pages(db, table):
    """Pages of a table's b-tree from the healthy file, via dbstat in sqlite-ref."""
    out = subprocess.run([REF, "-readonly", db,
                          f"SELECT pageno, pagetype FROM dbstat WHERE name = '{table}' ORDER BY pageno"],
                         capture_output=True, text=True, check=True).stdout
    pages = {}
    for line in out.split():
        no, kind = line.split("|")
        pages.setdefault(kind, []).append(int(no))
    return pages


def cases(bin_dir, work):
    """(name, fixture, damage specs computed from the healthy file)."""
    def healthy(fixture):
        path = os.path.join(work, f"healthy-{fixture}.db")
        if not os.path.exists(path):
            subprocess.run([os.path.join(bin_dir, "make-fixture"), fixture, path], check=True, capture_output=True)
        return path

    h = healthy("agent-4096-utf8")
    msg = btree_pages(h, "messages")
    yield "zeroed-leaf", "agent-4096-utf8", [f"zero-page:{msg['leaf'][3]}"]
    yield "random-leaf", "agent-4096-utf8", [f"random-page:{msg['leaf'][7]}:9"]
    sess = btree_pages(h, "sessions")
    yield "zeroed-sessions", "agent-4096-utf8", [f"zero-page:{sess['leaf'][0]}"]
    yield "overflow-break", "agent-4096-utf8", ["overflow-break:messages"]
    yield "page-size-zeroed", "agent-4096-utf8", ["header-page-size:0"]
    healthy("agent-512-utf8")
    yield "page-one-zeroed", "agent-512-utf8", ["zero-page:1"]
    d = healthy("agent-512-deep")
    deep = btree_pages(d, "messages")
    yield "zeroed-interior", "agent-512-deep", [f"zero-page:{deep['internal'][1]}"]
    yield "zeroed-interiors", "agent-512-deep", [f"zero-page:{p}" for p in deep["internal"][1:4]]
    yield "zeroed-range", "agent-512-deep", [f"zero-pages:{deep['leaf'][40]}-{deep['leaf'][40] + 30}"]
    yield "truncated", "agent-512-deep", [f"truncate:{os.path.getsize(d) * 6 // 10 // 512 * 512}"]
    pages = os.path.getsize(d) // 512
    yield "one-percent-zeroed", "agent-512-deep", [f"zero-page:{p}" for p in range(3, pages, 97)]
    v = healthy("vector-4096-utf8")
    emb = btree_pages(v, "embeddings")
    yield "vector-embeddings-leaf", "vector-4096-utf8", [f"zero-page:{emb['leaf'][1]}"]
    g = healthy("generic-512-utf16be")
    kv = btree_pages(g, "kv")
    yield "without-rowid-leaf", "generic-512-utf16be", [f"zero-page:{(kv.get('leaf') or kv['internal'])[1]}"]


def rows(path, table):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
        wr = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
        without_rowid = wr and wr[0] and "WITHOUT ROWID" in wr[0].upper()
        q = f'SELECT {"NULL" if without_rowid else "rowid"}, * FROM "{table}"'
        return [tuple(r) for r in con.execute(q)], cols
    except sqlite3.DatabaseError:
        return [], []
    finally:
        con.close()


def tables(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    except sqlite3.DatabaseError:
        return []
    finally:
        con.close()


def score(healthy, out):
    """Per table: rows in the right table with the original values; garbage rows."""
    result = {}
    for t in tables(healthy):
        if t.startswith("lost_and_found"):
            continue
        want, _ = rows(healthy, t)
        got, _ = rows(out, t)
        want_set = {}
        for r in want:
            want_set[r] = want_set.get(r, 0) + 1
        right = 0
        for r in got:
            if want_set.get(r, 0) > 0:
                want_set[r] -= 1
                right += 1
        result[t] = (len(want), right, len(got) - right)
    lf = sum(len(rows(out, t)[0]) for t in tables(out) if t.startswith("lost_and_found"))
    return result, lf


def main():
    only = sys.argv[1] if len(sys.argv) > 1 else ""
    bin_dir = build()
    salvage = os.path.join(bin_dir, "salvage")
    subprocess.run([REF, "-version"], check=True, capture_output=True)
    work = tempfile.mkdtemp(prefix="salvage-compare-")
    print(f"{'case':<24} {'table':<20} {'original':>8} {'salvage':>8} {'.recover':>8} {'garbage s/r':>12}"
          f" {'l&f s/r':>9} {'time s/r (s)':>14}")
    worse = 0
    for name, fixture, damage in cases(bin_dir, work):
        if only not in name:
            continue
        healthy = os.path.join(work, f"healthy-{fixture}.db")
        damaged = os.path.join(work, f"{name}.db")
        args = [os.path.join(bin_dir, "make-fixture"), fixture, damaged]
        for d in damage:
            args += ["--damage", d]
        subprocess.run(args, check=True, capture_output=True)
        out_s = os.path.join(work, f"{name}.salvage.db")
        t0 = time.monotonic()
        subprocess.run([salvage, "recover", damaged, "-o", out_s, "--allow-partial"], capture_output=True)
        ts = time.monotonic() - t0
        out_r = os.path.join(work, f"{name}.recover.db")
        t0 = time.monotonic()
        dump = subprocess.run([REF, damaged, ".recover"], capture_output=True).stdout
        subprocess.run([REF, out_r], input=dump, capture_output=True)
        tr = time.monotonic() - t0
        s, s_lf = score(healthy, out_s)
        r, r_lf = score(healthy, out_r)
        first = True
        for t, (orig, right_s, garbage_s) in s.items():
            right_r, garbage_r = r.get(t, (orig, 0, 0))[1:]
            mark = "  WORSE" if right_s < right_r else ""
            worse += right_s < right_r
            lead = name if first else ""
            extra = f" {s_lf:>4}/{r_lf:<4} {ts:>6.2f}/{tr:<6.2f}" if first else ""
            print(f"{lead:<24} {t:<20} {orig:>8} {right_s:>8} {right_r:>8} {garbage_s:>6}/{garbage_r:<5}{extra}{mark}")
            first = False
    shutil.rmtree(work)
    print(f"\ncases where salvage recovered fewer rows into the right table than .recover: {worse}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
