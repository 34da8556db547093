"""Run `minatar_muzero.py` train and eval jobs over several seeds, two at a time.

    python benchmarks/minatar_muzero_queue.py --workers 2 \\
        --jobs train:reanalyze_small:0,train:muzero_reanalyze_ratio:0,eval:muzero_reanalyze_ratio:0,... \\
        --loadavg runs/bench/minatar_muzero_seeds_loadavg.jsonl \\
        -- --work 'runs/bench/minatar_muzero_seeds_s{seed}' --max-positions 51200 --episodes 100

Each job is PHASE:ARM:SEED, one process (one core: training's one torch thread, eval's
one); a free worker takes the first job in the list that is ready (an eval waits for the
training of its arm and seed). The arguments after `--` go to every job. A job that
fails is logged and its eval skipped; the others go on. Every job resumes from what
its work directory holds, so the queue can be run again after an interruption.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import sample_loadavg  # noqa: E402

SCRIPT = Path(__file__).resolve().parent / "minatar_muzero.py"


def parse_jobs(text: str) -> list[tuple[str, str, str]]:
    jobs = []
    for item in filter(None, text.split(",")):
        parts = item.split(":")
        if len(parts) != 3 or parts[0] not in ("train", "eval"):
            raise SystemExit(f"error: job {item!r} is not PHASE:ARM:SEED with PHASE train or eval")
        jobs.append((parts[0], parts[1], parts[2]))
    return jobs


def run(jobs: list[tuple[str, str, str]], workers: int, common: list[str], log_dir: Path, poll_s: float = 5.0) -> int:
    pending, running, done, failed = list(jobs), {}, set(), set()
    while pending or running:
        for job, proc in list(running.items()):
            if proc.poll() is not None:
                (done if proc.returncode == 0 else failed).add(job)
                print(f"[{time.strftime('%H:%M:%S')}] {':'.join(job)} rc={proc.returncode}", flush=True)
                del running[job]
        for job in list(pending):
            phase, arm, seed = job
            if len(running) >= workers:
                break
            if phase == "eval" and ("train", arm, seed) in jobs and ("train", arm, seed) not in done:
                if ("train", arm, seed) in failed:
                    pending.remove(job)
                    failed.add(job)
                continue
            pending.remove(job)
            log = open(log_dir / f"queue-{phase}-{arm}-s{seed}.log", "a")
            cmd = [sys.executable, str(SCRIPT), phase, "--arms", arm, "--seed", seed, *common]
            print(f"[{time.strftime('%H:%M:%S')}] start {':'.join(job)}: {' '.join(cmd)}", flush=True)
            running[job] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        time.sleep(poll_s)
    return 1 if failed else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", required=True, help="comma-separated PHASE:ARM:SEED, in order of priority")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--log-dir", type=Path, default=Path("runs/bench"))
    p.add_argument("--loadavg", type=Path, default=None, help="sample the load average here each minute (JSON lines)")
    p.add_argument("common", nargs=argparse.REMAINDER, help="-- then arguments for every job")
    args = p.parse_args(argv)
    common = args.common[1:] if args.common[:1] == ["--"] else args.common
    args.log_dir.mkdir(parents=True, exist_ok=True)
    if args.loadavg:  # what else ran on the machine meanwhile (report --loadavg)
        sample_loadavg(args.loadavg)
    return run(parse_jobs(args.jobs), args.workers, common, args.log_dir)


if __name__ == "__main__":
    sys.exit(main())
