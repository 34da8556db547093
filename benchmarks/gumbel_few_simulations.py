"""Benchmark `gumbel_few_simulations` (Gumbel issue; the Gumbel paper's claim that with
fewer simulations than actions Gumbel AlphaZero keeps improving where pUCT stalls).

For each game (Connect Four: 7 actions; hex 7x7: 49), search (puct, gumbel), number
of simulations per move n (2, 4, 16) and seed, `polyzero train` runs for the same
wall-clock budget, stopped by SIGTERM at every --mark-min and resumed (the
`connect_four_alphazero` benchmark's segment runner: each mark leaves a
checkpoint). Two runs train at a time, one per core, one torch thread each
(the two searches of a pair, same n and seed, side by side). Every mark's network
of a finished run then plays at --eval-sims (64) against MCTS-Solver 1x and 10x
of --eval-sims, and Gumbel against pUCT at the same (n, seed, mark), seats
alternated, in one process per core.

The whole benchmark takes longer than one working session, so its results are a
ledger committed under benchmarks/results/gumbel_few_simulations_<game>_<algo>/:
each finished run's marks (`<run>_segments.jsonl`) and each evaluation
(`eval/<key>.json`). The checkpoints stay in --work (not committed). A pair whose
evaluations are all in the ledger is not trained again; a later session trains
and evaluates the pairs still missing, and `report` pools whatever the ledger holds.

    python benchmarks/gumbel_few_simulations.py all --game 'hex(board_size=7)' --budget-min 30
    python benchmarks/gumbel_few_simulations.py all --game 'hex(board_size=7)' --pairs 2  # a session's share
    python benchmarks/gumbel_few_simulations.py all --game connect_four --budget-min 30
    python benchmarks/gumbel_few_simulations.py all --game connect_four --algo muzero --sims 2 16

Target (the issue), on hex 7x7: Gumbel at n = 2 and n = 4 ahead of pUCT at the same n
with non-overlapping 95% intervals (pooled over seeds, at the last mark).
Writes benchmarks/results/gumbel_few_simulations_<game>_<algo>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    ONE_THREAD,
    POLYZERO_SETS,
    RESULTS,
    ROOT,
    cached,
    git_commit,
    keep_mark,
    machine_line,
    read_jsonl,
    run_phases,
    taskset,
    train_segments,
)
from gumbel_few_simulations_plot import plot  # noqa: E402

LEVELS = ("1x", "10x")


def arm_name(algo: str, search: str, n: int, seed: int) -> str:
    return f"{algo}-{search}-n{n}-s{seed}"


def arms(args) -> list[tuple[str, list[str], tuple[int, int]]]:
    """(arm name, polyzero train arguments, its pair (n, seed)) for every run."""
    out = []
    for n in args.sims:
        for seed in args.seeds:
            for search in ("puct", "gumbel"):
                train = [
                    args.game,
                    "--algo",
                    args.algo,
                    "--search",
                    search,
                    "--seed",
                    str(seed),
                    "--set",
                    f"search.num_simulations={n}",
                ]
                out.append((arm_name(args.algo, search, n, seed), train, (n, seed)))
    return out


def ledger_dir(args) -> Path:
    short = args.game.replace("(board_size=", "").replace(")", "")
    return RESULTS / f"gumbel_few_simulations_{short}_{args.algo}"


def pair_evaluated(args, ledger: Path, n: int, seed: int) -> bool:
    """Both runs of the pair (n, seed) finished and every evaluation is in the ledger."""
    names = [arm_name(args.algo, s, n, seed) for s in ("puct", "gumbel")]
    return all(finished(args, ledger, name) for name in names) and all(
        (ledger / "eval" / f"{k}.json").exists() for k in eval_keys(args, ledger, n, seed)
    )


def phase_train(args, work: Path) -> None:
    """Runs two at a time, one per core; pairs already in the ledger are skipped."""
    ledger = ledger_dir(args)
    done = {(n, s) for n in args.sims for s in args.seeds if pair_evaluated(args, ledger, n, s)}
    queue = [(name, train) for name, train, pair in arms(args) if pair not in done]
    if args.pairs is not None:
        queue = queue[: 2 * args.pairs]
    lock = threading.Lock()

    def worker(core: int):
        while True:
            with lock:
                if not queue:
                    return
                name, train = queue.pop(0)
            train_segments(work, name, train, args.budget_min * 60, args.mark_min * 60, core, log_prefix=name)

    threads = [threading.Thread(target=worker, args=(core,)) for core in range(args.cores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def marks(folder: Path, name: str, work: Path | None = None) -> list[dict]:
    """The marks of run `name` as recorded in `folder` (the work folder or the ledger),
    checkpoint paths resolved against `work`."""
    return [
        {"mark_s": r["mark_s"], "path": str((work or folder) / r["checkpoint"]), "step": r["learning_step"]}
        for r in read_jsonl(folder / f"{name}_segments.jsonl")
    ]


def finished(args, work: Path, name: str) -> bool:
    segs = read_jsonl(work / f"{name}_segments.jsonl")
    return bool(segs) and segs[-1]["wall_s"] >= args.budget_min * 60 - 1


def eval_keys(args, ledger: Path, n: int, seed: int) -> list[str]:
    """The ledger keys of the pair's evaluations (its marks as the ledger records them)."""
    puct, gumbel = (arm_name(args.algo, s, n, seed) for s in ("puct", "gumbel"))
    keys = [
        f"{name}-{int(m['mark_s']):06d}-{level}"
        for name in (puct, gumbel)
        for m in marks(ledger, name)
        for level in LEVELS
    ]
    keys += [f"duel-{args.algo}-n{n}-s{seed}-{int(m['mark_s']):06d}" for m in marks(ledger, gumbel)]
    return keys


