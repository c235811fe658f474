#!/usr/bin/env bash
# Speed of `salvage scan` on an extraction's scale, in two parts:
#
#   (a) BENCH_DBS (default 500) small databases written by make-fixture in nested folders:
#       4 in 10 healthy random databases of at most 1 MiB (`--random SEED`), 3 in 10
#       healthy catalogue stores, 3 in 10 catalogue stores damaged (a zeroed page, a page
#       of noise, a cell count zeroed, a cut file, a zeroed page 1). `salvage scan DIR -o
#       OUT -j 2 --allow-partial` against a sequential shell loop of `salvage recover DB -o
#       OUT/N.db --allow-partial` over the same files: both wall times, and the ratio.
#       Goal: the scan at most 0.6 of the loop's time. The scan does more than the loop
#       (each database inspected, hashed, its report rendered as HTML, an index): the gain
#       is two databases at once, and one process instead of one a database.
#   (b) BENCH_FILES (default 100,000) small files that are not SQLite's (text, random
#       bytes, some of whole 4 KiB pages, some with the signature of a photo or a
#       document, some zeros) and a few databases among them: the time of the scan's
#       discovery (`salvage scan --triage-only`, which recovers nothing), and what it
#       reads: the bytes its read calls returned (`rchar` of /proc/PID/io, which a
#       parent collects from the children it waits for), and with strace the calls
#       themselves.
#
#   bench/scan.sh
#   BENCH_DBS=100 BENCH_FILES=10000 bench/scan.sh
#   BENCH_RUNS=3 bench/scan.sh            # (a): the best of 3 runs of each
#   BENCH_TMP=/var/tmp bench/scan.sh      # on a disk instead of /dev/shm: fsyncs cost then
#
# Everything is written under a new folder in BENCH_TMP (else TMPDIR, else /dev/shm),
# removed at the end, so the files are in memory and the figures are the program's, not
# the disk's.
set -euo pipefail
cd "$(dirname "$0")/.."
dbs=${BENCH_DBS:-500}
files=${BENCH_FILES:-100000}
runs=${BENCH_RUNS:-1}
base=${BENCH_TMP:-${TMPDIR:-/dev/shm}}
cargo build --release --quiet -p salvage -p fixtures --bins
salvage=$PWD/target/release/salvage
make_fixture=$PWD/target/release/make-fixture
work=$(mktemp -d "$base/salvage-bench-scan.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Runs a command under /usr/bin/time; prints "WALL CPU MAXRSS_KIB" (CPU: user + system).
timed() {
  /usr/bin/time -f "%e %U %S %M" -o "$work/time.txt" "$@" > /dev/null 2>&1 || true
  # The last line: before it, /usr/bin/time may say the command's exit status.
  tail -n 1 "$work/time.txt" | awk '{ printf "%s %.2f %s\n", $1, $2 + $3, $4 }'
}

faster() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

# --- (a) databases: scan against a loop of recover --------------------------------------
dir=$work/a/extraction
mkdir -p "$dir"
echo "making $dbs databases (a few minutes: half the random ones are over 1 MiB and dropped)" >&2
healthy_catalogue=(generic-4096-utf8 generic-512-utf16be generic-1024-autovacuum browser-history-4096-utf8)
seed=0
for i in $(seq 0 $((dbs - 1))); do
  folder=$dir/$(printf 'd%02d/s%d' $((i % 20)) $((i % 3)))
  mkdir -p "$folder"
  case $((i % 10)) in
    0 | 1 | 2 | 3)
      # The next random database of at most 1 MiB (about half of them are).
      while :; do
        seed=$((seed + 1))
        "$make_fixture" --random "$seed" "$folder" > /dev/null
        if [ "$(stat -c %s "$folder/random-$seed.db")" -le 1048576 ]; then break; fi
        rm "$folder/random-$seed.db"
      done
      ;;
    4 | 5 | 6)
      name=${healthy_catalogue[$((i % 4))]}
      "$make_fixture" "$name" "$folder/$name-$i.db" > /dev/null 2>&1
      ;;
    *)
      case $((i % 5)) in
        0) args=(generic-4096-utf8 --damage "zero-page:$((2 + i % 6))") ;;
        1) args=(generic-512-utf16be --damage "random-page:$((2 + i % 40)):$i") ;;
        2) args=(browser-history-4096-utf8 --damage "cell-count-zeroed:$((2 + i % 10))") ;;
        3) args=(generic-1024-autovacuum --damage "truncate:$((1024 * (40 + i % 60)))") ;;
        *) args=(generic-4096-utf8 --damage zero-page:1) ;;
      esac
      "$make_fixture" "${args[0]}" "$folder/damaged-$i.db" "${args[@]:1}" > /dev/null 2>&1
      ;;
  esac
