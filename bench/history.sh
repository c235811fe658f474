#!/usr/bin/env bash
# Speed and memory of `salvage recover --history` on a busy agent store: a main file of
# about BENCH_BYTES (default 200 MB, `make-fixture --big`) with a write-ahead log of
# BENCH_COMMITS commits (default 3,000) never checkpointed, each of BENCH_OPS (default 1)
# inserts, updates or deletes of messages, as an agent's store between two checkpoints
# holds.
#
#   bench/history.sh
#   BENCH_BYTES=2000000000 BENCH_COMMITS=10000 BENCH_OPS=40 bench/history.sh   # ~1 GB log
#
# Prints, each after a `sync`, wall time, processor time and max RSS of `recover` (the
# last state), `recover --history` (every version of every row) and `inspect` (which
# prints the log's timeline of commits), and the log's size and the versions written.
set -euo pipefail
cd "$(dirname "$0")/.."
bytes=${BENCH_BYTES:-200000000}
commits=${BENCH_COMMITS:-3000}
ops=${BENCH_OPS:-1}
mkdir -p bench/out
dir=bench/out/history-$bytes-$commits-$ops
cargo build --release --quiet -p salvage -p fixtures --bins
if [ ! -f "$dir/store.db-wal" ]; then
  rm -rf "$dir" && mkdir -p "$dir/work"
  ./target/release/make-fixture --big "$dir/work/store.db" "$bytes" > /dev/null
  # The commits, written by SQLite; the files copied while the connection still holds the
  # log open (closing it would checkpoint).
  python3 - "$dir/work/store.db" "$dir" "$commits" "$ops" <<'PY'
import random, shutil, sqlite3, sys
path, out, n, ops = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(20261204)
c = sqlite3.connect(path, isolation_level=None)
c.execute("PRAGMA journal_mode=WAL")
c.execute("PRAGMA wal_autocheckpoint=0")
top = c.execute("SELECT max(id) FROM messages").fetchone()[0]
sessions = [r[0] for r in c.execute("SELECT id FROM sessions")]
for i in range(n):
    c.execute("BEGIN")
    for k in range(ops):
        kind = (i * ops + k) % 3
        if kind == 0:
            top += 1
            c.execute("INSERT INTO messages(id, session_id, role, content, timestamp) "
                      "VALUES (?, ?, 'user', ?, ?)",
                      (top, rng.choice(sessions), "message %d " % top * rng.randint(1, 30),
                       1_760_000_000 + i))
        elif kind == 1:
            c.execute("UPDATE messages SET content = content || ' (edited)' WHERE id = ?",
                      (rng.randint(1, top),))
        else:
            c.execute("DELETE FROM messages WHERE id = ?", (rng.randint(1, top),))
    c.execute("COMMIT")
shutil.copy(path, out + "/store.db")
shutil.copy(path + "-wal", out + "/store.db-wal")
PY
  rm -rf "$dir/work"
fi
echo "store: $(stat -c %s "$dir/store.db") bytes, log: $(stat -c %s "$dir/store.db-wal") bytes, $commits commits of $ops changes"
run() {
  local label=$1
  shift
  rm -rf "$dir/out" && mkdir -p "$dir/out"
  sync
  /usr/bin/time -f "%e %U %S %M" -o "$dir/time.txt" "$@" > /dev/null 2>&1 || true
  read -r wall user sys rss < "$dir/time.txt"
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  printf "%-22s %6ss wall  %6ss CPU  max RSS %5d MiB\n" "$label" "$wall" "$cpu" $((rss / 1024))
}
run "recover" ./target/release/salvage recover "$dir/store.db" -o "$dir/out/plain.db" -q
run "recover --history" ./target/release/salvage recover "$dir/store.db" -o "$dir/out/history.db" --history -q
python3 - "$dir/out/history.db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("  versions written: %d, over %d steps" % (
    c.execute("SELECT count(*) FROM salvage_history").fetchone()[0],
    c.execute("SELECT count(*) FROM salvage_commits").fetchone()[0]))
PY
run "inspect" ./target/release/salvage inspect "$dir/store.db"
