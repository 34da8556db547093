"""Fault-injection soak (issue 54; not in CI): real `polyzero train` runs, killed and
resumed again and again, must finish exactly where uninterrupted runs finish.

Scenarios: AlphaZero, MuZero, Gumbel AlphaZero and Go-Exploit (GESC) on tic-tac-toe,
NDMZ on Nannon, Student of Games on Kuhn poker, in-process; AlphaZero under Ray
(`--workers 2`). Each scenario gets a share of the faults, one per launch of the CLI
(`--resume` after the first), then a last launch runs to the end; the runs are long
enough for their faults (`run_steps`: 8 learning steps a fault, 30 at least):

* `kill`: SIGKILL at a random moment of training;
* `ckpt`: SIGKILL inside a checkpoint write, at a random stage of it (the write's
  test hook, POLYZERO_CHECKPOINT_FAULT=STAGE:kill:N, kills the process itself there:
  `polyzero.train.checkpoint._fault_hook`);
* `pair`: SIGTERM, then SIGKILL 0-0.4 s later (racing the interrupt checkpoint);
* under Ray, each launch also loses a self-play worker and then the learner actor
  (SIGKILL to the `ray::SelfPlayWorker` / `ray::LearnerActor` process under this
  run's supervisor) before the fault above hits the supervisor.

A resume works when the next launch trains (or finishes) without a traceback or an
error. A finished in-process run is compared with an uninterrupted one of the same
config: final weights bit for bit, and every learning step's deterministic metrics
(losses, replay size, game, position and solve counts; not timings), one record per
step. Ray runs are not deterministic (workers draw fresh seeds), so they are checked
for completeness: every step logged exactly once, the last checkpoint at the last step.

  python benchmarks/fault_injection.py --kills 12 --pairs 4      # the short run (minutes)
  python benchmarks/fault_injection.py --kills 105 --pairs 30    # the soak (issue 54's target)

Results: benchmarks/results/fault_injection.{json,md}; the JSON is written after each
scenario, and a rerun with the same settings skips the scenarios it holds (--fresh:
start over).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from polyzero.train.checkpoint import FAULT_ENV, latest_checkpoint, read_learner  # noqa: E402
from polyzero.train.metrics import read_metrics  # noqa: E402

SMALL = [
    "train.steps=30",
    "train.checkpoint_every=4",
    "train.keep_checkpoints=2",
    "train.positions_per_step=24",
    "train.minibatches_per_step=2",
    "train.batch_size=16",
    "train.replay_size=512",
    "search.num_simulations=4",
    "selfplay.concurrent_games=4",
    "net.kind=mlp",
    "net.width=16",
    "net.layers=1",
    "net.value_hidden=8",
    "eval.every=0",
    "eval.final_games=0",
    "threads=1",
    "seed=11",
]
SOG = [
    "train.steps=30",
    "train.checkpoint_every=4",
    "train.keep_checkpoints=2",
    "train.batch_size=16",
    "train.minibatches_per_step=2",
    "train.replay_size=512",
    "eval.every=0",
    "eval.final_games=0",
    "net.width=16",
    "net.layers=1",
    "sog.simulations=4",
    "sog.solve_simulations=4",
    "sog.episodes_per_step=1",
    "sog.solves_per_step=2",
    "threads=1",
    "seed=11",
]
SCENARIOS = {  # name: (game, algo, overrides, workers)
    "alphazero": ("tic_tac_toe", "alphazero", SMALL, 0),
    "muzero": ("tic_tac_toe", "muzero", SMALL + ["muzero.hidden_size=16"], 0),
    "gumbel": ("tic_tac_toe", "alphazero", SMALL + ["search.kind=gumbel"], 0),
    "go-exploit": (
        "tic_tac_toe",
        "alphazero",
        SMALL + ["start.archive=search", "start.initial_probability=0.2", "start.archive_size=500"],
        0,
    ),
    "ndmz": ("nannon", "ndmz", SMALL + ["ndmz.hidden_size=16"], 0),
    "sog": ("kuhn_poker", "sog", SOG, 0),
    "alphazero-ray": ("tic_tac_toe", "alphazero", SMALL + ["train.steps=40", "ray.worker_cpus=0.5"], 2),
}
STAGES = ("file", "written", "renamed", "pointer_written", "switched", "pruned")  # reached by every write
METRIC_KEYS = (
    "replay/size",
    "selfplay/games",
    "selfplay/positions",
    "sog/solves",
    "sog/td_targets",
    "sog/query_buffer",
    "archive/size",
    "archive/seen",
)
LAUNCH_TIMEOUT = 900
# A launch trains ~4 learning steps before its fault lands (a kill 0.2-2.5 s in, a write
# fault at one of the first 3 checkpoints): a run of 8 steps per fault outlasts its faults.
STEPS_PER_FAULT = 8


def run_steps(name: str, faults: int) -> int:
    """The learning steps of a scenario's runs: its config's, or more when many faults
    are planned (a run that finishes first leaves the rest of its faults undelivered)."""
    base = int(next(o for o in SCENARIOS[name][2][::-1] if o.startswith("train.steps=")).split("=")[1])
    return max(base, STEPS_PER_FAULT * (faults + 1))


def train_command(name: str, run: Path, fresh: bool, steps: int) -> list[str]:
    game, algo, overrides, workers = SCENARIOS[name]
    cmd = [sys.executable, "-m", "polyzero", "train", "--no-progress"]
    overrides = overrides + [f"train.steps={steps}"]
    cmd += (
        [game, "--algo", algo, "--run-dir", str(run)] + sum((["--set", o] for o in overrides), [])
        if fresh
        else ["--resume", str(run)]
    )
    return cmd + (["--workers", str(workers)] if workers else [])


class Launch:
    """One CLI process, its stderr gathered by a thread."""

    def __init__(self, cmd: list[str], env: dict | None = None):
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
            cwd=ROOT,
        )
        self.lines: list[str] = []
        self.training = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip())
            if line.startswith("training "):
                self.training.set()
        self.training.set()  # ended: nobody waits longer

    def wait_training(self) -> bool:
        self.training.wait(LAUNCH_TIMEOUT)
        return self.proc.poll() is None

    def wait(self) -> int:
        try:
            return self.proc.wait(LAUNCH_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def failed(self, rc: int) -> str | None:
        """Why this launch counts as a failed resume (None: it did not fail)."""
        text = "\n".join(self.lines)
        if "Traceback" in text or rc == 2 or (rc == 1 and "learner died" not in text):
            return f"rc {rc}: " + " | ".join(self.lines[-4:])
        return None


def descendants(pid: int) -> dict[int, str]:
    """Processes under `pid` (children of children...), with their command lines."""
    parent, cmdline = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            cmdline[int(entry)] = (
                Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
        except (OSError, IndexError, ValueError):
            continue
    out, frontier = {}, [pid]
    while frontier:
        p = frontier.pop()
        for child, par in parent.items():
            if par == p and child not in out:
                out[child] = cmdline.get(child, "")
                frontier.append(child)
    return out


def kill_actor(launch: Launch, title: str, patience: float = 90.0) -> bool:
    """SIGKILL one Ray actor process of this run whose title starts with `title`, once
    there is one (an actor's process takes that title when it has been created)."""
    deadline = time.time() + patience
    while time.time() < deadline and launch.proc.poll() is None:
        for pid, cmd in descendants(launch.proc.pid).items():
            if cmd.startswith(title):
                os.kill(pid, signal.SIGKILL)
                return True
        time.sleep(0.5)
    return False


def ray_losses(launch: Launch, rng: random.Random) -> dict:
    """Under Ray: a self-play worker killed, then the learner actor."""
    out = {"worker_kills": 0, "learner_kills": 0}
    if kill_actor(launch, "ray::SelfPlayWorker"):
        out["worker_kills"] += 1
    time.sleep(rng.uniform(1, 3))
    if kill_actor(launch, "ray::LearnerActor"):
        out["learner_kills"] += 1
        time.sleep(rng.uniform(1, 3))
    return out


def apply_fault(kind: str, launch: Launch, rng: random.Random) -> bool:
    """The fault of one launch; True when it hit a running process."""
    if kind == "ckpt":  # the process kills itself inside a write (the step-0 one included); under
        # Ray the learner actor writes the checkpoints: it is the one that dies
        rc = launch.wait()
        return rc == -signal.SIGKILL or any("learner's process died" in line for line in launch.lines)
    if not launch.wait_training():
        return False
    if kind == "kill":
        time.sleep(rng.uniform(0.2, 2.5))
        if launch.proc.poll() is None:
            launch.proc.send_signal(signal.SIGKILL)
            return launch.wait() == -signal.SIGKILL
        return False
    if kind == "pair":
        time.sleep(rng.uniform(0.2, 2.0))
        if launch.proc.poll() is not None:
            return False
        launch.proc.send_signal(signal.SIGTERM)
        time.sleep(rng.uniform(0.0, 0.4))
        if launch.proc.poll() is None:
            launch.proc.send_signal(signal.SIGKILL)
        return launch.wait() in (130, -signal.SIGKILL)
    raise ValueError(kind)


def clean_up_after(before: dict[int, str]) -> list[str]:
    """Ray processes a SIGKILLed supervisor left behind, 3 s on: SIGKILLed, and named."""
    time.sleep(3)
    left = []
    for pid, cmd in before.items():
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace") != cmd:
                continue
            os.kill(pid, signal.SIGKILL)
            left.append(cmd.split()[0].rsplit("/", 1)[-1])
        except (OSError, ProcessLookupError):
            continue
    return left


def torture(name: str, plan: list[str], work: Path, rng: random.Random, steps: int) -> dict:
    """Launch, fault, resume until `plan` is spent; then run to the end."""
    run = work / name
    shutil.rmtree(run, ignore_errors=True)
    workers = SCENARIOS[name][3]
    kinds = ("kill", "ckpt", "pair")
    res = {
        "planned": dict.fromkeys(kinds, 0),
        "delivered": dict.fromkeys(kinds, 0),
        "pair_outcomes": {"checkpointed": 0, "killed": 0},
        "worker_kills": 0,
        "learner_kills": 0,
        "steps": steps,
        "launches": 0,
        "resumes": 0,
        "resumes_ok": 0,
        "ray_processes_left": [],
        "failures": [],
    }
    for kind in plan:
        res["planned"][kind] += 1
    queue = list(plan)
    for _ in range(3 * len(plan) + 5):
        kind = queue.pop(0) if queue else None
        env = {}
        if kind == "ckpt":
            env[FAULT_ENV] = f"{rng.choice(STAGES)}:kill:{rng.randint(1, 3)}"
        fresh = latest_checkpoint(run) is None
        launch = Launch(train_command(name, run, fresh, steps), env)
        res["launches"] += 1
        if not fresh:
            res["resumes"] += 1
        if workers and kind is not None and launch.wait_training():
            for k, v in ray_losses(launch, rng).items():
                res[k] += v
        family = descendants(launch.proc.pid) if workers else {}
        hit = apply_fault(kind, launch, rng) if kind else False
        rc = launch.wait()
        if workers and rc == -signal.SIGKILL:
            res["ray_processes_left"] += clean_up_after(family)
        why = launch.failed(rc)
        if why:
            res["failures"].append(f"launch {res['launches']} ({kind or 'final'}): {why}")
        elif not fresh:
            res["resumes_ok"] += 1
        if hit:
            res["delivered"][kind] += 1
            if kind == "pair":
                res["pair_outcomes"]["checkpointed" if rc == 130 else "killed"] += 1
        elif kind:
            queue.insert(0, kind)  # it missed (the run was done, or not yet training): again
            if rc == 0:
                break  # finished before its faults were spent: what was delivered stands
        if kind is None and rc == 0:
            break
        if len(res["failures"]) >= 3:
            break  # something is broken: the results say what
    return res


def reference(name: str, work: Path, steps: int) -> Path:
    run = work / f"{name}-reference"
    shutil.rmtree(run, ignore_errors=True)
    launch = Launch(train_command(name, run, True, steps))
    rc = launch.wait()
    if rc != 0:
        raise SystemExit(f"the uninterrupted {name} run failed: " + " | ".join(launch.lines[-5:]))
    return run


def train_records(run: Path) -> list[dict]:
    return [r for r in read_metrics(run) if r["kind"] == "train"]


def compare(run: Path, ref: Path | None, steps: int) -> dict:
    """Finished? one record per step? and against the uninterrupted run: weights, metrics."""
    latest = latest_checkpoint(run)
    recs = train_records(run)
    out = {
        "finished": latest is not None and latest.name == f"step_{steps:06d}",
        "one_record_per_step": [r["step"] for r in recs] == list(range(1, steps + 1)),
    }
    if ref is None:
        return out
    a, b = read_learner(latest)["net"], read_learner(latest_checkpoint(ref))["net"]
    out["weights_identical"] = a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)

    def deterministic(r):
        return {k: v for k, v in r.items() if k.startswith("loss/") or k in METRIC_KEYS}

    out["metrics_identical"] = [deterministic(r) for r in recs] == [deterministic(r) for r in train_records(ref)]
    return out


