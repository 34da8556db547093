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
  report  benchmarks/results/sog_leduc.{json,md}.

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
    cached,
    git_commit,
    machine_line,
    run_jobs,
    run_phases,
    train_in_chunks,
    write_json_atomic,
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
    """The untrained network and `--points` checkpoints spread evenly over the training time."""
    return spread(checkpoints(work), args.points)


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
        if not (work / "eval" / f"{name}.json").exists()
        for seed in range(seeds)
        if not _seed_path(work, name, seed).exists()
    ]
    todo.sort(key=lambda t: -t[2])  # the biggest searches first, so that in parallel the small ones fill the end
    run_jobs(
        [((name, seed), seed_value, (args.game, spec, seed)) for name, spec, _, seed in todo],
        args.jobs,
        lambda key, rec: _save_seed(work, *key, rec),
    )
    for name, spec, _, seeds, point in cells:  # a cell is complete when every seed of it is
        parts = [_seed_path(work, name, seed) for seed in range(seeds)]
        if parts and all(path.exists() for path in parts):
            recs = [json.loads(path.read_text()) for path in parts]
            cached(
                work,
                name,
                lambda: {
                    "spec": spec,
                    "values": [r["value"] for r in recs],
                    "unit": recs[0]["unit"],
                    "seed_seconds": sum(r["seconds"] for r in recs),
                    "machines": sorted({r["machine"] for r in recs}),
                    **point,
                },
            )


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


