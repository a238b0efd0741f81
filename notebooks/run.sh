#!/usr/bin/env bash
# Execute every notebook headless, as CI does: a virtualenv with the pinned requirements, the
# notebooks' inputs made by lockcast from the bundled fixtures, then nbclient. Any error fails.
#
#   notebooks/run.sh                 # venv under $CARGO_TARGET_DIR (or target/)/nbvenv
#   LOCKCAST_NB_KEEP=1 notebooks/run.sh   # keep the data and executed notebooks (path printed)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
VENV=${LOCKCAST_NB_VENV:-$TARGET/nbvenv}
start=$(date +%s)

# 1. virtualenv, reinstalled only when requirements.txt changes
if [ ! -x "$VENV/bin/python" ] || ! cmp -s notebooks/requirements.txt "$VENV/requirements.txt"; then
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r notebooks/requirements.txt
  cp notebooks/requirements.txt "$VENV/requirements.txt"
fi
t_venv=$(date +%s)

# 2. lockcast and the notebooks' inputs
cargo build --locked --quiet --bin lockcast
LOCKCAST=$TARGET/debug/lockcast
DATA=$(mktemp -d "${TMPDIR:-/tmp}/lockcast-notebooks.XXXXXX")
if [ -z "${LOCKCAST_NB_KEEP:-}" ]; then trap 'rm -rf "$DATA"' EXIT; fi
trace=fixtures/traces/micro-16K-g/script-ns.txt.gz
"$LOCKCAST" parse "$trace" --to parquet -o "$DATA/capture/" 2>/dev/null
"$LOCKCAST" parse "$trace" --to csv -o "$DATA/capture/" 2>/dev/null
"$LOCKCAST" demo --out "$DATA/demo" >/dev/null
mkdir -p "$DATA/ab"
"$LOCKCAST" diff fixtures/captures/micro-16K-r1/contention.txt fixtures/captures/micro-4K-r1/contention.txt \
  --format csv >"$DATA/ab/diff-16K-vs-4K.csv"
for size in 16K 64K; do
  "$LOCKCAST" diff --base fixtures/captures/micro-$size-r{1,2,3}/contention.txt \
    --patched fixtures/captures/micro-4K-r{1,2,3}/contention.txt --format csv >"$DATA/ab/runs-$size-vs-4K.csv"
done
t_inputs=$(date +%s)

# 3. every notebook, headless
export LOCKCAST LOCKCAST_REPO=$ROOT LOCKCAST_NB_DATA=$DATA MPLBACKEND=Agg
"$VENV/bin/python" notebooks/execute.py "$DATA/executed" notebooks/*.ipynb
end=$(date +%s)
echo "notebooks: venv $((t_venv - start)) s, inputs $((t_inputs - t_venv)) s, execution $((end - t_inputs)) s, total $((end - start)) s"
if [ -n "${LOCKCAST_NB_KEEP:-}" ]; then echo "notebooks: data and executed copies in $DATA"; fi
