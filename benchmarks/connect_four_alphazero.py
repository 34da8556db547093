"""Benchmark `connect_four_alphazero`: polyzero's AlphaZero on Connect Four against
MCTS-Solver 1x / 10x over wall-clock training time, with OpenSpiel's own AlphaZero
(same game, same network size, same wall clock, same machine conditions) as the
peer anchor.

  python benchmarks/connect_four_alphazero.py all --budget-min 60 --games 200
  python benchmarks/connect_four_alphazero.py all --cores-per-arm 2 --tag 2cores  # the issue's 2 cores per arm

Phases (each resumable: re-running continues where it stopped):
  train   both arms at the same time, each pinned to one core (taskset), one
          thread each: polyzero (`polyzero train connect_four`, shipped preset,
          stopped by SIGTERM at every --mark-min of wall clock and resumed with
          `polyzero train --resume`, so each mark leaves a checkpoint) and
          OpenSpiel's AlphaZero (benchmarks/openspiel_az.py, which copies the
          learner's weights at every mark). With --cores-per-arm 2, one arm
          after the other on both cores: polyzero with `--workers 2`, OpenSpiel
          with 2 actors.
  eval    every checkpoint at every mark, the agent at 100 simulations (no noise,
          most-visited move) against MCTS-Solver 1x (100 simulations) and 10x
          (1000), seats alternated; games are played in chunks by one worker per
          core and cached under WORK/eval/, so an interrupted eval loses at most
          a chunk. Evaluation time is not training time.
  report  benchmarks/results/connect_four_alphazero.{json,md,png}.

A run longer than a working session (the issue's curves to 3 hours) keeps its work
directory in the repository with --keep-state: it lives in benchmarks/results/NAME/
and, after training, is pruned to what a later session needs to go on: the latest
checkpoint of each arm (polyzero's exact resume state; OpenSpiel's last mark), every
mark's network (weights only) and the evaluation cache. Each session trains to the
--budget-min it can afford and commits the directory; the next one raises the budget:

  python benchmarks/connect_four_alphazero.py train --tag 3h --keep-state --budget-min 80
  python benchmarks/connect_four_alphazero.py all --tag 3h --keep-state --budget-min 180

The polyzero arm can run another search or settings of the same AlphaZero
trainer; --tag names the run so its work directory and report stand apart:

  python benchmarks/connect_four_alphazero.py all --search gumbel --polyzero-set \
      search.num_simulations=16 --tag gumbel16   # -> connect_four_alphazero_gumbel16.*

Targets (the issue): >= 90% vs MCTS-Solver 1x and >= 60% vs 10x within 60 minutes
of training, ahead of OpenSpiel's AlphaZero at every equal wall-clock point.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    ONE_THREAD,
    PY,
    RESULTS,
    ROOT,
    probe_median_ms,
    record_probe,
    run_phases,
    taskset,
    train_segments,
    utcnow,
    write_json_atomic,
)
from connect_four_results import AGENT_SIMS, LEVELS, baseline_alphazero, checkpoints, phase_report  # noqa: E402

NAME = "connect_four_alphazero"


# ----------------------------------------------------------------------------- train
def train_polyzero(args, work: Path, arm: str = "polyzero") -> None:
    """polyzero's AlphaZero (arm `polyzero`) or MuZero (arm `muzero`, the
    `connect_four_muzero` benchmark) with its shipped Connect Four preset."""
    train = ["connect_four", "--algo", "alphazero" if arm == "polyzero" else "muzero", "--seed", str(args.seed)]
    if arm == "polyzero":
        train += ["--search", args.search]
    train += [x for s in (args.polyzero_set if arm == "polyzero" else args.muzero_set) for x in ("--set", s)]
    core = args.core_polyzero if arm == "polyzero" else args.core_muzero
    if args.cores_per_arm > 1:  # the whole machine: self-play on Ray workers, the learner beside them
        core, launch = None, ["--workers", str(args.cores_per_arm)]
    else:
        launch = []
    train_segments(work, arm, train, args.budget_min * 60, args.mark_min * 60, core, launch_args=launch)


def train_openspiel(args, work: Path) -> None:
    core = args.core_openspiel if args.cores_per_arm == 1 else None
    cmd = taskset(core) + [
        PY,
        str(ROOT / "benchmarks" / "openspiel_az.py"),
        "train",
        "--dir",
        str(work / "openspiel"),
        "--budget-min",
        str(args.budget_min),
        "--mark-min",
        str(args.mark_min),
        "--actors",
        str(args.cores_per_arm),
    ]
    with open(work / "openspiel_train.log", "a") as log:
        log.write(f"\n# {utcnow()} {' '.join(cmd)}\n")
        log.flush()
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **ONE_THREAD}, cwd=ROOT)


def prune_state(work: Path) -> None:
    """Leave in WORK only what a later session needs to go on (--keep-state): the
    latest polyzero checkpoint (the exact resume state) and OpenSpiel's marks (its
    resume point is the last one), every mark's network without the optimiser, the
    segment, evaluation and probe records; no TensorBoard logs, older checkpoints,
    OpenSpiel's rolling checkpoints or stale evaluation claims."""
    import shutil

    import torch

    from polyzero.train.checkpoint import _prune

    for arm in ("polyzero", "muzero"):
        run = work / arm
        if (run / "checkpoints").is_dir():
            _prune(run / "checkpoints", keep=1)  # the newest step is the one `latest` names
        shutil.rmtree(run / "tensorboard", ignore_errors=True)
        for learner in (work / f"{arm}_marks").glob("*/learner.pt"):
            state = torch.load(learner, weights_only=True, map_location="cpu")
            if set(state) != {"net"}:  # players read the network alone
                tmp = learner.with_suffix(".tmp")
                torch.save({"net": state["net"]}, tmp)
                os.replace(tmp, learner)
    for rolling in ("checkpoint--1", "checkpoint-0"):
        shutil.rmtree(work / "openspiel" / rolling, ignore_errors=True)
    for claim in (work / "eval").glob("*.claim"):  # no folder: nothing
        claim.unlink()


