"""Benchmarks `sog_leduc` and `sog_glasses` (Student of Games part 2; the shape of the
paper's Fig. 3A and 3B):
SoG trained on Leduc poker on this machine's CPU cores, the exploitability of
SoG(33, 1) and SoG(100, 1) with the network at 5 checkpoints spread over the
training time (10 seeds each: min / mean / max), SoG(1000, 1) at the final one,
beside IS-MCTS and the untrained network, all measured in the same run.

    python benchmarks/sog_leduc.py all --budget-min 120 --seeds 10
    python benchmarks/sog_leduc.py all --game scotland_yard --budget-min 60   # sog_glasses (IS-MCTS 100, 1000)
    python benchmarks/sog_leduc.py all --game "scotland_yard(rounds=5,reveal_rounds=none,mrx_taxi=5,detective_taxi=5)" \
        --ismcts 10 100 --out sog_glasses_noreveal   # the glasses map without a reveal (before issue 59)

Phases (each resumable: re-running continues where it stopped):
  train   `SoGTrainer` (the shipped `sog_leduc_poker` preset unless --set says
          otherwise) in chunks of --chunk-steps learning steps, a checkpoint
          after each (kept), until --budget-min minutes of training time
          (`train_time`, evaluation excluded); resumes from its checkpoint.
  eval    exploitability of each (checkpoint, SoG(s, 1)) and of the IS-MCTS
          anchors, cached per seed in WORK/eval/seeds/ and per point in
          WORK/eval/*.json; --jobs N evaluates N seeds at once (a copy of WORK
          with the chosen checkpoints' learner.pt, config.toml and state.json
          can be evaluated on another machine and its eval/seeds/ merged back).
  report  benchmarks/results/sog_leduc.{json,md,png}.

Several training seeds: train and eval each with --seed S (seed S > 0 works in
WORK-seedS) and --marks M... (the checkpoint nearest each mark, in minutes of
training), then `report --train-seeds 0 1 2` adds the mean over training seeds of
each seed's mean at every mark that all of them have, with a 95% t-interval.

Targets (the issue): SoG(100, 1) below IS-MCTS's best (465 mbb/h in the paper)
within 2 hours of training and below 200 mbb/h within 6 hours.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

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


def sog_trainer(args, work: Path):
    from polyzero.config import build_config
    from polyzero.sog.trainer import SoGTrainer
    from polyzero.train.checkpoint import latest_checkpoint

    run = work / "run"
    sets = [f"seed={args.seed}", "eval.every=0", "train.keep_checkpoints=100000", *args.set]
    if latest_checkpoint(run) is not None:
        return SoGTrainer.resume(run, progress=False)
    cfg = build_config(args.game, "sog", None, sets)
    trainer = SoGTrainer.create(cfg, run, progress=False)
    trainer.save()  # step 0: the untrained network
    return trainer


def phase_train(args, work: Path) -> None:
    train_in_chunks(sog_trainer(args, work), args.budget_min, args.chunk_steps, "train")


def checkpoints(work: Path) -> list[dict]:
    out = []
    for path in sorted((work / "run" / "checkpoints").glob("step_*")):
        state = json.loads((path / "state.json").read_text())
        out.append({"path": str(path), "step": state["step"], "minutes": state["train_time"] / 60})
    return out


def chosen(args, work: Path) -> list[dict]:
    """The untrained network and `--points` checkpoints spread evenly over the training time,
    or with --marks the checkpoint nearest each mark (minutes of training; a mark keeps
    training seeds' points together in the report)."""
    points = checkpoints(work)
    marks = getattr(args, "marks", None)
    if not marks or not points:
        return spread(points, args.points)
    picks = [{**points[0], "mark": 0.0}]
    for mark in marks:
        best = min(points, key=lambda p: abs(p["minutes"] - mark))
        if all(best["step"] != p["step"] for p in picks):
            picks.append({**best, "mark": float(mark)})
    return picks


def work_dir(args, seed: int) -> Path:
    """Training seed `seed`'s directory: --work (default runs/bench/sog_GAME) for seed 0,
    WORK-seedS beside it for seed S."""
    base = args.work or ROOT / "runs" / "bench" / f"sog_{args.short}"
    return base if seed == 0 else base.with_name(f"{base.name}-seed{seed}")


def phase_eval(args, work: Path) -> None:
    picks = chosen(args, work)
    cells = [(f"ismcts-{sims}", f"ismcts:{sims}", sims, args.anchor_seeds, {}) for sims in args.ismcts]
    for i, point in enumerate(picks):
        final = i == len(picks) - 1
        for s in args.sims + ([args.final_sims] if final else []):
            seeds = args.seeds if s != args.final_sims else args.final_seeds
            cells.append((f"step{point['step']:06d}-sog{s}", f"sog:{s},1,net={point['path']}", s, seeds, point))
    if args.reverse:
        cells.reverse()
    todo = [
        (name, spec, sims, seed)
        for name, spec, sims, seeds, _ in cells
        for seed in range(seeds)
        if not _seed_path(work, name, seed).exists()
    ]
    todo.sort(key=lambda t: -t[2])  # the biggest searches first, so that in parallel the small ones fill the end
    run_jobs(
        [((name, seed), seed_value, (args.game, spec, seed)) for name, spec, _, seed in todo],
        args.jobs,
        lambda key, rec: _save_seed(work, *key, rec),
    )
    for name, spec, _, seeds, point in cells:  # a cell is complete when every seed asked for is
        if seeds and all(_seed_path(work, name, seed).exists() for seed in range(seeds)):
            _write_cell(work, name, spec, point)


def _write_cell(work: Path, name: str, spec: str, point: dict) -> None:
    """WORK/eval/NAME.json from every seed evaluated for the cell (a later run with more
    --seeds adds to it; one with fewer keeps them all)."""
    parts = sorted(_seed_path(work, name, 0).parent.glob(f"{name}.seed*.json"))
    recs = [json.loads(path.read_text()) for path in parts]
    path = work / "eval" / f"{name}.json"
    if path.exists() and len(json.loads(path.read_text())["values"]) == len(recs):
        return
    rec = {
        "spec": spec,
        "values": [r["value"] for r in recs],
        "unit": recs[0]["unit"],
        "seed_seconds": sum(r["seconds"] for r in recs),
        "machines": sorted({r["machine"] for r in recs}),
        **point,
    }
    write_json_atomic(path, rec)
    print(f"[eval] {name}: {rec['values']}", flush=True)


def _seed_path(work: Path, name: str, seed: int) -> Path:
    return work / "eval" / "seeds" / f"{name}.seed{seed}.json"


def seed_value(game_string: str, spec: str, seed: int) -> dict:
    """The exploitability of player `spec` built with `seed` (one of a cell's seeds)."""
    import torch

    from polyzero.games import load_game
    from polyzero.sog.exploitability import player_exploitability
    from polyzero.sog.players import sog_reference_player

    torch.set_num_threads(1)
    game = load_game(game_string)
    t0 = time.time()
    report = player_exploitability(game, lambda _: sog_reference_player(spec, game, seed=seed), 1)
    return {
        "spec": spec,
        "seed": seed,
        "value": report.values[0],
        "unit": report.unit,
        "seconds": time.time() - t0,
        "machine": machine_line(),
    }


def _save_seed(work: Path, name: str, seed: int, rec: dict) -> None:
    write_json_atomic(_seed_path(work, name, seed), rec)
    print(f"[eval] {name} seed {seed}: {rec['value']:.4g} {rec['unit']} ({rec['seconds']:.0f} s)", flush=True)


def search_sims(row: dict) -> int:
    """s of a row's SoG(s, 1) or IS-MCTS(s) spec."""
    return int(row["spec"].split(":")[1].split(",")[0])


def eval_rows(work: Path, training_seed: int) -> list[dict]:
    """A training seed's evaluated cells (WORK/eval/*.json) with min / mean / max over search seeds."""
    import numpy as np

    rows = [json.loads(p.read_text()) for p in sorted((work / "eval").glob("*.json"))]
    for r in rows:
        v = r["values"]
        r["min"], r["mean"], r["max"] = float(np.min(v)), float(np.mean(v)), float(np.max(v))
        r["training_seed"] = training_seed
    return rows


def across_seeds(sog: list[dict], seeds: list[int]) -> list[dict]:
    """Per SoG(s, 1) and --marks mark, where every training seed has the point: the mean
    over training seeds of each seed's mean, its 95% t-interval, and min / max of the seeds' means."""
    import numpy as np

    groups: dict[tuple, list[dict]] = {}
    for r in sog:
        if "mark" in r:
            groups.setdefault((search_sims(r), r["mark"]), []).append(r)
    out = []
    for (sims, mark), rs in sorted(groups.items()):
        if sorted(r["training_seed"] for r in rs) != sorted(seeds):
            continue
        means = [r["mean"] for r in rs]
        mean, lo, hi = interval(means)
        out.append(
            {
                "spec": f"sog:{sims},1",
                "step": mark,  # fig3_shape's order of points
                "mark": mark,
                "minutes": float(np.mean([r["minutes"] for r in rs])),
                "values": means,
                "mean": mean,
                "ci95": [lo, hi],
                "min": min(means),
                "max": max(means),
                "search_seeds": [len(r["values"]) for r in rs],
            }
        )
    return out


def phase_report(args, work: Path) -> dict:
    seeds = args.train_seeds or [args.seed]
    rows = [r for seed in seeds for r in eval_rows(work_dir(args, seed), seed)]
    anchors = [r for r in rows if r["spec"].startswith("ismcts")]
    sog = sorted(
        (r for r in rows if r["spec"].startswith("sog")),
        key=lambda r: (r["training_seed"], r["step"], search_sims(r)),
    )
    merged = across_seeds(sog, seeds) if len(seeds) > 1 else []
    if args.game == "leduc_poker":
        target = leduc_targets(sog, anchors)
    elif len(seeds) == 1:
        target = fig3_shape(sog, anchors)
    else:
        target = {f"training_seed_{s}": fig3_shape([r for r in sog if r["training_seed"] == s], anchors) for s in seeds}
        target["across_training_seeds"] = fig3_shape(merged, anchors)
    command = "python benchmarks/sog_leduc.py " + " ".join(sys.argv[1:])
    git = git_commit()
    result = {
        "game": args.game,
        "seed": args.seed if len(seeds) == 1 else seeds,
        "command": command,
        "git": git,
        "machine": machine_line(),
        "anchors": anchors,
        "sog": sog,
        "across_training_seeds": merged,
        "targets": target,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2))
    unit = rows[0]["unit"] if rows else "mbb/h"
    write_markdown(args.out, report_lines(args, result, unit))
    plot_curves(merged + sog, anchors, unit, RESULTS / f"{args.out}.png", args.game, len(seeds))
    return result


