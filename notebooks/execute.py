"""Execute notebooks headless with nbclient; any cell error fails the run (exit 1).

Usage: python execute.py OUTDIR NOTEBOOK...  (executed copies are written to OUTDIR)
"""
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for path in map(Path, sys.argv[2:]):
        nb = nbformat.read(path, as_version=4)
        start = time.monotonic()
        client = NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        )
        try:
            client.execute()
            status = "ok"
        except CellExecutionError as e:
            status = "FAILED"
            failed.append(path.name)
            print(e, file=sys.stderr)
        nbformat.write(nb, out / path.name)
        print(f"notebook {path.name}: {status} in {time.monotonic() - start:.1f} s", flush=True)
    if failed:
        print(f"notebooks failed: {', '.join(failed)} (executed copies in {out})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