def phase_train(args, work: Path) -> None:
    import threading

    record_probe(work, "train-start")
    stop = threading.Event()

    def prober():
        while not stop.wait(120):
            record_probe(work, "during-train")

    threading.Thread(target=prober, daemon=True).start()
    threads = []
    for arm in ("polyzero", "muzero"):
        if arm in args.arms:
            threads.append(threading.Thread(target=train_polyzero, args=(args, work, arm)))
    if "openspiel" in args.arms:
        threads.append(threading.Thread(target=train_openspiel, args=(args, work)))
    side_by_side = args.cores_per_arm == 1  # otherwise one arm after the other, each on every core
    for t in threads:
        t.start()
        if not side_by_side:
            t.join()
    for t in threads:
        t.join()
    stop.set()
    record_probe(work, "train-end")
    if args.keep_state:
        prune_state(work)


# ----------------------------------------------------------------------------- agents
def make_agent(arm: str, ck: dict, game):
    if arm != "openspiel":
        from polyzero.train.agents import load_search_player

        p = load_search_player(f"{ck['path']}@{AGENT_SIMS}", game)
        p.sample_moves = 0  # most-visited move from the first move on
        return p
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from openspiel_az import OpenSpielAZPlayer

    return OpenSpielAZPlayer(ck["dir"], ck["name"], game, AGENT_SIMS, jit=True)