def untrained_mark(args, work: Path, name: str, n: int, seed: int) -> dict:
    """The mark at minute 0: the network run `name` starts from (its config and seed,
    no training), saved once under WORK/NAME_marks/wc000000."""
    dest = work / f"{name}_marks" / "wc000000"
    if not (dest / "learner.pt").exists():
        import shutil

        from polyzero.config import build_config
        from polyzero.train.driver import Trainer

        search = name.split("-")[1]
        run = work / f"{name}_untrained"
        shutil.rmtree(run, ignore_errors=True)
        cfg = build_config(
            args.game,
            args.algo,
            None,
            [f"seed={seed}", f"search.kind={search}", f"search.num_simulations={n}", *POLYZERO_SETS],
        )
        keep_mark(Trainer.create(cfg, run, progress=False).save(), dest)
        shutil.rmtree(run)
    return {"mark_s": 0.0, "path": str(dest), "step": 0}


def eval_jobs(args, work: Path, ledger: Path) -> list[tuple[str, list[str], object]]:
    """(ledger key, checkpoints it needs, compute) of every evaluation still missing
    whose pair has finished training."""
    from polyzero.eval import make_player, play_match
    from polyzero.games import load_game
    from polyzero.train.agents import load_search_player

    game = load_game(args.game)
    opponents = {"1x": f"mcts-solver:{args.eval_sims}", "10x": f"mcts-solver:{10 * args.eval_sims}"}

    def match(agent_a: str, spec_b: str, sample_moves: int = 0) -> dict:
        """Checkpoint `agent_a` against `spec_b`, a reference player or a checkpoint;
        `sample_moves` > 0: both agents, noise-free at evaluation, sample their first plies."""
        a = load_search_player(agent_a, game, seed=args.seed)
        b = load_search_player(spec_b, game, seed=args.seed + 1) or make_player(spec_b, game, seed=args.seed + 1)
        for player in (a, b):
            if sample_moves:
                player.sample_moves = sample_moves
        res = play_match(game, a, b, args.games, seed=args.seed)
        return {"wins": res.wins, "draws": res.draws, "losses": res.losses, "sample_moves": sample_moves}

    jobs = []
    for n in args.sims:
        for seed in args.seeds:
            puct, gumbel = (arm_name(args.algo, s, n, seed) for s in ("puct", "gumbel"))
            if not (finished(args, ledger, puct) and finished(args, ledger, gumbel)):
                continue
            for name in (puct, gumbel):
                for mark in [untrained_mark(args, work, name, n, seed)] + marks(ledger, name, work):
                    for level, spec in opponents.items():
                        jobs.append(
                            (
                                f"{name}-{int(mark['mark_s']):06d}-{level}",
                                [mark["path"]],
                                lambda m=mark, spec=spec: match(f"{m['path']}@{args.eval_sims}", spec),
                            )
                        )
            for mp, mg in zip(marks(ledger, puct, work), marks(ledger, gumbel, work)):
                jobs.append(
                    (
                        f"duel-{args.algo}-n{n}-s{seed}-{int(mg['mark_s']):06d}",
                        [mg["path"], mp["path"]],
                        lambda mp=mp, mg=mg: match(
                            f"{mg['path']}@{args.eval_sims}", f"{mp['path']}@{args.eval_sims}", args.duel_sample_moves
                        ),
                    )
                )
    return [job for job in jobs if not (ledger / "eval" / f"{job[0]}.json").exists()]


