#!/usr/bin/env bash
# Throughput and peak memory of `salvage inspect` on a ~2 GB healthy agent session store.
#
#   bench/inspect.sh                 # 2 GB store under bench/out (built once, ~15 s)
#   BENCH_BYTES=500000000 bench/inspect.sh
#
# The file is read once into the page cache first, so the figure is the reader's speed,
# not the disk's. Peak RSS counts the mapped file pages the process touched (shared,
# file-backed), so it grows with the file.
set -euo pipefail
cd "$(dirname "$0")/.."
bytes=${BENCH_BYTES:-2000000000}
runs=${BENCH_RUNS:-3}
mkdir -p bench/out
db=bench/out/agent-$bytes.db
cargo build --release --quiet -p salvage -p fixtures --bins
[ -f "$db" ] || ./target/release/make-fixture --big "$db" "$bytes"
size=$(stat -c %s "$db")
cat "$db" > /dev/null
echo "salvage inspect on $db ($size bytes), $runs runs, warm page cache"
best=""
for i in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o bench/out/time.txt ./target/release/salvage inspect "$db" --json > bench/out/inspect.json
  read -r secs rss_kb < bench/out/time.txt
  gbps=$(awk -v b="$size" -v s="$secs" 'BEGIN { printf "%.2f", (s > 0) ? b / s / 1e9 : 0 }')
  echo "  run $i: ${secs}s  ${gbps} GB/s  max RSS ${rss_kb} KiB"
  if [ -z "$best" ] || awk -v a="$secs" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$secs; fi
done
awk -v b="$size" -v s="$best" 'BEGIN { printf "best: %.2f GB/s (goal: at least 1 GB/s)\n", b / s / 1e9 }'
grep -o '"summary": "[^"]*"' bench/out/inspect.json
