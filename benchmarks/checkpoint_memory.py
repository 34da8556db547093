"""Memory a checkpoint of an Atari-shaped MuZero replay takes on top of the replay itself:
the old way (`replay.to_bytes()`, then the bytes written) against the streamed write
(`replay.write_npz` into the checkpoint's file), and a resume's load of that file the old
way (`load_bytes(path.read_bytes())` as it was: every array read whole, then copied into
the ring) against `load_npz(path)` (each array read into the ring a chunk at a time).

Each arm runs in a process of its own, pinned to one core: it builds the replay the
atari-breakout preset's MuZero builds (its observation shape), fills it with random
positions, resets the process's peak resident memory (/proc/self/clear_refs) and then
checkpoints (or loads); the arm's number is the peak (VmHWM) minus the resident memory of
the filled replay (for a load: the memory before it plus the replay's filled bytes).

    python benchmarks/checkpoint_memory.py              # about a minute
    python benchmarks/checkpoint_memory.py --positions 4096 --core 0

Writes benchmarks/results/checkpoint_memory.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PY, RESULTS, machine, machine_line, taskset, utcnow, write_results  # noqa: E402

ARMS = {
    "save_bytes": "checkpoint: replay.to_bytes(), then written (before)",
    "save_streamed": "checkpoint: replay.write_npz streamed into the file (now)",
    "load_bytes": "resume: the file's bytes read whole, each array read whole, then copied in (before)",
    "load_file": "resume: load_npz(path) (now)",
}
MiB = 2**20


def _status(field: str) -> int:
    """A /proc/self/status memory field, in bytes."""
    with open("/proc/self/status") as f:
        line = next(x for x in f if x.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def _replay(positions: int):
    from polyzero.algos import make_algorithm
    from polyzero.config import build_config
    from polyzero.games import load_game

    cfg = build_config("atari-breakout", "muzero", overrides=[f"train.replay_size={positions}"])
    return make_algorithm(cfg, load_game(cfg.game)).make_replay()


def _fill(replay, rng, chunk: int = 256) -> None:
    """Segments of random positions, of the replay's own shapes and dtypes, until full."""
    import numpy as np

    while len(replay) < replay.capacity:
        n = min(chunk, replay.capacity - len(replay))
        segment = {}
        for key in replay.STEP_KEYS:
            like = replay.data[key]
            segment[key] = (rng.random((n, *like.shape[1:])) * 4).astype(like.dtype)
        segment.update(sampleable=np.ones(n, bool), done=np.array([True]))
        replay.add(segment)


def _load_before(replay, path: Path) -> None:
    """What `load_bytes(path.read_bytes())` did before `load_npz`: the file's bytes, then
    each array whole (`f[name]`), copied into the ring."""
    import io

    import numpy as np

    with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as f:
        replay.next_abs = int(f["_meta"][0])
        for k, arr in replay.data.items():
            if k in f.files:
                arr[: len(replay)] = f[k]


def _filled_bytes(replay) -> int:
    return sum(v[: len(replay)].nbytes for v in replay.data.values())


def arm(name: str, positions: int, work: Path) -> dict:
    """One arm in this process; returns its measurements."""
    import gc

    import numpy as np

    from polyzero.train import checkpoint as ckpt

    replay = _replay(positions)
    path = work / "checkpoints" / "step_000001" / "replay.npz"
    if name.startswith("save"):
        _fill(replay, np.random.default_rng(0))
    gc.collect()
    before = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    t0 = time.perf_counter()
    if name == "save_bytes":
        ckpt.save_checkpoint(work, 1, {"replay.npz": replay.to_bytes(), "state.json": b"{}"}, keep=1)
    elif name == "save_streamed":
        ckpt.save_checkpoint(work, 1, {"replay.npz": replay.write_npz, "state.json": b"{}"}, keep=1)
    elif name == "load_bytes":
        _load_before(replay, path)
    else:
        replay.load_npz(path)
    seconds = time.perf_counter() - t0
    peak = _status("VmHWM")
    filled = _filled_bytes(replay)
    base = before if name.startswith("save") else before + filled  # the filled replay's resident memory
    return {
        "positions": len(replay),
        "replay_bytes": filled,
        "bytes_per_position": filled / max(len(replay), 1),
        "file_bytes": path.stat().st_size,
        "rss_before": before,
        "peak_rss": peak,
        "peak_above_replay": peak - base,
        "seconds": seconds,
    }


def report(result: dict) -> str:
    arms = result["arms"]
    first = arms["save_streamed"]
    lines = [
        "# Checkpoint memory: the replay streamed into replay.npz",
        "",
        f"- machine: {machine_line()}, {result['machine'].get('mem_total', '?')} memory; "
        f"each arm one process pinned to core {result['core']}",
        f"- command: `{result['command']}`",
        f"- replay: the atari-breakout preset's MuZero replay (observation 8 x 96 x 96 float32), "
        f"{first['positions']} random positions, {first['bytes_per_position'] / 1000:.0f} KB a position, "
        f"{first['replay_bytes'] / MiB:.0f} MiB in all; replay.npz {first['file_bytes'] / MiB:.0f} MiB",
        "- peak above replay: peak resident memory (VmHWM) during the arm minus the resident memory of "
        "the filled replay",
        "",
        "| arm | peak above replay (MiB) | x replay | seconds |",
        "|---|---:|---:|---:|",
    ]
    for name, what in ARMS.items():
        a = arms[name]
        lines.append(
            f"| {what} | {a['peak_above_replay'] / MiB:.0f} | {a['peak_above_replay'] / a['replay_bytes']:.2f} "
            f"| {a['seconds']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # 3072: the old resume arm peaks near 3 x the replay; the machine's other work leaves ~4 GB
    ap.add_argument("--positions", type=int, default=3072, help="replay positions (295 KB each)")
    ap.add_argument("--core", type=int, default=0, help="the core every arm is pinned to")
    ap.add_argument("--out", type=Path, default=RESULTS / "checkpoint_memory.json")
    ap.add_argument("--arm", choices=list(ARMS), help=argparse.SUPPRESS)  # one arm, in a subprocess
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.arm:
        print(json.dumps(arm(args.arm, args.positions, args.work)))
        return
    result = {
        "when": utcnow(),
        "machine": machine(),
        "core": args.core,
        "command": " ".join(["python", *sys.argv]),
        "arms": {},
    }
    with tempfile.TemporaryDirectory() as work:
        for name in ARMS:  # the loads read the file the streamed save wrote
            cmd = [*taskset(args.core), PY, __file__, "--arm", name, "--positions", str(args.positions)]
            out = subprocess.run([*cmd, "--work", work], check=True, capture_output=True, text=True).stdout
            result["arms"][name] = json.loads(out.strip().splitlines()[-1])
            a = result["arms"][name]
            print(f"{name}: {a['peak_above_replay'] / MiB:.0f} MiB above the replay, {a['seconds']:.1f} s", flush=True)
    write_results(args.out, result, report(result))


if __name__ == "__main__":
    main()