def share(total: int, names: list[str], index: int) -> int:
    return total // len(names) + (index < total % len(names))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=105, help="SIGKILLs in all, a third inside checkpoint writes")
    ap.add_argument("--pairs", type=int, default=30, help="SIGTERM-then-SIGKILL pairs in all")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated, from: " + ", ".join(SCENARIOS))
    ap.add_argument("--work", type=Path, default=Path("/tmp/polyzero-fault-injection"), help="where runs go")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/fault_injection")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fresh", action="store_true", help="discard the results of an earlier, unfinished soak")
    args = ap.parse_args()
    names = args.scenarios.split(",")
    settings = {"kills": args.kills, "pairs": args.pairs, "scenarios": names, "seed": args.seed}
    path = args.out.with_suffix(".json")
    results = json.loads(path.read_text()) if path.exists() and not args.fresh else {}
    if results.get("settings") != settings:
        results = {"settings": settings, "scenarios": {}}
    args.work.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(names):
        if name in results["scenarios"]:
            print(f"{name}: done earlier", flush=True)
            continue
        rng = random.Random(f"{args.seed}-{name}")
        # Each kind dealt round-robin from its own first scenario, so a short run spreads them.
        kills = share(args.kills, names, i)
        in_ckpt = min(kills, share(-(-args.kills // 3), names, (i + 2) % len(names)))  # a third in writes
        plan = (
            ["ckpt"] * in_ckpt
            + ["kill"] * (kills - in_ckpt)
            + ["pair"] * share(args.pairs, names, (i + 4) % len(names))
        )
        rng.shuffle(plan)
        t0 = time.time()
        steps = run_steps(name, len(plan))
        ref = None if SCENARIOS[name][3] else reference(name, args.work, steps)
        res = torture(name, plan, args.work, rng, steps)
        res.update(compare(args.work / name, ref, steps))
        res["seconds"] = round(time.time() - t0, 1)
        results["scenarios"][name] = res
        print(f"{name}: {json.dumps(res)}", flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(results, indent=1) + "\n")
    results["totals"] = totals(results["scenarios"])
    path.write_text(json.dumps(results, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(results, " ".join(sys.argv[1:])))
    print(json.dumps(results["totals"]))


def totals(scenarios: dict) -> dict:
    t = {
        "sigkills_random": 0,
        "sigkills_in_checkpoint_writes": 0,
        "pairs": 0,
        "worker_kills": 0,
        "learner_kills": 0,
        "resumes": 0,
        "resumes_ok": 0,
        "failures": 0,
        "ray_processes_left": 0,
    }
    for r in scenarios.values():
        t["sigkills_random"] += r["delivered"]["kill"]
        t["sigkills_in_checkpoint_writes"] += r["delivered"]["ckpt"]
        t["pairs"] += r["delivered"]["pair"]
        for k in ("worker_kills", "learner_kills", "resumes", "resumes_ok"):
            t[k] += r[k]
        t["failures"] += len(r["failures"])
        t["ray_processes_left"] += len(r["ray_processes_left"])
    t["sigkills"] = t["sigkills_random"] + t["sigkills_in_checkpoint_writes"]
    t["all_finished"] = all(r["finished"] and r["one_record_per_step"] for r in scenarios.values())
    t["all_identical"] = all(
        r.get("weights_identical", True) and r.get("metrics_identical", True) for r in scenarios.values()
    )
    return t


def markdown(results: dict, argv: str) -> str:
    def mark(v):
        return "n/a" if v is None else ("yes" if v else "**no**")

    lines = [
        f"# Fault injection (`python benchmarks/fault_injection.py {argv}`)",
        "",
        "| scenario | steps | SIGKILL random | SIGKILL in checkpoint write "
        "| TERM→KILL pairs (checkpointed / killed) | Ray worker / learner kills | resumes ok "
        "| finished, one record per step | weights identical "
        "| metrics identical | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results["scenarios"].items():
        p = r["pair_outcomes"]
        lines.append(
            f"| {name} | {r.get('steps', '')} | {r['delivered']['kill']} | {r['delivered']['ckpt']} "
            f"| {r['delivered']['pair']} "
            f"({p['checkpointed']} / {p['killed']}) | {r['worker_kills']} / {r['learner_kills']} "
            f"| {r['resumes_ok']}/{r['resumes']} | {mark(r['finished'] and r['one_record_per_step'])} "
            f"| {mark(r.get('weights_identical'))} | {mark(r.get('metrics_identical'))} | {r['seconds']} |"
        )
    t = results["totals"]
    lines += [
        "",
        f"Totals: {t['sigkills']} SIGKILLs ({t['sigkills_in_checkpoint_writes']} inside checkpoint "
        f"writes), {t['pairs']} SIGTERM-then-SIGKILL pairs, {t['worker_kills']} Ray worker and "
        f"{t['learner_kills']} learner kills; {t['resumes_ok']}/{t['resumes']} resumes worked; "
        f"failures {t['failures']}; every run finished: {mark(t['all_finished'])}; every deterministic "
        f"run identical to its uninterrupted twin: {mark(t['all_identical'])}.",
        "",
    ]
    for name, r in results["scenarios"].items():
        lines += [f"- {name}: {f}" for f in r["failures"]]
        if r["ray_processes_left"]:
            lines.append(
                f"- {name}: Ray processes still alive 3 s after the supervisor's SIGKILL (then "
                f"killed by the soak): {', '.join(r['ray_processes_left'])}"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
