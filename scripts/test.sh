#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite on two workers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" "$@"
