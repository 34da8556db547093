"""NDMZ's learned model on Nannon against the exact values, at marks of a kept run.

For the checkpoints of a `benchmarks/nannon_636.py train --method ndmz` work directory
nearest the given minutes of training, `polyzero probe` unrolls the model K steps
along games of the model's own prior moves and of random moves and compares every
prediction with the solver's exact values (polyzero/train/probe_exact.py: the value
error per k, the prior's top move and the one-move look-ahead through g and the
model's roll, the value head alone on the true successors; docs/probe.md). Each
mark's row carries that checkpoint's exact scores against the optimal player (search
agent and raw policy) where `nannon_636.py eval` has scored it (WORK/eval), and the
exact scores of players built from the network's parts (benchmarks/ndmz_nannon_parts.py:
AlphaZero's search with the rules and NDMZ's f(h(o)); one-move look-aheads on the true
successors and through the learned model). Probes and parts are cached under
WORK/probe and WORK/parts; writes JSON, Markdown and a PNG.

  python benchmarks/ndmz_probe_nannon.py --work runs/bench/nannon_636_probe_s0 \\
      --marks 10,30,60 --games 200 --out benchmarks/results/ndmz_probe_nannon_636
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from nannon_636 import checkpoints  # noqa: E402
from ndmz_nannon_parts import part_scores  # noqa: E402
from polyzero.train.probe import probe_run  # noqa: E402

#: (column, metric, k): the summary table's cells
COLUMNS = (
    ("v err k=0", "value_vs_exact", 0),
    ("v err k=2", "value_vs_exact", 2),
    ("v err k=6", "value_vs_exact", 6),
    ("prior regret k=0", "regret_exact", 0),
    ("real-roll regret", "real_roll_regret_exact", 0),
    ("roll regret k=0", "roll_regret_exact", 0),
    ("roll regret k=4", "roll_regret_exact", 4),
    ("identity k=2", "identity_acc", 2),
    ("chance TV k=1", "chance_tv", 1),
)
#: the per-k table's rows
PER_K = (
    "value_vs_exact",
    "chance_value_vs_exact",
    "value_drift",
    "agree_exact",
    "regret_exact",
    "greedy_regret_exact",
    "roll_value_vs_exact",
    "roll_agree_exact",
    "roll_regret_exact",
    "real_roll_value_vs_exact",
    "real_roll_agree_exact",
    "real_roll_regret_exact",
    "identity_acc",
    "chance_tv",
)


def pick(work: Path, minutes: float, budget: float) -> dict:
    """The NDMZ checkpoint within `budget` minutes nearest `minutes` of training."""
    within = [p for p in checkpoints(work, "ndmz") if p["minutes"] <= budget]
    if not within:
        raise SystemExit(f"no ndmz checkpoints under {work}")
    return min(within, key=lambda p: abs(p["minutes"] - minutes))


def exact_scores(work: Path, step: int) -> dict:
    path = work / "eval" / f"ndmz-step{step:06d}.json"
    if not path.exists():
        return {}
    rec = json.loads(path.read_text())
    return {agent: rec[agent]["exact_vs_optimal"] for agent in ("search", "raw") if agent in rec}


def parts(work: Path, point: dict) -> dict:
    """The exact scores of the parts' players at a checkpoint (cached)."""
    path = work / "parts" / f"step{point['step']:06d}.json"
    if not path.exists():
        t0, load = time.time(), os.getloadavg()[0]
        rec = part_scores(point["path"])
        rec.update(seconds_total=time.time() - t0, loadavg_1min=[load, os.getloadavg()[0]])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec, indent=1))
    return json.loads(path.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True, help="a nannon_636.py work directory")
    ap.add_argument("--marks", default="10,30,60", help="minutes of training")
    ap.add_argument("--budget-min", type=float, default=60)
    ap.add_argument("--moves", default="model,random")
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True, help="output stem (.json, .md, .png)")
    args = ap.parse_args()
    rows = []
    for minutes in (float(m) for m in args.marks.split(",")):
        point = pick(args.work, minutes, args.budget_min)
        players = parts(args.work, point)
        print(minutes, point["step"], players, flush=True)
        for moves in args.moves.split(","):
            out = args.work / "probe" / f"step{point['step']:06d}-{moves}-g{args.games}-s{args.seed}"
            if not (out / "probe.json").exists():
                t0, load = time.time(), os.getloadavg()[0]
                probe_run(point["path"], games=args.games, seed=args.seed, out=out, moves=moves)
                res = json.loads((out / "probe.json").read_text())
                res.update(seconds=time.time() - t0, loadavg_1min=[load, os.getloadavg()[0]])
                (out / "probe.json").write_text(json.dumps(res, indent=1))
            res = json.loads((out / "probe.json").read_text())
            rows.append(
                {
                    "mark_min": minutes,
                    "minutes": point["minutes"],
                    "learning_step": point["step"],
                    "moves": moves,
                    "exact_vs_optimal": exact_scores(args.work, point["step"]),
                    "parts_vs_optimal": players["exact_vs_optimal"],
                    "seconds": res.get("seconds"),
                    "loadavg_1min": res.get("loadavg_1min"),
                    "k": res["k"],
                    "metrics": res["metrics"],
                    "counts": res["counts"],
                }
            )
            print(minutes, moves, point["step"], rows[-1]["exact_vs_optimal"], flush=True)
    commits = args.work / "train_commits.txt"
    result = {
        "benchmark": "ndmz_probe_nannon",
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(sys.argv),
        "machine": platform.platform(),
        "work": str(args.work),
        "train_commits": commits.read_text().splitlines() if commits.exists() else [],
        "games": args.games,
        "seed": args.seed,
        "definitions": res.get("definitions", {}),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    args.out.with_suffix(".md").write_text(markdown(result))
    plot(result, args.out.with_suffix(".png"))
    print(args.out.with_suffix(".md").read_text())


def _cell(v, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def markdown(result: dict) -> str:
    lines = [
        f"# NDMZ's learned model on Nannon against the exact values ({result['generated_utc']})",
        "",
        f"`{result['command']}`",
        "",
        f"Run: `{result['work']}` (trained at {', '.join(result['train_commits']) or '?'}); "
        f"{result['games']} probed games per row, seed {result['seed']}. Exact scores against the "
        "optimal player from `nannon_636.py eval` where it scored the checkpoint. v err: |v^k - V*| "
        "at decisions; regret: the exact value the chosen move gives up per decision (two or more "
        "legal moves): the prior's top move, the look-ahead on the true successors valued by f(h(o)) "
        "(real-roll), the look-ahead through g and the model's roll (roll). Definitions: docs/probe.md.",
        "",
        "| minutes | step | moves | search vs optimal | raw vs optimal | "
        + " | ".join(c for c, _, _ in COLUMNS)
        + " |",
        "|---" * (5 + len(COLUMNS)) + "|",
    ]
    parts_lines = [
        "",
        "Exact scores against the optimal player of players built from the network's parts "
        "(benchmarks/ndmz_nannon_parts.py): the NDMZ search agent; AlphaZero's search (true rules "
        "and dice, the alphazero_nannon preset's 50 simulations) with NDMZ's f(h(o)) as its network; "
        "the one-move look-ahead on the true successors valued by f(h(o)); the same through g and "
        "the model's roll; the raw prior.",
        "",
        "| minutes | step | NDMZ search | AlphaZero search + NDMZ's h, f | 1-ply, true successors | "
        "1-ply through g | raw prior |",
        "|---|---|---|---|---|---|---|",
    ]
    seen = set()
    for r in result["rows"]:
        m, e = r["metrics"], r["exact_vs_optimal"]
        cells = [_cell((m.get(name) or [None] * (k + 1))[k] if k < len(r["k"]) else None) for _, name, k in COLUMNS]
        lines.append(
            f"| {r['minutes']:.1f} | {r['learning_step']} | {r['moves']} | {_cell(e.get('search'), 4)} | "
            f"{_cell(e.get('raw'), 4)} | " + " | ".join(cells) + " |"
        )
        if r["learning_step"] not in seen:
            seen.add(r["learning_step"])
            p = r["parts_vs_optimal"]
            parts_lines.append(
                f"| {r['minutes']:.1f} | {r['learning_step']} | {_cell(e.get('search'), 4)} | "
                + " | ".join(_cell(p.get(n), 4) for n in ("az_search", "one_ply_true", "one_ply_model", "raw"))
                + " |"
            )
    lines += parts_lines
    for r in result["rows"]:
        lines += [
            "",
            f"## {r['minutes']:.1f} minutes (step {r['learning_step']}), {r['moves']} moves",
            "",
            "| metric | " + " | ".join(f"k={k}" for k in r["k"]) + " |",
            "|---" * (1 + len(r["k"])) + "|",
        ]
        for name in PER_K:
            if name in r["metrics"]:
                lines.append(f"| {name} | " + " | ".join(_cell(v) for v in r["metrics"][name]) + " |")
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["rows"] if r["moves"] == "model"] or result["rows"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    for r in rows:
        label = f"{r['minutes']:.0f} min"
        for ax, name, style in (
            (left, "value_vs_exact", "-"),
            (left, "roll_value_vs_exact", "--"),
            (right, "regret_exact", "-"),
            (right, "roll_regret_exact", "--"),
        ):
            pts = [(k, v) for k, v in zip(r["k"], r["metrics"].get(name, [])) if v is not None]
            line = ax.plot(*zip(*pts), style, marker="o", label=f"{name}, {label}")[0]
            real = r["metrics"].get("real_" + name, [None])
            if name.startswith("roll") and real and real[0] is not None:
                ax.plot([0], [real[0]], marker="*", markersize=12, color=line.get_color(), ls="none")
    left.set(title="value error against the exact values (* real-roll, k=0)", xlabel="unroll step k")
    right.set(title="exact value given up per decision (* real-roll, k=0)", xlabel="unroll step k")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(f"NDMZ on Nannon: the model against the exact values ({rows[0]['moves']} moves)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
