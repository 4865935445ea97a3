#!/usr/bin/env bash
# Set up (scripts/setup.sh), model-check the spec (every config, the agreement,
# a bounded simulation, then the spec mutants, each of which TLC must kill),
# and run the test suite on two workers, the tests marked slow left out.  With
# arguments, only pytest runs, with them (bash scripts/test.sh -m slow: the
# slow ones).  pytest runs last so that its summary closes the output; a
# pytest exit status of 5 (no tests ran) fails the run like any other.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ $# -eq 0 ]; then
    .venv/bin/refqueue check-spec
    .venv/bin/refqueue check-spec --mutants
    bash scripts/crosshair.sh
fi
if [ $# -eq 0 ]; then
    # The tests marked slow (every transition of each kit world, the whole ci
    # profile of an example or of the Redis backend's walks, each spec config
    # again, which check-spec above has just checked) take longer than the rest
    # together; run them with: bash scripts/test.sh -m slow
    # the 30 slowest tests close the output, so that the suite's time stays in view
    set -- -m "not slow" --durations=30
fi
exec .venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" "$@"
