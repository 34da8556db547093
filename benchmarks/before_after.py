"""Issue 55's "done when": the search speed and Connect Four's 60-minute score, measured
before and after the restructuring on the same machine, written as one report.

The inputs are results files the benchmarks wrote (`search_throughput.py --out`, run once
from a checkout of each commit, one after the other; `connect_four_alphazero.py --arms
polyzero --tag before55/after55`, both arms trained at the same time, one core each), and
optionally both arms' metrics.jsonl, to count the learning steps whose losses agree bit for bit:

  python benchmarks/before_after.py --dir benchmarks/results/issue55_before_after \
      --before 2659e97 --after 01048d6 \
      --metrics-before RUN_BEFORE/metrics.jsonl --metrics-after RUN_AFTER/metrics.jsonl

Writes DIR/report.{json,md}.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _search_rows(path: Path) -> dict:
    data = json.loads(path.read_text())
    threads = data["meta"]["tree_kernel_threads"]
    return {
        (threads, r["B"], r["num_simulations"]): {
            "polyzero_ms": r["polyzero"]["median_s"] * 1e3,
            "mctx_ms": r["mctx"]["median_s"] * 1e3,
            "speedup_vs_mctx": r["mctx"]["median_s"] / r["polyzero"]["median_s"],
        }
        for r in data["rows"]
    }


def _final_mark(path: Path) -> dict:
    data = json.loads(path.read_text())
    last = data["curves"]["polyzero"][-1]
    return {
        "commit": data["versions"]["polyzero_git"][:7],
        "minutes": last["minutes"],
        "learning_step": last["learning_step"],
        "1x": last["1x"],
        "10x": last.get("10x"),
    }


def _losses(path: Path) -> dict[int, float]:
    rows = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return {r["step"]: r["loss/total"] for r in rows if "loss/total" in r}


def loss_agreement(before: Path, after: Path) -> dict:
    """Learning steps both runs made, and the first at which their losses differ."""
    a, b = _losses(before), _losses(after)
    common = sorted(set(a) & set(b))
    differ = [s for s in common if a[s] != b[s]]
    return {
        "common_steps": len(common),
        "identical_through": (differ[0] - 1) if differ else common[-1],
        "first_different_step": differ[0] if differ else None,
    }


def _score(cell: dict | None) -> str:
    if not cell:
        return "-"
    lo, hi = cell["ci95"]
    return f"{cell['score']:.3f} [{lo:.3f}, {hi:.3f}] ({cell['games']} games)"


def markdown(report: dict) -> str:
    b, a = report["before"], report["after"]
    lines = [
        "# Issue 55: before and after (same machine)",
        "",
        f"Before: {b}; after: {a}. The machine: 2-core AMD EPYC VM, shared with other jobs "
        "(see each results file's load average and speed probe).",
        "",
        "## Search throughput (`benchmarks/search_throughput.py --no-alphazero`; polyzero against mctx, "
        "interleaved in one run; ms per search call, median)",
        "",
        "| tree-kernel threads | B | simulations | before: polyzero / mctx | before: speed-up | "
        "after: polyzero / mctx | after: speed-up |",
        "|---:|---:|---:|---|---:|---|---:|",
    ]
    for row in report["search"]:
        lines.append(
            f"| {row['threads']} | {row['B']} | {row['simulations']} | {row['before']['polyzero_ms']:.2f} / "
            f"{row['before']['mctx_ms']:.2f} | {row['before']['speedup_vs_mctx']:.2f}x | "
            f"{row['after']['polyzero_ms']:.2f} / {row['after']['mctx_ms']:.2f} | "
            f"{row['after']['speedup_vs_mctx']:.2f}x |"
        )
    lines += [
        "",
        "## Connect Four, AlphaZero preset, 60 minutes of training (seed 0; both arms at the same time, one core each)",
        "",
        "| arm | commit | minutes | learning steps | vs MCTS-Solver 1x | vs MCTS-Solver 10x |",
        "|---|---|---:|---:|---|---|",
    ]
    for arm in ("before", "after"):
        m = report["connect_four"][arm]
        lines.append(
            f"| {arm} | {m['commit']} | {m['minutes']:.1f} | {m['learning_step']} | {_score(m['1x'])} | "
            f"{_score(m['10x'])} |"
        )
    agreement = report.get("loss_agreement")
    if agreement:
        lines += [
            "",
            f"The two runs' losses agree bit for bit at every learning step through step "
            f"{agreement['identical_through']} of {agreement['common_steps']} they share; "
            f"the first that differs is {agreement['first_different_step']}.",
        ]
    return "\n".join(lines + [""] + [f"- {note}" for note in report.get("notes", [])]) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path, required=True, help="the results folder (inputs and report)")
    p.add_argument("--before", required=True, help="the commit before")
    p.add_argument("--after", required=True, help="the commit after")
    p.add_argument("--metrics-before", type=Path)
    p.add_argument("--metrics-after", type=Path)
    p.add_argument("--note", action="append", default=[])
    args = p.parse_args(argv)
    before, after = {}, {}
    for name in ("st_before.json", "st_before_t1.json"):
        before.update(_search_rows(args.dir / name))
    for name in ("st_after.json", "st_after_t1.json"):
        after.update(_search_rows(args.dir / name))
    search = [
        {"threads": t, "B": bs, "simulations": n, "before": before[t, bs, n], "after": after[t, bs, n]}
        for (t, bs, n) in sorted(set(before) & set(after))
    ]
    report = {
        "before": args.before,
        "after": args.after,
        "search": search,
        "connect_four": {
            arm: _final_mark(args.dir / f"connect_four_alphazero_{arm}55.json") for arm in ("before", "after")
        },
        "notes": args.note,
    }
    if args.metrics_before and args.metrics_after:
        report["loss_agreement"] = loss_agreement(args.metrics_before, args.metrics_after)
    (args.dir / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.dir / "report.md").write_text(markdown(report))
    print(f"wrote {args.dir / 'report.md'}")


if __name__ == "__main__":
    main()
