"""Benchmarks `nannon_636` and `nannon_1256` (games of chance; the shape of the NDMZ
paper's Figure 2 and Section 4.3): Nondeterministic MuZero, chance-aware AlphaZero
and the TD(lambda) baseline trained on Nannon for the same wall-clock budget, every
kept checkpoint scored against the optimal player and against random play.

    python benchmarks/nannon_636.py train --method ndmz --budget-min 60 &     # one core each
    python benchmarks/nannon_636.py train --method alphazero --budget-min 60 &
    python benchmarks/nannon_636.py train --method td --budget-min 60
    python benchmarks/nannon_636.py eval && python benchmarks/nannon_636.py report
    python benchmarks/nannon_636.py all --game 'nannon(points=12,checkers=5,die_sides=6)'  # nannon_1256

Phases (each resumable: re-running continues where it stopped):
  train   one method (--method, or all three one after another): the shipped preset
          (`ndmz_nannon`, `alphazero_nannon`) through `Trainer` in chunks of
          --chunk-steps learning steps, a kept checkpoint after each, until
          --budget-min minutes of training time; TD(lambda)
          (`polyzero.baselines.td_lambda`) in chunks of --td-chunk rounds of 300 games.
  eval    at the untrained network and --points checkpoints spread over the
          training time (within --budget-min): the raw policy (greedy move of the
          policy head; TD: the greedy afterstate move; tabulated at every
          position) scored exactly
          against the optimal player and random play, plus --games sampled games
          against each (half per seat); the search agent (the preset's evaluation
          simulations, no noise, most-visited move) the same way on 6-3-6, where
          every decision is tabulated, and on larger games in --games live games
          against each, --final-games against the optimal player at the last
          checkpoint; NDMZ's dynamics tests (Section 4.3) per k. Every cell is
          cached in WORK/eval/*.json.
  report  benchmarks/results/NAME.{json,md,png}.

Several training seeds: train and eval each with --seed S --work 'runs/bench/NAME_s{seed}'
(one work directory per seed; the train phase records its commit and the machine's
load average there), then `report --seeds 0,1,2` writes NAME_seeds.{json,md,png}: the
mean and 95% t-interval over seeds at each mark (benchmarks/nannon_seeds.py). A seed
whose work directory is gone: `--seed-results 0=benchmarks/results/NAME.json` takes its
evaluated checkpoints from its one-seed report (which stores its training commits and load;
repeat it for a seed whose methods were reported apart). Methods trained in work directories
of their own join each seed with `--with-work 'runs/bench/OTHER_s{seed}'`. On 12-5-6 the
report reads the paper's order at the last mark (NDMZ and AlphaZero searching above
TD(lambda), against random play and against the optimal player): it holds when every mean
is above TD(lambda)'s with at least 3 seeds each, and says whether the intervals are apart.

Targets (the issue): on 6-3-6 the NDMZ search agent's exact expected score against the
optimal player at least 0.49 within 60 minutes of training (issue 56: a mean of at
least 0.495 over 3 seeds at a mark); on 12-5-6 the order above (report --seeds); on
both, top-move dynamics accuracy of at least 95% for every k <= K.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nannon_seeds  # noqa: E402
from common import (  # noqa: E402
    RESULTS,
    ROOT,
    cached,
    check_chunkable,
    git_commit,
    results_name,
    run_phases,
    sample_loadavg,
    seed_list,
    train_in_chunks,
    utcnow,
)
from polyzero.sog.probe import spread_checkpoints as spread  # noqa: E402

METHODS = ("ndmz", "alphazero", "td")


# ----------------------------------------------------------------------------- train
def _trainer(args, run: Path, method: str):
    from polyzero.config import build_config
    from polyzero.train.checkpoint import latest_checkpoint
    from polyzero.train.driver import Trainer

    if latest_checkpoint(run) is not None:
        return Trainer.resume(run, progress=False)
    sets = [
        f"seed={args.seed}",
        "threads=1",
        "eval.every=0",
        "eval.final_games=0",
        "train.keep_checkpoints=100000",
        *args.set,
    ]
    cfg = build_config(args.game, method, None, sets)
    check_chunkable(cfg.train)  # before the run exists: a resume does not read --set
    trainer = Trainer.create(cfg, run, progress=False)
    trainer.save()  # step 0: the untrained network
    return trainer


def _train_td(args, run: Path) -> None:
    """TD(lambda) in chunks of rounds; each chunk leaves WORK/td/checkpoints/step_R.pt."""
    import torch

    from polyzero.baselines.td_lambda import TDLambda
    from polyzero.games import load_game
    from polyzero.games.nannon_solver import shared_solution

    sol = shared_solution(load_game(args.game), progress=True)
    td = TDLambda(sol, seed=args.seed)
    ckpts = run / "checkpoints"
    ckpts.mkdir(parents=True, exist_ok=True)
    done = sorted(ckpts.glob("step_*.pt"))
    train_time = 0.0
    if done:
        state = torch.load(done[-1], weights_only=True)
        td.net.load_state_dict(state["net"])
        td.optimizer.load_state_dict(state["optimizer"])
        td.rounds, td.games, train_time = state["rounds"], state["games"], state["train_time"]
        td.rng.bit_generator.state = json.loads(state["rng"])

    def save():
        # No policy table: on 12-5-6 it is 85 MB per checkpoint; eval rebuilds it from the net.
        torch.save(
            {
                "net": td.net.state_dict(),
                "optimizer": td.optimizer.state_dict(),
                "rounds": td.rounds,
                "games": td.games,
                "train_time": train_time,
                "rng": json.dumps(td.rng.bit_generator.state),
            },
            ckpts / f"step_{td.rounds:06d}.pt",
        )

    if not done:
        save()
    while train_time < args.budget_min * 60:
        t0 = time.perf_counter()
        for _ in range(args.td_chunk):
            td.train_round()
        train_time += time.perf_counter() - t0
        save()
        print(f"[train td] round {td.rounds}, {train_time / 60:.1f} min", flush=True)


def phase_train(args, work: Path) -> None:
    # What the seeds' report names: the commit each start trained at, and the machine's load.
    with open(work / "train_commits.txt", "a") as f:
        f.write(f"{utcnow()} {git_commit()}\n")
    sampling = sample_loadavg(work / "loadavg.jsonl")
    try:
        for method in [args.method] if args.method else METHODS:
            run = work / method / "run"
            if method == "td":
                _train_td(args, run)
                continue
            train_in_chunks(_trainer(args, run, method), args.budget_min, args.chunk_steps, f"train {method}")
    finally:
        sampling.set()


# ----------------------------------------------------------------------------- eval
def checkpoints(work: Path, method: str) -> list[dict]:
    import torch

    root = work / method / "run" / "checkpoints"
    out = []
    if method == "td":
        for path in sorted(root.glob("step_*.pt")):
            state = torch.load(path, weights_only=True)
            out.append(
                {
                    "path": str(path),
                    "step": state["rounds"],
                    "minutes": state["train_time"] / 60,
                    "games": state["games"],
                }
            )
        return out
    for path in sorted(root.glob("step_*")):
        state = json.loads((path / "state.json").read_text())
        out.append({"path": str(path), "step": state["step"], "minutes": state["train_time"] / 60})
    return out


def score_table(sol, table, games: int, seed: int) -> dict:
    """Exact scores of a policy table and `games` sampled games against optimal and random."""
    import numpy as np

    from polyzero.eval.stats import wilson_interval
    from polyzero.games.nannon_policies import evaluate_policy, sample_games

    out = {}
    for opponent in ("optimal", "random"):
        out[f"exact_vs_{opponent}"] = evaluate_policy(sol, table, opponent).score
        if games:
            wins = int(np.count_nonzero(sample_games(sol, table, opponent, games, seed=seed) > 0))
            lo, hi = wilson_interval(wins / games, games)
            out[f"sampled_vs_{opponent}"] = [wins / games, lo, hi]
    return out


def match_scores(game, player, games: dict[str, int], seed: int) -> dict:
    """Live games of a search player against each reference opponent (half per seat)."""
    from polyzero.eval.arena import play_match
    from polyzero.eval.players import reference_player

    out = {}
    for opponent, n in games.items():
        m = play_match(game, player, reference_player(opponent, game, seed), n, seed=seed, progress=True)
        out[f"sampled_vs_{opponent}"] = [m.score, m.ci_low, m.ci_high]
    return out


def evaluate_checkpoint(args, method: str, point: dict, games: int) -> dict:
    import torch

    from polyzero.algos.ndmz import nannon_raw_policy
    from polyzero.games import load_game
    from polyzero.games.nannon_policies import tabulate_player
    from polyzero.games.nannon_solver import shared_solution

    game = load_game(args.game)
    sol = shared_solution(game, progress=True)
    rec = {"method": method, **point}
    if method == "td":
        from polyzero.baselines.td_lambda import TDLambda

        td = TDLambda(sol, seed=args.seed)
        td.net.load_state_dict(torch.load(point["path"], weights_only=True)["net"])
        rec["raw"] = score_table(sol, td.policy_table(), args.games, args.seed)
        return rec
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config, read_toml
    from polyzero.train.checkpoint import read_learner
    from polyzero.train.driver import agent_player

    ckpt = Path(point["path"])
    cfg = build_config(base=read_toml(ckpt / "config.toml"))
    algo = make_algorithm(cfg, game)
    weights = read_learner(ckpt)["net"]
    net = algo.build_network()
    net.load_state_dict(weights)
    rec["raw"] = score_table(sol, nannon_raw_policy(sol, net), args.games, args.seed)
    player = agent_player(algo, cfg, weights, "cpu", point["step"], seed=args.seed, sample_moves=0)
    rec["simulations"] = cfg.eval.simulations
    if method == "ndmz":  # the issue: network calls per search, beside the iterations
        searches, search = [], algo.search

        def counted(*a, **k):
            result = search(*a, **k)
            searches.append((len(result.backups), result.network_evaluations.sum(), result.backups.sum()))
            return result

        algo.search = counted
    if sol.params.points <= 8:  # every decision tabulated: ~14,000 searches on 6-3-6
        rec["search"] = score_table(sol, tabulate_player(sol, game, player), args.games, args.seed)
    else:  # 12-5-6: ~10 million decisions, so games played live (the issue: sampled)
        rec["search"] = match_scores(game, player, {"optimal": games, "random": args.games}, args.seed)
    if method == "ndmz":
        from polyzero.train.probe import dynamics_tests

        n, evaluations, backups = (float(sum(x)) for x in zip(*searches))
        rec["per_search"] = {"network_evaluations": evaluations / n, "backups": backups / n}

        rec["dynamics"] = dynamics_tests(net, game, cfg.ndmz.unroll_steps, games=500, seed=args.seed)
    return rec


def phase_eval(args, work: Path) -> None:
    cells = []
    for method in [args.method] if args.method else METHODS:
        # The chunk that crosses the budget overshoots it; score what the budget trained.
        within = [p for p in checkpoints(work, method) if p["minutes"] <= args.budget_min]
        if args.at_steps:  # the checkpoints nearest given learning steps (another run's, to compare)
            within = checkpoints(work, method)
            picks = [min(within, key=lambda p: abs(p["step"] - step)) for step in args.at_steps] if within else []
        else:
            picks = spread(within, args.points)
        for point in picks:
            cells.append((f"{method}-step{point['step']:06d}", method, point))

    def show(rec: dict) -> str:
        return json.dumps({agent: rec[agent] for agent in ("raw", "search") if agent in rec})

    last = {method: point for _, method, point in cells}  # the final checkpoint of each method

    def games(method: str, point: dict) -> int:
        return max(args.games, args.final_games) if point is last[method] else args.games

    for name, method, point in reversed(cells) if args.reverse else cells:
        cached(work, name, lambda: evaluate_checkpoint(args, method, point, games(method, point)), show)


# ----------------------------------------------------------------------------- report
def phase_report(args, work: Path) -> dict:
    rows = sorted(
        (json.loads(p.read_text()) for p in (work / "eval").glob("*.json")),
        key=lambda r: (METHODS.index(r["method"]), r["minutes"]),
    )
    targets = {}
    if not nannon_seeds.search_sampled(args.game):  # 6-3-6's target; a larger board's is the order (--seeds)
        ndmz = [r for r in rows if r["method"] == "ndmz" and r["minutes"] <= 60]
        within = [r["search"]["exact_vs_optimal"] for r in ndmz if "exact_vs_optimal" in r.get("search", {})]
        best = max(within, default=None)
        targets["ndmz_search_best_exact_vs_optimal_within_60min"] = best
        targets["ndmz_search_ge_0.49_within_60min"] = best is not None and best >= 0.49
    dyn = _ndmz_dynamics(rows)
    targets["ndmz_top_move_per_k_at_last_checkpoint"] = last_dyn = dyn[-1]["dynamics"]["top_move"] if dyn else None
    targets["ndmz_top_move_ge_0.95_every_k"] = last_dyn is not None and min(last_dyn) >= 0.95
    command = nannon_seeds.report_command(args)
    git = git_commit()
    result = {
        "game": args.game,
        "seed": args.seed,
        "command": command,
        "git": git,
        "machine": f"{platform.node()} ({platform.processor() or platform.machine()}), "
        f"{__import__('os').cpu_count()} CPUs",
        "train_git": nannon_seeds.train_commits(work),  # what report --seed-results names
        "load_while_training": nannon_seeds.load_summary(work),
        "rows": rows,
        "targets": targets,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2))
    lines = markdown(args, result)
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    plot_curves(rows, RESULTS / f"{args.out}.png", args.game)
    print("\n".join(lines))
    return result


def _ndmz_dynamics(rows: list[dict]) -> list[dict]:
    """The NDMZ checkpoints whose dynamics were tested."""
    return [r for r in rows if r["method"] == "ndmz" and "dynamics" in r]


def markdown(args, result: dict) -> list[str]:
    """The report's lines: a row per checkpoint and agent, the dynamics tests, the targets."""
    rows, command, git = result["rows"], result["command"], result["git"]

    def cell(part: dict | None, key: str) -> str:
        if not part or key not in part:
            return ""
        v = part[key]
        return f"{v:.4f}" if not isinstance(v, list) else f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"

    live = ""
    if any("exact_vs_optimal" not in r.get("search", {"exact_vs_optimal": 0}) for r in rows):
        live = (
            f"; the search agent plays live games, at the last checkpoint "
            f"{max(args.games, args.final_games)} against the optimal player"
        )
    lines = [
        f"# Benchmark `{args.out}`: NDMZ, chance-aware AlphaZero and TD(lambda) on {args.game}",
        "",
        f"Machine: {result['machine']}. Command: `{command}` (commit {git[:10]}). Seed {args.seed}.",
        "",
        "Scores are win probabilities (both seats, the opening roll included): exact, and over "
        f"{args.games} sampled games (Wilson 95% interval{live}). "
        "Minutes: training time of the checkpoint.",
        "",
        "| method | step | minutes | agent | exact vs optimal | exact vs random | sampled vs optimal "
        "| sampled vs random |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        for agent in ("raw", "search"):
            if agent in r:
                label = agent if agent == "raw" else f"search {r.get('simulations')}"
                lines.append(
                    f"| {r['method']} | {r['step']} | {r['minutes']:.1f} | {label} | "
                    f"{cell(r[agent], 'exact_vs_optimal')} | {cell(r[agent], 'exact_vs_random')} | "
                    f"{cell(r[agent], 'sampled_vs_optimal')} | {cell(r[agent], 'sampled_vs_random')} |"
                )
    lines += _dynamics_table(_ndmz_dynamics(rows))
    return lines + ["", f"Targets: {json.dumps(result['targets'])}"]


def _dynamics_table(dyn: list[dict]) -> list[str]:
    """The NDMZ dynamics tests and search costs per checkpoint (none: no lines)."""
    if not dyn:
        return []
    k = len(dyn[0]["dynamics"]["top_move"])
    lines = [
        "",
        "NDMZ dynamics tests (Section 4.3, 500 random games): top-move / uniform accuracy per k; "
        "and per search of the search agent, the g + f evaluations (the initial h + f included) "
        "and the iterations that backed up a value.",
        "",
        "| step | minutes | " + " | ".join(f"k={i}" for i in range(k)) + " | evaluations | backups |",
        "|---:|---:|" + "---|" * k + "---:|---:|",
    ]
    for r in dyn:
        d, cost = r["dynamics"], r.get("per_search", {})
        lines.append(
            f"| {r['step']} | {r['minutes']:.1f} | "
            + " | ".join(f"{t:.3f} / {u:.3f}" for t, u in zip(d["top_move"], d["uniform"]))
            + " | "
            + " | ".join(f"{cost[key]:.1f}" if key in cost else "" for key in ("network_evaluations", "backups"))
            + " |"
        )
    return lines


def plot_curves(rows: list[dict], path: Path, game: str) -> None:
    """Score against the optimal player over training minutes, per method and agent."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method in METHODS:
        for agent in ("raw", "search"):
            pts = [(r["minutes"], r[agent]) for r in rows if r["method"] == method and agent in r]
            if not pts:
                continue
            key, _ = nannon_seeds.best_known(pts[0][1], "optimal")
            ys = [nannon_seeds.score_of(p, key) for _, p in pts]
            ax.plot([m for m, _ in pts], ys, marker="o", label=f"{method} {agent}")
    ax.axhline(0.5, linestyle="--", color="gray", linewidth=1)
    ax.annotate("optimal", (0, 0.5), fontsize=7, color="gray", va="bottom")
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel("score against the optimal player")
    ax.set_title(f"{game}: score against the optimal player")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", default="nannon")
    p.add_argument("--method", choices=METHODS, default=None, help="one method (default: all three)")
    p.add_argument("--work", type=Path, default=None, help="default runs/bench/NAME")
    p.add_argument("--out", type=results_name, default=None, help="results name (default nannon_636 / nannon_1256)")
    p.add_argument("--budget-min", type=float, default=60.0, help="training time per method (minutes)")
    p.add_argument("--chunk-steps", type=int, default=10, help="learning steps between kept checkpoints")
    p.add_argument("--td-chunk", type=int, default=10, help="TD(lambda) rounds between kept checkpoints")
    p.add_argument("--points", type=int, default=4, help="trained checkpoints evaluated per method")
    p.add_argument("--games", type=int, default=1000, help="sampled games against each opponent")
    p.add_argument(
        "--final-games",
        type=int,
        default=10000,
        help="live games of the final checkpoint's search agent against the optimal player "
        "on games too large to tabulate (12-5-6)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--at-steps",
        type=seed_list,
        default=None,
        help="eval only: the checkpoints nearest these learning steps (e.g. 920,1100), past the budget too",
    )
    nannon_seeds.add_arguments(p)  # report --seeds and the files beside it
    p.add_argument("--reverse", action="store_true", help="evaluate the last cell first (a second eval process)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    args = p.parse_args(argv)
    from polyzero.games import load_game
    from polyzero.games.nannon_solver import NannonParams

    prm = NannonParams.from_game(load_game(args.game))
    args.out = args.out or f"nannon_{prm.points}{prm.checkers}{prm.die_sides}"
    args.argv = list(sys.argv[1:] if argv is None else argv)
    for flag in ("--against", "--seed-results", "--with-work"):
        if getattr(args, flag[2:].replace("-", "_")) and args.seeds is None:
            p.error(f"{flag} goes with report --seeds")
    from polyzero.errors import UsageError

    try:
        if args.seeds is not None:
            if args.phase != "report":
                p.error("--seeds is for the report phase (train and eval one --seed at a time)")
            nannon_seeds.report(args)
            return
        work = Path(str(args.work).format(seed=args.seed)) if args.work else ROOT / "runs" / "bench" / args.out
        work.mkdir(parents=True, exist_ok=True)
        run_phases(args, work, phase_train, phase_eval, phase_report)
    except UsageError as exc:  # a bad --set or earlier results file, or a setting chunked training refuses
        p.exit(2, f"{p.prog}: error: {exc}\n")


if __name__ == "__main__":
    main()
