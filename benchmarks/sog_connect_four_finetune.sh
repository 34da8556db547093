#!/usr/bin/env bash
# Fine-tuning screen for Student of Games on Connect Four: does the network that levels off
# near 0.4 against MCTS-Solver 1x (`sog_connect_four`) gain from a lower learning rate or
# larger batches late in training? Every variant resumes a copy of the same run's last
# checkpoint (replay and query buffer included) with its overrides and trains for TRAIN_S
# seconds of wall clock, one process pinned to one core; then every variant's last network
# and the starting one (`start`) play SoG(100, 1), most probable move, against MCTS-Solver 1x
# (`mcts-solver:100`) in CHUNKS chunks of GAMES games (arena seeds 0..CHUNKS-1), one process
# per core. Made for a lent 16-core machine:
#   bash benchmarks/sog_connect_four_finetune.sh RUN_DIR TRAIN_S GAMES CHUNKS OUT_DIR
# OUT_DIR/eval.txt gets one line per chunk: NAME SEED and the arena's score line;
# OUT_DIR/NAME.metrics.jsonl each variant's training log.
set -u
RUN=$1; TRAIN_S=$2; GAMES=$3; CHUNKS=$4; OUT=$5; WORK=${WORK:-/tmp/c4ft}
declare -A V=(
 [lr1e3]=""                                   # the control: the run's own setting continued
 [lr3e4]="--set train.learning_rate=3e-4"
 [lr1e4]="--set train.learning_rate=1e-4"
 [lr3e5]="--set train.learning_rate=3e-5"
 [lr1e4_b512]="--set train.learning_rate=1e-4 --set train.batch_size=512"
 [lr3e4_b512]="--set train.learning_rate=3e-4 --set train.batch_size=512"
 [lr1e4_mb8]="--set train.learning_rate=1e-4 --set train.minibatches_per_step=8 --set sog.max_updates=80"
 [lr1e4_sims50]="--set train.learning_rate=1e-4 --set sog.simulations=50"
)
NCPU=$(python3 -c "import os; print(os.cpu_count())")
mkdir -p "$OUT" "$WORK"
last=$(ls "$RUN/checkpoints" | grep step_ | sort | tail -1)
copy_run() {  # WORK/NAME: a run directory holding only RUN's last checkpoint
  mkdir -p "$WORK/$1/checkpoints" && cp "$RUN/config.toml" "$WORK/$1/" \
    && cp -r "$RUN/checkpoints/$last" "$WORK/$1/checkpoints/" && echo "$last" > "$WORK/$1/checkpoints/latest"
}
core=0
for name in "${!V[@]}"; do
  copy_run "$name"
  taskset -c $((core % NCPU)) timeout -s TERM "$TRAIN_S" python3 -m polyzero train --resume "$WORK/$name" \
    --no-progress --device cpu --set threads=1 --set train.steps=1000000 --set eval.every=0 \
    --set eval.final_games=0 --set train.checkpoint_every=100 --set train.keep_checkpoints=2 ${V[$name]} > "$OUT/$name.train.log" 2>&1 &
  core=$((core + 1))
done
wait
for name in "${!V[@]}"; do cp "$WORK/$name/metrics.jsonl" "$OUT/$name.metrics.jsonl" 2>/dev/null; done
copy_run start
# One thread per arena process: sixteen processes of sixteen torch threads each on sixteen
# cores left the first run on a lent machine (2026-11-27) without a finished chunk in 220 s.
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
for name in start "${!V[@]}"; do
  for seed in $(seq 0 $((CHUNKS - 1))); do echo "$name $seed"; done
done | xargs -P "$NCPU" -L 1 sh -c 'python3 -m polyzero arena "sog:100,1,final=argmax,net='"$WORK"'/$0" mcts-solver:100 \
  --game connect_four --games '"$GAMES"' --seed $((1000 * $1)) --no-progress 2>&1 | tail -n 1 | sed "s|^|$0 $1  |" >> '"$OUT"'/eval.txt'
cat "$OUT/eval.txt"
