#!/usr/bin/env bash
# Every algorithm for a few learning steps on a GPU: in-process (--device cuda), under Ray
# (4 CPU self-play workers, learner on the GPU), then the Ray run resumed in-process on the
# GPU. A check for device bugs that a CPU-only CI cannot see; prints one line per run.
#   bash scripts/gpu_smoke.sh [OUT_DIR]
#
# With --throughput, instead: self-play positions/s and the GPU's busy share on the Connect
# Four AlphaZero preset (the in-process part about 4 minutes, each Ray arm ARM_SECONDS
# and about 15 s more: with --ray-only, or fewer arms, it fits one 10-minute device
# call): today's single
# in-process actor on the GPU against actor threads around one shared inference service
# (selfplay.shared_inference, docs/cluster.md "One GPU box"), interleaved, with the
# network calls alone at the same batches; then the service in bfloat16; then short Ray
# runs (RAY_ARMS, below), each worker's own network against inference servers on the GPU
# (positions/s from the run's metrics, the GPU's busy share from nvidia-smi). Results:
# OUT_DIR/selfplay_service_gpu{,_bf16}.{json,md} and OUT_DIR/ray_arms.{json,md}
# (benchmarks/ray_arms.py; copy them to benchmarks/results/). --ray-only: the Ray runs alone.
#   bash scripts/gpu_smoke.sh --throughput [--ray-only] [OUT_DIR]
set -u
throughput=0 in_process=1
while [ $# -gt 0 ]; do
  case $1 in
    --throughput) throughput=1 ;;
    --ray-only) in_process=0 ;;
    -*) echo "gpu_smoke.sh: unknown option $1 (--throughput [--ray-only] [OUT_DIR])" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
if [ $in_process = 0 ] && [ $throughput = 0 ]; then
  echo "gpu_smoke.sh: --ray-only goes with --throughput" >&2; exit 2
fi
out=${1:-/tmp/gpu_smoke}
mkdir -p "$out"
py=${PYTHON:-python3}
if [ $throughput = 1 ]; then
  nvidia-smi --query-gpu=name,memory.total,utilization.gpu --format=csv | tee "$out/nvidia_smi.txt"
  bench=(benchmarks/selfplay_throughput.py --presets alphazero --games 64 --service-device cuda
    --service 8x256,16x256 --wait-ms 2 --buckets 512,1024,2048,4096 --service-rounds 3 --warmup-ticks 2)
  if [ $in_process = 1 ]; then
    timeout --foreground 150 "$py" "${bench[@]}" --out "$out/selfplay_service_gpu.json" || echo "FAIL float32 (exit $?)"
    timeout --foreground 100 "$py" "${bench[@]}" --service 16x256 --dtype bfloat16 \
      --out "$out/selfplay_service_gpu_bf16.json" || echo "FAIL bfloat16 (exit $?)"
  fi
  # Under Ray, arms of KIND:WORKERS:CPUS:GAMES:ACTORS:SERVERS[:SETS] for ARM_SECONDS (100) each:
  # 14 CPU workers with a network each (the GPU for the learner), then workers calling
  # inference servers on the GPU (selfplay.shared_inference): 14 of them, 14 of two actor
  # threads of 128 games each (the same games in flight), then 28 at half a CPU each (on
  # 2026-11-30 single-threaded workers ran at about 40% of a core, waiting on the server).
  # RAY_ARMS replaces the list (SERVERS: ray.inference_servers, worker i calling server
  # i mod SERVERS; SETS: more overrides, KEY=VALUE;KEY=VALUE, e.g. the learner's side:
  # train.positions_per_step=2048;train.minibatches_per_step=16;train.checkpoint_every=200). Per arm: positions/s over the run's last three quarters, the GPU's busy
  # share (nvidia-smi, each second), the learning steps' pace, and the busiest processes'
  # CPU share half-way (top), to $out/ray_arms.{json,md} and $out/top-ARM.txt.
  # What an arm leaves behind is killed by its Ray directory (RAY_TMPDIR, in the environment
  # of every process the arm started, Ray's included), never by name: nothing else of the
  # machine's. The directory's path stays short (Ray's socket paths must fit in 107 bytes).
  kill_arm() {
    local f
    for f in $(grep -lzxF "RAY_TMPDIR=$1" /proc/[0-9]*/environ 2>/dev/null); do
      f=${f#/proc/}; kill -9 "${f%/environ}" 2>/dev/null
    done
  }
  seconds=${ARM_SECONDS:-100}
  # The default: the anchors of 2026-11-30 (a network per worker; one server), then the
  # learner's side, which bounded those runs (docs/cluster.md "One GPU box"): checkpoints
  # every 200 steps and weights every 4, then also 4x the positions per step at the same
  # samples per position.
  lighter="train.checkpoint_every=200;ray.weights_every=4"
  bigger="$lighter;train.positions_per_step=2048;train.minibatches_per_step=16"
  for arm in ${RAY_ARMS:-own:14:1:256:1:1 server:28:0.5:256:1:1 server:28:0.5:256:1:1:$lighter server:28:0.5:256:1:1:$bigger}; do
    IFS=: read -r kind w c g actors servers sets <<<"$arm"
    raytmp=$(mktemp -d /tmp/pzray.XXXXXX)
    arm=$(tr ':=;' '-__' <<<"$arm")  # file names
    extra=(); [ "$kind" = server ] && extra=(--set selfplay.shared_inference=true --set ray.learner_gpus=0.5
      --set selfplay.actors="$actors" --set ray.inference_servers="${servers:-1}")
    IFS=';' read -ra more <<<"${sets:-}"
    for o in "${more[@]}"; do extra+=(--set "$o"); done
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -l 1 >"$out/busy-$arm.txt" &
    smi=$!
    # top's second frame only: its first covers a moment, not the 10 s (on 2026-11-30 it
    # showed workers at 90-100% of a core that the 10-s frame had at 15-19%)
    (sleep $((seconds / 2)); top -b -d 10 -n 2 -w 200 | awk '/^top/ { n++ } n == 2 && (/^top/ || /^%Cpu/ || ($9 + 0 > 15))' |
      cut -c1-160) >"$out/top-$arm.txt" 2>&1 &
    # SIGTERM at the arm's end (the run writes its checkpoint and stops), SIGKILL 30 s later if not
    RAY_TMPDIR=$raytmp timeout -k 30 --foreground "$seconds" "$py" -m polyzero train connect_four --workers "$w" --device auto --no-progress \
      --set eval.every=0 --set eval.final_games=0 --set train.steps=5000 --set selfplay.concurrent_games="$g" \
      --set ray.worker_cpus="$c" "${extra[@]}" --run-dir "$out/ray-$arm" >"$out/ray-$arm.log" 2>&1
    kill $smi; wait
    kill_arm "$raytmp"; sleep 2; rm -rf "$raytmp"
  done
  "$py" benchmarks/ray_arms.py "$out" --out "$out/ray_arms.json"
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