def leduc_targets(sog: list[dict], anchors: list[dict]) -> dict:
    """Leduc: the issue's targets (SoG(100, 1) below IS-MCTS's best within 2 hours, below 200 within 6)."""
    best_ismcts = min((r["mean"] for r in anchors), default=None)
    sog100 = [r for r in sog if r["spec"].startswith("sog:100,")]
    bar = min(best_ismcts, 465.0) if best_ismcts is not None else 465.0

    def first_below(level: float, minutes: float):
        hits = [r["minutes"] for r in sog100 if r["minutes"] <= minutes and r["mean"] < level]
        return round(min(hits), 1) if hits else None

    return {
        "best_ismcts_mean": best_ismcts,
        "paper_best_ismcts": 465.0,
        "sog100_below_ismcts_within_2h": first_below(bar, 120) is not None,
        "sog100_first_below_ismcts_at_min": first_below(bar, 120),
        "sog100_below_200_within_6h": first_below(200.0, 360) is not None,
        "sog100_first_below_200_at_min": first_below(200.0, 360),
    }


def report_lines(args, result: dict, unit: str) -> list[str]:
    """The Markdown report: each cell (per training seed), then the means across training seeds."""
    f = ".1f" if unit == "mbb/h" else ".3f"
    rows = result["anchors"] + result["sog"]
    evaluated_on = sorted({m for r in rows for m in r.get("machines", [])})
    lines = [
        f"# Benchmark `{args.out}`: Student of Games on {args.game}",
        "",
        f"Machine: {result['machine']}. Command: `{result['command']}` (commit {result['git'][:10]}). "
        f"Training seed(s) {result['seed']}.",
        "",
        f"Exploitability in {unit} (min / mean / max over search seeds); minutes = training time of the checkpoint.",
        "",
        "| player | training seed | step | minutes | seeds | min | mean | max |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["anchors"]:
        lines.append(
            f"| `{r['spec']}` | | | | {len(r['values'])} | {r['min']:{f}} | {r['mean']:{f}} | {r['max']:{f}} |"
        )
    for r in result["sog"]:
        label = r["spec"].split(",net=")[0] + (" (untrained)" if r["step"] == 0 else "")
        lines.append(
            f"| `{label}` | {r['training_seed']} | {r['step']} | {r['minutes']:.1f} | {len(r['values'])} | "
            f"{r['min']:{f}} | {r['mean']:{f}} | {r['max']:{f}} |"
        )
    if result["across_training_seeds"]:
        lines += [
            "",
            "Across training seeds (each seed's mean over its search seeds; mean, 95% t-interval, min / max):",
            "",
            "| player | mark (min) | mean minutes | training seeds | search seeds each | mean | 95% interval "
            "| min | max |",
            "|---|---:|---:|---:|---|---:|---|---:|---:|",
        ]
        for r in result["across_training_seeds"]:
            lo, hi = r["ci95"]
            lines.append(
                f"| `SoG({search_sims(r)}, 1)` | {r['mark']:g} | {r['minutes']:.1f} | {len(r['values'])} | "
                f"{r['search_seeds']} | {r['mean']:{f}} | [{lo:{f}}, {hi:{f}}] | {r['min']:{f}} | {r['max']:{f}} |"
            )
    if evaluated_on:  # seeds evaluated in parallel (--jobs), possibly on another machine
        lines += ["", "Seeds evaluated on: " + "; ".join(evaluated_on) + "."]
    if result["targets"]:
        lines += ["", f"Targets: {json.dumps(result['targets'])}"]
    return lines


def fig3_shape(sog: list[dict], anchors: list[dict]) -> dict:
    """The shape of the paper's Fig. 3 (B on the glasses map): exploitability falls with
    training (each SoG(s, 1) at the last checkpoint below the untrained network), and
    with search size (at the last checkpoint, every larger s below every smaller
    one), with trained SoG(100, 1) below IS-MCTS at each of its simulation counts."""
    if not sog:
        return {}
    first, last = min(r["step"] for r in sog), max(r["step"] for r in sog)
    at = {(r["step"], search_sims(r)): r["mean"] for r in sog}
    training = {
        s: {"untrained": at[(first, s)], "final": at[(last, s)], "falls": at[(last, s)] < at[(first, s)]}
        for (step, s) in at
        if step == last and (first, s) in at
    }
    final = sorted((s, m) for (step, s), m in at.items() if step == last)
    search = {"final_by_sims": final, "falls": all(a[1] > b[1] for a, b in zip(final, final[1:]))}
    sog100 = at.get((last, 100))
    ismcts = {
        r["spec"]: {"mean": r["mean"], "sog100_below": sog100 is not None and sog100 < r["mean"]} for r in anchors
    }
    return {"falls_with_training": training, "falls_with_search": search, "vs_ismcts": ismcts}


def plot_curves(sog: list[dict], anchors: list[dict], unit: str, path: Path, game: str, seeds: int = 1) -> None:
    """Mean exploitability (min-max band) against training minutes per SoG(s, 1); IS-MCTS as lines.
    With several training seeds (rows of `across_seeds` first, then each seed's rows):
    the means across seeds, the band their seeds' means, each seed's means thin."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    merged = [r for r in sog if "training_seed" not in r] if seeds > 1 else sog
    colors = {}
    for sims in sorted({search_sims(r) for r in sog}):
        rows = sorted((r for r in merged if search_sims(r) == sims), key=lambda r: r["minutes"])
        x = [r["minutes"] for r in rows]
        (line,) = ax.plot(x, [r["mean"] for r in rows], marker="o", label=f"SoG({sims}, 1)")
        colors[sims] = line.get_color()
        ax.fill_between(x, [r["min"] for r in rows], [r["max"] for r in rows], alpha=0.2, color=colors[sims])
    for r in sog if seeds > 1 else []:  # each training seed's curve, thin
        if "training_seed" in r:
            same = [q for q in sog if q.get("training_seed") == r["training_seed"] and search_sims(q) == search_sims(r)]
            same.sort(key=lambda q: q["minutes"])
            if r is same[0]:
                ax.plot(
                    [q["minutes"] for q in same],
                    [q["mean"] for q in same],
                    marker=".",
                    linewidth=0.7,
                    alpha=0.6,
                    color=colors[search_sims(r)],
                )
    for r in anchors:
        ax.axhline(r["mean"], linestyle="--", linewidth=1, color="gray")
        ax.annotate(r["spec"], (0, r["mean"]), fontsize=7, color="gray", va="bottom")
    ax.set_yscale("log")
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel(f"exploitability ({unit})")
    band = (
        f"mean over {seeds} training seeds (band: their means' min-max), each seed thin"
        if seeds > 1
        else "mean over seeds, min-max band"
    )
    ax.set_title(f"Student of Games on {game}\n{band}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", default="leduc_poker")
    p.add_argument("--work", type=Path, default=None, help="default runs/bench/sog_GAME")
    p.add_argument("--out", type=results_name, default=None, help="results name (default sog_leduc for leduc_poker)")
    p.add_argument("--budget-min", type=float, default=120.0, help="training time (minutes)")
    p.add_argument("--chunk-steps", type=int, default=10, help="learning steps between kept checkpoints")
    p.add_argument("--points", type=int, default=5, help="trained checkpoints evaluated")
    p.add_argument("--sims", type=int, nargs="+", default=[33, 100], help="SoG(s, 1) at every point")
    p.add_argument("--final-sims", type=int, default=1000, help="SoG(s, 1) at the final point")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--final-seeds", type=int, default=3)
    p.add_argument(
        "--ismcts",
        type=int,
        nargs="*",
        default=None,
        help="IS-MCTS anchors' simulations (default: 100 1000 10000 on poker, 100 1000 otherwise)",
    )
    p.add_argument("--anchor-seeds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0, help="training seed (seed S > 0 works in WORK-seedS)")
    p.add_argument("--marks", type=float, nargs="*", default=None, help="eval: checkpoints nearest these minutes")
    p.add_argument("--train-seeds", type=int, nargs="*", default=None, help="report: training seeds merged")
    p.add_argument("--jobs", type=int, default=1, help="processes evaluating seeds in parallel")
    p.add_argument(
        "--reverse",
        action="store_true",
        help="evaluate last cell first: a second eval process run so shares the work through the cache",
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    args = p.parse_args(argv)
    name = args.game.split("(")[0]
    args.short = {"scotland_yard": "glasses"}.get(name, name.replace("_poker", ""))
    args.out = args.out or f"sog_{args.short}"
    if args.ismcts is None:  # OpenSpiel's Python IS-MCTS on Python games (Scotland Yard) is slow
        args.ismcts = [100, 1000, 10000] if "poker" in args.game else [100, 1000]
    work = work_dir(args, args.seed)
    work.mkdir(parents=True, exist_ok=True)
    run_phases(args, work, phase_train, phase_eval, phase_report)


if __name__ == "__main__":
    main()
