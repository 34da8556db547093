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
Two arms (e.g. the preset and a --set change, each in its own --work) compare by
learning steps: train each with --budget-steps N, evaluate with --mark-steps, and
`report --baseline-work OTHER_WORK` adds the other arm's means and, per mark, the
paired difference of the seeds' means (this arm minus the other; same training seeds).

Targets (the issue): SoG(100, 1) below IS-MCTS's best (465 mbb/h in the paper)
within 2 hours of training and below 200 mbb/h within 6 hours.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    RESULTS,
    ROOT,
    git_commit,
    machine_line,
    results_name,
    run_jobs,
    run_phases,
    train_in_chunks,
    write_json_atomic,
    write_markdown,
)
from polyzero.sog.probe import spread_checkpoints as spread  # noqa: E402
from sog_leduc_report import (  # noqa: E402
    across_seeds,
    fig3_shape,
    leduc_targets,
    paired,
    plot_curves,
    report_lines,
    search_sims,
    value_error_table,
)


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
    """Train to --budget-min minutes (or --budget-steps learning steps); WORK/train_log.jsonl
    gets a line per call: the step and training time reached, this process's CPU seconds
    and the load average, so that arms trained on a shared machine compare by CPU time too."""
    import os

    cpu0 = time.process_time()
    trainer = sog_trainer(args, work)
    steps = getattr(args, "budget_steps", None)
    train_in_chunks(trainer, args.budget_min, args.chunk_steps, "train", steps=steps)
    line = {"utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "step": trainer.step}
    line |= {"train_time": trainer.train_time, "cpu_s": time.process_time() - cpu0, "loadavg": os.getloadavg()}
    with open(work / "train_log.jsonl", "a") as f:
        f.write(json.dumps(line) + "\n")


def checkpoints(work: Path) -> list[dict]:
    out = []
    for path in sorted((work / "run" / "checkpoints").glob("step_*")):
        state = json.loads((path / "state.json").read_text())
        out.append({"path": str(path), "step": state["step"], "minutes": state["train_time"] / 60})
    return out


def chosen(args, work: Path) -> list[dict]:
    """The untrained network and `--points` checkpoints spread evenly over the training time,
    or with --marks the checkpoint nearest each mark (minutes of training; a mark keeps
    training seeds' points together in the report), or with --mark-steps the checkpoint
    nearest each of those learning steps only (the untrained one if 0 is among them)."""
    points = checkpoints(work)
    marks, steps = getattr(args, "marks", None), getattr(args, "mark_steps", None)
    if not (marks or steps) or not points:
        return spread(points, args.points)
    picks = [] if steps else [{**points[0], "mark": 0.0}]
    key, unit = ("step", "steps") if steps else ("minutes", "min")
    for mark in steps or marks:
        best = min(points, key=lambda p: abs(p[key] - mark))
        if all(best["step"] != p["step"] for p in picks):
            picks.append({**best, "mark": float(mark), "mark_unit": unit})
    return picks


def work_dir(args, seed: int, base: Path | None = None) -> Path:
    """Training seed `seed`'s directory: --work (default runs/bench/sog_GAME; or `base`) for
    seed 0, WORK-seedS beside it for seed S."""
    base = base or args.work or ROOT / "runs" / "bench" / f"sog_{args.short}"
    return base if seed == 0 else base.with_name(f"{base.name}-seed{seed}")


def phase_eval(args, work: Path) -> None:
    picks = chosen(args, work)
    cells = [(f"ismcts-{sims}", f"ismcts:{sims}", sims, args.anchor_seeds, {}) for sims in args.ismcts]
    for i, point in enumerate(picks):
        final = i == len(picks) - 1
        for s in args.sims + ([args.final_sims] if final and args.final_sims else []):
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
    if args.value_error:
        value_errors(args, work, picks)


def value_errors(args, work: Path, picks: list[dict]) -> None:
    """The CVPN of each chosen checkpoint against an equilibrium's exact values at every
    public state below the root (`polyzero sog-probe`'s first part: mean absolute error of
    the information states' expected returns, in chips, all and by depth), cached in
    WORK/eval/value_error/stepNNNNNN.json."""
    todo = [p for p in picks if not (work / "eval" / "value_error" / f"step{p['step']:06d}.json").exists()]
    if not todo:
        return
    from polyzero.cli.sog_probe import MAX_PUBLIC_STATES
    from polyzero.games import load_game
    from polyzero.sog.probe import exact_beliefs, network_error
    from polyzero.sog.trainer import load_cvpn

    beliefs = exact_beliefs(load_game(args.game), args.value_error, MAX_PUBLIC_STATES)
    for point in todo:
        rec = {**point, "iterations": args.value_error, **network_error(load_cvpn(point["path"])[0], beliefs)}
        write_json_atomic(work / "eval" / "value_error" / f"step{point['step']:06d}.json", rec)
        print(f"[eval] value error at step {point['step']}: {rec['all']:.4f} [{rec['all_weighted']:.4f}]", flush=True)


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


def eval_rows(work: Path, training_seed: int) -> list[dict]:
    """A training seed's evaluated cells (WORK/eval/*.json) with min / mean / max over search seeds."""
    import numpy as np

    rows = [json.loads(p.read_text()) for p in sorted((work / "eval").glob("*.json"))]
    for r in rows:
        v = r["values"]
        r["min"], r["mean"], r["max"] = float(np.min(v)), float(np.mean(v)), float(np.max(v))
        r["training_seed"] = training_seed
    return rows


def sog_rows(args, seeds: list[int], base: Path | None = None) -> tuple[list[dict], list[dict]]:
    """(IS-MCTS anchors, SoG cells) of these training seeds' work directories."""
    rows = [r for seed in seeds for r in eval_rows(work_dir(args, seed, base), seed)]
    anchors = [r for r in rows if r["spec"].startswith("ismcts")]
    sog = sorted(
        (r for r in rows if r["spec"].startswith("sog")),
        key=lambda r: (r["training_seed"], r["step"], search_sims(r)),
    )
    return anchors, sog


def value_error_rows(args, seeds: list[int], base: Path | None) -> list[dict]:
    """Per mark that every training seed has: the CVPN's value error by seed (all states,
    unweighted and weighted), with a baseline arm its value errors and the paired differences."""

    def read(seed: int, where: Path | None) -> dict:
        files = (work_dir(args, seed, where) / "eval" / "value_error").glob("*.json")
        return {rec.get("mark", rec["step"]): rec for rec in (json.loads(p.read_text()) for p in files)}

    ours, theirs = [read(s, None) for s in seeds], [read(s, base) for s in seeds] if base else None
    return value_error_table(ours, theirs)


def phase_report(args, work: Path) -> dict:
    seeds = args.train_seeds or [args.seed]
    anchors, sog = sog_rows(args, seeds)
    rows = anchors + sog
    merged = across_seeds(sog, seeds) if len(seeds) > 1 else []
    baseline = None
    if args.baseline_work:  # another arm's training seeds: its means, and this arm's paired differences
        base_sog = sog_rows(args, seeds, args.baseline_work)[1]
        base_merged = across_seeds(base_sog, seeds)
        baseline = {"work": str(args.baseline_work), "across_training_seeds": base_merged}
        baseline["paired"] = paired(sog, base_sog, seeds)
    errors = value_error_rows(args, seeds, args.baseline_work)
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
        "baseline": baseline,
        "value_error": errors,
        "targets": target,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2))
    unit = rows[0]["unit"] if rows else "mbb/h"
    write_markdown(args.out, report_lines(args, result, unit))
    base_curves = baseline["across_training_seeds"] if baseline else []
    plot_curves(merged + sog, anchors, unit, RESULTS / f"{args.out}.png", args.game, len(seeds), base_curves)
    return result


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", default="leduc_poker")
    p.add_argument("--work", type=Path, default=None, help="default runs/bench/sog_GAME")
    p.add_argument("--out", type=results_name, default=None, help="results name (default sog_leduc for leduc_poker)")
    p.add_argument("--budget-min", type=float, default=120.0, help="training time (minutes)")
    p.add_argument("--budget-steps", type=int, default=None, help="train to this learning step instead")
    p.add_argument("--chunk-steps", type=int, default=10, help="learning steps between kept checkpoints")
    p.add_argument("--points", type=int, default=5, help="trained checkpoints evaluated")
    p.add_argument("--sims", type=int, nargs="+", default=[33, 100], help="SoG(s, 1) at every point")
    p.add_argument("--final-sims", type=int, default=1000, help="SoG(s, 1) at the final point (0: none)")
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
    p.add_argument("--mark-steps", type=int, nargs="*", default=None, help="eval: checkpoints nearest these steps")
    p.add_argument(
        "--value-error",
        type=int,
        default=0,
        metavar="ITERATIONS",
        help="eval: also the CVPN's error against an equilibrium's values (CFR+ of this many iterations)",
    )
    p.add_argument("--train-seeds", type=int, nargs="*", default=None, help="report: training seeds merged")
    p.add_argument(
        "--baseline-work",
        type=Path,
        default=None,
        help="report: another arm's --work; its means and the paired differences (this arm minus it) per mark",
    )
    p.add_argument("--jobs", type=int, default=1, help="processes evaluating seeds in parallel")
    p.add_argument(
        "--reverse",
        action="store_true",
        help="evaluate last cell first: a second eval process run so shares the work through the cache",
    )
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config override")
    args = p.parse_args(argv)
    at_least = {"chunk_steps": 1, "points": 1, "seeds": 1, "final_seeds": 1, "jobs": 1, "final_sims": 0}
    at_least |= {"value_error": 0, "budget_steps": 1, "budget_min": 0}
    for key, low in at_least.items():
        value = getattr(args, key)
        if value is not None and not (math.isfinite(value) and value >= low):
            p.error(f"--{key.replace('_', '-')} must be at least {low} (got {value})")
    for key in ("sims", "mark_steps"):
        if any(v < (1 if key == "sims" else 0) for v in getattr(args, key) or []):
            p.error(f"--{key.replace('_', '-')}: {'positive' if key == 'sims' else 'non-negative'} integers only")
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
