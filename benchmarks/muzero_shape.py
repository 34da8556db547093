"""Benchmark `muzero_shape_ttt` (issue 56, "What to build" 1): what each lever of
MuZero's model shape costs in strength -- fewer unroll steps (K) and a lighter
dynamics network g -- on tic-tac-toe, a small proxy where the score is exact.

    python benchmarks/muzero_shape.py train --seeds 0,1,2      # resumable; one core
    python benchmarks/muzero_shape.py eval --seeds 0,1,2
    python benchmarks/muzero_shape.py report --seeds 0,1,2

Arms (over the shipped `muzero_tic_tac_toe` preset: MLP towers 2 x 128, hidden 64,
K = 5, 25 simulations): `preset`; `k3` (muzero.unroll_steps=3); `k1` (K = 1);
`dyn1` (muzero.dynamics_blocks=1: g with one hidden layer instead of h's two);
`k3_dyn1` (both).

Phases (each resumable):
  train   each arm and seed through `Trainer` (one thread, no evaluation) in chunks of
          --chunk-steps learning steps to --steps, a kept checkpoint after each; after
          each chunk WORK/ARM_sSEED/cpu.jsonl gets the step and the process's CPU
          seconds of training so far (self-play + learner, `time.process_time`, which
          the shared machine's load does not stretch).
  eval    every kept checkpoint: the agent (the preset's evaluation search, 25
          simulations, no noise, the most visited move, a tie broken uniformly at
          random as the player does) tabulated at every position of tic-tac-toe that
          is not over (4,520), then its exact expected score
          (win 1, draw 0.5, loss 0) over both seats against the perfect player (a
          minimax player choosing uniformly among the moves that keep the game's
          value) and against uniform random play. No sampling noise: a checkpoint's
          score is a number, the spread is over training seeds only.
  report  benchmarks/results/OUT.{json,md,png}: per arm the mean over seeds and its
          95% t-interval at each step mark, and at equal CPU seconds of training:
          at CPU marks up to the cheapest arm's mean CPU at --steps, each seed's
          score at its last checkpoint reached within that CPU (no interpolation).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    ROOT,
    cached,
    git_commit,
    machine_line,
    read_jsonl,
    results_name,
    run_phases,
    sample_loadavg,
    seed_list,
    train_in_chunks,
    utcnow,
    write_report,
)
from seed_cells import cell_text, mean_and_ci95  # noqa: E402

ARMS = {
    "preset": [],
    "k3": ["muzero.unroll_steps=3"],
    "k1": ["muzero.unroll_steps=1"],
    "dyn1": ["muzero.dynamics_blocks=1"],
    "k3_dyn1": ["muzero.unroll_steps=3", "muzero.dynamics_blocks=1"],
}
OPPONENTS = ("optimal", "random")


def arm_list(text: str) -> list[str]:
    """'preset,k1' -> ['preset', 'k1'] (--arms); an unknown arm is refused in one line."""
    arms = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in arms if a not in ARMS]
    if not arms or unknown:
        raise argparse.ArgumentTypeError(f"unknown arm(s) {unknown or text!r}; known: {', '.join(ARMS)}")
    return arms


# ----------------------------------------------------------------------------- exact scorer
def state_key(state) -> str:
    return f"{state.current_player()}|{state}"


def solved_positions(game) -> dict[str, tuple]:
    """Every position of `game` that is not over: key -> (state, the minimax-optimal moves);
    a game minimax cannot solve (chance, hidden information, too many positions) is a UsageError."""
    from polyzero.errors import UsageError
    from polyzero.sog.minimax_probe import minimax_positions

    try:
        return {state_key(p.state): (p.state, p.optimal) for p in minimax_positions(game)}
    except ValueError as exc:
        raise UsageError(f"the exact score solves every position, and {exc}") from None


def tabulate(choose, states: list, batch: int = 256) -> dict[str, list[int]]:
    """`choose(states) -> [moves, ...]` at every state (the moves the agent picks among
    uniformly), as a table keyed by position."""
    table = {}
    for i in range(0, len(states), batch):
        part = states[i : i + batch]
        for state, moves in zip(part, choose(part)):
            table[state_key(state)] = [int(a) for a in moves]
    return table


def most_visited(player):
    """A search player's choice at a batch of states: its most visited moves (it breaks
    a tie uniformly at random, `polyzero.search.policy.choose_actions`, so the exact
    score averages over them)."""

    def choose(states: list) -> list[list[int]]:
        result = player.algo.search(player.evaluate, states, player.params, player.rng, add_noise=False)
        if result.action is not None:  # a root that makes its own choice (Gumbel)
            return [[int(a)] for a in result.action]
        return [np.flatnonzero(v == v.max()).tolist() for v in result.root_visits]

    return choose


def exact_score(table: dict[str, list[int]], opponent, state, seat: int, memo: dict | None = None) -> float:
    """The agent's expected score (win 1, draw 0.5, loss 0) from `state` in seat `seat`,
    choosing uniformly among `table`'s moves wherever it is to move; `opponent(state)`
    gives the moves the other side chooses among uniformly."""
    memo = {} if memo is None else memo
    key = state_key(state)
    if key in memo:
        return memo[key]
    if state.is_terminal():
        value = (state.returns()[seat] + 1.0) / 2.0
    else:
        moves = table[key] if state.current_player() == seat else opponent(state)
        value = sum(exact_score(table, opponent, state.child(a), seat, memo) for a in moves) / len(moves)
    memo[key] = value
    return value


def scores_over_seats(game, table: dict[str, list[int]], solved: dict[str, tuple]) -> dict[str, float]:
    """The agent's exact score against the perfect and the random player, the mean of its
    two seats."""
    opponents = {"optimal": lambda s: solved[state_key(s)][1], "random": lambda s: s.legal_actions()}
    return {
        f"exact_vs_{name}": sum(exact_score(table, opp, game.new_initial_state(), seat) for seat in (0, 1)) / 2
        for name, opp in opponents.items()
    }


# ----------------------------------------------------------------------------- train
def run_dir(work: Path, arm: str, seed: int) -> Path:
    return work / f"{arm}_s{seed}"


def train_one(args, work: Path, arm: str, seed: int) -> None:
    from polyzero.config import build_config
    from polyzero.train.checkpoint import latest_checkpoint
    from polyzero.train.driver import Trainer

    here = run_dir(work, arm, seed)
    run, log = here / "run", here / "cpu.jsonl"
    here.mkdir(parents=True, exist_ok=True)
    done = read_jsonl(log) if log.exists() else []
    if latest_checkpoint(run) is not None and done:
        trainer = Trainer.resume(run, progress=False)
        done = [r for r in done if r["step"] <= trainer.step]
        if done[-1]["step"] != trainer.step:  # killed between the checkpoint and the log
            raise SystemExit(f"{log} ends before the checkpoint at step {trainer.step}: its CPU is lost; remove {here}")
        cpu = done[-1]["cpu_s"]
    else:
        sets = [f"seed={seed}", "threads=1", "eval.every=0", "eval.final_games=0", "train.keep_checkpoints=100000"]
        trainer = Trainer.create(build_config(args.game, "muzero", None, sets + ARMS[arm]), run, progress=False)
        trainer.save()  # step 0: the untrained network
        cpu, done = 0.0, [{"step": 0, "cpu_s": 0.0, "train_time": 0.0}]
        log.write_text(json.dumps(done[0]) + "\n")
    clock = {"at": time.process_time(), "cpu": cpu, "step": trainer.step}

    def log_cpu(trainer) -> None:
        now = time.process_time()
        clock.update(at=now, cpu=clock["cpu"] + now - clock["at"], step=trainer.step)
        with open(log, "a") as f:
            f.write(json.dumps({"step": trainer.step, "cpu_s": clock["cpu"], "train_time": trainer.train_time}) + "\n")

    try:
        train_in_chunks(trainer, 0, args.chunk_steps, f"train {arm} s{seed}", steps=args.steps, after_chunk=log_cpu)
    finally:  # an interrupt checkpoints mid-chunk: its CPU so far is logged, so a resume counts it
        if trainer.step != clock["step"]:
            log_cpu(trainer)


def phase_train(args, work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    with open(work / "train_commits.txt", "a") as f:
        f.write(f"{utcnow()} {git_commit()}\n")
    sampling = sample_loadavg(work / "loadavg.jsonl")
    try:
        for seed in args.seeds:
            for arm in args.arms:
                train_one(args, work, arm, seed)
    finally:
        sampling.set()


# ----------------------------------------------------------------------------- eval
def checkpoints(work: Path, arm: str, seed: int) -> list[dict]:
    """A run's kept checkpoints with their CPU seconds of training (cpu.jsonl)."""
    here = run_dir(work, arm, seed)
    if not (here / "cpu.jsonl").exists():
        return []
    cpu = {r["step"]: r["cpu_s"] for r in read_jsonl(here / "cpu.jsonl")}
    out = []
    for path in sorted((here / "run" / "checkpoints").glob("step_*")):
        step = json.loads((path / "state.json").read_text())["step"]
        if step in cpu:
            out.append({"path": str(path), "step": step, "cpu_s": cpu[step]})
    return out


