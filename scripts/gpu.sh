#!/usr/bin/env bash
# The device check of issue 24 as one command, for a machine with a CUDA GPU
# and torch already installed (the GPU machine: `bash scripts/gpu.sh`): the
# tests marked gpu, then `refqueue bench gpu` (table and JSON).  Runs from the
# checkout without installing (PYTHONPATH=src); PYTHON picks the interpreter.
# With $OUT set, the test log and the JSON are written there too.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d)}
export PYTHONPATH="src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
"$PY" -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print("torch", torch.__version__, torch.cuda.get_device_name())' || exit 2
"$PY" -m pytest -p no:cacheprovider -p no:randomly -q -rA -m gpu tests/stores/test_local_store_cuda.py \
    2>&1 | tee "$OUT/gpu-tests.log"
tests=${PIPESTATUS[0]}
"$PY" -m refqueue.cli bench gpu --json "$@" > "$OUT/gpu.json"
bench=$?
"$PY" - "$OUT/gpu.json" <<'PY'
import json, sys
from refqueue.bench import table
print(table(json.load(open(sys.argv[1]))))
PY
echo "gpu tests exit $tests, bench exit $bench; log and JSON in $OUT"
[ "$tests" -eq 0 ] && [ "$bench" -eq 0 ]
