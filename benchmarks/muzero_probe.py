"""The learned model over training time: `polyzero probe` at the marks of a kept run.

For each mark of a MuZero run kept by `connect_four_alphazero.py --keep-state`
(weights-only mark checkpoints `MUZERO_MARKS/wcNNNNNN`), the probe unrolls the model
K steps along games of random moves and of the model's own prior moves, beside the
AlphaZero arm's network at the same mark (the true-model baseline), and puts each
mark's probe summary beside that mark's score against MCTS-Solver 1x from the run's
report. Cached per mark and move kind under benchmarks/work/ (a rerun probes only
what is new); writes JSON, Markdown and a PNG.

  python benchmarks/muzero_probe.py \
      --report benchmarks/results/connect_four_alphazero_muzero64k.json \
      --muzero-marks benchmarks/results/connect_four_alphazero_muzero64k/muzero_marks \
      --baseline-marks benchmarks/results/connect_four_alphazero_muzero64k/polyzero_marks \
      --marks 10,30,60,120,180,220 --games 300 --out benchmarks/results/muzero_probe_connect_four
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from polyzero.train.probe import probe_run  # noqa: E402

SUMMARY = ("legal_top", "agree_self", "value_drift", "agree_baseline", "value_vs_baseline")


def summarise(result: dict) -> dict:
    """Per metric, the value at k = 1 and the mean over k = 1..K."""
    out = {}
    for name in SUMMARY:
        row = [v for v in result["metrics"].get(name, [])[1:] if v is not None]
        if row:
            out[name] = {"k1": row[0], "mean_k1_to_K": sum(row) / len(row), "k0": result["metrics"][name][0]}
    return out


def scores(report: Path) -> dict[float, dict]:
    rep = json.loads(report.read_text())
    return {p["mark_min"]: p for p in rep["targets"]["muzero_80pct_of_alphazero_1x"]["points"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", type=Path, required=True)
    ap.add_argument("--muzero-marks", type=Path, required=True)
    ap.add_argument("--baseline-marks", type=Path, required=True)
    ap.add_argument("--marks", default="10,30,60,120,180,220", help="minutes")
    ap.add_argument("--games", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True, help="output stem (.json, .md, .png)")
    args = ap.parse_args()
    work = Path(__file__).resolve().parent / "work" / args.out.name  # per-probe caches, not committed
    work.mkdir(parents=True, exist_ok=True)
    points = scores(args.report)
    rows = []
    for minutes in (float(m) for m in args.marks.split(",")):
        name = f"wc{int(minutes * 60):06d}"
        for moves in ("random", "model"):
            cache = work / f"{name}-{moves}.json"
            if not cache.exists():
                t0 = time.time()
                res = probe_run(
                    args.muzero_marks / name,
                    baseline=args.baseline_marks / name,
                    games=args.games,
                    seed=args.seed,
                    out=work / f"{name}-{moves}",
                    moves=moves,
                )
                res["seconds"] = time.time() - t0
                cache.write_text(json.dumps(res, indent=1))
            res = json.loads(cache.read_text())
            score = points.get(minutes, {})
            rows.append(
                {
                    "mark_min": minutes,
                    "moves": moves,
                    "learning_step": res["learning_step"],
                    "muzero_1x": score.get("muzero"),
                    "alphazero_1x": score.get("alphazero"),
                    "summary": summarise(res),
                    "metrics": res["metrics"],
                }
            )
            print(minutes, moves, rows[-1]["summary"], flush=True)
    result = {
        "benchmark": "muzero_probe",
        "generated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(sys.argv),
        "machine": platform.platform(),
        "games": args.games,
        "seed": args.seed,
        "report": str(args.report),
        "rows": rows,
    }
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    args.out.with_suffix(".md").write_text(markdown(result))
    plot(result, args.out.with_suffix(".png"))
    print(args.out.with_suffix(".md").read_text())


def markdown(result: dict) -> str:
    lines = [
        f"# The learned model over training time ({result['generated_utc']})",
        "",
        f"`{result['command']}`",
        "",
        f"{result['games']} games per probe, seed {result['seed']}; k-step figures are means over "
        "k = 1..K (K = the run's unroll); baseline = the AlphaZero arm's network at the same mark.",
        "",
        "| minutes | moves | step | MuZero 1x | AlphaZero 1x | legal top move | agrees with f(h(o)) | "
        "value drift | agrees with AlphaZero (k=0 / k>=1) | value vs AlphaZero (k=0 / k>=1) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        s = r["summary"]
        lines.append(
            f"| {r['mark_min']:.0f} | {r['moves']} | {r['learning_step']} | {r['muzero_1x']} | {r['alphazero_1x']} | "
            f"{s['legal_top']['mean_k1_to_K']:.3f} | {s['agree_self']['mean_k1_to_K']:.3f} | "
            f"{s['value_drift']['mean_k1_to_K']:.3f} | {s['agree_baseline']['k0']:.3f} / "
            f"{s['agree_baseline']['mean_k1_to_K']:.3f} | {s['value_vs_baseline']['k0']:.3f} / "
            f"{s['value_vs_baseline']['mean_k1_to_K']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for moves, style in (("random", "--"), ("model", "-")):
        rows = [r for r in result["rows"] if r["moves"] == moves]
        x = [r["mark_min"] for r in rows]
        for name, ax in (("agree_self", axes[0]), ("value_drift", axes[1]), ("agree_baseline", axes[0])):
            ax.plot(
                x,
                [r["summary"][name]["mean_k1_to_K"] for r in rows],
                style,
                marker="o",
                label=f"{name} ({moves} moves)",
            )
        axes[1].plot(
            x,
            [r["summary"]["value_vs_baseline"]["mean_k1_to_K"] for r in rows],
            style,
            marker="s",
            label=f"value_vs_baseline ({moves} moves)",
        )
    rows = [r for r in result["rows"] if r["moves"] == "model"]
    axes[2].plot([r["mark_min"] for r in rows], [r["muzero_1x"] for r in rows], marker="o", label="MuZero")
    axes[2].plot([r["mark_min"] for r in rows], [r["alphazero_1x"] for r in rows], marker="o", label="AlphaZero")
    axes[0].set(title="top-move agreement, mean over k = 1..K", xlabel="minutes of training")
    axes[1].set(title="value error, mean over k = 1..K", xlabel="minutes of training")
    axes[2].set(title="score against MCTS-Solver 1x", xlabel="minutes of training", ylim=(0, 1))
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
