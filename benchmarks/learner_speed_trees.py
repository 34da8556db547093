"""`learner_speed.py`'s main table for this tree and for git revision REV, in alternating
processes (REV, this, this, REV, ...): the whole step (sampling from the replay, the
loss, the update, the loss terms read back) of each learner against its floor, where
the code of every layer differs (the replays' sampling, the losses, the Learner), which
an A/B inside one process cannot hold (`learner_speed.py --update-ab-before` swaps the
Learner only).

Each process measures its learner against the floor in the same rounds, in CPU time, so
the ratio learner / floor does not depend on the load between processes; the report
gives each process's ratios and their medians per tree.

  python benchmarks/learner_speed_trees.py --before 9ce4b19 --arms sog_cvpn,alphazero_sog_trunk \\
      --batch-size 32 --rounds 2 --out benchmarks/results/learner_speed_trees_b32.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import command_line, machine_info, write_results  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def extract(rev: str) -> Path:
    """Revision `rev`'s tree (git archive) in a temporary directory."""
    root = Path(tempfile.mkdtemp(prefix="learner_trees_"))
    archive = subprocess.run(["git", "archive", rev], capture_output=True, cwd=REPO, check=True)
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    return root


def run_table(tree: Path, args, out: Path) -> dict:
    """`tree`'s learner_speed.py main table (its own package: the script puts its tree first)."""
    cmd = [sys.executable, str(tree / "benchmarks" / "learner_speed.py"), "--arms", args.arms, "--devices", "cpu"]
    cmd += ["--batch-size", str(args.batch_size), "--steps", str(args.steps), "--warmup", str(args.warmup)]
    cmd += ["--cpu-threads", str(args.cpu_threads), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def render(result: dict) -> str:
    runs = result["runs"]
    arms = list(dict.fromkeys(r["arm"] for run in runs for r in run["rows"]))
    lines = [
        "# Learner / floor: this tree against an earlier revision, in alternating processes",
        "",
        f"- command: `{result['command']}`",
        f"- before: git revision {result['before']}; now: the tree at {result['now']}",
        f"- machine: {result['machine'].get('Model name', '?')}, {result['machine'].get('CPU(s)')} CPUs, a machine "
        "shared with other sessions; one torch thread; load average start/end: "
        f"{result['loadavg_start']} / {result['loadavg_end']}",
        "- each process: learner_speed.py's main table (each step: sample a minibatch from the replay, one "
        "update, loss terms read back; beside it the floor, the same network passes alone on one batch, in the "
        f"same rounds; medians of {result['steps']} rounds of the process's CPU time); processes in the order "
        + ", ".join(r["tree"] for r in runs),
        "",
        "| arm | batch | before: learner / floor (each run) | now: learner / floor (each run) | before median "
        "| now median | before / now | CPU ms step / floor, before (medians) | now |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for arm in arms:
        per = {
            tree: [next(r for r in run["rows"] if r["arm"] == arm) for run in runs if run["tree"] == tree]
            for tree in ("before", "now")
        }
        ratio = {t: [r["cpu_learner_over_floor"] for r in rows] for t, rows in per.items()}
        ms = {
            t: f"{statistics.median(r['cpu_step_ms'] for r in rows):.2f} / "
            f"{statistics.median(r['cpu_floor_ms'] for r in rows):.2f}"
            for t, rows in per.items()
        }
        before, now = statistics.median(ratio["before"]), statistics.median(ratio["now"])
        lines.append(
            f"| {arm} | {per['now'][0]['batch_size']} | {', '.join(f'{x:.2f}' for x in ratio['before'])} "
            f"| {', '.join(f'{x:.2f}' for x in ratio['now'])} | {before:.2f} | {now:.2f} | {before / now:.2f}x "
            f"| {ms['before']} | {ms['now']} |"
        )
    lines += [
        "",
        "Compare the ratios: the processes ran minutes apart on a shared machine, so their milliseconds "
        "(floors included) move with the load; each ratio is taken in one process, in the same rounds.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, metavar="REV")
    ap.add_argument("--arms", default="sog_cvpn,alphazero_sog_trunk,ndmz,alphazero_nannon_ndmz_trunk")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--cpu-threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2, help="pairs of processes, alternating which tree goes first")
    ap.add_argument("--out", default="benchmarks/results/learner_speed_trees.json")
    args = ap.parse_args(argv)
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{args.before}^{{commit}}"], cwd=REPO, capture_output=True
    )
    if found.returncode or args.rounds < 1 or args.steps < 1:
        ap.error(f"need a git revision (not {args.before!r}), --rounds and --steps of at least 1")
    trees = {"before": extract(args.before), "now": REPO}
    load0, runs = os.getloadavg(), []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for tree in ("before", "now") if r % 2 == 0 else ("now", "before"):
                table = run_table(trees[tree], args, Path(tmp) / f"{tree}{r}.json")
                runs.append({"tree": tree, "rows": table["rows"], "loadavg": table["loadavg_end"]})
                print(
                    tree, [(row["arm"], round(row["cpu_learner_over_floor"], 3)) for row in table["rows"]], flush=True
                )
    now = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    result = {
        "command": command_line(argv),
        "machine": machine_info(),
        "before": args.before,
        "now": now.stdout.strip() + (" with uncommitted changes" if _dirty() else ""),
        "steps": args.steps,
        "loadavg_start": load0,
        "loadavg_end": os.getloadavg(),
        "runs": runs,
    }
    write_results(args.out, result, render(result))


def _dirty() -> bool:
    return bool(subprocess.run(["git", "status", "--porcelain", "polyzero"], cwd=REPO, capture_output=True).stdout)


if __name__ == "__main__":
    main()
