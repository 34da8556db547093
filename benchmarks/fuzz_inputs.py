"""Fuzz the CLI with generated inputs (issue 54): CLI arguments of every subcommand, TOML
configs, game strings, player specs, corrupted and foreign checkpoints, bad lines to
`play`. Each case runs in a child forked from this process (polyzero imported once), with
a timeout, and is classified (tests/fuzz_cases.py): clean error, ok, traceback, crash,
hang, accepted nonsense, unclean error, refused valid input.

    python benchmarks/fuzz_inputs.py --cases 10000            # resumes where it stopped
    python benchmarks/fuzz_inputs.py --minutes 10             # as many as fit in 10 minutes

Results: benchmarks/results/fuzz_inputs.{json,md}. Each case's record is appended to
~/.cache/polyzero/fuzz_inputs-seed{S}.jsonl (--log), what a resumed run reads back.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
RESULTS = ROOT / "benchmarks" / "results"

import fuzz_cases  # noqa: E402

COMMAND = "python benchmarks/fuzz_inputs.py"


def _done(log: Path, seed: int) -> dict[int, dict]:
    out = {}
    if log.is_file():
        for line in log.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill
            if rec.get("seed") == seed:
                out[rec["id"]] = rec
    return out


def _write_summary(results: dict[int, dict], args) -> None:
    counts = collections.Counter(r["class"] for r in results.values())
    by_kind = collections.defaultdict(collections.Counter)
    for r in results.values():
        by_kind[r["kind"].split(":")[0]][r["class"]] += 1
    bad = [r for r in results.values() if r["class"] in fuzz_cases.BAD_CLASSES]
    command = f"{COMMAND} --cases {args.cases} --seed {args.seed}"
    if args.minutes is not None:
        command += f" --minutes {args.minutes:g}"
    summary = {
        "command": command,
        "seed": args.seed,
        "cases": len(results),
        "note": f"cases 0..{len(results) - 1} of the {args.cases:,}-case stream; rerun the "
        "command to resume with the rest",
        "classes": dict(counts),
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "bad": sorted(bad, key=lambda r: r["id"])[:200],
    }
    (RESULTS / "fuzz_inputs.json").write_text(json.dumps(summary, indent=1) + "\n")
    classes = ["ok", "clean_error", *fuzz_cases.BAD_CLASSES]
    lines = [
        f"# Fuzz of the CLI's inputs ({len(results)} cases, seed {args.seed})",
        "",
        f"Command: `{command}` ({summary['note']})",
        "",
        "| kind | " + " | ".join(classes) + " |",
        "|---" * (len(classes) + 1) + "|",
    ]
    for kind, c in sorted(by_kind.items()):
        lines.append(f"| {kind} | " + " | ".join(str(c.get(k, 0)) for k in classes) + " |")
    lines.append("| **all** | " + " | ".join(f"**{counts.get(k, 0)}**" for k in classes) + " |")
    if bad:
        lines += ["", "## Cases not handled cleanly", ""]
        for r in sorted(bad, key=lambda r: r["id"])[:50]:
            tail = r["stderr_tail"].strip().splitlines()[-1:] or [""]
            lines.append(
                f"- #{r['id']} {r['class']} `{' '.join(r['argv'])[:160]}` {r.get('corrupt') or ''}: {tail[0][:200]}"
            )
    (RESULTS / "fuzz_inputs.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=10_000, help="cases 0..N-1 of the stream (default: 10000)")
    ap.add_argument("--seed", type=int, default=0, help="the stream of cases (default: 0)")
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long (resume later)")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a case may take (default: 60)")
    ap.add_argument("--fresh", action="store_true", help="forget earlier results of this seed")
    ap.add_argument("--log", type=Path, default=None, help="the per-case log a resumed run reads")
    ap.add_argument("--summary-only", action="store_true", help="rewrite the results files from the log; run nothing")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(1)  # forked children inherit it; no OpenMP pool across fork
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    RESULTS.mkdir(parents=True, exist_ok=True)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "polyzero"
    log = args.log or cache / f"fuzz_inputs-seed{args.seed}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    if args.fresh and log.is_file():
        log.unlink()
    results = _done(log, args.seed)
    if args.summary_only:
        _write_summary(results, args)
        return 0
    work = Path(tempfile.mkdtemp(prefix="polyzero-fuzz-"))
    fixture = fuzz_cases.make_fixture(work)
    start = time.monotonic()
    todo = [i for i in range(args.cases) if i not in results]
    print(f"{len(results)} cases done earlier, {len(todo)} to run", file=sys.stderr)
    with log.open("a") as out:
        for n, cid in enumerate(todo):
            if args.minutes is not None and time.monotonic() - start > 60 * args.minutes:
                break
            rec = fuzz_cases.run_case(fuzz_cases.generate(cid, args.seed), fixture, work, args.timeout)
            rec["seed"] = args.seed
            results[cid] = rec
            out.write(json.dumps(rec) + "\n")
            out.flush()
            if rec["class"] in fuzz_cases.BAD_CLASSES:
                print(f"#{cid} {rec['class']}: {' '.join(rec['argv'])[:120]}", file=sys.stderr)
            if n % 100 == 0:
                _write_summary(results, args)
    _write_summary(results, args)
    counts = collections.Counter(r["class"] for r in results.values())
    print(f"{len(results)} cases: {dict(counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
