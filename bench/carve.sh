#!/usr/bin/env bash
# Speed of `salvage recover --carve` on a store whose free space is full of deleted rows:
# an agent's `messages` table of BENCH_ROWS rows (default 200,000) with half of them
# deleted at random (secure_delete off), against SQLite's own `.recover` in one run.
#
#   bench/carve.sh
#   BENCH_ROWS=1000000 bench/carve.sh
#
# Prints wall time and max RSS of each, and the records carved by source. Every page of
# such a store has freeblocks and unallocated space to carve, so the cost per page of the
# carver shows; the time must grow linearly with the rows.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${BENCH_ROWS:-200000}
ref=../shared/tools/sqlite-ref
mkdir -p bench/out
src=bench/out/carve-$rows.db
cargo build --release --quiet -p salvage
"$ref" -version > /dev/null
if [ ! -f "$src" ]; then
  python3 - "$src.tmp" "$rows" <<'PY'
import random, sqlite3, sys
path, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(20261201)
words = "the a tool database page record salvage deleted free block carve".split()
c = sqlite3.connect(path)
c.execute("PRAGMA secure_delete=OFF")
c.execute("CREATE TABLE messages(id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, "
          "content TEXT, created REAL)")
c.executemany("INSERT INTO messages VALUES(?,?,?,?,?)",
              ((i, f"s{i % 50}", rng.choice(["user", "assistant"]),
                " ".join(rng.choice(words) for _ in range(rng.randint(3, 40))), 1.7e9 + i)
               for i in range(1, n + 1)))
c.commit()
c.executemany("DELETE FROM messages WHERE id=?", ((i,) for i in rng.sample(range(1, n + 1), n // 2)))
c.commit()
c.close()
PY
  mv "$src.tmp" "$src"
fi
echo "source: $src ($(stat -c %s "$src") bytes, $rows rows, half deleted)"
rm -f bench/out/carved.db bench/out/carved.db.report.json bench/out/carved-ref.db
/usr/bin/time -f "%e %M" -o bench/out/time-carve.txt \
  ./target/release/salvage recover "$src" -o bench/out/carved.db --carve > /dev/null 2>&1 || true
read -r s_secs s_rss < <(tail -n 1 bench/out/time-carve.txt)
/usr/bin/time -f "%e %M" -o bench/out/time-carve-ref.txt \
  bash -c "'$ref' '$src' .recover | '$ref' bench/out/carved-ref.db" > /dev/null 2>&1 || true
read -r r_secs r_rss < <(tail -n 1 bench/out/time-carve-ref.txt)
echo "salvage --carve: ${s_secs}s, max RSS $((s_rss / 1024)) MiB"
"$ref" bench/out/carved.db "SELECT '  ' || source || ': ' || count(*) FROM salvage_carved GROUP BY source"
echo "sqlite-ref .recover: ${r_secs}s, max RSS $((r_rss / 1024)) MiB"
awk -v r="$r_secs" -v s="$s_secs" 'BEGIN { printf "ratio (reference / salvage): %.1f\n", r / (s > 0 ? s : 1e-9) }'
