"""Benchmark `go_gnugo` (issue 57): AlphaZero and Go-Exploit GESC trained on 7x7 and 9x9
Go on 2 cores for a stated wall-clock budget, then a ladder against real engines: GNU Go
at levels 1, 5 and 10, Pachi at 100 and 1,000 playouts, and MCTS-Solver at 1x and 10x the
agent's simulations; 200 games per point, seats alternated.

Target (the issue): >= 50% against GNU Go level 1 on 7x7 within 3 hours of 2 cores;
report where 9x9 stands.

The full run (4 arms x 3 seeds x 3 h of both cores, then the ladder; days of machine time):

    python benchmarks/go_gnugo.py all --budget-min 180 --mark-min 60 --seeds 0 1 2

A smoke test of the whole pipeline (minutes):

    python benchmarks/go_gnugo.py all --tag smoke --sizes 7 --budget-min 2 --mark-min 1 --seeds 0 \\
        --games 2 --chunk 2 --eval-sims 8 --opponents gnugo:1 gnugo:10 pachi:100 mcts-solver:1x --cores-per-arm 1

Games: 7x7 with komi 9 (the proven value of 7x7 under area scoring: perfect play draws),
9x9 with komi 7.5; OpenSpiel's Go scores by Tromp-Taylor. Arms: the shipped 9x9 presets
(`goexploit_alphazero_go9.toml`, `goexploit_gesc_go9.toml`: Go-Exploit Table 8's constants
scaled for 2 cores) on either board. With --cores-per-arm 2 (default) each arm trains on
both cores (`--workers 2`), one arm after the other; with 1, two arms at a time, one
pinned core each.

Phases, each resumable (a rerun continues where it stopped):
  train   `polyzero train` in segments of --mark-min, each mark's network kept
          (benchmarks/connect_four_alphazero.train_segments);
  eval    every evaluated mark against every opponent, --chunk games at a time in
          --eval-workers processes, each chunk cached under WORK/eval/; the agent plays
          at its evaluation simulations (no noise, most visited move). An opponent whose
          engine is not installed (Debian has no Pachi Go engine) is reported as missing;
  report  benchmarks/results/go_gnugo[_TAG].{json,md}: per arm and mark the score with its
          Wilson 95% interval, and per algorithm, board and mark the mean over seeds with a
          t 95% interval.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ONE_THREAD, RESULTS, ROOT, machine, read_jsonl, train_segments, wilson  # noqa: E402

sys.path.insert(0, str(ROOT))  # this checkout's polyzero, whatever the venv holds

NAME = "go_gnugo"
GAMES = {7: "go(board_size=7,komi=9)", 9: "go(board_size=9,komi=7.5)"}
PRESETS = {"alphazero": "goexploit_alphazero_go9.toml", "gesc": "goexploit_gesc_go9.toml"}
OPPONENTS = ("gnugo:1", "gnugo:5", "gnugo:10", "pachi:100", "pachi:1000", "mcts-solver:1x", "mcts-solver:10x")
TARGET = {"size": 7, "opponent": "gnugo:1", "score": 0.5, "within_min": 180}


def arms(args) -> list[dict]:
    return [
        {"name": f"{algo}-go{size}-s{seed}", "algo": algo, "size": size, "seed": seed}
        for size in args.sizes
        for algo in args.algos
        for seed in args.seeds
    ]


# ----------------------------------------------------------------------------- train
def train(args, work: Path) -> None:
    def one(arm, core):
        preset = ROOT / "polyzero" / "presets" / PRESETS[arm["algo"]]
        cmd = [GAMES[arm["size"]], "--config", str(preset), "--seed", str(arm["seed"])]
        cmd += [x for s in args.set for x in ("--set", s)]
        launch = ["--workers", "2"] if args.cores_per_arm == 2 else []
        train_segments(work, arm["name"], cmd, args.budget_min * 60, args.mark_min * 60, core, launch_args=launch)

    todo = arms(args)
    if args.cores_per_arm == 2:
        for arm in todo:
            one(arm, None)
        return
    import threading

    for pair in (todo[i : i + 2] for i in range(0, len(todo), 2)):  # two arms at a time, a core each
        threads = [threading.Thread(target=one, args=(arm, core)) for core, arm in enumerate(pair)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


# ----------------------------------------------------------------------------- eval
def marks(work: Path, arm: str, which: str) -> list[dict]:
    segs = read_jsonl(work / f"{arm}_segments.jsonl")
    return segs if which == "all" else segs[-1:]


def opponent_spec(opponent: str, agent_sims: int) -> str:
    kind, _, level = opponent.partition(":")
    return f"{kind}:{int(level[:-1]) * agent_sims}" if level.endswith("x") else opponent


def play_chunk(task: dict) -> dict:
    """One cached chunk of games (runs in a worker process)."""
    sys.path.insert(0, str(ROOT))
    from polyzero.eval import make_player, play_match
    from polyzero.games import load_game
    from polyzero.nets.inference import set_threads
    from polyzero.train.agents import load_search_player

    set_threads(1)  # torch's and numba's (numba's parallel kernels would reset torch's to every core)
    game = load_game(task["game"])
    sims = f"@{task['agent_sims']}" if task["agent_sims"] else ""
    agent = load_search_player(task["checkpoint"] + sims, game, seed=task["seed"])
    spec = opponent_spec(task["opponent"], agent.params.num_simulations)
    opponent = make_player(spec, game, seed=task["seed"] + 1)
    t0 = time.time()
    try:
        res = play_match(game, agent, opponent, task["games"], seed=task["seed"])
    finally:
        if hasattr(opponent, "close"):
            opponent.close()
    out = {
        **task,
        "spec": spec,
        "wins": res.wins,
        "draws": res.draws,
        "losses": res.losses,
        "seconds": time.time() - t0,
    }
    path = Path(task["path"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    tmp.replace(path)
    return out


def missing_opponents(opponents) -> dict:
    from polyzero.engines.players import missing_engine_hint
    from polyzero.engines.process import find_binary

    out = {}
    for opp in opponents:
        binary = opp.partition(":")[0]
        if binary in ("gnugo", "pachi") and find_binary(binary) is None:
            out[opp] = missing_engine_hint(binary)
    return out


def evaluate(args, work: Path) -> None:
    cache = work / "eval"
    cache.mkdir(parents=True, exist_ok=True)
    missing = missing_opponents(args.opponents)
    for opp, why in missing.items():
        print(f"[eval] skipping {opp}: {why}", flush=True)
    tasks = []
    for arm in arms(args):
        for mark in marks(work, arm["name"], args.eval_marks):
            wc = int(round(mark["mark_s"]))
            for opp in (o for o in args.opponents if o not in missing):
                for k in range(args.games // args.chunk):
                    sims = f"__n{args.eval_sims}" if args.eval_sims else ""
                    path = cache / f"{arm['name']}__wc{wc:06d}{sims}__{opp.replace(':', '-')}__c{k:03d}.json"
                    if not path.exists():
                        tasks.append(
                            {
                                "arm": arm["name"],
                                "algo": arm["algo"],
                                "size": arm["size"],
                                "seed": 1000 * k + arm["seed"],
                                "train_seed": arm["seed"],
                                "mark_s": wc,
                                "game": GAMES[arm["size"]],
                                "checkpoint": str(work / mark["checkpoint"]),
                                "opponent": opp,
                                "games": args.chunk,
                                "path": str(path),
                                "agent_sims": args.eval_sims,
                            }
                        )
    print(f"[eval] {len(tasks)} chunks of {args.chunk} games to play", flush=True)
    os.environ.update(ONE_THREAD)
    # Spawned, not forked: a forked worker's first chunk ran 40x slower (821 s against 19 s for
    # the same 2 games on the smoke test), torch's and numba's thread pools being forked state.
    with ProcessPoolExecutor(max_workers=args.eval_workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        for out in pool.map(play_chunk, tasks):
            print(
                f"[eval] {out['arm']} @{out['mark_s'] / 60:.0f} min vs {out['spec']}: "
                f"W {out['wins']} D {out['draws']} L {out['losses']} ({out['seconds']:.0f} s)",
                flush=True,
            )


# ----------------------------------------------------------------------------- report
def _t_interval(values: list[float]) -> tuple[float, float, float]:
    from scipy import stats

    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    half = stats.t.ppf(0.975, len(values) - 1) * sd / math.sqrt(len(values))
    return mean, mean - half, mean + half


def _pooled(rows: list[dict]) -> list[dict]:
    """The per-run scores averaged over seeds, per (algorithm, board, mark, opponent)."""
    pooled = []
    for key in sorted({(r["algo"], r["size"], r["mark_min"], r["opponent"]) for r in rows}):
        scores = [r["score"] for r in rows if (r["algo"], r["size"], r["mark_min"], r["opponent"]) == key]
        mean, lo, hi = _t_interval(scores)
        pooled.append(
            {
                "algo": key[0],
                "size": key[1],
                "mark_min": key[2],
                "opponent": key[3],
                "seeds": len(scores),
                "mean": mean,
                "t95": [lo, hi],
            }
        )
    return pooled


def report(args, work: Path) -> dict:
    points: dict[tuple, dict] = {}
    for path in sorted((work / "eval").glob("*.json")):
        c = json.loads(path.read_text())
        if c["agent_sims"] != args.eval_sims:  # another ladder of the same runs
            continue
        key = (c["algo"], c["size"], c["train_seed"], c["mark_s"], c["opponent"])
        p = points.setdefault(key, {"wins": 0, "draws": 0, "losses": 0, "seconds": 0.0, "spec": c["spec"]})
        for k in ("wins", "draws", "losses", "seconds"):
            p[k] += c[k]
    rows = []
    for (algo, size, seed, mark_s, opp), p in sorted(points.items()):
        n = p["wins"] + p["draws"] + p["losses"]
        score = (p["wins"] + p["draws"] / 2) / n
        lo, hi = wilson(score, n)
        rows.append(
            {
                "algo": algo,
                "size": size,
                "seed": seed,
                "mark_min": mark_s / 60,
                "opponent": opp,
                "spec": p["spec"],
                "games": n,
                "wins": p["wins"],
                "draws": p["draws"],
                "losses": p["losses"],
                "score": score,
                "ci95": [lo, hi],
                "seconds": p["seconds"],
            }
        )
    pooled = _pooled(rows)
    target = [
        p
        for p in pooled
        if p["size"] == TARGET["size"]
        and p["opponent"] == TARGET["opponent"]
        and p["mark_min"] <= TARGET["within_min"] + 1e-6
    ]
    summary = {
        "benchmark": NAME,
        "command": "python benchmarks/go_gnugo.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "budget_min": args.budget_min,
        "cores_per_arm": args.cores_per_arm,
        "agent_simulations": args.eval_sims or "the run's eval.simulations",
        "games": GAMES,
        "presets": PRESETS,
        "missing_opponents": missing_opponents(args.opponents),
        "target": {
            **TARGET,
            "met": {
                a: any(p["mean"] >= TARGET["score"] for p in target if p["algo"] == a)
                for a in sorted({p["algo"] for p in target})
            },
        },
        "points": rows,
        "pooled": pooled,
        "training": {arm["name"]: read_jsonl(work / f"{arm['name']}_segments.jsonl") for arm in arms(args)},
    }
    name = f"{NAME}_{args.tag}" if args.tag else NAME
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown(summary))
    print(markdown(summary))
    return summary


def markdown(s: dict) -> str:
    lines = [
        f"# {NAME}",
        "",
        f"Command: `{s['command']}`  ",
        f"Machine: {s['machine'].get('Model name', s['machine']['platform'])}, {s['machine']['cpus']} CPUs; "
        f"training budget {s['budget_min']:g} min per arm on {s['cores_per_arm']} core(s); the agent plays "
        f"at {s['agent_simulations']} simulations a move.  ",
        f"Games: {', '.join(s['games'].values())}.",
        "",
    ]
    for opp, why in s["missing_opponents"].items():
        lines.append(f"- not played: {opp} ({why})")
    lines += [
        "",
        "## Mean over seeds (t 95% interval)",
        "",
        "| algorithm | board | mark (min) | opponent | seeds | mean score [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    for p in s["pooled"]:
        ci = "" if math.isnan(p["t95"][0]) else f" [{p['t95'][0]:.3f}, {p['t95'][1]:.3f}]"
        lines.append(
            f"| {p['algo']} | {p['size']}x{p['size']} | {p['mark_min']:g} | {p['opponent']} | "
            f"{p['seeds']} | {p['mean']:.3f}{ci} |"
        )
    lines += [
        "",
        "## Per run (Wilson 95% interval)",
        "",
        "| algorithm | board | seed | mark (min) | opponent | games | W / D / L | score [95% CI] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in s["points"]:
        lines.append(
            f"| {r['algo']} | {r['size']}x{r['size']} | {r['seed']} | {r['mark_min']:g} | {r['spec']} | "
            f"{r['games']} | {r['wins']} / {r['draws']} / {r['losses']} | "
            f"{r['score']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] |"
        )
    t = s["target"]
    lines += [
        "",
        f"Target: >= {t['score']:.0%} against {t['opponent']} on {t['size']}x{t['size']} within "
        f"{t['within_min']} min: "
        + (", ".join(f"{a} {'met' if m else 'not met'}" for a, m in t["met"].items()) or "no point yet"),
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--sizes", type=int, nargs="+", default=[7, 9], choices=sorted(GAMES))
    p.add_argument("--algos", nargs="+", default=list(PRESETS), choices=sorted(PRESETS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--budget-min", type=float, default=180.0, help="training wall clock per arm (minutes)")
    p.add_argument("--mark-min", type=float, default=60.0, help="a checkpoint kept every this many minutes")
    p.add_argument("--cores-per-arm", type=int, choices=[1, 2], default=2)
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a `polyzero train --set`")
    p.add_argument("--opponents", nargs="+", default=list(OPPONENTS))
    p.add_argument("--games", type=int, default=200, help="games per point (default: 200)")
    p.add_argument("--chunk", type=int, default=20, help="games per cached chunk (even)")
    p.add_argument("--eval-marks", choices=["last", "all"], default="all")
    p.add_argument("--eval-workers", type=int, default=2)
    p.add_argument(
        "--eval-sims",
        type=int,
        default=None,
        help="the agent's simulations a move in the ladder (default: the run's eval.simulations)",
    )
    p.add_argument("--tag", default="", help="suffix of the work directory and the results' names")
    p.add_argument("--work", default=None, help="default: runs/bench/go_gnugo[_TAG]")
    args = p.parse_args(argv)
    if args.chunk < 2 or args.chunk % 2 or args.games % args.chunk:
        p.error("--chunk must be even and divide --games")
    work = Path(args.work or ROOT / "runs" / "bench" / (f"{NAME}_{args.tag}" if args.tag else NAME))
    work.mkdir(parents=True, exist_ok=True)
    for name, phase in (("train", train), ("eval", evaluate), ("report", report)):
        if args.phase in (name, "all"):
            phase(args, work)


if __name__ == "__main__":
    main()
