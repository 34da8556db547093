#!/usr/bin/env bash
# Every algorithm for a few learning steps on a GPU: in-process (--device cuda), under Ray
# (4 CPU self-play workers, learner on the GPU), then the Ray run resumed in-process on the
# GPU. A check for device bugs that a CPU-only CI cannot see; prints one line per run.
#   bash scripts/gpu_smoke.sh [OUT_DIR]
#
# With --throughput, instead: self-play positions/s and the GPU's busy share on the Connect
# Four AlphaZero preset (about 9 minutes; fits one 10-minute device call): today's single
# in-process actor on the GPU against actor threads around one shared inference service
# (selfplay.shared_inference, docs/cluster.md "One GPU box"), interleaved, with the
# network calls alone at the same batches; then the service in bfloat16; then two short
# Ray runs of 14 workers, each worker's own network against one inference server on the
# GPU (positions/s from the run's metrics, the GPU's busy share from nvidia-smi). Results:
# OUT_DIR/selfplay_service_gpu{,_bf16}.{json,md} (copy them to benchmarks/results/) and
# one line per Ray run.
#   bash scripts/gpu_smoke.sh --throughput [OUT_DIR]
set -u
throughput=0
if [ "${1:-}" = "--throughput" ]; then throughput=1; shift; fi
out=${1:-/tmp/gpu_smoke}
mkdir -p "$out"
py=${PYTHON:-python3}
if [ $throughput = 1 ]; then
  nvidia-smi --query-gpu=name,memory.total,utilization.gpu --format=csv | tee "$out/nvidia_smi.txt"
  bench=(benchmarks/selfplay_throughput.py --presets alphazero --games 64 --service-device cuda
    --service 8x256,16x256 --wait-ms 2 --buckets 512,1024,2048,4096 --service-rounds 3 --warmup-ticks 2)
  timeout --foreground 200 "$py" "${bench[@]}" --out "$out/selfplay_service_gpu.json" || echo "FAIL float32 (exit $?)"
  timeout --foreground 120 "$py" "${bench[@]}" --service 16x256 --dtype bfloat16 \
    --out "$out/selfplay_service_gpu_bf16.json" || echo "FAIL bfloat16 (exit $?)"
  # Under Ray: 14 CPU workers with a network each (the GPU for the learner), then the same
  # workers calling one inference server on the GPU (selfplay.shared_inference).
  ray_run=(connect_four --workers 14 --device auto --no-progress --set eval.every=0 --set eval.final_games=0
    --set train.steps=1000 --set selfplay.concurrent_games=256)
  for arm in own server; do
    extra=(); [ $arm = server ] && extra=(--set selfplay.shared_inference=true --set ray.learner_gpus=0.5)
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -l 1 >"$out/gpu_busy_ray_$arm.txt" &
    smi=$!
    timeout --foreground 110 "$py" -m polyzero train "${ray_run[@]}" "${extra[@]}" --run-dir "$out/ray-$arm" \
      >"$out/ray-$arm.log" 2>&1
    kill $smi
    "$py" - "$out/ray-$arm" "$out/gpu_busy_ray_$arm.txt" <<'PY'
import sys
import numpy as np
from polyzero.train.metrics import read_metrics
rows = [r for r in read_metrics(sys.argv[1]) if r["kind"] == "train"]
busy = [float(x) for x in open(sys.argv[2]).read().split() if x.strip()]
rates = [r["selfplay/positions_per_s"] for r in rows[len(rows) // 4 :]]  # past the start
print(f"ray {sys.argv[1]}: {len(rows)} steps, positions/s median {np.median(rates) if rates else 0:.0f}, "
      f"GPU busy mean {np.mean(busy) if busy else 0:.0f}%, rows per forward "
      f"{rows[-1].get('ray/inference_rows_per_forward', '-') if rows else '-'}")
PY
  done
  exit 0
fi
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
