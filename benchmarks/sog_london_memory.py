"""Benchmark `sog_london_memory`: how much memory a Student of Games training run on
Scotland Yard's London board holds across games and learning steps (issue 59): the
process's resident memory over time, the worlds and public states in the run's kept
index of expansions (`polyzero.sog.search_tree.Expansions`, `selfplay.kept_expansions`)
and the bytes a kept world costs.

    python benchmarks/sog_london_memory.py --cpu-minutes 35 --out sog_london_memory
    python benchmarks/sog_london_memory.py --report --out sog_london_memory   # the page again
    python benchmarks/sog_london_memory.py --breakdown --index 0 --out sog_london_memory_breakdown
    python benchmarks/sog_london_memory.py --repeat 4 --index 0 --out sog_london_memory_repeat
    python benchmarks/sog_london_memory.py --gather-rows 2000 --out sog_london_memory_gather

The run is the preset `sog_scotland_yard_london`'s (`polyzero train --preset
sog_scotland_yard_london`; its settings unchanged: SoG(4, 1) self-play, GT-CFR(8, 1)
solving 4 queries a step, one game a step), driven step by step by the trainer's own
learning step in this process (no checkpoints written: they do not hold the index)
until --cpu-minutes of process CPU time, --wall-minutes, or --max-rss-gb of resident
memory (a watchdog thread then interrupts the step). A thread samples resident memory
and the index every --every seconds. At the end the index is emptied and the memory
given back to the OS measured: what the index held, per world. --breakdown plays one
game of the run on the trainer's index and says what in the index holds the memory.
"""

from __future__ import annotations

import _thread
import argparse
import ctypes
import gc
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, git_commit, machine_line, utcnow  # noqa: E402
from sog_london_selfplay import rss_gb  # noqa: E402


def index_row(trainer, t0: float) -> dict:
    ex = trainer.data.expansions
    return {
        "cpu_s": round(time.process_time(), 1),
        "wall_s": round(time.perf_counter() - t0, 1),
        "rss_gb": round(rss_gb(), 3),
        "worlds": ex.worlds if ex is not None else 0,
        "public_states": len(ex.by_key) if ex is not None else 0,
    }


class Sampler(threading.Thread):
    """Resident memory and the index every `every` seconds; interrupts the main thread
    once memory passes `max_rss_gb`."""

    def __init__(self, trainer, t0: float, every: float, max_rss_gb: float):
        super().__init__(daemon=True)
        self.trainer, self.t0, self.every, self.max_rss_gb = trainer, t0, every, max_rss_gb
        self.rows: list[dict] = []
        self.stopped = threading.Event()
        self.tripped = False

    def run(self) -> None:
        while not self.stopped.wait(self.every):
            row = index_row(self.trainer, self.t0)
            self.rows.append(row)
            if row["rss_gb"] > self.max_rss_gb and not self.tripped:
                self.tripped = True
                _thread.interrupt_main()


