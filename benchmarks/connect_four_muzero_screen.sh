#!/usr/bin/env bash
# Screen of MuZero settings on Connect Four beside the AlphaZero preset, all trained at the
# same time for TRAIN_S seconds of wall clock, one process pinned to one core each (16
# processes: made for a 16-core machine), then each agent at 100 simulations against
# MCTS-Solver 1x over GAMES games and probed on 60 immediate wins and 60 forced blocks
# (benchmarks/selfplay_diversity.py --tactics). Prints one block per setting.
#   bash benchmarks/connect_four_muzero_screen.sh 330 30 > screen.log
#   NAMES="mz_base az" bash benchmarks/connect_four_muzero_screen.sh 60 2   # a subset
# A name ending in _sN trains that setting with seed N (mz_uqzero_s1: seed 1); others seed 0.
# MZ_EXTRA is added to every MuZero run. Both screens so far (benchmarks/results/
# connect_four_muzero_screen{,2}.md) ran when the MuZero preset's search.unvisited_q was "min";
# it is "zero" now, so MZ_EXTRA="--set search.unvisited_q=min" repeats them.
set -u
TRAIN=$1; GAMES=$2; WORK=${WORK:-/tmp/c4mz}
G="--search gumbel"; C="--set muzero.consistency_weight=2"
Z="--set search.unvisited_q=zero"; L="--set train.l2=1e-5"
declare -A V=(
 [mz_base]="" [mz_gumbel]="$G" [mz_gumbel_cons]="$G $C" [mz_cons]="$C"
 [mz_sims50]="--set search.num_simulations=50" [mz_gumbel_sims8]="$G --set search.num_simulations=8"
 [mz_lr3e3]="--set train.learning_rate=3e-3" [mz_k3]="--set muzero.unroll_steps=3"
 [mz_noscale]="--set muzero.scale_hidden=false" [mz_nogradscale]="--set muzero.gradient_scaling=false"
 [mz_azsel]="--set search.selection=alphazero --set search.c_puct=1.0 --set search.unvisited_q=zero"
 [mz_mb8]="--set train.minibatches_per_step=8" [mz_gumbel_termrew]="$G --set muzero.terminal_reward=true"
 [mz_gumbel_cons_mb8]="$G $C --set train.minibatches_per_step=8" [mz_gumbel_layer]="$G --set muzero.unroll_norm=layer"
 [mz_uqzero]="$Z" [mz_uqparent]="--set search.unvisited_q=parent" [mz_l2]="$L" [mz_uqzero_l2]="$Z $L"
 [mz_uqzero_l2_cons]="$Z $L $C" [mz_uqzero_l2_lr3e3]="$Z $L --set train.learning_rate=3e-3"
 [mz_gumbel_l2]="$G $L"
 [mz_tv]="--set muzero.terminal_value=true" [mz_ct]="$C --set muzero.consistency_terminal=true"
 [mz_tvc]="$C --set muzero.consistency_terminal=true --set muzero.terminal_value=true"
 [mz_tvc_gumbel]="$G $C --set muzero.consistency_terminal=true --set muzero.terminal_value=true"
)
NCPU=$(python3 -c "import os; print(os.cpu_count())")
ALL="${!V[@]} az"
core=0
for name in ${NAMES:-$ALL}; do
  setting=$name; seed=0
  [[ $name =~ ^(.*)_s([0-9]+)$ ]] && setting=${BASH_REMATCH[1]} && seed=${BASH_REMATCH[2]}
  algo=muzero; extra="${MZ_EXTRA:-} ${V[$setting]:-}"; [ $setting = az ] && algo=alphazero extra=
  taskset -c $((core % NCPU)) timeout -s TERM $TRAIN python3 -m polyzero train connect_four --algo $algo \
    --no-progress --seed $seed --run-dir $WORK/$name --set train.steps=100000 --set eval.every=0 \
    --set eval.final_games=0 --set train.checkpoint_every=5 $extra > $WORK.$name.train.log 2>&1 &
  core=$((core + 1))
done
wait
core=0
for d in $WORK/*; do
  name=$(basename $d); last=$(ls $d/checkpoints | sort | tail -1); step=$((10#${last#step_}))
  ( c=$((core % NCPU))
    taskset -c $c timeout ${ARENA_S:-140} python3 -m polyzero arena $d@100 mcts-solver:100 --games $GAMES --no-progress > $WORK.$name.arena.log 2>&1
    taskset -c $c timeout 45 python3 benchmarks/selfplay_diversity.py $d --checkpoints $step --games 8 --tactics 60 > $WORK.$name.tactics.log 2>&1
    echo "== $name step $step"; tail -n 2 $WORK.$name.arena.log; tail -n 1 $WORK.$name.tactics.log
    grep -h '"step"' $d/metrics.jsonl | tail -n 1 ) > $WORK.$name.result &
  core=$((core + 1))
done
wait
cat $WORK.*.result
