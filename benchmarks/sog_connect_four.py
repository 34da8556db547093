"""Benchmark `sog_connect_four` (Student of Games part 2): SoG trained on Connect Four
on this machine's CPU cores; the agent SoG(100, 1) with the network at checkpoints
spread over the training time against MCTS-Solver 1x (100 simulations), and its
Elo gap to the foundation's AlphaZero at equal wall-clock (head to head against the
`connect_four_alphazero` benchmark's polyzero marks, the agent at 100 simulations).

    python benchmarks/sog_connect_four.py all --budget-min 60 --games 100

Phases (each resumable): train (as `sog_leduc.py`: chunks of learning steps,
every checkpoint kept), eval (cached per chunk of --chunk-games games and per
point under WORK/eval/; --jobs N plays N chunks at once), report
(benchmarks/results/OUT.{json,md}, OUT = --out, default sog_connect_four).

Target (the issue): at least 50% against MCTS-Solver 1x. The paper finds SoG
weaker than AlphaZero on perfect-information games.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    RESULTS,
    ROOT,
    cached,
    git_commit,
    machine_line,
    results_name,
    run_jobs,
    run_phases,
    write_json_atomic,
)
from sog_leduc import checkpoints, chosen, phase_train  # noqa: E402

AZ_MARKS = ROOT / "runs" / "bench" / "connect_four_alphazero"


def alphazero_mark(minutes: float, marks: Path = AZ_MARKS) -> Path | None:
    """The AlphaZero benchmark's polyzero mark nearest `minutes` of training wall clock
    (`marks`: a `connect_four_alphazero` WORK, or a copy of its marks and segments)."""
    segments = marks / "polyzero_segments.jsonl"
    if not segments.exists():
        return None
    rows = [json.loads(line) for line in segments.read_text().splitlines() if line.strip()]
    if not rows:
        return None
    best = min(rows, key=lambda r: abs(r["wall_s"] / 60 - minutes))
    return marks / best["checkpoint"]


def elo(score: float) -> float:
    s = min(max(score, 1e-3), 1 - 1e-3)
    return 400 * math.log10(s / (1 - s))


def elo_text(score: float, ci: list[float]) -> str:
    """The Elo gap of a score; for a clean sweep, the bound its 95% interval gives
    (a score of 0 or 1 has no finite gap)."""
    if score <= 0:
        return f"< {elo(ci[1]):+.0f}"
    if score >= 1:
        return f"> {elo(ci[0]):+.0f}"
    return f"{elo(score):+.0f}"


def _chunk(agent_spec: str, opponent_spec: str, games: int, seed: int) -> dict:
    """`games` games of one cell (seats alternating, the agent first), seeded by `seed`."""
    import torch

    from polyzero.eval import make_player, play_match
    from polyzero.eval.players import register_player_loader
    from polyzero.games import load_game
    from polyzero.train.agents import load_search_player

    torch.set_num_threads(1)
    register_player_loader(load_search_player)  # the AlphaZero opponent is a checkpoint
    game = load_game("connect_four")
    agent = make_player(agent_spec, game, seed=seed)
    res = play_match(game, agent, make_player(opponent_spec, game, seed=seed + 1), games, seed=seed)
    return {"wins": res.wins, "draws": res.draws, "losses": res.losses, "machine": machine_line()}


def points_to_evaluate(args, work: Path) -> list[dict]:
    """The untrained network and --points checkpoints spread over the training time, or
    with --at, the checkpoints nearest those minutes of training."""
    if not args.at:
        return chosen(args, work)
    points = checkpoints(work)
    return [min(points, key=lambda p: abs(p["minutes"] - m)) for m in args.at] if points else []


def phase_eval(args, work: Path) -> None:
    """Each cell (point x opponent) is played in chunks of --chunk-games games, each
    chunk cached under WORK/eval/chunks/ (so --jobs N plays N chunks at once and an
    interrupted evaluation resumes by chunk); a cell is merged when all its chunks are in."""
    from polyzero.eval.stats import MatchResult

    cells = []  # (cache name, point, agent, opponent)
    for point in points_to_evaluate(args, work):
        final, tag = (",final=argmax", "-argmax") if args.final == "argmax" else ("", "")
        agent = f"sog:{args.agent_sims},1{final},net={point['path']}"
        cells.append((f"step{point['step']:06d}{tag}-mcts-solver", point, agent, "mcts-solver:100"))
        az = alphazero_mark(point["minutes"], args.az_marks)
        if az is not None and point["step"] > 0:
            cells.append((f"step{point['step']:06d}{tag}-alphazero", point, agent, f"{az}@{args.agent_sims}"))
    if args.reverse:
        cells.reverse()
    sizes = [min(args.chunk_games, args.games - start) for start in range(0, args.games, args.chunk_games)]

    def path(name: str, j: int) -> Path:
        return work / "eval" / "chunks" / f"{name}.chunk{j}.json"

    todo = [
        (name, j, agent, opponent, n)
        for name, _, agent, opponent in cells
        if not (work / "eval" / f"{name}.json").exists()
        for j, n in enumerate(sizes)
        if not path(name, j).exists()
    ]

    def save(key: tuple[str, int], rec: dict) -> None:
        write_json_atomic(path(*key), rec)
        print(f"[eval] {key[0]} chunk {key[1]}: W{rec['wins']} D{rec['draws']} L{rec['losses']}", flush=True)

    # chunk j's agent plays with seed S * 10000 + 2j, its opponent with that + 1
    run_jobs(
        [((name, j), _chunk, (agent, opponent, n, args.seed * 10_000 + 2 * j)) for name, j, agent, opponent, n in todo],
        args.jobs,
        save,
    )
    for name, point, agent, opponent in cells:
        parts = [path(name, j) for j in range(len(sizes))]
        if all(p.exists() for p in parts):
            recs = [json.loads(p.read_text()) for p in parts]
            res = MatchResult(*(sum(r[k] for r in recs) for k in ("wins", "draws", "losses")))
            cached(
                work,
                name,
                lambda: {
                    "spec": agent,
                    "opponent": opponent,
                    "values": [res.score],
                    "wins": res.wins,
                    "draws": res.draws,
                    "losses": res.losses,
                    "ci": [res.ci_low, res.ci_high],
                    "machines": sorted({r["machine"] for r in recs}),
                    **point,
                },
            )


def phase_report(args, work: Path) -> dict:
    rows = [json.loads(p.read_text()) for p in sorted((work / "eval").glob("*.json"))]
    rows.sort(key=lambda r: (r["step"], r["opponent"], r["spec"]))
    git = git_commit()
    command = "python benchmarks/sog_connect_four.py " + " ".join(sys.argv[1:])
    solver = [r for r in rows if r["opponent"].startswith("mcts-solver")]
    target = {"vs_mcts_solver_1x_50pct": bool(solver and max(r["values"][0] for r in solver) >= 0.5)}
    result = {
        "command": command,
        "git": git,
        "seed": args.seed,
        "machine": machine_line(),
        "rows": rows,
        "targets": target,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# Benchmark `sog_connect_four`" + (f" ({args.out})" if args.out != "sog_connect_four" else ""),
        "",
        f"Machine: {result['machine']}. Command: `{command}` (commit {git[:10]}). Seed {args.seed}.",
        "",
        "The agent is SoG(100, 1) with the network at that step; `minutes` = training time of the checkpoint; "
        "the AlphaZero opponent is the `connect_four_alphazero` benchmark's polyzero checkpoint nearest "
        "the same training wall clock, searching 100 simulations.",
        "",
        "| step | minutes | move | opponent | score [95% CI] | W / D / L | Elo gap |",
        "|---:|---:|---|---|---|---|---:|",
    ]
    for r in rows:
        opponent = r["opponent"].replace(f"{ROOT}/", "")
        move = "most probable" if "final=argmax" in r["spec"] else "sampled"
        lines.append(
            f"| {r['step']} | {r['minutes']:.1f} | {move} | `{opponent}` | {r['values'][0]:.3f} "
            f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] | {r['wins']} / {r['draws']} / {r['losses']} | "
            f"{elo_text(r['values'][0], r['ci'])} |"
        )
    played_on = sorted({m for r in rows for m in r.get("machines", [])})
    if played_on:  # chunks played in parallel (--jobs), possibly on another machine
        lines += ["", "Games played on: " + "; ".join(played_on) + "."]
    lines += ["", f"Targets: {json.dumps(target)}"]
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return result


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "bench" / "sog_connect_four")
    p.add_argument("--budget-min", type=float, default=60.0)
    p.add_argument("--chunk-steps", type=int, default=10)
    p.add_argument("--points", type=int, default=4)
    p.add_argument(
        "--at",
        type=float,
        nargs="+",
        metavar="MIN",
        help="eval: the checkpoints nearest these minutes of training instead of --points",
    )
    p.add_argument("--games", type=int, default=100)
    p.add_argument("--chunk-games", type=int, default=10, help="games per cached chunk of a cell")
    p.add_argument("--jobs", type=int, default=1, help="processes playing chunks in parallel")
    p.add_argument("--agent-sims", type=int, default=100)
    p.add_argument(
        "--final",
        choices=["sample", "argmax"],
        default="sample",
        help="the agent's move: sampled from the re-solved policy (sound self-play's) or its most "
        "probable one (final=argmax)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out", type=results_name, default="sog_connect_four", help="results name under benchmarks/results/"
    )
    p.add_argument(
        "--az-marks",
        type=Path,
        default=AZ_MARKS,
        help="the AlphaZero benchmark's WORK whose marks are the equal-wall-clock opponents",
    )
    p.add_argument(
        "--reverse",
        action="store_true",
        help="evaluate last cell first: a second eval process run so shares the work through the cache",
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    args.game = "connect_four"
    args.work.mkdir(parents=True, exist_ok=True)
    run_phases(args, args.work, phase_train, phase_eval, phase_report)


if __name__ == "__main__":
    main()
