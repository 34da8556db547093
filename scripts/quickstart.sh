#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the main job: a short real AlphaZero training
# run on Connect Four (a few minutes on 2 CPU cores) that ends with the trained
# agent's score against random play and against MCTS-Solver.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/polyzero train connect_four --algo alphazero --run-dir "runs/quickstart-$(date +%Y%m%d-%H%M%S)" \
  --set train.steps=60 --set eval.every=20 --set eval.final_games=40 "$@"
