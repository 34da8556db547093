#!/usr/bin/env bash
# Every algorithm for a few learning steps on a GPU: in-process (--device cuda), under Ray
# (4 CPU self-play workers, learner on the GPU), then the Ray run resumed in-process on the
# GPU. A check for device bugs that a CPU-only CI cannot see; prints one line per run.
#   bash scripts/gpu_smoke.sh [OUT_DIR]
set -u
out=${1:-/tmp/gpu_smoke}
mkdir -p "$out"
py=${PYTHON:-python3}
quick=(--no-progress --set eval.every=0 --set eval.final_games=4 --set train.checkpoint_every=2)
runs=(
  "tic_tac_toe --algo alphazero"
  "tic_tac_toe --algo alphazero --search gumbel --set search.num_simulations=4"
  "tic_tac_toe --algo muzero"
  "cartpole --algo muzero"
  "nannon --algo ndmz"
  "kuhn_poker --algo sog"
  "connect_four --config polyzero/presets/goexploit_gesc_connect_four.toml"
)
fail=0
for i in "${!runs[@]}"; do
  spec=${runs[$i]}
  for mode in inproc ray resume; do
    dir="$out/run$i"
    case $mode in
      inproc) args=($spec --device cuda --set train.steps=4 --run-dir "$dir-inproc") ;;
      ray) args=($spec --device auto --workers 4 --set train.steps=4 --run-dir "$dir-ray") ;;
      resume) args=(--resume "$dir-ray" --device cuda --set train.steps=6) ;;
    esac
    t0=$(date +%s)
    if timeout --foreground 240 "$py" -m polyzero train "${args[@]}" "${quick[@]}" >"$out/run$i-$mode.log" 2>&1; then
      echo "ok    $mode  ${spec}  ($(( $(date +%s) - t0 )) s)"
    else
      echo "FAIL  $mode  ${spec}  (exit $?; $out/run$i-$mode.log)"; tail -3 "$out/run$i-$mode.log"; fail=1
    fi
  done
done
exit $fail
