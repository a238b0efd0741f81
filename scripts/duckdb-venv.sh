#!/usr/bin/env bash
# Make (once) a Python venv holding DuckDB, for the test that reads lockcast's hive-partitioned
# Parquet dataset back with another engine (tests/it/dataset.rs). Idempotent; prints the venv's
# python on success. Usage: scripts/duckdb-venv.sh VENV_DIR
set -euo pipefail
venv=${1:?usage: $0 VENV_DIR}
version=2.0.1
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import duckdb, sys; sys.exit(duckdb.__version__ != '$version')" 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "duckdb==$version" >&2
echo "$venv/bin/python"
