#!/usr/bin/env bash
# Speed of `salvage repair` against the plain recovery it wraps, in one run, on the shared
# generator's ~1.9 GB store (`../shared/tools/bench/mkbig.py`, 2 million messages) with 1 %
# of its pages zeroed (`zero_pages.py`), as `bench/speed.py` builds it.
#
#   bench/repair.sh
#   BENCH_MESSAGES=500000 bench/repair.sh
#   BENCH_RUNS=5 bench/repair.sh     # best of 5 of each (default 3)
#
# A repair changes the file at its path, so each run repairs a fresh copy of the damaged
# store (made before the clock starts, then `sync`, so that the page cache's writeback of
# the copy does not land on the run). Prints wall time, processor time and max RSS of
# `recover` and of `repair`, taken in turns, the best of each, the stages of the best
# repair from its own timing lines, and the ratio of the best times (goal, issue #38: the
# repair at most 1.3x the recovery). Wall times on a shared virtual machine vary by a
# quarter from run to run: compare best with best.
set -euo pipefail
cd "$(dirname "$0")/.."
messages=${BENCH_MESSAGES:-2000000}
shared=../shared/tools
mkdir -p bench/out
cargo build --release --quiet -p salvage
healthy=bench/out/hermes-$messages.db
damaged=bench/out/hermes-$messages-zero1pct.db
if [ ! -f "$healthy" ]; then
  python3 "$shared/bench/mkbig.py" "$healthy.tmp" "$messages" > /dev/null
  mv "$healthy.tmp" "$healthy"
fi
if [ ! -f "$damaged" ]; then
  cp "$healthy" "$damaged.tmp"
  python3 "$shared/bench/zero_pages.py" "$damaged.tmp" 0.01 > /dev/null
  mv "$damaged.tmp" "$damaged"
fi
work=bench/out/repair
rm -rf "$work"
mkdir -p "$work"
size=$(stat -c %s "$damaged")
echo "store: $damaged ($size bytes)"

timed() { # label, command...
  local label=$1
  shift
  sync
  # The files the last run removed are trimmed as they are freed (this machine's file
  # system is mounted with `discard`): each run waits for that, not only the repair.
  sleep 4
  /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" > /dev/null 2> "$work/$label.err" || true
  read -r wall user sys rss < <(tail -n 1 "$work/time.txt")
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
  echo "  $label: ${wall} s wall, ${cpu} s processor, max RSS $((rss / 1024)) MiB"
  last_wall=$wall
}

best_recover=""
best_repair=""
cat "$damaged" > /dev/null
for run in $(seq "${BENCH_RUNS:-3}"); do
  echo "run $run"
  timed recover ./target/release/salvage recover "$damaged" -o "$work/recovered.db" --allow-partial -q
  rm -f "$work/recovered.db" "$work/recovered.db.report.json"
  if [ -z "$best_recover" ] || awk -v a="$last_wall" -v b="$best_recover" 'BEGIN { exit !(a < b) }'; then
    best_recover=$last_wall
  fi
  rm -rf "$work/archive" "$work/archive.report.json" "$work/store.db"
  cp "$damaged" "$work/store.db"
  cat "$work/store.db" > /dev/null
  # A file written in the last seconds is hashed again before the switch, since its
  # times could hide a write in the same tick of the clock; a damaged store waiting for
  # its repair was last written longer ago than that (the wait in `timed` covers it).
  SALVAGE_TIMINGS=1 timed repair ./target/release/salvage repair "$work/store.db" --allow-partial \
    --archive "$work/archive"
  if [ -z "$best_repair" ] || awk -v a="$last_wall" -v b="$best_repair" 'BEGIN { exit !(a < b) }'; then
    best_repair=$last_wall
    cp "$work/repair.err" "$work/best-repair.err"
  fi
done
echo "stages of the best repair:"
grep -E "^salvage: +[0-9.]+s" "$work/best-repair.err" | sed 's/^/  /' || true
echo "messages after the repair: $(../shared/tools/sqlite-ref "$work/store.db" 'SELECT count(*) FROM messages')"
echo "best: recover ${best_recover} s, repair ${best_repair} s"
awk -v r="$best_repair" -v s="$best_recover" \
  'BEGIN { printf "ratio (repair / recover): %.2f (goal: at most 1.3)\n", r / (s > 0 ? s : 1e-9) }'
rm -rf "$work"
