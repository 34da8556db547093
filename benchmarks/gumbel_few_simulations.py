"""Benchmark `gumbel_few_simulations` (Gumbel issue; the Gumbel paper's claim that with
fewer simulations than actions Gumbel AlphaZero keeps improving where pUCT stalls).

For each game (Connect Four: 7 actions; hex 7x7: 49), search (puct, gumbel), number
of simulations per move n (2, 4, 16) and seed, `polyzero train` runs for the same
wall-clock budget, stopped by SIGTERM at every --mark-min and resumed (the
`connect_four_alphazero` benchmark's segment runner: each mark leaves a
checkpoint). Two runs train at a time, one per core, one torch thread each.
Every mark's network then plays at --eval-sims (64) against MCTS-Solver 1x and
10x of --eval-sims, and Gumbel against pUCT at the same (n, seed, mark), seats
alternated; games are cached per chunk, so every phase resumes.

    python benchmarks/gumbel_few_simulations.py all --game 'hex(board_size=7)' --budget-min 30
    python benchmarks/gumbel_few_simulations.py all --game connect_four --budget-min 30
    python benchmarks/gumbel_few_simulations.py all --game connect_four --algo muzero --sims 2 16

Target (the issue), on hex 7x7: Gumbel at n = 2 and n = 4 ahead of pUCT at the same n
with non-overlapping 95% intervals (pooled over seeds, at the last mark).
Writes benchmarks/results/gumbel_few_simulations_<game>_<algo>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from connect_four_alphazero import ROOT, RESULTS, read_jsonl, run_phases, train_segments  # noqa: E402
from sog_leduc import _cached  # noqa: E402


def arm_name(algo: str, search: str, n: int, seed: int) -> str:
    return f"{algo}-{search}-n{n}-s{seed}"


def arms(args) -> list[tuple[str, list[str]]]:
    """(arm name, polyzero train arguments) for every run."""
    out = []
    for n in args.sims:
        for seed in args.seeds:
            for search in ("puct", "gumbel"):
                train = [args.game, "--algo", args.algo, "--search", search, "--seed", str(seed),
                         "--set", f"search.num_simulations={n}"]
                out.append((arm_name(args.algo, search, n, seed), train))
    return out


def phase_train(args, work: Path) -> None:
    """Runs two at a time, one per core."""
    queue = list(arms(args))
    lock = threading.Lock()

    def worker(core: int):
        while True:
            with lock:
                if not queue:
                    return
                name, train = queue.pop(0)
            train_segments(work, name, train, args.budget_min * 60, args.mark_min * 60, core, log_prefix=name)

    threads = [threading.Thread(target=worker, args=(core,)) for core in range(args.cores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def marks(work: Path, name: str) -> list[dict]:
    return [{"mark_s": r["mark_s"], "path": str(work / r["checkpoint"]), "step": r["learning_step"]}
            for r in read_jsonl(work / f"{name}_segments.jsonl")]


def phase_eval(args, work: Path) -> None:
    from polyzero.eval import make_player, play_match
    from polyzero.games import load_game

    game = load_game(args.game)
    opponents = {"1x": f"mcts-solver:{args.eval_sims}", "10x": f"mcts-solver:{10 * args.eval_sims}"}
    for n in args.sims:
        for seed in args.seeds:
            puct, gumbel = (arm_name(args.algo, s, n, seed) for s in ("puct", "gumbel"))
            for name in (puct, gumbel):
                for mark in marks(work, name):
                    for level, spec in opponents.items():
                        def play(mark=mark, spec=spec):
                            agent = make_player(f"{mark['path']}@{args.eval_sims}", game, seed=args.seed)
                            res = play_match(game, agent, make_player(spec, game, seed=args.seed + 1),
                                             args.games, seed=args.seed)
                            return {"wins": res.wins, "draws": res.draws, "losses": res.losses}
                        _cached(work, f"{name}-{int(mark['mark_s']):06d}-{level}", play)
            for mp, mg in zip(marks(work, puct), marks(work, gumbel)):
                def duel(mp=mp, mg=mg):
                    a = make_player(f"{mg['path']}@{args.eval_sims}", game, seed=args.seed)
                    b = make_player(f"{mp['path']}@{args.eval_sims}", game, seed=args.seed + 1)
                    res = play_match(game, a, b, args.games, seed=args.seed)
                    return {"wins": res.wins, "draws": res.draws, "losses": res.losses}
                _cached(work, f"duel-{args.algo}-n{n}-s{seed}-{int(mg['mark_s']):06d}", duel)


def _score(recs: list[dict]) -> dict | None:
    from polyzero.eval import wilson_interval

    w, d, l = (sum(r[k] for r in recs) for k in ("wins", "draws", "losses"))
    if w + d + l == 0:
        return None
    s = (w + 0.5 * d) / (w + d + l)
    lo, hi = wilson_interval(s, w + d + l)
    return {"score": round(s, 4), "ci95": [round(lo, 4), round(hi, 4)], "games": w + d + l}


def phase_report(args, work: Path) -> dict:
    def rec(key):
        p = work / "eval" / f"{key}.json"
        return json.loads(p.read_text()) if p.exists() else None

    curves, final = {}, {}
    for n in args.sims:
        for search in ("puct", "gumbel"):
            by_mark: dict[float, dict[str, list]] = {}
            for seed in args.seeds:
                name = arm_name(args.algo, search, n, seed)
                for mark in marks(work, name):
                    for level in ("1x", "10x"):
                        r = rec(f"{name}-{int(mark['mark_s']):06d}-{level}")
                        if r:
                            by_mark.setdefault(mark["mark_s"], {}).setdefault(level, []).append(r)
            pts = [{"minutes": m / 60, **{lv: _score(rs) for lv, rs in levels.items()}}
                   for m, levels in sorted(by_mark.items())]
            curves[f"{search}-n{n}"] = pts
            if pts:
                final[f"{search}-n{n}"] = pts[-1]
    targets = {}
    for n in args.sims:
        g, p = final.get(f"gumbel-n{n}", {}).get("1x"), final.get(f"puct-n{n}", {}).get("1x")
        if g and p:
            targets[f"n{n}_gumbel_ahead_beyond_ci"] = g["ci95"][0] > p["ci95"][1]
    git = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    command = "python benchmarks/gumbel_few_simulations.py " + " ".join(sys.argv[1:])
    short = args.game.replace("(board_size=", "").replace(")", "")
    name = f"gumbel_few_simulations_{short}_{args.algo}"
    result = {"game": args.game, "algo": args.algo, "command": command, "git": git, "seeds": args.seeds,
              "budget_min": args.budget_min, "eval_sims": args.eval_sims, "curves": curves, "targets": targets}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2))
    lines = [f"# Benchmark `gumbel_few_simulations`: {args.algo} on {args.game}", "",
             f"Command: `{command}` (commit {git[:10]}); seeds {args.seeds}; {args.budget_min:g} min per run; "
             f"agents at {args.eval_sims} simulations; scores pooled over seeds, Wilson 95% CI.", "",
             "| search | minutes | vs MCTS-Solver 1x | vs 10x |", "|---|---:|---|---|"]
    for key, pts in curves.items():
        for p in pts:
            cells = [f"{p[lv]['score']:.3f} [{p[lv]['ci95'][0]:.3f}, {p[lv]['ci95'][1]:.3f}] ({p[lv]['games']})"
                     if p.get(lv) else "-" for lv in ("1x", "10x")]
            lines.append(f"| {key} | {p['minutes']:.0f} | " + " | ".join(cells) + " |")
    lines += ["", f"Targets: {json.dumps(targets)}"]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return result


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", default="hex(board_size=7)")
    p.add_argument("--algo", default="alphazero", choices=["alphazero", "muzero"])
    p.add_argument("--sims", type=int, nargs="+", default=[2, 4, 16])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--budget-min", type=float, default=30.0)
    p.add_argument("--mark-min", type=float, default=10.0)
    p.add_argument("--eval-sims", type=int, default=64)
    p.add_argument("--games", type=int, default=50, help="games per (mark, opponent)")
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--seed", type=int, default=0, help="evaluation seed")
    p.add_argument("--work", type=Path, default=None)
    args = p.parse_args(argv)
    short = args.game.replace("(board_size=", "").replace(")", "")
    work = args.work or ROOT / "runs" / "bench" / f"gumbel_few_simulations_{short}_{args.algo}"
    work.mkdir(parents=True, exist_ok=True)
    run_phases(args, work, phase_train, phase_eval, phase_report)


if __name__ == "__main__":
    main()