done
count=$(find "$dir" -type f | wc -l)
bytes=$(find "$dir" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
echo "(a) $count databases ($(mib "$bytes")) under $dir"

# The loop as a person would write it: one `recover` after another, each exit status kept.
find "$dir" -type f | sort > "$work/a/list.txt"
cat > "$work/a/loop.sh" <<'LOOP'
n=0
while IFS= read -r db; do
  n=$((n + 1))
  code=0
  "$1" recover "$db" -o "$2/$n.db" --allow-partial -q > /dev/null 2>&1 || code=$?
  echo "$code" >> "$2/codes.txt"
done < "$3"
LOOP
scan_wall="" loop_wall=""
for _ in $(seq "$runs"); do
  rm -rf "$work/a/scan" "$work/a/loop"
  mkdir -p "$work/a/loop"
  read -r wall cpu rss < <(timed "$salvage" scan "$dir" -o "$work/a/scan" -j 2 --allow-partial -q)
  if [ -z "$scan_wall" ] || faster "$wall" "$scan_wall"; then scan_wall=$wall scan_cpu=$cpu scan_rss=$rss; fi
  read -r wall cpu _ < <(timed bash "$work/a/loop.sh" "$salvage" "$work/a/loop" "$work/a/list.txt")
  if [ -z "$loop_wall" ] || faster "$wall" "$loop_wall"; then loop_wall=$wall loop_cpu=$cpu; fi
done
outcomes=$(python3 - "$work/a/scan/scan.json" <<'PY'
import collections, json, sys
s = json.load(open(sys.argv[1]))
c = collections.Counter(e["outcome"] for e in s["entries"])
print(", ".join(f"{n} {o}" for o, n in sorted(c.items())), f"({len(s['entries'])} entries)")
PY
)
codes=$(sort "$work/a/loop/codes.txt" | uniq -c | awk '{ printf "%s%s exit %s", sep, $1, $2; sep = ", " }')
[ "$runs" -gt 1 ] && echo "  best of $runs runs each"
echo "  salvage scan -j 2:          ${scan_wall}s wall, ${scan_cpu}s cpu, max RSS $((scan_rss / 1024)) MiB; $outcomes"
echo "  recover loop (sequential):  ${loop_wall}s wall, ${loop_cpu}s cpu; $codes"
awk -v s="$scan_wall" -v l="$loop_wall" 'BEGIN { printf "  ratio scan / loop: %.2f (goal: at most 0.6)\n", s / (l > 0 ? l : 1e-9) }'
rm -rf "$work/a"

# --- (b) discovery among many other files ---------------------------------------------
dir=$work/b/extraction
mkdir -p "$dir"
echo "making $files other files" >&2
python3 - "$dir" "$files" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(20261204)
words = "the a photo message note draft call contact cache thumbnail sync token".split()
signatures = [b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", b"\x89PNG\r\n\x1a\n", b"%PDF-1.7\n", b"bplist00", b"PK\x03\x04"]
pages = 0
for i in range(n):
    folder = os.path.join(root, f"m{i % 97:02d}", f"f{i % 13:02d}")
    os.makedirs(folder, exist_ok=True)
    kind = rng.random()
    if kind < 0.40:    # text, 20 bytes to 8 KiB
        size = rng.randint(20, 8192)
        body = " ".join(rng.choice(words) for _ in range(size // 5 + 1)).encode()[:size]
        name = f"note{i}.txt"
    elif kind < 0.70:  # random bytes of any size up to 32 KiB
        body = rng.randbytes(rng.randint(1, 32768))
        name = f"blob{i}.bin"
    elif kind < 0.90:  # random bytes of whole 4 KiB pages: sniffed past the first page
        body = rng.randbytes(4096 * rng.randint(1, 8))
        name = f"cache{i}"
        pages += 1
    elif kind < 0.99:  # a photo or a document of whole pages: its signature says so
        body = rng.choice(signatures)
        body += rng.randbytes(4096 * rng.randint(1, 8) - len(body))
        name = f"media{i}.dat"
        pages += 1
    else:              # zeros, as a preallocated file
        body = bytes(4096 * rng.randint(1, 4))
        name = f"zero{i}"
        pages += 1
    with open(os.path.join(folder, name), "wb") as f:
        f.write(body)
print(pages, file=open(os.path.join(root, "..", "pages.txt"), "w"))
PY
mkdir -p "$dir/db"
for seed in 1 2 3; do "$make_fixture" --random "$seed" "$dir/db" > /dev/null; done
"$make_fixture" generic-4096-utf8 "$dir/db/damaged.db" --damage zero-page:3 > /dev/null 2>&1
"$make_fixture" generic-4096-utf8 "$dir/db/blob-0001" --damage zero-page:1 > /dev/null 2>&1
db_bytes=$(find "$dir/db" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
bytes=$(find "$dir" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
echo "(b) $files other files ($(mib $((bytes - db_bytes))), $(cat "$work/b/pages.txt") of whole 4 KiB pages) and 5 databases ($(mib "$db_bytes")) under $dir"
read -r walk_wall _ _ < <(timed find "$dir" -type f -printf '%s\n')
echo "  walk alone (find -printf %s):  ${walk_wall}s"
# The scan's read calls, as the kernel counts them for the children a process waits for.
python3 - "$salvage" "$dir" "$work/b/scan" "$db_bytes" "$files" <<'PY'
import json, resource, subprocess, sys, time
salvage, src, out, db_bytes, files = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def io():
    return {k: int(v) for k, v in (l.split(": ") for l in open("/proc/self/io").read().splitlines())}
before, start = io(), time.monotonic()
code = subprocess.run([salvage, "scan", src, "-o", out, "--triage-only", "-q"],
                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
wall, after = time.monotonic() - start, io()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
s = json.load(open(f"{out}/scan.json"))
rchar, syscr = after["rchar"] - before["rchar"], after["syscr"] - before["syscr"]
print(f"  salvage scan --triage-only:    {wall:.2f}s wall, {ru.ru_utime + ru.ru_stime:.2f}s cpu, "
      f"max RSS {ru.ru_maxrss // 1024} MiB, exit {code}; {len(s['entries'])} databases found, "
      f"{s['skipped_files']} files skipped")
# The databases are mapped, not read: their pages are not in rchar.
print(f"  read by the scan (rchar):      {rchar:,} bytes in {syscr:,} read calls: "
      f"{rchar / files:.0f} bytes and {syscr / files:.1f} calls a file (the databases' "
      f"{db_bytes:,} bytes are mapped, not read)")
PY
if command -v strace > /dev/null; then
  rm -rf "$work/b/scan"
  strace -c -f -e trace=openat,read,pread64,lseek -o "$work/b/strace.txt" \
    "$salvage" scan "$dir" -o "$work/b/scan" --triage-only -q > /dev/null 2>&1 || true
  echo "  strace -c -f (a second run, slowed by strace):"
  sed 's/^/    /' "$work/b/strace.txt"
else
  echo "  (no strace: calls not counted)"
fi
