"""Benchmark `sog_london_selfplay`: what one Student of Games self-play game on
Scotland Yard's London board costs, decision by decision (issue 59): seconds per
decision, the process's resident memory, and what the game holds (searches kept by
the re-solver, queries collected for the solver and the worlds they carry).

    python benchmarks/sog_london_selfplay.py --index 2 --max-rss-gb 4
    python benchmarks/sog_london_selfplay.py --index 2 --out sog_london_selfplay

The game is number --index of the preset `sog_scotland_yard_london`'s run with
--seed (its untrained network: the run's first games), played by
`polyzero.sog.selfplay.play_game` as the trainer plays it. A watchdog stops the game
(and writes what it measured) once resident memory passes --max-rss-gb. Results:
benchmarks/results/OUT.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, git_commit, machine_line, utcnow  # noqa: E402


def rss_gb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def decision_row(number: int, searcher, state, result, seconds: float, collector) -> dict:
    """One decision's cost and what the game holds after it."""
    kept = list(collector.kept) if collector is not None else []
    node = result.summary.tree.nodes[result.summary.tree.index_of[result.key]]
    return {
        "decision": number,
        "player": state.current_player(),
        "history": len(state.history()),
        "seconds": round(seconds, 4),
        "rss_gb": round(rss_gb(), 3),
        "worlds": len(node.worlds),
        "tree_nodes": result.tree_size,
        "searches_kept": len(searcher.cache),
        "worlds_kept_in_searches": sum(len(n.worlds) for r in searcher.cache.values() for n in r.summary.tree.nodes),
        "queries_collected": len(kept),
        "worlds_in_queries": sum(_worlds(q) for q in kept),
    }


def _worlds(query) -> int:
    return query.num_worlds if hasattr(query, "num_worlds") else len(query.public_state.worlds)


class MemoryLimit(Exception):
    pass


def play(seed: int, index: int, max_rss_gb: float, max_decisions: int) -> dict:
    import numpy as np
    import torch

    from polyzero.config import build_config
    from polyzero.games import load_game
    from polyzero.presets import preset_file
    from polyzero.sog import resolve
    from polyzero.sog.cvpn import BeliefEncoding, NetworkValueFunction
    from polyzero.sog.selfplay import SoundSelfPlay, play_game
    from polyzero.sog.trainer import CVPNModel

    cfg = build_config(config_file=str(preset_file("sog_scotland_yard_london")), overrides=[f"seed={seed}"])
    torch.set_num_threads(1)
    game = load_game(cfg.game)
    encoding = BeliefEncoding(game)
    torch.manual_seed(cfg.seed)
    values = NetworkValueFunction(encoding, CVPNModel(encoding, cfg).build_network())
    actor = SoundSelfPlay(game, encoding, values, cfg.sog.search_settings(), cfg.sog.p_td)
    rows = []
    searchers = []
    original_init, original_search = resolve.ResolvingSearcher.__init__, resolve.ResolvingSearcher.search_at

    def init(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        searchers.append(self)

    def search_at(self, state):
        t0 = time.perf_counter()
        result = original_search(self, state)
        seconds = time.perf_counter() - t0
        rows.append(decision_row(len(rows) + 1, self, state, result, seconds, values.listener))
        r = rows[-1]
        print(
            f"{r['decision']:4d} p{r['player']} h={r['history']:3d} {r['seconds']:6.2f} s "
            f"rss {r['rss_gb']:.2f} GB worlds {r['worlds']:3d} tree {r['tree_nodes']:4d} "
            f"kept {r['searches_kept']:3d} ({r['worlds_kept_in_searches']:,} worlds) "
            f"queries {r['queries_collected']:,} ({r['worlds_in_queries']:,} worlds)",
            flush=True,
        )
        if r["rss_gb"] > max_rss_gb or len(rows) >= max_decisions:
            raise MemoryLimit
        return result

    resolve.ResolvingSearcher.__init__, resolve.ResolvingSearcher.search_at = init, search_at
    t0 = time.perf_counter()
    finished, returns = True, None
    try:
        episode = play_game(actor, cfg.seed, index, cfg.sog.q_search, cfg.sog.query_buffer)
        returns = episode.returns
    except MemoryLimit:
        finished = False
    finally:
        resolve.ResolvingSearcher.__init__, resolve.ResolvingSearcher.search_at = original_init, original_search
    return {
        "seed": seed,
        "index": index,
        "finished": finished,
        "returns": returns,
        "seconds": round(time.perf_counter() - t0, 1),
        "cpu_seconds": round(resource.getrusage(resource.RUSAGE_SELF).ru_utime, 1),
        "max_rss_gb": max((r["rss_gb"] for r in rows), default=0.0),
        "decisions": rows,
        "np": np.__version__,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--index", type=int, default=2, help="the run's game number (2: a long game at seed 0)")
    parser.add_argument("--max-rss-gb", type=float, default=4.0)
    parser.add_argument("--max-decisions", type=int, default=10_000)
    parser.add_argument("--out", default="", help="write benchmarks/results/OUT.{json,md}")
    args = parser.parse_args()
    result = play(args.seed, args.index, args.max_rss_gb, args.max_decisions)
    result.update(commit=git_commit(), date=utcnow(), machine=machine_line())
    print(json.dumps({k: v for k, v in result.items() if k != "decisions"}))
    if args.out:
        (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