def evaluate_checkpoint(game, solved: dict, point: dict) -> dict:
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config, read_toml
    from polyzero.train.checkpoint import read_learner
    from polyzero.train.driver import agent_player

    ckpt = Path(point["path"])
    cfg = build_config(base=read_toml(ckpt / "config.toml"))
    algo = make_algorithm(cfg, game)
    player = agent_player(algo, cfg, read_learner(ckpt)["net"], "cpu", point["step"], sample_moves=0)
    table = tabulate(most_visited(player), [state for state, _ in solved.values()])
    ties = sum(len(m) > 1 for m in table.values())
    return {
        **point,
        "simulations": cfg.eval.simulations,
        "tied_positions": ties,
        **scores_over_seats(game, table, solved),
    }


def phase_eval(args, work: Path) -> None:
    import torch

    from polyzero.games import load_game

    torch.set_num_threads(1)
    game = load_game(args.game)
    solved = solved_positions(game)
    for seed in args.seeds:
        for arm in args.arms:
            for point in checkpoints(work, arm, seed):
                cached(
                    work,
                    f"{arm}_s{seed}_step{point['step']:06d}",
                    lambda point=point: evaluate_checkpoint(game, solved, point),
                    show=lambda r: f"vs optimal {r['exact_vs_optimal']:.3f}, vs random {r['exact_vs_random']:.3f}",
                )


