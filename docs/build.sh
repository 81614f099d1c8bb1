#!/usr/bin/env bash
# Build the documentation site: HTML in docs/_build/html, every warning an error.
#
#   bash docs/build.sh                      # fast gallery (QMATCH_DOCS_FAST=1), a few minutes on 2 cores
#   QMATCH_DOCS_FAST=0 bash docs/build.sh   # examples at full size
#   PYTHON=python3 bash docs/build.sh       # another interpreter (default: .venv/bin/python if present)
#
# Needs the docs extra: pip install torch==2.13.0 -e ".[docs]"
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
export QMATCH_DOCS_FAST="${QMATCH_DOCS_FAST:-1}"
export MPLBACKEND=Agg
# One PyTorch thread: the gallery's networks are small, and two threads on a
# machine where anything else runs spin against each other (a 4-minute build
# instead of 1 minute, measured on the 2-core development machine).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
out="${1:-docs/_build/html}"
# -E: read every page again (the benchmark pages include files outside docs/);
# -j 1: one process, the gallery's examples already use the cores.
exec "$PYTHON" -m sphinx -W --keep-going -E -j 1 -b html docs "$out"