def phase_report(args, work: Path) -> dict:
    import numpy as np

    rows = [json.loads(p.read_text()) for p in sorted((work / "eval").glob("*.json"))]
    for r in rows:
        r["min"], r["mean"], r["max"] = (
            float(np.min(r["values"])),
            float(np.mean(r["values"])),
            float(np.max(r["values"])),
        )
    anchors = [r for r in rows if r["spec"].startswith("ismcts")]
    sog = sorted((r for r in rows if r["spec"].startswith("sog")), key=lambda r: (r["step"], r["spec"]))
    best_ismcts = min((r["mean"] for r in anchors), default=None)
    sog100 = [r for r in sog if r["spec"].startswith("sog:100,")]
    bar = min(best_ismcts, 465.0) if best_ismcts is not None else 465.0

    def first_below(level: float, minutes: float):
        hits = [r["minutes"] for r in sog100 if r["minutes"] <= minutes and r["mean"] < level]
        return round(min(hits), 1) if hits else None

    target = (
        fig3_shape(sog, anchors)
        if args.game != "leduc_poker"
        else {  # Leduc: the targets
            "best_ismcts_mean": best_ismcts,
            "paper_best_ismcts": 465.0,
            "sog100_below_ismcts_within_2h": first_below(bar, 120) is not None,
            "sog100_first_below_ismcts_at_min": first_below(bar, 120),
            "sog100_below_200_within_6h": first_below(200.0, 360) is not None,
            "sog100_first_below_200_at_min": first_below(200.0, 360),
        }
    )
    command = "python benchmarks/sog_leduc.py " + " ".join(sys.argv[1:])
    git = git_commit()
    result = {
        "game": args.game,
        "seed": args.seed,
        "command": command,
        "git": git,
        "machine": machine_line(),
        "anchors": anchors,
        "sog": sog,
        "targets": target,
    }
    RESULTS.mkdir(exist_ok=True)
    name = args.out
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2))
    unit = rows[0]["unit"] if rows else "mbb/h"
    f = ".1f" if unit == "mbb/h" else ".3f"
    evaluated_on = sorted({m for r in rows for m in r.get("machines", [])})
    lines = [
        f"# Benchmark `{name}`: Student of Games on {args.game}",
        "",
        f"Machine: {result['machine']}. Command: `{command}` (commit {git[:10]}). Seed {args.seed}.",
        "",
        f"Exploitability in {unit} (min / mean / max over seeds); minutes = training time of the checkpoint.",
        "",
        "| player | step | minutes | seeds | min | mean | max |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in anchors:
        lines.append(f"| `{r['spec']}` | | | {len(r['values'])} | {r['min']:{f}} | {r['mean']:{f}} | {r['max']:{f}} |")
    for r in sog:
        label = r["spec"].split(",net=")[0] + (" (untrained)" if r["step"] == 0 else "")
        lines.append(
            f"| `{label}` | {r['step']} | {r['minutes']:.1f} | {len(r['values'])} | {r['min']:{f}} | "
            f"{r['mean']:{f}} | {r['max']:{f}} |"
        )
    if evaluated_on:  # seeds evaluated in parallel (--jobs), possibly on another machine
        lines += ["", "Seeds evaluated on: " + "; ".join(evaluated_on) + "."]
    if target is not None:
        lines += ["", f"Targets: {json.dumps(target)}"]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    plot_curves(sog, anchors, unit, RESULTS / f"{name}.png", args.game)
    print("\n".join(lines))
    return result


def fig3_shape(sog: list[dict], anchors: list[dict]) -> dict:
    """The shape of the paper's Fig. 3 (B on the glasses map): exploitability falls with
    training (each SoG(s, 1) at the last checkpoint below the untrained network), and
    with search size (at the last checkpoint, every larger s below every smaller
    one), with trained SoG(100, 1) below IS-MCTS at each of its simulation counts."""
    if not sog:
        return {}
    sims = lambda r: int(r["spec"].split(":")[1].split(",")[0])  # noqa: E731
    first, last = min(r["step"] for r in sog), max(r["step"] for r in sog)
    at = {(r["step"], sims(r)): r["mean"] for r in sog}
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


def plot_curves(sog: list[dict], anchors: list[dict], unit: str, path: Path, game: str) -> None:
    """Mean exploitability (min-max band) against training minutes per SoG(s, 1); IS-MCTS as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for spec in sorted({r["spec"].split(",net=")[0] for r in sog}, key=lambda s: int(s[4:].split(",")[0])):
        rows = sorted((r for r in sog if r["spec"].startswith(spec + ",")), key=lambda r: r["minutes"])
        x = [r["minutes"] for r in rows]
        (line,) = ax.plot(x, [r["mean"] for r in rows], marker="o", label=f"SoG({spec[4:]})")
        ax.fill_between(x, [r["min"] for r in rows], [r["max"] for r in rows], alpha=0.2, color=line.get_color())
    for r in anchors:
        ax.axhline(r["mean"], linestyle="--", linewidth=1, color="gray")
        ax.annotate(r["spec"], (0, r["mean"]), fontsize=7, color="gray", va="bottom")
    ax.set_yscale("log")
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel(f"exploitability ({unit})")
    ax.set_title(f"Student of Games on {game}\nmean over seeds, min-max band", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", default="leduc_poker")
    p.add_argument("--work", type=Path, default=None, help="default runs/bench/sog_GAME")
    p.add_argument("--out", default=None, help="results name (default sog_leduc for leduc_poker)")
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
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, default=1, help="processes evaluating seeds in parallel")
    p.add_argument(
        "--reverse",
        action="store_true",
        help="evaluate last cell first: a second eval process run so shares the work through the cache",
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    args = p.parse_args(argv)
    short = {"scotland_yard": "glasses"}.get(args.game.split("(")[0], args.game.split("(")[0].replace("_poker", ""))
    args.out = args.out or f"sog_{short}"
    if args.ismcts is None:  # OpenSpiel's Python IS-MCTS on Python games (Scotland Yard) is slow
        args.ismcts = [100, 1000, 10000] if "poker" in args.game else [100, 1000]
    work = args.work or ROOT / "runs" / "bench" / f"sog_{short}"
    work.mkdir(parents=True, exist_ok=True)
    run_phases(args, work, phase_train, phase_eval, phase_report)


if __name__ == "__main__":
    main()
