#!/usr/bin/env bash
# Screen of Student of Games settings on Connect Four beside the AlphaZero preset: every
# run trained at the same time for TRAIN_S seconds of wall clock, one process pinned to one
# core each (16 runs: made for a 16-core machine), networks on the CPU. Each run keeps its
# last checkpoint's network (no replay) in PACK_DIR/NAME, four runs to an archive, so that
# a machine lent for minutes can train and another evaluate:
#   bash benchmarks/sog_connect_four_screen.sh train 480 PACK_DIR
#   bash benchmarks/sog_connect_four_screen.sh eval GAMES PACK_DIR [JOBS]
# eval: each run's SoG(100, 1), playing its most probable move, against MCTS-Solver 1x
# (`mcts-solver:100`) over GAMES games (AlphaZero: its agent at 100 simulations); one line each.
#   NAMES="base pw1" bash benchmarks/sog_connect_four_screen.sh train 60 /tmp/p   # a subset
# Every SoG run starts from the preset with the paper's policy weight 0.05 and 5 updates per
# example (the preset as screened on 2026-11-27, before it took up this screen's winners).
set -u
MODE=$1; ARG=$2; PACK=$3; WORK=${WORK:-/tmp/c4sog}
P="--set sog.policy_weight=1"
declare -A V=(
 [base]="" [pw1]="$P" [pw02]="--set sog.policy_weight=0.2"
 [pw1_solve4]="$P --set sog.solves_per_step=4" [pw1_ptd1]="$P --set sog.p_td=1"
 [pw1_ptd1_solve0]="$P --set sog.p_td=1 --set sog.solves_per_step=0"
 [pw1_sims50]="$P --set sog.simulations=50" [pw1_sims10]="$P --set sog.simulations=10"
 [pw1_conv]="$P --set net.kind=resnet --set net.blocks=3 --set net.channels=64 --set net.width=128"
 [pw1_lr3e3]="$P --set train.learning_rate=3e-3" [pw1_upd20]="$P --set sog.max_updates=20"
 [pw1_mb4]="$P --set train.minibatches_per_step=4" [pw1_ep4]="$P --set sog.episodes_per_step=4"
 [pw1_seed1]="$P --seed 1" [pw1_solvesims50]="$P --set sog.solve_simulations=50"
)
NCPU=$(python3 -c "import os; print(os.cpu_count())")
case $MODE in
train)
  core=0
  for name in ${NAMES:-${!V[@]} az}; do
    if [ $name = az ]; then algo="--algo alphazero"; else algo="--algo sog --set sog.policy_weight=0.05 --set sog.max_updates=5 ${V[$name]}"; fi
    taskset -c $((core % NCPU)) timeout -s TERM $ARG python3 -m polyzero train connect_four $algo \
      --no-progress --device cpu --run-dir $WORK/$name --set threads=1 --set train.steps=100000 \
      --set eval.every=0 --set eval.final_games=0 --set train.checkpoint_every=10 > $WORK.$name.log 2>&1 &
    core=$((core + 1))
  done
  wait
  mkdir -p $PACK/runs
  for d in $WORK/*/; do
    name=$(basename $d); last=$(ls $d/checkpoints | grep step_ | sort | tail -1)
    mkdir -p $PACK/runs/$name/checkpoints/$last
    cp $d/config.toml $d/metrics.jsonl $PACK/runs/$name/
    cp $d/checkpoints/$last/{config.toml,learner.pt,state.json} $PACK/runs/$name/checkpoints/$last/
    echo $last > $PACK/runs/$name/checkpoints/latest
  done
  (cd $PACK/runs && ls | split -l 4 - ../group_ && for g in ../group_*; do
     tar czf $g.tgz $(cat $g); rm $g; done)
  rm -r $PACK/runs ;;
eval)
  mkdir -p $WORK.eval && for t in $PACK/group_*.tgz; do tar xzf $t -C $WORK.eval; done
  for d in $WORK.eval/*/; do
    name=$(basename $d)
    if [ $name = az ]; then agent=${d%/}@100; else agent="sog:100,1,final=argmax,net=${d%/}"; fi
    echo "$agent"
  done | xargs -P ${4:-$NCPU} -I{} sh -c 'python3 -m polyzero arena "{}" mcts-solver:100 --games '"$ARG"' --no-progress 2>&1 | tail -n 1 | sed "s|^|{}  |"' ;;
*) echo "usage: $0 train SECONDS PACK_DIR | eval GAMES PACK_DIR [JOBS]" >&2; exit 2 ;;
esac