def phase_eval(args, work: Path) -> None:
    """Records every finished run's marks in the ledger, then plays the missing
    evaluations in --cores processes (job i to process i mod cores)."""
    import shutil

    ledger = ledger_dir(args)
    (ledger / "eval").mkdir(parents=True, exist_ok=True)
    if args.shard is None:
        for name, _, (n, seed) in arms(args):
            src, dst = work / f"{name}_segments.jsonl", ledger / f"{name}_segments.jsonl"
            if finished(args, work, name) and (not dst.exists() or dst.read_text() != src.read_text()):
                # A run trained again (its pair was not wholly evaluated before): the
                # pair's older evaluations, duels included, describe other networks.
                for key in eval_keys(args, ledger, n, seed):
                    (ledger / "eval" / f"{key}.json").unlink(missing_ok=True)
                shutil.copy2(src, dst)
    jobs = eval_jobs(args, work, ledger)
    ready = [job for job in jobs if all(Path(p).exists() for p in job[1])]
    if len(ready) < len(jobs) and args.shard is None:
        print(
            f"{len(jobs) - len(ready)} evaluations wait for checkpoints that are not in {work}; "
            "`train` trains their pairs again",
            flush=True,
        )
    jobs = ready
    if args.shard is not None:
        for key, _, fn in jobs[args.shard :: args.cores]:
            cached(ledger, key, fn)
        return
    if len(jobs) < 2 or args.cores == 1:
        for key, _, fn in jobs:
            cached(ledger, key, fn)
        return
    base = [
        sys.executable,
        str(Path(__file__).resolve()),
        "eval",
        "--game",
        args.game,
        "--algo",
        args.algo,
        "--sims",
        *map(str, args.sims),
        "--seeds",
        *map(str, args.seeds),
        "--budget-min",
        str(args.budget_min),
        "--mark-min",
        str(args.mark_min),
        "--eval-sims",
        str(args.eval_sims),
        "--games",
        str(args.games),
        "--duel-sample-moves",
        str(args.duel_sample_moves),
        "--seed",
        str(args.seed),
        "--cores",
        str(args.cores),
        "--work",
        str(work),
    ]
    procs = [
        subprocess.Popen(taskset(i) + base + ["--shard", str(i)], env={**os.environ, **ONE_THREAD})
        for i in range(args.cores)
    ]
    if any([p.wait() != 0 for p in procs]):  # noqa: C419 - a list: wait for every process
        raise SystemExit("an evaluation process failed (see above)")


def _score(recs: list[dict]) -> dict | None:
    from polyzero.eval import wilson_interval

    recs = [r for r in recs if r]
    w, d, lost = (sum(r[k] for r in recs) for k in ("wins", "draws", "losses"))
    if w + d + lost == 0:
        return None
    s = (w + 0.5 * d) / (w + d + lost)
    lo, hi = wilson_interval(s, w + d + lost)
    return {"score": round(s, 4), "ci95": [round(lo, 4), round(hi, 4)], "games": w + d + lost}


def _pooled(args, ledger: Path, pairs: dict) -> tuple[dict, dict, dict]:
    """(curves, each curve's last point, head-to-head scores) with the evaluations of
    the seeds in `pairs` pooled per (search, n, mark)."""

    def rec(key):
        p = ledger / "eval" / f"{key}.json"
        return json.loads(p.read_text()) if p.exists() else None

    curves, final, duels = {}, {}, {}
    for n in args.sims:
        for search in ("puct", "gumbel"):
            by_mark: dict[float, dict] = {}
            for seed in pairs[f"n{n}"]:
                name = arm_name(args.algo, search, n, seed)
                for mark in [{"mark_s": 0.0, "step": 0}] + marks(ledger, name):
                    point = by_mark.setdefault(mark["mark_s"], {"steps": [], **{lv: [] for lv in LEVELS}})
                    point["steps"].append(mark["step"])
                    for level in LEVELS:
                        point[level].append(rec(f"{name}-{int(mark['mark_s']):06d}-{level}"))
            pts = [
                {
                    "minutes": m / 60,
                    "seeds": len(pt["steps"]),
                    "mean_steps": sum(pt["steps"]) / len(pt["steps"]),
                    **{lv: _score(pt[lv]) for lv in LEVELS},
                }
                for m, pt in sorted(by_mark.items())
            ]
            curves[f"{search}-n{n}"] = pts
            if pts:
                final[f"{search}-n{n}"] = pts[-1]
        duel_marks: dict[float, list] = {}
        for seed in pairs[f"n{n}"]:
            for mark in marks(ledger, arm_name(args.algo, "gumbel", n, seed)):
                duel_marks.setdefault(mark["mark_s"], []).append(
                    rec(f"duel-{args.algo}-n{n}-s{seed}-{int(mark['mark_s']):06d}")
                )
        duels[f"n{n}"] = [{"minutes": m / 60, "seeds": len(rs), **_score(rs)} for m, rs in sorted(duel_marks.items())]
    return curves, final, duels


