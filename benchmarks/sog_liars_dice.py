"""Benchmark `sog_liars_dice`: Student of Games on Liar's Dice beside CFR+ at equal wall clock.

Target (issue 59): SoG(100, 1) within 2x of CFR+'s exploitability at equal wall clock
on `liars_dice(numdice=1)`. Per training seed (--seeds): SoG trained with the shipped
`sog_liars_dice` preset (as `sog_leduc.py train` does, checkpoints kept), then the
exploitability of SoG(s, 1) with the network at the untrained point and --points
checkpoints spread over the training time, over --search-seeds seeds each
(`polyzero exploitability sog:S,1,net=CKPT`, exact best response). CFR+ (public-tree
CFR+ on the whole game, `FlatCFR`: regret-matching+, linear averaging, simultaneous
updates) runs in the same process for the same wall clock, its exploitability read
at the checkpoints' training times.

    python benchmarks/sog_liars_dice.py all --game "liars_dice(numdice=1)" --budget-min 360 --seeds 3
    python benchmarks/sog_liars_dice.py all --game "liars_dice(numdice=1,dice_sides=3)" --budget-min 10 --seeds 3

(each phase resumable). Writes benchmarks/results/OUT.{json,md} (OUT: --out,
default sog_liars_dice). An exploitability of SoG on one six-sided die searches at
its 4,096 decision public states per seed (about an hour per seed at SoG(100, 1) on
one core); with three sides there are 64.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    RESULTS,
    ROOT,
    git_commit,
    interval,
    machine_line,
    results_name,
    run_jobs,
    run_phases,
    train_in_chunks,
    write_json_atomic,
    write_markdown,
)
from polyzero.sog.probe import spread_checkpoints as spread  # noqa: E402
from sog_leduc import checkpoints, seed_value, sog_trainer  # noqa: E402


def _seed_work(args, seed: int) -> Path:
    return args.work / f"seed{seed}"


def phase_train(args, work: Path) -> None:
    for seed in range(args.seeds):
        seed_args = argparse.Namespace(**{**vars(args), "seed": seed})
        train_in_chunks(
            sog_trainer(seed_args, _seed_work(args, seed)), args.budget_min, args.chunk_steps, f"train seed {seed}"
        )


def phase_eval(args, work: Path) -> None:
    tasks = []
    for seed in range(args.seeds):
        for mark, point in enumerate(spread(checkpoints(_seed_work(args, seed)), args.points)):
            for s in args.sims:
                for search_seed in range(args.search_seeds):
                    path = work / "eval" / f"seed{seed}-step{point['step']:06d}-sog{s}-s{search_seed}.json"
                    if not path.exists():
                        spec = f"sog:{s},1,net={point['path']}"
                        key = (
                            path,
                            {"step": point["step"], "minutes": point["minutes"], "mark": mark, "training_seed": seed},
                        )
                        tasks.append((key, seed_value, (args.game, spec, search_seed)))
    run_jobs(tasks, args.jobs, lambda key, rec: _save(key, rec))
    cfr_path = work / "eval" / "cfr.json"
    if not cfr_path.exists():
        write_json_atomic(cfr_path, cfr_curve(args.game, args.budget_min * 60))


def _save(key, rec: dict) -> None:
    path, point = key
    write_json_atomic(path, {**rec, **point})
    print(f"[eval] {path.stem}: {rec['value']:.4g} ({rec['seconds']:.0f} s)", flush=True)


def cfr_curve(game_string: str, seconds: float) -> dict:
    """CFR+ on the whole public tree: (wall seconds, exploitability) at doubling iteration counts."""
    from polyzero.games import load_game
    from polyzero.games.public_states import PublicTree
    from polyzero.sog.flat_cfr import FlatCFR

    t0 = time.perf_counter()
    solver = FlatCFR(PublicTree(load_game(game_string)))
    setup = time.perf_counter() - t0
    points, mark = [], 1
    while True:
        solver.iterate()
        if solver.iteration == mark:
            elapsed = time.perf_counter() - t0
            points.append({"iterations": mark, "seconds": elapsed, "exploitability": solver.exploitability()})
            print(f"[cfr+] {mark} iterations, {elapsed:.1f} s: {points[-1]['exploitability']:.3g}", flush=True)
            if elapsed > seconds:
                break
            mark *= 2
    return {"setup_seconds": setup, "points": points, "machine": machine_line()}


def cfr_at(curve: dict, seconds: float) -> dict:
    """CFR+'s last measured point within `seconds` of wall clock (its first if none)."""
    within = [p for p in curve["points"] if p["seconds"] <= seconds]
    return within[-1] if within else curve["points"][0]


