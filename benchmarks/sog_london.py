"""Benchmark `sog_london`: head-to-head play on Scotland Yard's London board
(`scotland_yard(map=london)`, issue 59): player A as Mr X against player B as the
detectives, and the reverse, N games per side; Mr X's win rate with a Wilson 95%
interval per side; the cost of a game and of each player's decisions.

    python benchmarks/sog_london.py play --match sy-heuristic ismcts:100 --games 100
    python benchmarks/sog_london.py play --match "sog:4,1,net=RUN" sy-heuristic --games 20 --minutes 30
    python benchmarks/sog_london.py report

Players are polyzero player specs: `sy-heuristic` (the heuristic team and Mr X,
`polyzero.games.scotland_yard_heuristic`), `ismcts:SIMS`, `random`, and
`sog:S,C,net=RUN` (a network trained by `polyzero train --preset
sog_scotland_yard_london`). Games are played in batches of --batch games per side
(one `play_match` of 2 x batch games, seats alternating, chance dealt by the match's
seed); each batch is cached under runs/bench/OUT/eval/ and never played again, so a
stopped run resumes and a later call with more --games adds batches. Batches go
round-robin over the matchups until --games per side or --minutes. `report` reads
every cached batch and writes benchmarks/results/OUT.{json,md} (OUT: --out, default
sog_london). --game plays another Scotland Yard game (the glasses map:
`--game scotland_yard --out sog_glasses_heuristic`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, cached, git_commit, machine_line, results_name, utcnow, wilson  # noqa: E402

GAME = "scotland_yard(map=london)"
WORK = ROOT / "runs" / "bench"  # WORK/OUT/eval/ holds the batches


class TimedPlayer:
    """A player whose decisions and the seconds they take are counted; a slow one (over
    0.1 s a decision) says every 10 decisions how far it is (every decision over 1 s), so
    that a batch stopped before its end still tells what a decision costs."""

    def __init__(self, player):
        self.player, self.name = player, player.name
        self.seconds, self.decisions = 0.0, 0

    def reset(self, seed: int) -> None:
        self.player.reset(seed)

    def act(self, states):
        t0 = time.perf_counter()
        out = self.player.act(states)
        self.seconds += time.perf_counter() - t0
        before, self.decisions = self.decisions, self.decisions + len(states)
        slow = self.seconds > 0.1 * self.decisions
        if slow and (self.decisions // 10 > before // 10 or self.seconds > 1.0 * self.decisions):
            print(f"  {self.name}: {self.decisions} decisions, {self.seconds:.0f} s", flush=True)
        return out


def label(spec: str) -> str:
    """A spec as the report names it: a network's run directory by its last two parts."""
    head, sep, net = spec.partition(",net=")
    return head + (sep + "/".join(Path(net).parts[-2:]) if sep else "")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def play_batch(game_spec: str, spec_a: str, spec_b: str, batch: int, seed: int) -> dict:
    """2 x batch games (A as Mr X in the even ones): Mr X's wins per side and the cost."""
    import torch

    from polyzero.eval import make_player, play_match
    from polyzero.games import load_game

    torch.set_num_threads(1)
    game = load_game(game_spec)
    a = TimedPlayer(make_player(spec_a, game, seed=seed))
    b = TimedPlayer(make_player(spec_b, game, seed=seed + 1))
    mrx_wins, moves = [0, 0], 0

    def tally(i, state, returns, reason):
        nonlocal moves
        mrx_wins[i % 2] += returns[0] > 0
        moves += len(state.history())

    t0 = time.perf_counter()
    play_match(game, a, b, 2 * batch, seed=seed, max_concurrent=1, on_game_end=tally)
    return {
        "game": game_spec,
        "a": spec_a,
        "b": spec_b,
        "games_per_side": batch,
        "a_mrx_wins": mrx_wins[0],
        "b_mrx_wins": mrx_wins[1],
        "play_seconds": time.perf_counter() - t0,
        "a_seconds": a.seconds,
        "a_decisions": a.decisions,
        "b_seconds": b.seconds,
        "b_decisions": b.decisions,
        "actions": moves,
        "seed": seed,
        "loadavg": os.getloadavg(),
        "finished": utcnow(),
        "machine": machine_line(),
    }


def batch_name(spec_a: str, spec_b: str, index: int) -> str:
    return f"{slug(label(spec_a))}__{slug(label(spec_b))}/batch_{index:04d}"


