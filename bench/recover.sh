#!/usr/bin/env bash
# Speed and peak memory of `salvage recover` against SQLite's own `.recover`, in one run,
# on a ~2 GB agent session store with 1 % of its pages zeroed (page 1 kept).
#
#   bench/recover.sh                      # 2 GB store under bench/out (built once)
#   BENCH_BYTES=200000000 bench/recover.sh
#
# Prints wall time, max RSS and the rows each tool put back in `messages` (and in
# lost_and_found), then the ratios. Goal: salvage at most 1/5 of the reference's wall
# time, with max RSS at most 512 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
bytes=${BENCH_BYTES:-2000000000}
ref=../shared/tools/sqlite-ref
mkdir -p bench/out
healthy=bench/out/agent-$bytes.db
damaged=bench/out/agent-$bytes-1pct.db
cargo build --release --quiet -p salvage -p fixtures --bins
"$ref" -version > /dev/null
[ -f "$healthy" ] || ./target/release/make-fixture --big "$healthy" "$bytes"
if [ ! -f "$damaged" ]; then
  cp "$healthy" "$damaged.tmp"
  python3 - "$damaged.tmp" <<'PY'
import os, random, sys
path = sys.argv[1]
size = os.path.getsize(path)
with open(path, "r+b") as f:
    f.seek(16); ps = int.from_bytes(f.read(2), "big"); ps = 65536 if ps == 1 else ps
    pages = size // ps
    rng = random.Random(20261129)
    chosen = rng.sample(range(2, pages + 1), pages // 100)
    for p in chosen:
        f.seek((p - 1) * ps); f.write(bytes(ps))
print(f"zeroed {len(chosen)} of {pages} pages", file=sys.stderr)
PY
  mv "$damaged.tmp" "$damaged"
fi
cat "$damaged" > /dev/null
echo "source: $damaged ($(stat -c %s "$damaged") bytes)"

# Each tool runs BENCH_RUNS times (default 2), alternating, each run starting with no dirty
# pages pending (sync) and no output from an earlier run; the best wall time of each counts,
# so that a hiccup of this machine's disk does not decide the ratio.
runs=${BENCH_RUNS:-2}
s_secs=""; r_secs=""; pair_ratios=""
for i in $(seq "$runs"); do
  rm -f bench/out/salvage.db bench/out/salvage.db.report.json bench/out/salvage.db.incomplete bench/out/reference.db
  sync
  /usr/bin/time -f "%e %M" -o bench/out/time-salvage.txt \
    ./target/release/salvage recover "$damaged" -o bench/out/salvage.db --allow-partial 2> bench/out/salvage.log || true
  read -r secs rss < <(tail -n 1 bench/out/time-salvage.txt)
  pair_salvage=$secs
  echo "  salvage run $i: ${secs}s, max RSS $((rss / 1024)) MiB"
  if [ -z "$s_secs" ] || awk -v a="$secs" -v b="$s_secs" 'BEGIN { exit !(a < b) }'; then s_secs=$secs; s_rss=$rss; fi
  sync
  /usr/bin/time -f "%e %M" -o bench/out/time-ref.txt \
    bash -c "'$ref' '$damaged' .recover | '$ref' bench/out/reference.db" > /dev/null 2> bench/out/reference.log || true
  read -r secs rss < <(tail -n 1 bench/out/time-ref.txt)
  echo "  sqlite-ref run $i: ${secs}s, max RSS $((rss / 1024)) MiB"
  pair_ratios="$pair_ratios $(awk -v r="$secs" -v s="$pair_salvage" 'BEGIN { printf "%.1f", r / (s > 0 ? s : 1e-9) }')"
  if [ -z "$r_secs" ] || awk -v a="$secs" -v b="$r_secs" 'BEGIN { exit !(a < b) }'; then r_secs=$secs; r_rss=$rss; fi
done

count() { python3 -c "
import sqlite3, sys
con = sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True)
n = con.execute('SELECT count(*) FROM messages').fetchone()[0]
lf = sum(con.execute(f'SELECT count(*) FROM \"{t}\"').fetchone()[0] for (t,) in con.execute(\"SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'lost_and_found%'\"))
print(n, lf)" "$1"; }
read -r s_rows s_lf < <(count bench/out/salvage.db)
read -r r_rows r_lf < <(count bench/out/reference.db)
total=$(python3 -c "import sqlite3; print(sqlite3.connect('file:$healthy?mode=ro', uri=True).execute('SELECT count(*) FROM messages').fetchone()[0])")

printf '%-22s %10s %12s %14s %16s\n' "tool (best of $runs)" "wall (s)" "max RSS MiB" "messages rows" "lost_and_found"
printf '%-22s %10s %12d %14s %16s\n' "salvage recover" "$s_secs" $((s_rss / 1024)) "$s_rows" "$s_lf"
printf '%-22s %10s %12d %14s %16s\n' "sqlite-ref .recover" "$r_secs" $((r_rss / 1024)) "$r_rows" "$r_lf"
echo "messages in the healthy store: $total"
python3 -c "print(f'wall time ratio (reference / salvage): {float($r_secs) / max(float($s_secs), 1e-9):.1f}x (goal: at least 5x)')"
# Each pair ran back to back: their ratios show how much this machine's noise moves it.
python3 -c "import statistics, sys; r = [float(x) for x in sys.argv[1:]]; print(f'ratio of each run pair: {\" \".join(f\"{x:.1f}x\" for x in r)} (median {statistics.median(r):.1f}x)')" $pair_ratios
echo "peak memory of salvage: $((s_rss / 1024)) MiB (goal: at most 512 MiB)"