def phase_report(args, work: Path) -> dict:
    curve = json.loads((work / "eval" / "cfr.json").read_text())
    rows = [json.loads(p.read_text()) for p in sorted((work / "eval").glob("seed*-step*.json"))]
    cells: dict[tuple, dict] = {}  # (sims, mark index) -> training seed -> search values
    for r in rows:
        sims = int(r["spec"].split(":")[1].split(",")[0])
        cells.setdefault((sims, r["mark"]), {}).setdefault(r["training_seed"], []).append(r)
    table = []
    for (sims, mark), by_seed in sorted(cells.items()):
        per_seed = [float(np.mean([r["value"] for r in recs])) for recs in by_seed.values()]
        minutes = float(np.mean([recs[0]["minutes"] for recs in by_seed.values()]))
        cfr = cfr_at(curve, minutes * 60)
        mean, low, high = interval(per_seed)
        table.append(
            {
                "sims": sims,
                "mark": mark,
                "minutes": minutes,
                "training_seeds": len(per_seed),
                "search_seeds": len(next(iter(by_seed.values()))),
                "per_seed": per_seed,
                "mean": mean,
                "low": low,
                "high": high,
                "cfr_plus": cfr,
                "ratio_to_cfr_plus": mean / cfr["exploitability"] if cfr["exploitability"] > 0 else None,
            }
        )
    git = git_commit()
    command = "python benchmarks/sog_liars_dice.py " + " ".join(sys.argv[1:])
    final = [t for t in table if t["sims"] == 100 and t["mark"] == max(x["mark"] for x in table)]
    target = {
        "sog100_within_2x_of_cfr_plus_at_the_end": bool(
            final and final[0]["ratio_to_cfr_plus"] is not None and final[0]["ratio_to_cfr_plus"] <= 2.0
        )
    }
    result = {
        "game": args.game,
        "command": command,
        "git": git,
        "machine": machine_line(),
        "rows": table,
        "cfr_plus": curve,
        "targets": target,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2))
    lines = [
        f"# Benchmark `{args.out}`: Student of Games on {args.game} beside CFR+",
        "",
        f"Machine: {result['machine']}. Command: `{command}` (commit {git[:10]}).",
        "",
        "Exploitability in reward units (a game is worth +-1), exact best response. SoG: mean over "
        "training seeds of each seed's mean over search seeds, with a 95% t-interval over training seeds; "
        "minutes: the checkpoints' training time (mean over seeds). CFR+: the whole game solved by "
        "public-tree CFR+ in the same run, its last point within the same wall clock.",
        "",
        "| player | minutes | training seeds x search seeds | mean [95% interval] | per training seed | "
        "CFR+ at that wall clock (iterations) | ratio |",
        "|---|---:|---|---|---|---|---:|",
    ]
    for t in table:
        label = f"SoG({t['sims']}, 1)" + (" untrained" if t["mark"] == 0 else "")
        ratio = f"{t['ratio_to_cfr_plus']:.1f}" if t["ratio_to_cfr_plus"] is not None else "-"
        lines.append(
            f"| {label} | {t['minutes']:.1f} | {t['training_seeds']} x {t['search_seeds']} | "
            f"{t['mean']:.4f} [{t['low']:.4f}, {t['high']:.4f}] | "
            f"{', '.join(f'{v:.4f}' for v in t['per_seed'])} | {t['cfr_plus']['exploitability']:.2e} "
            f"({t['cfr_plus']['iterations']}) | {ratio} |"
        )
    write_markdown(args.out, lines + ["", f"Targets: {json.dumps(target)}"])
    return result


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", default="liars_dice(numdice=1)")
    p.add_argument("--work", type=Path, default=None, help="default runs/bench/OUT")
    p.add_argument("--out", type=results_name, default="sog_liars_dice")
    p.add_argument("--budget-min", type=float, default=360.0, help="training time per seed (minutes)")
    p.add_argument("--chunk-steps", type=int, default=10)
    p.add_argument("--seeds", type=int, default=3, help="training seeds")
    p.add_argument("--points", type=int, default=2, help="trained checkpoints evaluated per seed")
    p.add_argument("--sims", type=int, nargs="+", default=[100])
    p.add_argument("--search-seeds", type=int, default=3)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    args = p.parse_args(argv)
    args.work = args.work or ROOT / "runs" / "bench" / args.out
    args.work.mkdir(parents=True, exist_ok=True)
    run_phases(args, args.work, phase_train, phase_eval, phase_report)


if __name__ == "__main__":
    main()
