#!/usr/bin/env bash
# CI smoke run of every fuzz target (issue 8): installs cargo-fuzz if it is not on PATH (into
# a cache directory, pinned, so a second run on the same machine skips the install), then runs
# each target for SMOKE_SECS seconds (default 30) from the seed corpora. A crash, hang or
# out-of-memory input fails the run; the input is kept under fuzz/artifacts/TARGET/.
# Cold-machine cost: cargo-fuzz install ~1 min, fuzz build ~35 s, 6 targets x 30 s.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
secs="${SMOKE_SECS:-30}"
cache="${LOCKCAST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/lockcast-tools}"
export PATH="$cache/bin:$PATH"
if ! command -v cargo-fuzz >/dev/null; then
  echo "smoke: installing cargo-fuzz into $cache"
  cargo install cargo-fuzz --version 0.13.2 --locked --root "$cache" -j 2
fi
# A fixed seed: the smoke run is a regression gate, so a CI run repeats the mutations that
# passed here instead of drawing new ones (a new find on CI blocks every merge until fixed).
# Exploring is the long runs' job: fuzz/run.sh without FUZZ_SEED. FUZZ_SEED= (empty) draws.
export FUZZ_SEED="${FUZZ_SEED-1}"
start=$(date +%s)
"$here/run.sh" "$secs"
echo "smoke: all fuzz targets ran ${secs}s each without a crash ($(( $(date +%s) - start ))s in all)"
