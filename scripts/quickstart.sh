#!/usr/bin/env bash
# One command, offline, no API key: set up a virtual environment in .venv, then evaluate and
# evolve the bundled HumanEval verifier and write an HTML report of the run.
#   bash scripts/quickstart.sh            (ROUNDS=10 PATIENCE=3 bash scripts/quickstart.sh for a longer run)
# Evolution stops early once PATIENCE rounds in a row leave the incumbent unchanged (it says so).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-5}"
PATIENCE="${PATIENCE:-1}"
RUN="runs/humaneval-quickstart.vxrun.sqlite"

if [ ! -x .venv/bin/vx ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[code,viz]'
fi
# shellcheck disable=SC1091
. .venv/bin/activate

vx doctor --brief || true                            # which sandbox layer runs model code (and any warning)
vx eval examples/humaneval/seed.vx --dataset dev     # the hand-written seed verifier
rm -f "$RUN" "${RUN%.vxrun.sqlite}.vx" "${RUN%.vxrun.sqlite}.html"
vx evolve examples/humaneval --rounds "$ROUNDS" --patience "$PATIENCE" --seed 0 --no-llm --out "$RUN"
vx report "$RUN"
echo "evolved verifier: ${RUN%.vxrun.sqlite}.vx · report: ${RUN%.vxrun.sqlite}.html"