def phase_play(args) -> None:
    deadline = time.time() + 60 * args.minutes if args.minutes else None
    for index in range(-(-args.games // args.batch)):
        for spec_a, spec_b in args.match:
            if deadline is not None and time.time() > deadline:
                print("time budget spent; run again to go on", flush=True)
                return
            cached(
                args.work / args.out,
                batch_name(spec_a, spec_b, index),
                lambda: play_batch(args.game, spec_a, spec_b, args.batch, args.seed + 1000 * index),
                show=lambda r: (
                    f"Mr X wins A {r['a_mrx_wins']}/{r['games_per_side']}, "
                    f"B {r['b_mrx_wins']}/{r['games_per_side']}, load {r['loadavg'][0]:.1f}"
                ),
            )


def summarise(batches: list[dict]) -> dict:
    """One matchup's batches merged: Mr X's win rate per side with Wilson intervals."""
    n = sum(r["games_per_side"] for r in batches)
    out = {"a": label(batches[0]["a"]), "b": label(batches[0]["b"]), "games_per_side": n, "batches": len(batches)}
    for side in ("a", "b"):
        wins = sum(r[f"{side}_mrx_wins"] for r in batches)
        low, high = wilson(wins / n, n)
        out[f"{side}_as_mrx"] = {"wins": wins, "rate": wins / n, "ci95": [low, high]}
        decisions = sum(r[f"{side}_decisions"] for r in batches)
        out[f"{side}_seconds_per_decision"] = sum(r[f"{side}_seconds"] for r in batches) / max(decisions, 1)
    out["seconds_per_game"] = sum(r["play_seconds"] for r in batches) / (2 * n)
    out["actions_per_game"] = sum(r["actions"] for r in batches) / (2 * n)
    out["loadavg"] = [min(r["loadavg"][0] for r in batches), max(r["loadavg"][0] for r in batches)]
    return out


def ismcts_1000_estimate(rows: list[dict]) -> dict | None:
    """Hours for 1,000 games per side of a matchup against IS-MCTS(1,000) on 2 cores,
    from IS-MCTS(100)'s measured seconds per decision times 10 (a search's cost grows
    with its simulations) and the decisions it made per game."""
    for row in rows:
        for side in ("a", "b"):
            if row[side] == "ismcts:100":
                per_decision = 10 * row[f"{side}_seconds_per_decision"]
                decisions = row[f"{side}_decisions_per_game"]
                hours = 2000 * decisions * per_decision / 2 / 3600
                return {"from": f"{row['a']} vs {row['b']}", "seconds_per_decision": per_decision, "hours": hours}
    return None


def phase_report(args) -> None:
    groups: dict[str, list[dict]] = {}
    for path in sorted((args.work / args.out / "eval").glob("*/batch_*.json")):
        groups.setdefault(path.parent.name, []).append(json.loads(path.read_text()))
    rows = []
    for batches in groups.values():
        row = summarise(batches)
        for side in ("a", "b"):
            decisions = sum(r[f"{side}_decisions"] for r in batches)
            row[f"{side}_decisions_per_game"] = decisions / (2 * row["games_per_side"])
        rows.append(row)
    result = {
        "benchmark": "sog_london",
        "out": args.out,
        "game": args.game,
        "matchups": rows,
        "ismcts_1000_estimate": ismcts_1000_estimate(rows),
        "machine": machine_line() + "; shared with other sessions' jobs (times indicative)",
        "commit": git_commit(),
        "written": utcnow(),
    }
    out = RESULTS / f"{args.out}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


def markdown(result: dict) -> str:
    lines = [
        f"# {result['out']}: head-to-head play on Scotland Yard",
        "",
        f"`{result['game']}`; Mr X's win rate with each player as Mr X, Wilson 95% intervals. "
        f"Machine: {result['machine']}. Commit {result['commit'][:7]}, written {result['written']}.",
        "",
        "| A | B | games per side | Mr X's win rate, A as Mr X | Mr X's win rate, B as Mr X "
        "| s per game | s per decision A / B | load |",
        "|---|---|---:|---|---|---:|---|---|",
    ]
    for r in result["matchups"]:
        a, b = r["a_as_mrx"], r["b_as_mrx"]
        lines.append(
            f"| `{r['a']}` | `{r['b']}` | {r['games_per_side']} "
            f"| {a['rate']:.3f} [{a['ci95'][0]:.3f}, {a['ci95'][1]:.3f}] ({a['wins']}) "
            f"| {b['rate']:.3f} [{b['ci95'][0]:.3f}, {b['ci95'][1]:.3f}] ({b['wins']}) "
            f"| {r['seconds_per_game']:.3g} | {r['a_seconds_per_decision']:.3g} / {r['b_seconds_per_decision']:.3g} "
            f"| {r['loadavg'][0]:.1f}-{r['loadavg'][1]:.1f} |"
        )
    est = result["ismcts_1000_estimate"]
    if est:
        lines += [
            "",
            f"IS-MCTS(1,000), extrapolated from IS-MCTS(100) in `{est['from']}` (10x its seconds per "
            f"decision: {est['seconds_per_decision']:.2f} s): 1,000 games per side of one matchup take "
            f"about {est['hours']:.0f} hours on 2 cores (one game per core).",
        ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["play", "report"])
    p.add_argument("--match", nargs=2, action="append", metavar=("A", "B"), default=[], help="player specs")
    p.add_argument("--games", type=int, default=100, help="games per side of each matchup")
    p.add_argument("--batch", type=int, default=10, help="games per side in one cached batch")
    p.add_argument("--minutes", type=float, default=0, help="stop starting batches after this (0: none)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--game", default=GAME, help="any Scotland Yard game (default: London)")
    p.add_argument("--work", type=Path, default=WORK, help="the batches go to WORK/OUT/eval/")
    p.add_argument("--out", type=results_name, default="sog_london", help="results: benchmarks/results/OUT.{json,md}")
    args = p.parse_args(argv)
    if args.phase == "play":
        if not args.match:
            p.error("play needs at least one --match A B")
        if args.games < 1 or args.batch < 1:
            p.error("--games and --batch must be at least 1")
        if not args.game.startswith("scotland_yard"):
            p.error(f"--game must be a scotland_yard game, got {args.game}")
        phase_play(args)
    else:
        phase_report(args)


if __name__ == "__main__":
    main()
