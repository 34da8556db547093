"""Benchmark `sog_london_selfplay`: what one Student of Games self-play game on
Scotland Yard's London board costs, decision by decision (issue 59): seconds per
decision, the process's resident memory, and what the game holds (searches kept by
the re-solver, queries collected for the solver and the worlds they carry).

    python benchmarks/sog_london_selfplay.py --index 2 --max-rss-gb 4 | tee after.log
    python benchmarks/sog_london_selfplay.py report --log before=before.log --log after=after.log

The game is number --index of the preset `sog_scotland_yard_london`'s run with
--seed (its untrained network: the run's first games), played by
`polyzero.sog.selfplay.play_game` as the trainer plays it. A watchdog stops the game
(and writes what it measured) once resident memory passes --max-rss-gb; each decision
prints a line, and `report` puts the lines of several runs (e.g. before and after a
change, or a run stopped before its end) side by side in benchmarks/results/OUT.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, git_commit, machine_line, utcnow  # noqa: E402


def rss_gb() -> float:
    """This process's resident memory now, in GiB (/proc/self/statm)."""
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


LINE = re.compile(
    r"\s*(\d+) p(\d) h=\s*(\d+)\s+([\d.]+) s rss ([\d.]+) GB worlds\s+(\d+) tree\s+(\d+) "
    r"kept\s+(\d+) \(([\d,]+) worlds\) queries ([\d,]+) \(([\d,]+) worlds\)"
)
FIELDS = ("decision", "player", "history", "seconds", "rss_gb", "worlds", "tree_nodes", "searches_kept")
FIELDS += ("worlds_kept_in_searches", "queries_collected", "worlds_in_queries")


def read_log(path: Path) -> list[dict]:
    """The decision lines a `play` run printed (what a run stopped before its end leaves)."""
    rows = []
    for line in path.read_text().splitlines():
        m = LINE.match(line)
        if m:
            values = [float(v.replace(",", "")) for v in m.groups()]
            rows.append({k: (v if k in ("seconds", "rss_gb") else int(v)) for k, v in zip(FIELDS, values)})
    return rows


def report(logs: list[tuple[str, Path]], out: str) -> None:
    """Runs side by side (NAME=LOG each), decision by decision: benchmarks/results/OUT.{json,md}."""
    runs = {name: read_log(path) for name, path in logs}
    result = {"runs": runs, "commit": git_commit(), "date": utcnow(), "machine": machine_line()}
    (RESULTS / f"{out}.json").write_text(json.dumps(result, indent=1) + "\n")
    names = list(runs)
    lines = [
        f"# {out}: one SoG self-play game on London, decision by decision",
        "",
        "The preset `sog_scotland_yard_london`'s untrained network, seed 0, game 2 (a long one); "
        f"{result['machine']}; shared with other sessions' jobs at nice 10 (times indicative). "
        f"Commit {result['commit']}, written {result['date']}. Columns per run: seconds for the "
        "decision, resident memory (GB), worlds of the searched public state, worlds held by the "
        "searches cached, queries held by the collector (their worlds: as game states before "
        "2026-11-29's change, as action histories after it).",
        "",
        "| decision | player | "
        + " | ".join(f"{n}: s / GB / worlds / cached worlds / queries (worlds)" for n in names)
        + " |",
        "|---:|---:|" + "---|" * len(names),
    ]
    for i in range(max(len(r) for r in runs.values())):
        cells = []
        for n in names:
            r = runs[n][i] if i < len(runs[n]) else None
            cells.append(
                f"{r['seconds']:.2f} / {r['rss_gb']:.2f} / {r['worlds']:,} / {r['worlds_kept_in_searches']:,} / "
                f"{r['queries_collected']:,} ({r['worlds_in_queries']:,})"
                if r
                else ""
            )
        first = next(runs[n][i] for n in names if i < len(runs[n]))
        lines.append(f"| {first['decision']} | {first['player']} | " + " | ".join(cells) + " |")
    (RESULTS / f"{out}.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("phase", nargs="?", choices=["play", "report"], default="play")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--index", type=int, default=2, help="the run's game number (2: a long game at seed 0)")
    parser.add_argument("--max-rss-gb", type=float, default=4.0)
    parser.add_argument("--max-decisions", type=int, default=10_000)
    parser.add_argument("--log", action="append", default=[], metavar="NAME=LOG", help="report: a play run's output")
    parser.add_argument("--out", default="", help="write benchmarks/results/OUT.{json,md}")
    args = parser.parse_args()
    if args.phase == "report":
        logs = [(text.partition("=")[0], Path(text.partition("=")[2])) for text in args.log]
        report(logs, args.out or "sog_london_selfplay")
        return
    result = play(args.seed, args.index, args.max_rss_gb, args.max_decisions)
    result.update(commit=git_commit(), date=utcnow(), machine=machine_line())
    print(json.dumps({k: v for k, v in result.items() if k != "decisions"}))
    if args.out:
        (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
