#!/usr/bin/env bash
# Create .venv and install polyzero with its test tools, from PyPI alone.
#
# PyTorch: if the Python that makes the venv can already import torch (for
# example a CPU build you installed before), the venv is made with
# --system-site-packages and reuses it; nothing is downloaded for it. Otherwise
# torch==2.13.0 is installed (the CPU build where one is offered locally, as on
# our CI machines; PyPI's default Linux wheel, with CUDA, elsewhere).
# POLYZERO_PYTHON picks the Python (default: python3; 3.11 or newer).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${POLYZERO_PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  if "$PY" -c "import torch" 2>/dev/null; then
    echo "setup: reusing the torch already installed for $PY" >&2
    "$PY" -m venv --system-site-packages .venv
  else
    "$PY" -m venv .venv
  fi
fi
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
.venv/bin/python -m pip install -q -e ".[test,ray,envs,web,export,fast]"