# ----------------------------------------------------------------------------- report
def cell(values: list[float], seeds: list[int], **where) -> dict:
    """One table cell: the seeds' values, their mean and 95% t-interval (none for one seed)."""
    return {**where, "seeds": seeds, "values": values, **mean_and_ci95(values)}


def at_cpu(rows: list[dict], cpu_s: float) -> dict | None:
    """A seed's last evaluated checkpoint reached within `cpu_s` CPU seconds of training."""
    return max((r for r in rows if r["cpu_s"] <= cpu_s), key=lambda r: r["cpu_s"], default=None)


def aggregate(rows: dict[tuple[str, int], list[dict]], arms: list[str], cpu_points: int = 4) -> dict:
    """`rows[(arm, seed)]`: a run's evaluated checkpoints. Per arm and score, cells at each
    learning step every seed reached, and at equal CPU seconds: `cpu_points` marks up to
    the lowest over arms of the mean CPU at the arm's last common step. `late`: each
    seed's mean over its checkpoints in the second half of the steps (past half the last
    common step), then the mean over seeds: one checkpoint's score flips with the
    policy's choice at a few positions, a window of them less."""
    by_steps, by_cpu, cpu_cost, late = [], [], {}, []
    for arm in arms:
        runs = {seed: r for (a, seed), r in rows.items() if a == arm and r}
        if not runs:
            continue
        common = sorted(set.intersection(*({r["step"] for r in rs} for rs in runs.values())))
        for step in common:
            picked = {seed: next(r for r in rs if r["step"] == step) for seed, rs in runs.items()}
            seeds = sorted(picked)
            for opp in OPPONENTS:
                values = [picked[s][f"exact_vs_{opp}"] for s in seeds]
                by_steps.append(cell(values, seeds, arm=arm, opponent=opp, step=step))
            by_steps.append(cell([picked[s]["cpu_s"] for s in seeds], seeds, arm=arm, opponent="cpu_s", step=step))
        if common and common[-1] > 0:
            last = [next(r for r in rs if r["step"] == common[-1])["cpu_s"] for rs in runs.values()]
            cpu_cost[arm] = {
                "step": common[-1],
                "cpu_s": sum(last) / len(last),
                "per_step": sum(last) / len(last) / common[-1],
            }
            window = [st for st in common if st > common[-1] / 2]
            seeds = sorted(runs)
            for opp in OPPONENTS:
                values = [
                    sum(r[f"exact_vs_{opp}"] for r in runs[s] if r["step"] in window) / len(window) for s in seeds
                ]
                late.append(cell(values, seeds, arm=arm, opponent=opp, steps=window))
    budget = min((c["cpu_s"] for c in cpu_cost.values()), default=0.0)
    marks = [budget * k / cpu_points for k in range(cpu_points + 1)] if budget else []
    for arm in arms:
        runs = {seed: r for (a, seed), r in rows.items() if a == arm and r}
        for mark in marks:
            picked = {seed: at_cpu(rs, mark + 1e-9) for seed, rs in runs.items()}
            seeds = sorted(s for s, r in picked.items() if r is not None)
            for opp in OPPONENTS:
                values = [picked[s][f"exact_vs_{opp}"] for s in seeds]
                if values:
                    by_cpu.append(
                        cell(values, seeds, arm=arm, opponent=opp, cpu_s=mark, steps=[picked[s]["step"] for s in seeds])
                    )
    return {"by_steps": by_steps, "by_cpu": by_cpu, "cpu_cost": cpu_cost, "late": late}