def train(args) -> dict:
    import torch

    from polyzero.config import build_config
    from polyzero.presets import preset_file
    from polyzero.sog.trainer import SoGTrainer

    overrides = [f"seed={args.seed}", "threads=1", "train.steps=100000000", "train.checkpoint_every=100000000"]
    cfg = build_config(config_file=str(preset_file("sog_scotland_yard_london")), overrides=overrides)
    torch.set_num_threads(1)
    run_dir = Path(tempfile.mkdtemp(prefix="sog_london_memory_")) / "run"
    t0 = time.perf_counter()
    trainer = SoGTrainer.create(cfg, run_dir, progress=False)
    if args.max_worlds is not None and trainer.data.expansions is not None:
        trainer.data.expansions.max_worlds = args.max_worlds
    sampler = Sampler(trainer, t0, args.every, args.max_rss_gb)
    steps: list[dict] = []
    stop = "cpu minutes"
    log, progress = trainer._start_run()
    sampler.start()
    try:
        with trainer.executor.session(trainer):
            while time.process_time() < 60 * args.cpu_minutes:
                if time.perf_counter() - t0 > 60 * args.wall_minutes:
                    stop = "wall minutes"
                    break
                trainer._learning_step(log, progress)
                c = trainer.counts
                row = {"step": trainer.step, "games": c["games"], "positions": c["positions"], "solves": c["solves"]}
                row.update(index_row(trainer, t0), query_buffer=len(trainer.queries), replay=len(trainer.replay))
                steps.append(row)
                print(json.dumps(row), flush=True)
    except KeyboardInterrupt:
        stop = f"resident memory past {args.max_rss_gb} GB"
    finally:
        sampler.stopped.set()
        sampler.join()
        log.close()
        progress.close()
    ex = trainer.data.expansions
    held = {"worlds": ex.worlds, "public_states": len(ex.by_key), "max_worlds": ex.max_worlds}
    before = rss_gb()
    ex.by_key.clear()
    ex.worlds = 0
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    after = rss_gb()
    held.update(rss_before_gb=round(before, 3), rss_after_gb=round(after, 3))
    held["bytes_per_world"] = round((before - after) * 2**30 / held["worlds"]) if held["worlds"] else None
    return {
        "seed": args.seed,
        "stopped_by": stop,
        "steps": steps,
        "samples": sampler.rows,
        "index_at_end": held,
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
        "cpu_s": round(time.process_time(), 1),
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def trimmed_gb() -> float:
    """Resident memory once garbage is collected and malloc gives its free pages back."""
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_gb()


def array_bytes(obj, seen: set) -> int:
    """Bytes of the numpy arrays and torch tensors reachable from `obj` (each once)."""
    import numpy as np
    import torch

    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(array_bytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(array_bytes(v, seen) for v in obj)
    if hasattr(obj, "__dict__"):
        return array_bytes(vars(obj), seen)
    return 0


def held_by_game(episode, replay) -> dict:
    """What the game's examples cost in the replay window (a row of its fixed arrays,
    and the policy and legal rows it keeps of the slots with a policy target) and what
    its queries cost as the buffer keeps them (`StoredQuery.nbytes`), and the window's
    bytes at capacity with examples like these."""
    import numpy as np

    from polyzero.sog.query_store import stored

    fixed = sum(a[0].nbytes for a in replay.data.values())
    rows = []
    for example in episode.examples:
        kept = np.flatnonzero(np.asarray(example.policy_mask) > 0)
        rows.append(kept.nbytes + kept.size * replay.slots_actions[1] * 5)  # float32 policy, bool legal
    queries = [stored(q).nbytes for q in episode.collected + episode.to_solve]
    mean_rows = sum(rows) / max(len(rows), 1)
    return {
        "examples": len(rows),
        "example_fixed_bytes": fixed,
        "example_rows_bytes_mean": round(mean_rows),
        "example_rows_bytes_max": max(rows, default=0),
        "window_at_capacity_gb": round(replay.capacity * (fixed + mean_rows) / 2**30, 3),
        "queries": len(queries),
        "query_bytes_mean": round(sum(queries) / max(len(queries), 1)),
    }


def breakdown(args) -> dict:
    """The trainer's memory before any game (networks, optimizer), then one self-play game
    (number --index of the run) on its kept index, and what the index holds after it:
    the arrays derived from its public states and their CFR arrays, counted, and the
    memory each part gives back when dropped (parts dropped in turn)."""
    import torch

    from polyzero.config import build_config
    from polyzero.presets import preset_file
    from polyzero.sog.selfplay import play_game
    from polyzero.sog.trainer import SoGTrainer

    mb = {"imports": trimmed_gb()}
    cfg = build_config(config_file=str(preset_file("sog_scotland_yard_london")), overrides=[f"seed={args.seed}"])
    torch.set_num_threads(1)
    trainer = SoGTrainer(cfg, Path(tempfile.mkdtemp(prefix="sog_london_memory_")) / "run", progress=False)
    mb["trainer"] = trimmed_gb()
    data = trainer.data
    episode = play_game(data.actor, cfg.seed, args.index, cfg.sog.q_search, cfg.sog.query_buffer)
    out = {"index": args.index, **held_by_game(episode, trainer.replay)}
    del episode
    mb["after_game"] = trimmed_gb()
    ex = data.expansions
    entries = list(ex.by_key.values())
    out.update(worlds=ex.worlds, public_states=len(entries), cpu_s=round(time.process_time(), 1))
    out["derived_array_mb"] = array_bytes([e.derived for e in entries], set()) / 2**20
    out["cfr_array_mb"] = array_bytes([e.structure for e in entries], set()) / 2**20
    out["info_state_strings"] = sum(len(s) for e in entries for s in e.info_states)
    for e in entries:
        e.structure.clear()
    mb["cfr_arrays_dropped"] = trimmed_gb()
    for e in entries:
        e.derived.clear()
    mb["derived_dropped"] = trimmed_gb()
    del entries
    ex.by_key.clear()
    mb["index_emptied"] = trimmed_gb()
    out["rss_gb"] = {k: round(v, 3) for k, v in mb.items()}
    out["bytes_per_world"] = round((mb["after_game"] - mb["index_emptied"]) * 2**30 / out["worlds"])
    return out


def repeat(args) -> dict:
    """Game --index of the run played --repeat times on the trainer's actor (the same game
    each time: its randomness is the run's seed and the game's number), the index emptied
    after each: the trimmed resident memory and the Python objects by type after each
    game. Memory that grows from game to game is held by something other than the index."""
    from collections import Counter

    import torch

    from polyzero.config import build_config
    from polyzero.presets import preset_file
    from polyzero.sog.selfplay import play_game
    from polyzero.sog.trainer import SoGTrainer

    cfg = build_config(config_file=str(preset_file("sog_scotland_yard_london")), overrides=[f"seed={args.seed}"])
    torch.set_num_threads(1)
    trainer = SoGTrainer(cfg, Path(tempfile.mkdtemp(prefix="sog_london_memory_")) / "run", progress=False)
    games, counts = [], []
    for _ in range(args.repeat):
        episode = play_game(trainer.data.actor, cfg.seed, args.index, cfg.sog.q_search, cfg.sog.query_buffer)
        trainer.data.expansions.by_key.clear()
        trainer.data.expansions.worlds = 0
        del episode
        gb = trimmed_gb()
        counts.append(Counter(type(o).__name__ for o in gc.get_objects()))
        games.append(
            {"rss_gb": round(gb, 3), "python_objects": sum(counts[-1].values()), "cpu_s": round(time.process_time(), 1)}
        )
        print(json.dumps(games[-1]), flush=True)
    grew = (counts[-1] - counts[0]).most_common(8) if len(counts) > 1 else []
    return {"index": args.index, "games": games, "objects_grown_first_to_last": grew}


def gather(args) -> dict:
    """Peak memory of one batched policy-row product (`CVPN.policy_rows_of`, the path a
    search's network call takes with many decision queries) on the London network: 20
    queries at Mr X's decisions with --gather-rows slots in all. It gathers one [actions,
    width] block of the head's weights per row (798 x 128 float32: 408,576 bytes), at
    most `cvpn.ROWS_PER_PRODUCT` rows at a time (before that bound: all rows at once)."""
    import numpy as np
    import torch

    from polyzero.config import build_config
    from polyzero.games import load_game
    from polyzero.presets import preset_file
    from polyzero.sog.cvpn import ROWS_PER_PRODUCT, BeliefEncoding
    from polyzero.sog.trainer import CVPNModel

    cfg = build_config(config_file=str(preset_file("sog_scotland_yard_london")), overrides=[f"seed={args.seed}"])
    torch.set_num_threads(1)
    encoding = BeliefEncoding(load_game(cfg.game))
    net = CVPNModel(encoding, cfg).build_network().eval()
    h = torch.randn(20, cfg.net.width)
    each = args.gather_rows // 20
    slots = [torch.as_tensor(np.arange(k, k + each) % net.slots[0]) for k in range(20)]
    before, peak0 = trimmed_gb(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    with torch.no_grad():
        out = net.policy_rows_of(h, list(range(20)), [0] * 20, slots)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {
        "rows": int(out.shape[0]),
        "rss_before_gb": round(before, 3),
        "peak_before_gb": round(peak0, 3),
        "peak_after_gb": round(peak, 3),
        "peak_rise_gb": round(peak - max(peak0, before), 3),
        "rows_per_product": ROWS_PER_PRODUCT,
        "expected_gb": round(min(out.shape[0], ROWS_PER_PRODUCT) * net.num_actions * cfg.net.width * 4 / 2**30, 3),
    }


def write_breakdown_md(result: dict, out: str) -> None:
    g = result["rss_gb"]
    freed = {
        "the CFR arrays of its expansions": g["after_game"] - g["cfr_arrays_dropped"],
        "the arrays derived from its public states (public tensor, slots, legal rows)": g["cfr_arrays_dropped"]
        - g["derived_dropped"],
        "the rest: worlds (game states), information-state strings, expansions' lists": g["derived_dropped"]
        - g["index_emptied"],
    }
    lines = [
        f"# {out}: what a London SoG run's kept index holds after one self-play game",
        "",
        f"Preset `sog_scotland_yard_london`, seed {result['seed']}, game {result['index']} of the run "
        f"(untrained network), played on the trainer's kept index; {result['machine']}, {where(result)}. Commit "
        f"{result['commit']}, written {result['date']}. Command: "
        f"`python benchmarks/sog_london_memory.py {result['argv']}`. Resident memory after garbage "
        "collection and `malloc_trim`.",
        "",
        "| resident memory | GB |",
        "|---|---:|",
        *(f"| {k} | {v:.3f} |" for k, v in g.items()),
        "",
        f"The index after the game: {result['worlds']:,} worlds in {result['public_states']:,} public states, "
        f"{result['info_state_strings']:,} information-state strings; arrays counted: derived "
        f"{result['derived_array_mb']:.1f} MB, CFR {result['cfr_array_mb']:.1f} MB. Dropped in turn, they gave "
        f"back (GB): "
        + "; ".join(f"{k} {v:.3f}" for k, v in freed.items())
        + f". In all {result['bytes_per_world']:,} bytes a kept world.",
        "",
        f"The game's {result['examples']} examples in the replay window: {result['example_fixed_bytes']:,} bytes "
        f"each in its fixed arrays, and their policy and legal rows {result['example_rows_bytes_mean']:,} bytes "
        f"on average ({result['example_rows_bytes_max']:,} at most); a window of the preset's capacity "
        f"filled with examples like these: {result['window_at_capacity_gb']} GB. Its {result['queries']} queries "
        f"as the buffer keeps them: {result['query_bytes_mean']:,} bytes each on average (arrays).",
    ]
    (RESULTS / f"{out}.md").write_text("\n".join(lines) + "\n")


def emptied(steps: list[dict]) -> int:
    """Times the index was emptied between steps (its worlds fell)."""
    return sum(b["worlds"] < a["worlds"] for a, b in zip(steps, steps[1:]))


def where(result: dict) -> str:
    """The process's niceness and the machine's load, as the result recorded them
    (results written before it did ran at nice 10 on a core shared with other jobs)."""
    if "nice" not in result:
        return "one core shared with other jobs at nice 10"
    start, end = result["load_1min"]
    return f"nice {result['nice']}, 1-minute load average {start} at the start and {end} at the end"


def write_md(result: dict, out: str) -> None:
    end, steps, samples = result["index_at_end"], result["steps"], result["samples"]
    most = max(samples + steps, key=lambda r: r["worlds"], default={"worlds": 0, "rss_gb": 0.0})
    lines = [
        f"# {out}: memory of a Student of Games training run on London",
        "",
        f"Preset `sog_scotland_yard_london`, seed {result['seed']}, the preset's settings "
        f"(index bound `max_worlds` {end['max_worlds']:,}); {result['machine']}, {where(result)}. "
        f"Commit {result['commit']}, written {result['date']}. Command: "
        f"`python benchmarks/sog_london_memory.py {result['argv']}`.",
        "",
        f"Stopped by: {result['stopped_by']} after {len(steps)} learning steps, "
        f"{result['cpu_s']:,} CPU s ({result['wall_s']:,} s wall). Peak resident memory "
        f"{result['peak_rss_gb']} GB; resident memory sampled every few seconds: "
        f"{min(r['rss_gb'] for r in samples):.2f} to {max(r['rss_gb'] for r in samples):.2f} GB "
        f"({len(samples)} samples, {sum(r['rss_gb'] > 3.0 for r in samples)} above 3 GB). "
        f"The index held at most {most['worlds']:,} worlds (a sample or a "
        f"step's end) and was emptied {emptied(steps)} times between steps.",
        "",
        f"At the end the index held {end['worlds']:,} worlds in {end['public_states']:,} public states; "
        f"emptying it, collecting garbage and trimming the allocator took resident memory from "
        f"{end['rss_before_gb']} to {end['rss_after_gb']} GB: the index and whatever the run had freed "
        f"but the allocator still kept, so at most {end['bytes_per_world'] or 0:,} bytes a kept world "
        "(`--breakdown` measures the index alone).",
        "",
        "| step | games | positions | solves | CPU s | resident GB | index worlds | index public states "
        "| query buffer |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in steps:
        lines.append(
            f"| {r['step']} | {r['games']} | {r['positions']} | {r['solves']} | {r['cpu_s']:,} | "
            f"{r['rss_gb']:.2f} | {r['worlds']:,} | {r['public_states']:,} | {r['query_buffer']} |"
        )
    (RESULTS / f"{out}.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu-minutes", type=float, default=35.0)
    parser.add_argument("--wall-minutes", type=float, default=70.0)
    parser.add_argument("--max-rss-gb", type=float, default=6.0)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    parser.add_argument("--max-worlds", type=int, default=None, help="override the index's bound (worlds)")
    parser.add_argument("--out", default="sog_london_memory")
    parser.add_argument("--report", action="store_true", help="only rewrite OUT.md from OUT.json")
    parser.add_argument("--breakdown", action="store_true", help="one game (--index) and what the index holds")
    parser.add_argument("--index", type=int, default=0, help="--breakdown, --repeat: the run's game number")
    parser.add_argument("--repeat", type=int, default=0, help="play game --index this many times (json only)")
    parser.add_argument("--gather-rows", type=int, default=0, help="peak of one policy_rows_of (json only)")
    args = parser.parse_args()
    if args.report:
        write_md(json.loads((RESULTS / f"{args.out}.json").read_text()), args.out)
        return
    load_start = os.getloadavg()[0]
    if args.gather_rows:
        result = gather(args)
    else:
        result = repeat(args) if args.repeat else breakdown(args) if args.breakdown else train(args)
    result.update(
        seed=args.seed, commit=git_commit(), date=utcnow(), machine=machine_line(), argv=" ".join(sys.argv[1:])
    )
    result.update(nice=os.nice(0), load_1min=[round(load_start, 2), round(os.getloadavg()[0], 2)])
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=1) + "\n")
    if not args.repeat and not args.gather_rows:
        (write_breakdown_md if args.breakdown else write_md)(result, args.out)
    print(json.dumps({k: v for k, v in result.items() if k not in ("steps", "samples")}))


if __name__ == "__main__":
    main()