def phase_report(args, work: Path) -> dict:
    """Pools the ledger's evaluations over seeds, per (search, n, mark)."""
    ledger = ledger_dir(args)
    pairs = {f"n{n}": [s for s in args.seeds if pair_evaluated(args, ledger, n, s)] for n in args.sims}
    curves, final, duels = _pooled(args, ledger, pairs)
    targets = {}
    for n in args.sims:
        g, p = final.get(f"gumbel-n{n}", {}).get("1x"), final.get(f"puct-n{n}", {}).get("1x")
        if g and p:
            targets[f"n{n}_gumbel_ahead_beyond_ci"] = g["ci95"][0] > p["ci95"][1]
    git = git_commit()
    command = "python benchmarks/gumbel_few_simulations.py " + shlex.join(sys.argv[1:])
    name = ledger.name
    result = {
        "game": args.game,
        "algo": args.algo,
        "command": command,
        "git": git,
        "machine": machine_line(),
        "seeds": args.seeds,
        "pairs_evaluated": pairs,
        "budget_min": args.budget_min,
        "eval_sims": args.eval_sims,
        "games_per_eval": args.games,
        "curves": curves,
        "duels": duels,
        "targets": targets,
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2))
    missing = {k: sorted(set(args.seeds) - set(v)) for k, v in pairs.items() if set(v) != set(args.seeds)}
    lines = [
        f"# Benchmark `gumbel_few_simulations`: {args.algo} on {args.game}",
        "",
        f"- command: `{command}` (report at commit {git[:10]}); one torch thread per run, the two runs of a "
        f"pair (same n and seed) side by side on the two cores",
        f"- machine: {machine_line()}",
        f"- {args.budget_min:g} min of training per run; agents play at {args.eval_sims} simulations, "
        f"{args.games} games per (run, mark, opponent), seats alternated, the first {args.duel_sample_moves} "
        "plies of the head-to-head games sampled from the visits; scores pooled over the seeds "
        "evaluated, Wilson 95% CI; the ledger (per-run marks and per-evaluation results) is in "
        f"`benchmarks/results/{name}/`",
        f"- pairs evaluated (seeds per n): {json.dumps(pairs)}"
        + (f"; **still missing: {json.dumps(missing)}**" if missing else ""),
        "",
        "| search | minutes | seeds | mean learning steps | vs MCTS-Solver 1x | vs 10x |",
        "|---|---:|---:|---:|---|---|",
    ]

    def cell(r):
        return f"{r['score']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}] ({r['games']})" if r else "-"

    for key, pts in curves.items():
        for p in pts:
            lines.append(
                f"| {key} | {p['minutes']:g} | {p['seeds']} | {p['mean_steps']:.0f} | "
                + " | ".join(cell(p.get(lv)) for lv in LEVELS)
                + " |"
            )
    lines += [
        "",
        "Head to head, Gumbel against pUCT at the same n, seed and mark (Gumbel's score):",
        "",
        "| n | minutes | seeds | Gumbel's score |",
        "|---:|---:|---:|---|",
    ]
    for key, pts in duels.items():
        for p in pts:
            lines.append(f"| {key[1:]} | {p['minutes']:g} | {p['seeds']} | {cell(p)} |")
    lines += [
        "",
        f"Targets (last mark, vs MCTS-Solver 1x, intervals not overlapping): {json.dumps(targets)}"
        + (" (provisional: not every seed is in)" if missing else ""),
    ]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    if any(curves.values()):
        plot(result, RESULTS / f"{name}.png", LEVELS)
        lines.append(f"\n![learning curves]({name}.png)")
        (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return result


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "eval", "report", "all"])
    p.add_argument("--game", default="hex(board_size=7)")
    p.add_argument("--algo", default="alphazero", choices=["alphazero", "muzero"])
    p.add_argument("--sims", type=int, nargs="+", default=[2, 4, 16])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--budget-min", type=float, default=30.0)
    p.add_argument("--mark-min", type=float, default=10.0)
    p.add_argument("--eval-sims", type=int, default=64)
    p.add_argument("--games", type=int, default=50, help="games per (mark, opponent)")
    p.add_argument(
        "--duel-sample-moves",
        type=int,
        default=2,
        help="head to head, the first plies are sampled from the visits (tau 1): two agents "
        "without noise would otherwise replay the same two games",
    )
    p.add_argument("--cores", type=int, default=2)
    p.add_argument(
        "--pairs",
        type=int,
        default=None,
        help="train at most this many (n, seed) pairs not yet in the ledger (one session's share)",
    )
    p.add_argument("--shard", type=int, default=None, help=argparse.SUPPRESS)  # an eval process of --cores
    p.add_argument("--seed", type=int, default=0, help="evaluation seed")
    p.add_argument("--work", type=Path, default=None)
    args = p.parse_args(argv)
    work = args.work or ROOT / "runs" / "bench" / ledger_dir(args).name
    work.mkdir(parents=True, exist_ok=True)
    run_phases(args, work, phase_train, phase_eval, phase_report)


if __name__ == "__main__":
    main()