# ----------------------------------------------------------------------------- eval
def eval_tasks(args, work: Path) -> list[tuple]:
    """(chunk, level, arm, mark) in the order games are spread: every point gets its
    first chunk before any point gets its second; 1x before 10x in each round."""
    games = {"1x": args.games, "10x": args.games_10x if args.games_10x is not None else args.games}
    chunks = {lv: (g + args.chunk - 1) // args.chunk for lv, g in games.items()}
    tasks = []
    for c in range(max(chunks.values())):
        for lv in LEVELS:
            if c >= chunks[lv]:
                continue
            for arm in args.arms:
                for ck in checkpoints(work, arm, args.budget_min * 60):
                    if lv == "10x" and args.marks_10x and round(ck["mark_s"] / 60) not in args.marks_10x:
                        continue
                    tasks.append((c, lv, arm, ck["mark_s"]))
    return tasks


def _task_file(work: Path, task) -> Path:
    c, lv, arm, mark = task
    return work / "eval" / f"{arm}-{int(mark):06d}-{lv}-{c:03d}.json"


def eval_worker(args, work: Path) -> None:
    """Claims chunks (an O_EXCL claim file) and plays them; stops at --deadline."""
    import pyspiel

    from polyzero.eval import make_player, play_match

    game = pyspiel.load_game("connect_four")
    agents, solvers = {}, {}
    (work / "eval").mkdir(exist_ok=True)
    deadline = parse_deadline(args.deadline)
    for task in eval_tasks(args, work):
        if deadline and time.time() > deadline:
            break
        out = _task_file(work, task)
        claim = out.with_suffix(".claim")
        if out.exists():
            continue
        try:
            os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        c, lv, arm, mark = task
        ck = next(k for k in checkpoints(work, arm, args.budget_min * 60) if k["mark_s"] == mark)
        key = (arm, mark)
        if key not in agents:  # small networks: all of them stay loaded
            agents[key] = make_agent(arm, ck, game)
        if lv not in solvers:
            solvers[lv] = make_player(f"mcts-solver:{LEVELS[lv]}", game)
        seed = args.seed * 1_000_003 + 7919 * c + (0 if lv == "1x" else 104729)
        t0 = time.time()
        res = play_match(game, agents[key], solvers[lv], args.chunk, seed=seed)
        rec = {
            "arm": arm,
            "mark_s": mark,
            "level": lv,
            "chunk": c,
            "seed": seed,
            "wins": res.wins,
            "draws": res.draws,
            "losses": res.losses,
            "seconds": time.time() - t0,
            "probe_ms": round(probe_median_ms(3), 3),
            "utc": utcnow(),
        }
        write_json_atomic(out, rec)
        claim.unlink(missing_ok=True)
        print(
            f"[eval {arm} {mark / 60:.0f}min {lv} chunk {c}] W{res.wins} D{res.draws} L{res.losses} "
            f"({rec['seconds']:.0f}s)",
            flush=True,
        )


def parse_deadline(s: str | None) -> float | None:
    """'HH:MM' UTC, the next such time (past midnight when it is earlier than now), or None."""
    if not s:
        return None
    now = dt.datetime.now(dt.UTC)
    h, m = map(int, s.split(":"))
    at = now.replace(hour=h, minute=m, second=0, microsecond=0)
    return (at + dt.timedelta(days=1) if at < now else at).timestamp()


def phase_eval(args, work: Path) -> None:
    record_probe(work, "eval-start")
    for stale in (work / "eval").glob("*.claim") if (work / "eval").exists() else []:
        stale.unlink()  # claims left by a killed eval
    cores = [args.core_polyzero, args.core_openspiel][: args.eval_workers]
    cmd = [PY, str(Path(__file__).resolve()), "_eval_worker"] + _passthrough(args)
    procs = []
    for i in range(args.eval_workers):
        core = cores[i] if i < len(cores) else None
        log = open(work / f"eval_worker{i}.log", "a")
        procs.append(
            subprocess.Popen(
                taskset(core) + cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **ONE_THREAD}, cwd=ROOT
            )
        )
    for p in procs:
        p.wait()
    record_probe(work, "eval-end")


def _passthrough(args) -> list[str]:
    out = [
        "--work",
        str(args.work),
        "--budget-min",
        str(args.budget_min),
        "--mark-min",
        str(args.mark_min),
        "--games",
        str(args.games),
        "--chunk",
        str(args.chunk),
        "--seed",
        str(args.seed),
        "--arms",
        ",".join(args.arms),
        "--search",
        args.search,
        "--tag",
        args.tag,
    ]
    if args.games_10x is not None:
        out += ["--games-10x", str(args.games_10x)]
    if args.deadline:
        out += ["--deadline", args.deadline]
    if args.marks_10x:
        out += ["--marks-10x", ",".join(map(str, args.marks_10x))]
    return out


