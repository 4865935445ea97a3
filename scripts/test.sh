#!/usr/bin/env bash
# Set up (scripts/setup.sh), model-check the spec (every config, the agreement,
# a bounded simulation, then the spec mutants, each of which TLC must kill),
# and run the whole test suite on two workers.  With arguments, only pytest
# runs, with them.  pytest runs last so that its summary closes the output; a
# pytest exit status of 5 (no tests ran) fails the run like any other.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ $# -eq 0 ]; then
    .venv/bin/refqueue check-spec
    .venv/bin/refqueue check-spec --mutants
    bash scripts/crosshair.sh
fi
exec .venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" "$@"