_fmt = functools.partial(cell_text, digits=3, missing="-")


def markdown(result: dict) -> list[str]:
    agg, arms = result["aggregate"], result["arms"]
    lines = [
        f"# {result['name']}: MuZero's model shape on tic-tac-toe, what each lever costs",
        "",
        f"- machine: {result['machine']}, shared (load averages below); one thread; commit {result['commit'][:10]}",
        f"- command: `{result['command']}`",
        f"- seeds {result['seeds']}; arms over `muzero_tic_tac_toe`: "
        + "; ".join(f"`{a}` {' '.join(ARMS[a]) or '(as shipped)'}" for a in arms),
        "- score: the agent's exact expected score over both seats (win 1, draw 0.5), its move at every "
        "position the preset's evaluation search (25 simulations, no noise, most visited); against the "
        "perfect player 0.5 is the most there is. Mean over seeds [95% t-interval].",
        f"- load average while training: {result['loadavg']}",
        "- references, scored the same way: "
        + "; ".join(
            f"{name} agent {r['exact_vs_optimal']:.3f} vs optimal, {r['exact_vs_random']:.3f} vs random"
            for name, r in result["references"].items()
        ),
        "",
        "## CPU cost of training (self-play + learner, one thread)",
        "",
        "| arm | steps | CPU s (mean) | CPU s per learning step | vs preset |",
        "|---|---|---|---|---|",
    ]
    base = agg["cpu_cost"].get("preset")
    for arm in arms:
        c = agg["cpu_cost"].get(arm)
        if c:
            ratio = f"{c['per_step'] / base['per_step']:.2f}x" if base else "-"
            lines.append(f"| {arm} | {c['step']} | {c['cpu_s']:.0f} | {c['per_step']:.3f} | {ratio} |")
    window = next((c["steps"] for c in agg["late"]), [])
    lines += ["", f"## Each seed's mean over the checkpoints at steps {', '.join(map(str, window))}", ""]
    lines += ["| arm | vs optimal | seeds | vs random | seeds |", "|---|---|---|---|---|"]
    for arm in arms:
        got = {c["opponent"]: c for c in agg["late"] if c["arm"] == arm}
        if got:
            lines.append(
                f"| {arm} | "
                + " | ".join(f"{_fmt(got[o])} | {', '.join(f'{v:.3f}' for v in got[o]['values'])}" for o in OPPONENTS)
                + " |"
            )
    for opp in OPPONENTS:
        steps = sorted({c["step"] for c in agg["by_steps"] if c["opponent"] == opp})
        lines += ["", f"## Exact score against the {opp} player, by learning steps", ""]
        lines += ["| arm | " + " | ".join(f"step {s}" for s in steps) + " |", "|---|" + "---|" * len(steps)]
        for arm in arms:
            got = {c["step"]: c for c in agg["by_steps"] if c["arm"] == arm and c["opponent"] == opp}
            lines.append(f"| {arm} | " + " | ".join(_fmt(got.get(s)) for s in steps) + " |")
        marks = sorted({c["cpu_s"] for c in agg["by_cpu"] if c["opponent"] == opp})
        lines += ["", f"## Exact score against the {opp} player, at equal CPU seconds of training", ""]
        lines += [
            "Each seed's last checkpoint reached within the CPU seconds (steps in brackets, per seed).",
            "",
            "| arm | " + " | ".join(f"{m:.0f} CPU s" for m in marks) + " |",
            "|---|" + "---|" * len(marks),
        ]
        for arm in arms:
            got = {c["cpu_s"]: c for c in agg["by_cpu"] if c["arm"] == arm and c["opponent"] == opp}
            lines.append(
                f"| {arm} | "
                + " | ".join(
                    "-" if m not in got else f"{_fmt(got[m])} ({'/'.join(map(str, got[m]['steps']))})" for m in marks
                )
                + " |"
            )
    return lines


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agg = result["aggregate"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8), sharey="row")
    for row, opp in enumerate(OPPONENTS):
        for col, (key, cells) in enumerate((("step", agg["by_steps"]), ("cpu_s", agg["by_cpu"]))):
            ax = axes[row][col]
            for arm in result["arms"]:
                mine = sorted((c for c in cells if c["arm"] == arm and c["opponent"] == opp), key=lambda c: c[key])
                if not mine:
                    continue
                x = [c[key] for c in mine]
                y = [c["mean"] for c in mine]
                ax.plot(x, y, marker="o", label=arm)
                if all(c["ci95"] for c in mine):
                    ax.fill_between(x, [c["ci95"][0] for c in mine], [c["ci95"][1] for c in mine], alpha=0.15)
            ax.set_xlabel("learning steps" if key == "step" else "CPU seconds of training")
            ax.set_ylabel(f"exact score vs {opp}")
            ax.grid(alpha=0.3)
    axes[0][0].legend()
    fig.suptitle(f"{result['name']}: mean of seeds {result['seeds']}, 95% t-interval")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def references(game_name: str) -> dict:
    """The same exact scores of two reference agents: the perfect player (uniform among
    the optimal moves) and uniform random play."""
    from polyzero.games import load_game

    game = load_game(game_name)
    solved = solved_positions(game)
    states = [s for s, _ in solved.values()]
    agents = {
        "perfect": lambda ss: [solved[state_key(s)][1] for s in ss],
        "random": lambda ss: [s.legal_actions() for s in ss],
    }
    return {name: scores_over_seats(game, tabulate(choose, states), solved) for name, choose in agents.items()}


