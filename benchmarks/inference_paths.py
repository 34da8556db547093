"""Inference paths: every `net.inference` backend on every network shape, in one process.

For each network entry point (the anchor's tiny MuZero MLP, the shipped presets'
AlphaZero and MuZero towers, MuZero's h and g + f, NDMZ's g + f) and each batch size,
every path (:mod:`polyzero.nets.compiled`: eager, TorchScript frozen, oneDNN Graph,
inductor, ONNX Runtime) is built from the same weights, checked against eager (max abs
difference over all outputs), then timed interleaved (blocked round-robin, the anchor
harness's method; medians). Also the cost of a weight refresh (what every learning
step costs an actor: load_state_dict, then the rebuild at the next call) and of the
first build.

  python benchmarks/inference_paths.py                              # full (inductor compiles: minutes)
  python benchmarks/inference_paths.py --quick --out /tmp/ip.json   # smoke run
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tinynet  # noqa: E402
from common import command_line, machine_info, summarize, time_interleaved, write_results  # noqa: E402
from polyzero.algos import make_algorithm  # noqa: E402
from polyzero.config import build_config  # noqa: E402
from polyzero.games import load_game  # noqa: E402
from polyzero.nets import (
    muzero as muzero_nets,  # noqa: E402
    ndmz as ndmz_nets,
)
from polyzero.nets.compiled import CompiledCall  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402

PATHS = ("eager", "script", "onednn", "onnx", "inductor")


def _preset_net(game: str, algo_name: str):
    cfg = build_config(game, algo_name)
    algo = make_algorithm(cfg, load_game(cfg.game))
    torch.manual_seed(0)
    return algo.build_network().eval()


def entry_points(names):
    """name -> (make(): a fresh module with the same weights each time, input dtypes,
    inputs(B, rng): NumPy arrays)."""
    out = {}

    def add(name, make, dtypes, inputs):
        if name in names:
            out[name] = (make, dtypes, inputs)

    tiny = tinynet.make_params()
    add(
        "tiny_mlp_recurrent",
        lambda: tinynet.TinyMuZeroNet(tiny).eval(),
        (np.float32, np.int64),
        lambda b, r: (r.standard_normal((b, tinynet.HID), np.float32), r.integers(0, tinynet.A, b)),
    )
    for game, algo_name, label in (
        ("connect_four", "alphazero", "alphazero_connect_four"),
        ("tic_tac_toe", "alphazero", "alphazero_tic_tac_toe_mlp"),
    ):
        net = _preset_net(game, algo_name)
        state = net.state_dict()
        add(
            label,
            lambda g=game, a=algo_name, s=state: _loaded(_preset_net(g, a), s),
            (np.float32,),
            lambda b, r, shape=net.obs_shape: (r.random((b, *shape), np.float32),),
        )
    for game, label in (("connect_four", "muzero_connect_four"), ("tic_tac_toe", "muzero_tic_tac_toe_mlp")):
        net = _preset_net(game, "muzero")
        state, hid = net.state_dict(), int(np.prod(net.hidden_shape))
        make = lambda g=game, s=state: _loaded(_preset_net(g, "muzero"), s)  # noqa: E731
        add(
            f"{label}_initial",
            lambda m=make: muzero_nets._Initial(m()),
            (np.float32,),
            lambda b, r, shape=net.obs_shape: (r.random((b, *shape), np.float32),),
        )
        add(
            f"{label}_recurrent",
            lambda m=make: muzero_nets._Recurrent(m()),
            (np.float32, np.int64),
            lambda b, r, h=hid, a=net.num_actions: (r.random((b, h), np.float32), r.integers(0, a, b)),
        )
    nd = _preset_net("nannon", "ndmz")
    nd_state = nd.state_dict()
    add(
        "ndmz_nannon_recurrent",
        lambda s=nd_state: ndmz_nets._Recurrent(_loaded(_preset_net("nannon", "ndmz"), s)),
        (np.float32, np.int64),
        lambda b, r: (r.standard_normal((b, nd.spec.hidden_size), np.float32), r.integers(0, nd.num_actions, b)),
    )
    return out


def _loaded(net, state):
    net.load_state_dict(state)
    return net.eval()


def max_err(a, b) -> float:
    return max(float(np.abs(x.astype(np.float64) - y).max()) if x.size else 0.0 for x, y in zip(a, b))


def refresh_ms(call: CompiledCall, module, args, repeats: int) -> float:
    """Median ms of a weight refresh: load_state_dict of the same weights into the live
    module, refresh(), and the call after it, less a plain call."""
    state = {k: v.clone() for k, v in module.state_dict().items()}
    total, plain = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        module.load_state_dict(state)
        call.refresh()
        call(*args)
        total.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        call(*args)
        plain.append(time.perf_counter() - t0)
    return (statistics.median(total) - statistics.median(plain)) * 1e3


def run_entry(name, make, dtypes, inputs, paths, batches, args):
    rng = np.random.default_rng(0)
    sets = {b: [inputs(b, rng) for _ in range(4)] for b in batches}
    calls, rows = {}, []
    build, failed = {}, {}
    for path in paths:
        module = make()
        call = CompiledCall(module, dtypes, path)
        t0 = time.perf_counter()
        try:
            for b in batches:
                call(*sets[b][0])
        except Exception as e:  # noqa: BLE001 -- a backend that cannot run this graph is a result
            failed[path] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            print(f"{name}: {path} failed: {failed[path]}", flush=True)
            continue
        build[path] = time.perf_counter() - t0
        calls[path] = (call, module)
        print(f"{name}: built {path} in {build[path]:.2f} s", flush=True)
    for b in batches:
        ref = calls["eager"][0](*sets[b][0])
        errs = {p: max_err(c(*sets[b][0]), ref) for p, (c, _) in calls.items()}
        jobs = [(p, c, sets[b]) for p, (c, _) in calls.items()]
        ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, max_rounds=400)
        row = {"entry": name, "B": b, "probe_ms": statistics.median(probe)}
        for p in calls:
            row[p] = {**summarize(ts[p]), "max_abs_err_vs_eager": errs[p]}
        rows.append(row)
        eager_ms = row["eager"]["median_s"] * 1e3
        print(
            f"{name} B={b:4d}  "
            + "  ".join(
                f"{p} {row[p]['median_s'] * 1e3:8.3f} ms ({eager_ms / (row[p]['median_s'] * 1e3):.2f}x, "
                f"err {errs[p]:.1e})"
                for p in calls
            )
            + f"  (probe {row['probe_ms']:.2f} ms)",
            flush=True,
        )
    refresh = {
        p: refresh_ms(c, m, sets[16 if 16 in batches else batches[0]][0], args.refresh_repeats)
        for p, (c, m) in calls.items()
    }
    print(f"{name}: refresh ms " + ", ".join(f"{p} {v:.1f}" for p, v in refresh.items()), flush=True)
    return {"entry": name, "build_s": build, "refresh_ms": refresh, "rows": rows, "failed": failed}


def _path_cell(row: dict, path: str) -> str:
    """A path's median ms at one batch size, its speed-up over eager and its largest
    difference from eager."""
    if path not in row:
        return "failed"
    t = row[path]
    speedup = row["eager"]["median_s"] / t["median_s"]
    return f"{t['median_s'] * 1e3:.3f} ({speedup:.2f}x, err {t['max_abs_err_vs_eager']:.0e})"


def render_markdown(result) -> str:
    m = result["meta"]
    paths = m["paths"]
    lines = [
        "# Inference paths: every `net.inference` backend, same weights, one process",
        "",
        f"- machine: {m['machine'].get('Model name', '?')}, {m['machine'].get('CPU(s)')} CPUs; "
        f"torch {m['torch']}, onnxruntime {m.get('onnxruntime', '-')}; {m['threads']} thread(s)",
        f"- command: `{m['command']}`",
        f"- load average start/end: {m['loadavg_start']} / {m.get('loadavg_end')}",
        "- median ms per call, all paths interleaved (blocked round-robin) at each batch size; "
        "in brackets the speed-up over eager; err: max abs difference from eager over all outputs",
        "",
    ]
    for e in result["entries"]:
        lines += [
            f"## {e['entry']}",
            "",
            "| B | " + " | ".join(paths) + " | probe ms |",
            "|---:|" + "---:|" * len(paths) + "---:|",
        ]
        for r in e["rows"]:
            lines.append(f"| {r['B']} | " + " | ".join(_path_cell(r, p) for p in paths) + f" | {r['probe_ms']:.2f} |")
        lines += [
            "",
            "first build (and first call at each batch size) s: "
            + ", ".join(f"{p} {v:.2f}" for p, v in e["build_s"].items()),
            "",
            "weight refresh ms (load_state_dict + rebuild at the next call, less a plain call): "
            + ", ".join(f"{p} {v:.1f}" for p, v in e["refresh_ms"].items()),
            "",
        ]
        lines += [f"{p} failed: `{why}`" for p, why in e["failed"].items()] + ([""] if e["failed"] else [])
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--entries",
        default="tiny_mlp_recurrent,alphazero_connect_four,alphazero_tic_tac_toe_mlp,"
        "muzero_connect_four_initial,muzero_connect_four_recurrent,muzero_tic_tac_toe_mlp_recurrent,"
        "ndmz_nannon_recurrent",
    )
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--batch-sizes", default="1,16,64,256")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--min-total-s", type=float, default=2.0)
    ap.add_argument("--min-calls", type=int, default=20)
    ap.add_argument("--refresh-repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smoke run: two entries, no inductor, short timings")
    ap.add_argument("--out", default="benchmarks/results/inference_paths.json")
    args = ap.parse_args(argv)
    if args.quick:
        args.entries, args.paths = "tiny_mlp_recurrent,alphazero_connect_four", "eager,script,onnx"
        args.batch_sizes, args.min_total_s, args.min_calls, args.refresh_repeats = "1,16", 0.3, 5, 2
    set_threads(args.threads)
    paths = args.paths.split(",")
    if "eager" not in paths:
        paths.insert(0, "eager")
    batches = [int(b) for b in args.batch_sizes.split(",")]
    meta = {
        "command": command_line(argv),
        "machine": machine_info(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "paths": paths,
        "loadavg_start": os.getloadavg(),
    }
    try:
        import onnxruntime

        meta["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        paths = [p for p in paths if p != "onnx"]
    entries = []
    for name, (make, dtypes, inputs) in entry_points(args.entries.split(",")).items():
        entries.append(run_entry(name, make, dtypes, inputs, paths, batches, args))
    meta["loadavg_end"] = os.getloadavg()
    result = {"meta": meta, "entries": entries}
    write_results(args.out, result, render_markdown(result))


if __name__ == "__main__":
    main()
