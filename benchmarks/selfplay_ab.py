"""Self-play throughput of two commits, A/B interleaved on the same machine: this working
tree against a baseline revision, each running its own `benchmarks/selfplay_throughput.py`
at the same settings, in rounds of baseline-then-candidate and candidate-then-baseline
(ABBA), so that a machine whose speed drifts (shared cores) weighs on both alike.

The baseline is `git archive REV` unpacked into a temporary directory and run with its
own code (its benchmark script puts its own checkout first on the path). Positions per
second are the script's (positions searched by `--actors` processes over the wall time);
the report gives each run, the medians and the ratio of medians, with the load average
before and after every run.

  python benchmarks/selfplay_ab.py --baseline main --rounds 3 \\
      --out benchmarks/results/selfplay_throughput_c4_ab.json
  python benchmarks/selfplay_ab.py --baseline HEAD~1 --rounds 1 --seconds 3 --out /tmp/ab.json   # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, write_results  # noqa: E402


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def unpack(rev: str, into: Path) -> str:
    """The tree of `rev` unpacked into `into`; returns its full commit id."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    tar = into / "tree.tar"
    tar.write_bytes(archive)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    tar.unlink()
    return commit


def run_one(root: Path, args, out: Path, inference: str) -> dict:
    """One run of `root`'s own selfplay_throughput.py at the A/B's settings (`inference`:
    its --inference, a path with optional overrides after '+'): its row."""
    cmd = [
        sys.executable,
        str(root / "benchmarks" / "selfplay_throughput.py"),
        "--presets",
        args.preset,
        "--games",
        str(args.games),
        "--actors",
        str(args.actors),
        "--devices",
        "cpu",
        "--inference",
        inference,
        "--seconds",
        str(args.seconds),
        "--out",
        str(out),
    ]
    if args.refresh_every and "--refresh-every" in (root / "benchmarks" / "selfplay_throughput.py").read_text():
        cmd += ["--refresh-every", str(args.refresh_every)]
    env = {**os.environ, "PYTHONPATH": str(root)}
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True, text=True)
    data = json.loads(out.read_text())
    row = data["rows"][0]
    return {
        "refresh_every": data["meta"].get("refresh_every", 0),
        "positions_per_s": row["positions_per_s"],
        "network_ceiling_positions_per_s": row["network_ceiling_positions_per_s"],
        "cache_hit_share": row.get("cache_hit_share"),
        "seconds": time.perf_counter() - t0,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


def render(result: dict) -> str:
    m, s = result["meta"], result["summary"]
    lines = [
        "# Self-play throughput A/B: baseline commit against candidate, interleaved",
        "",
        f"- command: `{m['command']}`",
        f"- baseline {m['baseline'][:10]} ({m['baseline_rev']}), candidate {m['candidate']}",
        f"- machine: {m['machine'].get('Model name', '?')}, {m['machine'].get('CPU(s)')} CPUs; shared with other "
        "jobs (the load averages say how busy)",
        f"- settings: preset {m['preset']}, {m['games']} concurrent games per actor, {m['actors']} actor processes "
        f"(one torch thread each), net.inference {m['inference']}"
        + (
            f" (the candidate: {m['candidate_inference']})"
            if m.get("candidate_inference", m["inference"]) != m["inference"]
            else ""
        )
        + f", {m['seconds']} s of self-play per run; "
        "rounds ABBA (baseline, candidate, candidate, baseline, ...)"
        + (
            f"; the weights reloaded every {m['refresh_every']} moves where the code has that option (reloads column)"
            if m.get("refresh_every")
            else ""
        ),
        "",
        "| run | round | code | positions / s | ceiling positions / s | cache hits | reloads every | load before "
        "| load after |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(result["runs"]):
        hits = f"{r['cache_hit_share']:.2f}" if r["cache_hit_share"] is not None else "-"
        lines.append(
            f"| {i + 1} | {r['round']} | {r['code']} | {r['positions_per_s']:,.0f} | "
            f"{r['network_ceiling_positions_per_s']:,.0f} | {hits} | {r['refresh_every'] or '-'} | "
            f"{r['loadavg_before'][0]:.1f} | "
            f"{r['loadavg_after'][0]:.1f} |"
        )
    lines += [
        "",
        f"Median positions / s: baseline **{s['baseline_median']:,.0f}**, candidate **{s['candidate_median']:,.0f}**; "
        f"ratio of medians **{s['ratio_of_medians']:.2f}x**; per round (candidate mean / baseline mean): "
        + ", ".join(f"{x:.2f}x" for x in s["ratio_per_round"]),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="main", help="the baseline revision (git)")
    ap.add_argument("--rounds", type=int, default=3, help="ABBA rounds: two runs of each code per round")
    ap.add_argument("--preset", default="alphazero")
    ap.add_argument("--games", type=int, default=64)
    ap.add_argument("--actors", type=int, default=2)
    ap.add_argument("--inference", default="auto")
    ap.add_argument(
        "--candidate-inference",
        default=None,
        help="the candidate's --inference, when it differs (e.g. auto+net.winograd=6: a setting the baseline lacks)",
    )
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument(
        "--refresh-every",
        type=int,
        default=0,
        metavar="MOVES",
        help="selfplay_throughput.py's: the weights reloaded every this many moves, where the code has the "
        "option (a baseline without it runs without the reloads, which only favours it)",
    )
    ap.add_argument("--out", default="benchmarks/results/selfplay_throughput_c4_ab.json")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0 or args.refresh_every < 0:
        ap.error("--rounds and --seconds must be positive, --refresh-every not negative")
    try:
        git("rev-parse", "--verify", f"{args.baseline}^{{commit}}")
    except subprocess.CalledProcessError:
        ap.error(f"--baseline {args.baseline!r} is not a revision of this repository")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    meta = {
        "command": " ".join(["python", os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
        "machine": machine_info(),
        "baseline_rev": args.baseline,
        "candidate": git("rev-parse", "HEAD")[:10] + (" with uncommitted changes" if dirty else ""),
        **{k: getattr(args, k) for k in ("preset", "games", "actors", "inference", "seconds", "refresh_every")},
        "candidate_inference": args.candidate_inference or args.inference,
    }
    runs = []
    with tempfile.TemporaryDirectory(prefix="selfplay_ab_") as tmp:
        base = Path(tmp) / "baseline"
        base.mkdir()
        meta["baseline"] = unpack(args.baseline, base)
        codes = {"baseline": base, "candidate": ROOT}
        inference = {"baseline": args.inference, "candidate": meta["candidate_inference"]}
        for rnd in range(args.rounds):
            for code in ("baseline", "candidate", "candidate", "baseline"):
                row = run_one(codes[code], args, Path(tmp) / "run.json", inference[code])
                runs.append({"round": rnd + 1, "code": code, **row})
                print(f"round {rnd + 1} {code}: {row['positions_per_s']:.0f} positions/s", flush=True)
    per = {c: [r["positions_per_s"] for r in runs if r["code"] == c] for c in codes}
    summary = {
        "baseline_median": float(np.median(per["baseline"])),
        "candidate_median": float(np.median(per["candidate"])),
        "ratio_per_round": [
            float(np.mean(per["candidate"][2 * i : 2 * i + 2]) / np.mean(per["baseline"][2 * i : 2 * i + 2]))
            for i in range(args.rounds)
        ],
    }
    summary["ratio_of_medians"] = summary["candidate_median"] / summary["baseline_median"]
    result = {"meta": meta, "runs": runs, "summary": summary}
    write_results(args.out, result, render(result))
    print(render(result))


if __name__ == "__main__":
    main()
