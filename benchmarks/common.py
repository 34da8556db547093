"""What the benchmark scripts share: where they write, how they run polyzero
(`polyzero train` in wall-clock segments, one thread per process), their resumable
phases and caches, their timing (the anchor harness's speed probe and blocked
round-robin timing) and the machine's description.

Scripts put this folder on ``sys.path`` and ``from common import ...``; they import
nothing from one another's private helpers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PY = sys.executable
POLYZERO = [PY, "-m", "polyzero"]  # the interpreter running the script, however it was found
# One intra-op thread for every library a benchmark's processes run (torch, XLA, BLAS).
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
}
# A `polyzero train` that a benchmark stops by the clock: no evaluation, no step limit,
# checkpoints only when stopped, all of them kept.
POLYZERO_SETS = [
    "threads=1",
    "eval.every=0",
    "train.steps=100000000",
    "train.checkpoint_every=100000000",
    "train.keep_checkpoints=100000",
]


# ----------------------------------------------------------------------------- records
def utcnow() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def write_json_atomic(path: Path, rec: dict) -> None:
    """`rec` at `path`, whole or absent if the run is stopped (every benchmark's caches)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(json.dumps(rec))
    os.replace(path.with_suffix(".tmp"), path)


def write_results(out, result: dict, markdown: str) -> None:
    """`out` (JSON) and the Markdown beside it (same name, .md)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    out.with_suffix(".md").write_text(markdown)
    print(f"wrote {out} and {out.with_suffix('.md')}", flush=True)


def write_markdown(name: str, lines: list[str]) -> None:
    """benchmarks/results/NAME.md from `lines`, also printed."""
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def results_name(text: str) -> str:
    """An argparse type for `--out NAME`: a plain file name under benchmarks/results/ (a
    path there would be a file in a folder that does not exist: refused in one line)."""
    if not text or text.startswith(".") or any(c in text for c in "/\\"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a plain name (NAME writes benchmarks/results/NAME.*)")
    return text


def write_report(name: str, result: dict, lines: list[str], plot) -> None:
    """benchmarks/results/NAME.{json,md,png}: the result, its Markdown lines (also printed)
    and `plot(result, path)`'s figure (the seeds' reports)."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    write_markdown(name, lines)
    plot(result, RESULTS / f"{name}.png")


