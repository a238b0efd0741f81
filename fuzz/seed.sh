#!/usr/bin/env bash
# Build the fuzz seed corpora in fuzz/corpus/<target>/ from the repo's real captures
# (fixtures/) and the corpus of real tool outputs (tests/corpus/).
# Seeds are plain text (gzip decompressed) cut to MAX_LEN bytes, the fuzzers' input cap.
# fuzz/corpus is gitignored: seeds are copies, and what the fuzzer adds is run-time state.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
max_len="${MAX_LEN:-65536}"
corpus="$root/tests/corpus"

# add TARGET FILE...: copy each file (decompressed, cut) into corpus/TARGET, named by content.
add() {
  local target="$1"; shift
  mkdir -p "$here/corpus/$target"
  local f tmp sum
  tmp="$(mktemp)"
  for f in "$@"; do
    [ -f "$f" ] || continue
    case "$f" in
      *.gz) { gzip -dc "$f" || true; } | head -c "$max_len" >"$tmp" ;;
      *) head -c "$max_len" "$f" >"$tmp" ;;
    esac
    [ -s "$tmp" ] || continue
    sum="$(sha1sum "$tmp" | cut -c1-40)"
    cp "$tmp" "$here/corpus/$target/seed-$sum"
  done
  rm -f "$tmp"
}

shopt -s nullglob
perf_lock=("$root"/fixtures/captures/*/*.txt "$root"/fixtures/seeds/*.txt
  "$root"/fixtures/replay/*/contention*.txt "$root"/fixtures/traces/*/contention.txt
  "$corpus"/perf-lock/*)
ftrace=("$root"/fixtures/ftrace/*.txt "$corpus"/ftrace/*)
perf_script=("$root"/fixtures/perf-script/*.txt "$root"/fixtures/traces/*/*.gz
  "$root"/fixtures/replay/micro-16K-r1/script-ns.txt.gz "$corpus"/perf-script/*)
perf_report=("$root"/fixtures/perf-report/*.txt "$corpus"/perf-report/*)

add perf_lock "${perf_lock[@]}"
add ftrace "${ftrace[@]}"
add perf_script "${perf_script[@]}"
add perf_report "${perf_report[@]}"
all=("${perf_lock[@]}" "${ftrace[@]}" "${perf_script[@]}" "${perf_report[@]}")
add detect "${all[@]}"
add lenient "${all[@]}"
# perf.data: each recording cut to MAX_LEN (header, attrs, the first records: a file cut
# short), and the same with its first records spliced to the file's own feature sections
# (header patched), so the tracing-data and print fmt parsers are reached within MAX_LEN.
for f in "$root"/fixtures/perfdata/*/perf.data.gz; do
  add perf_data "$f"
  tmp="$(mktemp)"
  gzip -dc "$f" | python3 -c '
import struct, sys
d = sys.stdin.buffer.read()
if len(d) < 104 or struct.unpack_from("<Q", d, 8)[0] != 104:
    sys.exit(1)  # pipe mode (a 16-byte header, no sections): the plain cut above covers it
off, size = struct.unpack_from("<QQ", d, 40)
feat = d[off + size:]
keep = max(0, int(sys.argv[1]) - off - len(feat) - 8)
pos = off
while pos + 8 <= off + size:
    n = struct.unpack_from("<H", d, pos + 6)[0]
    if n < 8 or pos + n - off > keep:
        break
    pos += n
shift = off + size - pos
out = bytearray(d[:pos])
struct.pack_into("<Q", out, 48, pos - off)
idx = bytearray(feat)
nf = bin(int.from_bytes(d[72:104], "little")).count("1")
for k in range(nf):
    o = struct.unpack_from("<Q", idx, 16 * k)[0]
    struct.pack_into("<Q", idx, 16 * k, o - shift)
sys.stdout.buffer.write(bytes(out + idx))
' "$max_len" >"$tmp" && add perf_data "$tmp"
  rm -f "$tmp"
done

for t in perf_lock ftrace perf_script perf_report detect lenient perf_data; do
  echo "seed.sh: corpus/$t: $(ls "$here/corpus/$t" | wc -l) files"
done