# ----------------------------------------------------------------------------- main
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all", "_eval_worker"])
    p.add_argument("--work", default=None, help="run directories and caches (default runs/bench/NAME[_TAG])")
    p.add_argument("--budget-min", type=float, default=60.0, help="training wall clock per arm (minutes)")
    p.add_argument("--mark-min", type=float, default=10.0, help="checkpoint every this many minutes")
    p.add_argument("--games", type=int, default=200, help="games per point vs MCTS-Solver 1x")
    p.add_argument("--games-10x", type=int, default=None, help="games per point vs 10x (default: --games)")
    p.add_argument("--chunk", type=int, default=10, help="games per cached evaluation chunk (even)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--arms", default="polyzero,openspiel")
    p.add_argument("--core-polyzero", type=int, default=0)
    p.add_argument("--core-openspiel", type=int, default=1)
    p.add_argument("--core-muzero", type=int, default=1, help="the muzero arm (connect_four_muzero)")
    p.add_argument(
        "--cores-per-arm",
        type=int,
        choices=[1, 2],
        default=1,
        help="1: the arms train at the same time, one pinned core each; 2: one after the "
        "other on both cores (polyzero --workers 2, OpenSpiel 2 actors), the issue's protocol",
    )
    p.add_argument("--eval-workers", type=int, default=2)
    p.add_argument("--deadline", default=None, help="eval: take no new chunk after HH:MM UTC")
    p.add_argument(
        "--marks-10x",
        default="",
        metavar="MIN,MIN",
        help="eval: play the 10x games only at these marks (minutes; default every mark), "
        "since 10x is the slower level",
    )
    p.add_argument("--shared-note", default="The machine was shared with other jobs (see the speed probe).")
    p.add_argument("--note", action="append", help="a line for the report's notes (repeatable)")
    p.add_argument("--search", choices=["puct", "gumbel"], default="puct", help="the polyzero arm's search")
    p.add_argument(
        "--polyzero-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a `polyzero train --set` for the polyzero arm (repeatable)",
    )
    p.add_argument(
        "--muzero-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a `polyzero train --set` for the muzero arm (repeatable)",
    )
    p.add_argument(
        "--baseline",
        default=None,
        metavar="NAME",
        help="report: compare the muzero arm with the AlphaZero (polyzero) arm of "
        "benchmarks/results/NAME.json when this run trained none (equal wall clock: the same "
        "mark; equal learning steps: AlphaZero's mark nearest in steps)",
    )
    p.add_argument("--tag", default="", help="suffix of the run's name: work dir and results NAME_TAG.*")
    p.add_argument(
        "--keep-state",
        action="store_true",
        help="work dir benchmarks/results/NAME/, pruned after training to what a later session "
        "needs to go on (commit it): for runs longer than a session",
    )
    return p


def main(argv=None) -> None:
    p = _parser()
    args = p.parse_args(argv)
    args.name = f"{NAME}_{args.tag}" if args.tag else NAME
    default_work = RESULTS / args.name if args.keep_state else ROOT / "runs" / "bench" / args.name
    args.work = args.work or str(default_work)
    args.arms = [a for a in args.arms.split(",") if a]
    try:
        args.marks_10x = [int(m) for m in args.marks_10x.split(",") if m.strip()]
    except ValueError:
        p.error(f"--marks-10x takes whole minutes separated by commas, not {args.marks_10x!r}")
    if args.chunk % 2:
        p.error("--chunk must be even (seats alternate)")
    if args.baseline:
        try:
            baseline_alphazero(args.baseline, args.budget_min)
        except ValueError as exc:
            p.error(str(exc))
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if args.phase == "_eval_worker":
        eval_worker(args, work)
        return
    meta_file = work / "meta.json"
    meta = json.loads(meta_file.read_text()) if meta_file.exists() else {"commands": []}
    meta["commands"].append(f"{utcnow()}: python benchmarks/{NAME}.py " + shlex.join(argv or sys.argv[1:]))
    meta_file.write_text(json.dumps(meta, indent=1))
    run_phases(args, work, phase_train, phase_eval, phase_report)


if __name__ == "__main__":
    main()