def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and a 95% t-interval over training seeds."""
    import numpy as np
    from scipy import stats

    v = np.asarray(values, float)
    if len(v) < 2:
        return float(v.mean()), float("nan"), float("nan")
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def seed_list(text: str) -> list[int]:
    """'0,1,2' -> [0, 1, 2] (--seeds, --at-steps)."""
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, not {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise argparse.ArgumentTypeError(f"expected distinct integers >= 0, not {text!r}")
    return seeds


def wilson(score: float, n: int) -> tuple[float, float]:
    """The Wilson 95% interval of a score over `n` games (polyzero's own)."""
    from polyzero.eval.stats import wilson_interval

    return wilson_interval(score, n)


# ----------------------------------------------------------------------------- phases
def run_phases(args, work: Path, train, evaluate, report) -> None:
    """`args.phase`: train, eval, report, or all three in order (every benchmark here)."""
    for name, phase in (("train", train), ("eval", evaluate), ("report", report)):
        if args.phase in (name, "all"):
            phase(args, work)


def cached(work: Path, name: str, compute, show=None) -> dict:
    """WORK/eval/NAME.json, computed once (every benchmark's evaluation resumes from these);
    `show(record)` is the line printed when it is computed."""
    path = work / "eval" / f"{name}.json"
    if path.exists():
        return json.loads(path.read_text())
    t0 = time.time()
    rec = compute()
    rec["seconds"] = time.time() - t0
    write_json_atomic(path, rec)  # whole or absent, if the run is stopped
    if show is None:
        shown = rec["values"] if "values" in rec else f"W{rec['wins']} D{rec['draws']} L{rec['losses']}"
    else:
        shown = show(rec)
    print(f"[eval] {name}: {shown} ({rec['seconds']:.0f} s)", flush=True)
    return rec


def run_jobs(tasks: list, jobs: int, save) -> None:
    """`tasks`: (key, fn, args); calls save(key, fn(*args)) for each as it finishes, in
    `jobs` spawned processes when jobs > 1 (fn must be a module-level function)."""
    if jobs <= 1:
        for key, fn, fn_args in tasks:
            save(key, fn(*fn_args))
        return
    import concurrent.futures as cf
    import multiprocessing

    with cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {pool.submit(fn, *fn_args): key for key, fn, fn_args in tasks}
        for done in cf.as_completed(running):
            save(running[done], done.result())


def sample_loadavg(path: Path, every_s: float = 60.0):
    """Append the load average to `path` (JSON lines) now and every `every_s` seconds from a
    daemon thread until the returned event is set: what else ran while a benchmark trained."""
    import threading

    stop = threading.Event()

    def sample():
        while True:
            with open(path, "a") as f:
                f.write(json.dumps({"utc": utcnow(), "loadavg": os.getloadavg()}) + "\n")
            if stop.wait(every_s):
                return

    threading.Thread(target=sample, daemon=True).start()
    return stop


def check_chunkable(train_cfg) -> None:
    """`train_in_chunks` sets train.steps per chunk: a cosine needs its length as train.lr_steps
    (else its decay restarts every chunk). Called before a run is created, a refusal leaves none."""
    from polyzero.errors import UsageError

    if train_cfg.lr_schedule != "constant" and not train_cfg.lr_steps:
        raise UsageError(
            "training in chunks sets train.steps per chunk: give the schedule's length as train.lr_steps=N"
        )


def train_in_chunks(
    trainer, budget_min: float, chunk_steps: int, label: str, steps: int | None = None, after_chunk=None
) -> None:
    """Run `trainer` in chunks of `chunk_steps` learning steps, a kept checkpoint after
    each, until `budget_min` minutes of training time (evaluation excluded), or with
    `steps` until that step instead; `after_chunk(trainer)` after each (`check_chunkable` first)."""
    check_chunkable(trainer.cfg.train)
    while trainer.train_time < budget_min * 60 if steps is None else trainer.step < steps:
        trainer.cfg.train.steps = (
            trainer.step + chunk_steps if steps is None else min(steps, trainer.step + chunk_steps)
        )
        trainer.cfg.train.checkpoint_every = chunk_steps
        trainer.run()
        if after_chunk is not None:
            after_chunk(trainer)
        print(f"[{label}] step {trainer.step}, {trainer.train_time / 60:.1f} min of training", flush=True)


# ----------------------------------------------------------------------------- polyzero train by the clock
def taskset(core: int | None) -> list[str]:
    """The command prefix that pins a process to `core` (none: no pinning)."""
    return ["taskset", "-c", str(core)] if core is not None else []


def latest_polyzero(run: Path) -> tuple[Path | None, dict | None]:
    """(latest checkpoint, its state.json) of a polyzero run directory, or (None, None)."""
    from polyzero.train.checkpoint import latest_checkpoint

    ckpt = latest_checkpoint(run)
    if ckpt is None:
        return None, None
    return ckpt, json.loads((ckpt / "state.json").read_text())


def keep_mark(ckpt: Path, dest: Path) -> None:
    """The network and config of a checkpoint (what load_search_player reads), kept
    under its wall-clock mark: polyzero names checkpoints by learning step, so a later
    interrupt at the same step would overwrite it."""
    import shutil

    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in ("config.toml", "learner.pt", "state.json"):
        shutil.copy2(ckpt / name, tmp / name)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def _segment_command(run: Path, ckpt: Path | None, train_args: list[str], core: int | None, launch_args) -> list[str]:
    if ckpt is None:
        cmd = [*POLYZERO, "train", *train_args, "--run-dir", str(run), "--no-progress"] + [
            x for s in POLYZERO_SETS for x in ("--set", s)
        ]
    else:
        cmd = [*POLYZERO, "train", "--resume", str(run), "--no-progress"]
    return taskset(core) + cmd + list(launch_args)


def _run_until(cmd: list[str], log_path: Path, seconds: float, env: dict) -> int:
    """`cmd` for `seconds` of wall clock, then SIGTERM (polyzero writes a checkpoint)."""
    deadline = time.time() + seconds
    with open(log_path, "a") as log:
        log.write(f"\n# {utcnow()} {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        while proc.poll() is None and time.time() < deadline:
            time.sleep(min(1.0, max(0.01, deadline - time.time())))
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        return proc.wait()


def train_segments(
    work: Path,
    arm: str,
    train_args: list[str],
    budget_s: float,
    mark_s: float,
    core: int | None,
    log_prefix: str | None = None,
    launch_args: list[str] = (),
) -> None:
    """`polyzero train TRAIN_ARGS` in segments of `mark_s` wall clock; SIGTERM at each mark
    writes a checkpoint, the next segment resumes it (both with LAUNCH_ARGS, such as
    `--workers 2`), and the mark's network is kept under WORK/ARM_marks/. The x-axis is
    the cumulative wall clock of the segments (process start to exit: imports and
    checkpoint writing included)."""
    run = work / arm
    seg_file = work / f"{arm}_segments.jsonl"
    env = {**os.environ, **ONE_THREAD}
    prefix = log_prefix or arm
    while True:
        segs = read_jsonl(seg_file)
        wall = segs[-1]["wall_s"] if segs else 0.0
        ckpt, state = latest_polyzero(run)
        counted = segs[-1]["elapsed"] if segs else 0.0
        if state and state["elapsed"] > counted + 1:  # a segment the driver lost (the first one too)
            wall += state["elapsed"] - counted
        if wall >= budget_s - 1:
            return
        target = min((int(wall // mark_s) + 1) * mark_s, budget_s)
        t_start = time.time()
        returncode = _run_until(
            _segment_command(run, ckpt, train_args, core, launch_args), work / f"{arm}_train.log", target - wall, env
        )
        t_end = time.time()
        ckpt, state = latest_polyzero(run)
        if state is None:
            raise SystemExit(f"polyzero train wrote no checkpoint (see {work / f'{arm}_train.log'})")
        mark_dir = work / f"{arm}_marks" / f"wc{int(round(target)):06d}"
        keep_mark(ckpt, mark_dir)
        rec = {
            "mark_s": target,
            "wall_s": wall + (t_end - t_start),
            "checkpoint": str(mark_dir.relative_to(work)),
            "source": ckpt.name,
            "elapsed": state["elapsed"],
            "train_time": state["train_time"],
            "learning_step": state["step"],
            "games": (state.get("actor") or {}).get("stats", {}).get("games"),
            "utc": utcnow(),
            "returncode": returncode,
        }
        with open(seg_file, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(f"[{prefix}] {rec['wall_s'] / 60:.1f} min: step {rec['learning_step']} -> {ckpt.name}", flush=True)


# ----------------------------------------------------------------------------- timing
def _probe_work(n=50_000):
    s = 0
    for i in range(n):
        s += i * i
    return s


def probe_ms():
    """The anchor harness's speedprobe: a fixed pure-Python loop (~2.7 ms quiet)."""
    t0 = time.perf_counter()
    _probe_work()
    return (time.perf_counter() - t0) * 1e3


def probe_median_ms(k=5) -> float:
    """The median of `k` speed probes."""
    return statistics.median(probe_ms() for _ in range(k))


def record_probe(work: Path, label: str) -> dict:
    """A speed probe and the load average, appended to WORK/probes.jsonl."""
    rec = {"label": label, "utc": utcnow(), "probe_ms": round(probe_median_ms(), 3), "loadavg": os.getloadavg()}
    with open(work / "probes.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    return rec


def time_interleaved(
    jobs, min_calls, min_total_s, max_rounds, block_s=0.03, block_min_calls=2, clock=time.perf_counter
):
    """Blocked round-robin (as the anchor's mctx_search.time_interleaved): each round
    runs, for each job, a block of back-to-back calls (>= block_min_calls and
    block_s seconds), each timed on its own, the first of every block dropped;
    a speedprobe sample ends each round. jobs: [(name, fn, args_list)], fn must
    block until its result is ready. `clock` times the calls (time.process_time: the
    CPU time the process spent, not the time other processes held its core)."""
    times = {name: [] for name, _, _ in jobs}
    probe = []
    t_start = time.perf_counter()
    r = 0
    while (
        min(len(v) for v in times.values()) < min_calls or time.perf_counter() - t_start < min_total_s
    ) and r < max_rounds:
        for name, fn, args_list in jobs:
            t_block, k = time.perf_counter(), 0
            while k < block_min_calls or time.perf_counter() - t_block < block_s:
                args = args_list[(r + k) % len(args_list)]
                t0 = clock()
                fn(*args)
                dt_call = clock() - t0
                if k > 0:
                    times[name].append(dt_call)
                k += 1
        probe.append(probe_ms())
        r += 1
    return times, probe


def summarize(ts):
    """Order statistics of a list of timings (seconds)."""
    ts = sorted(ts)

    def q(f):
        return ts[min(len(ts) - 1, int(f * (len(ts) - 1) + 0.5))]

    return {
        "n": len(ts),
        "median_s": statistics.median(ts),
        "min_s": ts[0],
        "p25_s": q(0.25),
        "p75_s": q(0.75),
        "max_s": ts[-1],
    }


# ----------------------------------------------------------------------------- the machine
def _lscpu(fields: tuple[str, ...]) -> dict:
    info = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return info
    for line in out.splitlines():
        k, _, v = line.partition(":")
        if k.strip() in fields:
            info[k.strip()] = v.strip()
    return info


def command_line(argv=None) -> str:
    """The benchmark's command as a user types it (`python benchmarks/X.py ARGS`), for its
    results file; `argv` as main() got it (None: the process's own)."""
    return " ".join(["python", os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:]))


def timing_meta(argv=None, **settings) -> dict:
    """The head of a timing benchmark's results file: its command line, the machine,
    torch's version and the load average at the start (the caller adds `loadavg_end`),
    then the benchmark's own `settings`."""
    import torch  # here: the training benchmarks that import this module need no torch

    return {
        "command": command_line(argv),
        "machine": machine_info(),
        "torch": torch.__version__,
        "loadavg_start": os.getloadavg(),
        **settings,
    }


def machine_info() -> dict:
    """Python, the CPU count and lscpu's model and topology (the timing benchmarks)."""
    return {
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        **_lscpu(("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket")),
    }


def machine() -> dict:
    """The platform, lscpu's model, topology and cache, and the memory (the training benchmarks)."""
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        **_lscpu(("Model name", "CPU(s)", "Core(s) per socket", "Thread(s) per core", "Hypervisor vendor", "L3 cache")),
    }
    try:
        with open("/proc/meminfo") as f:
            info["mem_total"] = next(x for x in f if x.startswith("MemTotal")).split(":")[1].strip()
    except (OSError, StopIteration):
        pass
    return info


def machine_line() -> str:
    """The host, its processor and CPU count in one line (the Student of Games benchmarks)."""
    return f"{platform.node()} ({platform.processor() or platform.machine()}), {os.cpu_count()} CPUs"


def shared_machine_header(meta: dict) -> list[str]:
    """A results page's machine and command lines, for runs on a machine other jobs shared
    (the interleaved CPU-time benchmarks: `net_path_ab`, `net_path_layers`)."""
    m = meta["machine"]
    return [
        f"- machine: {m.get('Model name', '?')}, {m.get('CPU(s)')} CPUs, **shared**: other sessions' "
        "jobs ran on its cores during the run (load averages below); one thread for every library",
        f"- command: `{meta['command']}`",
    ]


def git_commit(tree: Path = ROOT) -> str:
    """The commit the benchmark ran (HEAD of this repository, or of another checkout `tree`)."""
    return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=tree).stdout.strip()


def versions() -> dict:
    """The versions of polyzero, its anchors' libraries and the git commit."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("polyzero", "open_spiel", "torch", "numpy", "jax", "jaxlib", "flax", "optax", "orbax-checkpoint"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    try:
        out["polyzero_git"] = git_commit()
    except OSError:
        pass
    return out
