#!/usr/bin/env bash
# Every algorithm for a few learning steps on a GPU: in-process (--device cuda), under Ray
# (4 CPU self-play workers, learner on the GPU), then the Ray run resumed in-process on the
# GPU. A check for device bugs that a CPU-only CI cannot see; prints one line per run.
#   bash scripts/gpu_smoke.sh [OUT_DIR]
#
# With --throughput, instead: self-play positions/s and the GPU's busy share on the Connect
# Four AlphaZero preset (about 8 minutes; fits one 10-minute device call): today's single
# in-process actor on the GPU against actor threads around one shared inference service
# (selfplay.shared_inference, docs/cluster.md "One GPU box"), interleaved, with the
# network-only ceiling at the same batches; then the service in bfloat16. Results:
# OUT_DIR/selfplay_service_gpu{,_bf16}.{json,md} (copy them to benchmarks/results/).
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
    --service 8x256,16x256 --wait-ms 2 --buckets 512,1024,2048,4096 --service-rounds 4 --warmup-ticks 2)
  timeout --foreground 330 "$py" "${bench[@]}" --out "$out/selfplay_service_gpu.json" || echo "FAIL float32 (exit $?)"
  timeout --foreground 200 "$py" "${bench[@]}" --service 16x256 --dtype bfloat16 \
    --out "$out/selfplay_service_gpu_bf16.json" || echo "FAIL bfloat16 (exit $?)"
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