def phase_report(args, work: Path) -> dict:
    rows = {}
    for seed in args.seeds:
        for arm in args.arms:
            paths = sorted((work / "eval").glob(f"{arm}_s{seed}_step*.json"))
            rows[(arm, seed)] = sorted((json.loads(p.read_text()) for p in paths), key=lambda r: r["step"])
    loads = [r["loadavg"][0] for r in read_jsonl(work / "loadavg.jsonl")] if (work / "loadavg.jsonl").exists() else []
    result = {
        "name": args.out,
        "game": args.game,
        "arms": args.arms,
        "seeds": args.seeds,
        "machine": machine_line(),
        "commit": git_commit(),
        "command": "python benchmarks/muzero_shape.py " + " ".join(sys.argv[1:]),
        "loadavg": f"1-min {min(loads):.2f}-{max(loads):.2f}, mean {sum(loads) / len(loads):.2f}" if loads else "-",
        "aggregate": aggregate(rows, args.arms),
        "references": references(args.game),
        "checkpoints": {f"{a}_s{s}": r for (a, s), r in rows.items()},
    }
    write_report(args.out, result, markdown(result), plot)
    return result


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", default="tic_tac_toe")
    p.add_argument("--arms", type=arm_list, default=list(ARMS))
    p.add_argument("--seeds", type=seed_list, default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=400, help="learning steps per run")
    p.add_argument("--chunk-steps", type=int, default=100, help="learning steps between kept checkpoints")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "bench" / "muzero_shape_ttt")
    p.add_argument("--out", type=results_name, default="muzero_shape_ttt")
    args = p.parse_args(argv)
    if args.steps < 1 or args.chunk_steps < 1:
        p.error("--steps and --chunk-steps must be positive")
    from polyzero.errors import UsageError
    from polyzero.games import load_game

    try:
        solved_positions(load_game(args.game))  # before any training: a game it cannot score is refused
        run_phases(args, args.work, phase_train, phase_eval, phase_report)
    except UsageError as exc:
        p.exit(2, f"{p.prog}: error: {exc}\n")


if __name__ == "__main__":
    main()
