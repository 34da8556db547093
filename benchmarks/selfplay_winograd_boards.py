"""Where Winograd's convolutions pay, by board and batch: AlphaZero's default residual
tower (3 blocks of 64 channels) on each game's board through ONNX Runtime, the direct
convolution against F(m x m, 3 x 3) at each tile m, the network alone in one process
and one thread, arms interleaved, timed by the process's CPU time
(:func:`selfplay_winograd.time_arms`). What `net.winograd = "auto"` decides from
(polyzero.nets.winograd.chosen_tile): self-play's batches are its concurrent games less
the rows the cache answers.

  python benchmarks/selfplay_winograd_boards.py --out benchmarks/results/selfplay_winograd_boards.json
  python benchmarks/selfplay_winograd_boards.py --game tic_tac_toe --batches 8 --rounds 2 --out /tmp/b.json  # smoke
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import timing_meta, write_results  # noqa: E402
from polyzero.algos import make_algorithm  # noqa: E402
from polyzero.config import build_config  # noqa: E402
from polyzero.games import load_game  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.nets.winograd import axis_tile  # noqa: E402
from selfplay_winograd import string_keys, tiles_and_batches, time_arms  # noqa: E402

GAMES = ["tic_tac_toe", "hex(board_size=5)", "connect_four", "hex(board_size=7)", "go(board_size=9)"]
TOWER = ["net.kind=resnet", "net.block=basic", "net.channels=64", "net.blocks=3"]


def board_algo(game: str):
    """AlphaZero with the default residual tower on `game`'s board."""
    cfg = build_config(game, "alphazero", overrides=TOWER)
    return make_algorithm(cfg, load_game(cfg.game))


def render(out: dict) -> str:
    m = out["meta"]
    lines = [
        "# Winograd's convolutions by board and batch: the network alone",
        "",
        f"- command: `{m['command']}`",
        f"- machine: {m['machine'].get('Model name', '?')}, {m['machine'].get('CPU(s)')} CPUs, shared with other "
        f"jobs; one thread; load average start/end {m['loadavg_start'][0]:.1f} / {m['loadavg_end'][0]:.1f}",
        f"- AlphaZero's untrained residual tower ({', '.join(TOWER)}) through ONNX Runtime, {m['rounds']} rounds, "
        "the arms one call each per round; medians of the process's CPU time per call, and each Winograd "
        "arm's speed-up over the direct convolution (its CPU time over the arm's)",
        "",
    ]
    for game, r in out["result"].items():
        first = r["arms"][0]
        shape = "x".join(map(str, r["obs_shape"]))
        tiles = ", ".join(f"m = {m}: {a}" for m, a in r["arm_of_tile"].items() if m != "0")
        lines += [f"## {game} (planes x rows x columns {shape}; {tiles})", ""]
        lines += ["| batch | " + " | ".join(r["arms"]) + " |", "|---:|" + "---:|" * len(r["arms"])]
        for b in r["batches"]:
            cells = []
            for n in r["arms"]:
                c = r["cpu_ms_median"][n][str(b)]
                ratio = r["cpu_ms_median"][first][str(b)] / c
                cells.append(f"{c:.2f} ms" + ("" if n == first else f", **{ratio:.2f}x**"))
            lines.append(f"| {b} | " + " | ".join(cells) + " |")
        lines += [
            "| largest output difference from PyTorch eager | "
            + " | ".join(f"{r['max_abs_error_vs_eager'][n]:.1e}" for n in r["arms"])
            + " |",
            "",
        ]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", action="append", help=f"a game (repeat; default: {', '.join(GAMES)})")
    ap.add_argument("--tiles", default="0,4,6", help="m of each arm (0: the direct convolution)")
    ap.add_argument("--batches", default="1,8,16,24,32,48,64")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out", default="benchmarks/results/selfplay_winograd_boards.json")
    args = ap.parse_args(argv)
    tiles, batches = tiles_and_batches(ap, args)
    if args.rounds < 1 or min(batches) < 1:
        ap.error("--rounds and the batches must be positive")
    set_threads(1)
    meta = timing_meta(argv, rounds=args.rounds)
    result = {}
    for game in args.game or GAMES:
        algo = board_algo(game)
        r = time_arms(algo, tiles, batches, args.rounds, publications=1)
        r["obs_shape"] = list(algo.encoder.shape)
        _, h, w = algo.encoder.shape
        r["arm_of_tile"] = {str(m): f"F({axis_tile(h, m)}x{axis_tile(w, m)},3x3)" if m else "direct" for m in tiles}
        string_keys(r)
        result[game] = r
        print(game, r["cpu_ms_median"], flush=True)
    meta["loadavg_end"] = os.getloadavg()
    out = {"meta": meta, "result": result}
    write_results(args.out, out, render(out))
    print(render(out))


if __name__ == "__main__":
    main()
