#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job on embedded defaults:
# explore the model, certify the built-in backend, model-check the spec.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/refqueue explore
.venv/bin/refqueue certify
.venv/bin/refqueue check-spec
