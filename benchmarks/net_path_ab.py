"""The tiny MLP's network path, before and after a change, against XLA's loop: one process.

Issue 60's CPU target: polyzero's network-alone time at or below XLA's loop for the
anchor's tiny MuZero MLP (``tinynet``) at B = 16 and B = 256. The alone mode of
``search_throughput.py`` times each library in its own process, one after the other,
so on a shared machine its ratio mixes two loads. Here every arm runs in one process,
interleaved in short blocks over many rounds (medians; load averages printed), each
arm being 1 initial + n recurrent inferences at batch B:

* ``after``: the MLP programs (``polyzero.search.kernels.mlp.run_program`` of this
  tree) in one compiled loop, as the fused search runs them (the network alone);
* ``before``: the same loop over ``run_program`` of another revision's kernel
  (``--before REV``, loaded from git, with that revision's ``kernels.panels``), the
  same programs;
* ``chained``: ``after``'s loop with each recurrent inference's state taken from the
  last one's output (a sequential copy), as XLA's loop chains them, instead of the
  gather of random parents' states: the network alone, like for like with ``xla``;
* ``onnx``: the per-simulation loop over ONNX Runtime (``compiled:onnx``), the path
  ``net.inference = auto`` took above ``search.fused.FUSED_MAX_BATCH`` trees before;
* ``xla``: mctx's network work alone, root_fn + n recurrent_fn in one jitted fori_loop.

Every library gets one thread (``common.ONE_THREAD``, torch, numba and SciPy's BLAS)
and XLA runs on the calling thread (no async dispatch); each call is timed by the CPU
time the process spent in it (``time.process_time``), not the wall clock, which on
the shared machine counts the time other sessions' jobs held the core.

Usage:
  python benchmarks/net_path_ab.py --before d81ad30 --out benchmarks/results/net_path_ab.json
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ONE_THREAD, ROOT, machine_info, shared_machine_header, summarize, time_interleaved, write_results  # noqa: E402

os.environ.update(ONE_THREAD)  # before jax, torch and OpenBLAS start their pools
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numba as nb  # noqa: E402
import numpy as np  # noqa: E402

import tinynet  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.search.kernels import mlp  # noqa: E402
from search_throughput_jobs import PolyzeroMuZero, net_alone_fn  # noqa: E402

# Each call's CPU time (the process's, every thread of it): on the shared machine the
# wall time of a call includes the slices the scheduler gave other sessions' jobs.
CLOCK = time.process_time


PANELS_IMPORT = "from polyzero.search.kernels.panels import"


def _git_show(rev: str, path: str) -> str:
    return subprocess.run(["git", "show", f"{rev}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _module_from(src: str, name: str, tmp: str):
    path = os.path.join(tmp, f"{name}.py")
    with open(path, "w") as fh:
        fh.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def kernel_at(rev: str, tmp: str):
    """``polyzero/search/kernels/mlp.py`` of git revision `rev` as a module of its own
    (the kernel imports numpy, numba, math and, from 2026-11-29, ``kernels.panels``:
    that revision's panels then, loaded beside it, not this tree's)."""
    src = _git_show(rev, "polyzero/search/kernels/mlp.py")
    tag = re.sub(r"\W", "_", rev)  # HEAD~1, origin/main: module names of identifier characters
    if PANELS_IMPORT in src:
        _module_from(_git_show(rev, "polyzero/search/kernels/panels.py"), f"panels_{tag}", tmp)
        src = src.replace(PANELS_IMPORT, f"from panels_{tag} import")
    return _module_from(src, f"mlp_{tag}", tmp)


@nb.njit
def _net_loop(run, init, rec, obs, store, idx, acts, num_simulations):
    """1 initial + num_simulations recurrent inferences through `run` (a run_program),
    each recurrent one gathering its rows' states from `store` as the fused search does.
    init / rec: (ops, weights, scratch) of the two programs."""
    rows, d = obs.shape
    d0 = init[0][0, 2]  # block 0's width as the first layer reads it (padded from 2026-11-29)
    x0 = init[2][: rows * d0].reshape((rows, d0))
    x0[:, :d] = obs
    x0[:, d:] = 0.0
    run(init[0], init[1], init[2], rows)
    h = store.shape[1]
    w0 = rec[0][0, 2]
    x = rec[2][: rows * w0].reshape((rows, w0))
    for i in range(num_simulations):
        k = i % idx.shape[0]
        for r in range(rows):
            for j in range(h):
                x[r, j] = store[idx[k, r], j]
            for j in range(h, w0):
                x[r, j] = 0.0
            x[r, h + acts[k, r]] = 1.0
        run(rec[0], rec[1], rec[2], rows)


def program_arm(kernel, batch: int, num_simulations: int, chained: bool = False):
    """The network alone through the programs that `kernel` (a kernels.mlp module) writes
    and runs: fn(obs). Each recurrent inference gathers random parents' states from a
    store of 8 B states, or with `chained` copies the last one's new states in order."""
    run = kernel.run_program
    initial, recurrent = tinynet.programs(kernel=kernel)
    rng = np.random.default_rng(tinynet.SEED + 1)
    store = rng.standard_normal((batch * 8, tinynet.HID)).astype(np.float32)
    idx = rng.integers(0, batch * 8, (8, batch))
    acts = rng.integers(0, tinynet.A, (8, batch))
    init = (initial.ops, initial.weights, initial.scratch(batch))
    rec = (recurrent.ops, recurrent.weights, recurrent.scratch(batch))
    if chained:  # the recurrent program's own output block (a view of its scratch), row r from row r
        store = kernel.output(rec[2], batch, recurrent.outs, kernel.HIDDEN_OUT)
        idx = np.tile(np.arange(batch), (8, 1))

    def fn(obs):
        _net_loop(run, init, rec, obs, store, idx, acts, num_simulations)

    fn(tinynet.make_obs(batch))  # compile
    return fn


def xla_arm(batch: int, num_simulations: int):
    """XLA's loop: fn(obs) with obs already a jax array (converted once, as the alone
    mode's child does)."""
    import jax
    import jax.numpy as jnp

    params = jax.tree_util.tree_map(jnp.asarray, tinynet.make_params())
    loop = tinynet.mctx_policy(num_simulations, net_loop=True)
    key, mask = jax.random.PRNGKey(42), jnp.zeros((batch, tinynet.A), bool)

    def fn(obs):
        loop(params, key, obs, mask)

    fn(jnp.asarray(tinynet.make_obs(batch)))  # compile
    return fn


def _cpu_sync() -> None:
    """XLA runs each call on the calling thread: with async dispatch (the default) a call
    handed to a worker thread waited milliseconds for the scheduler on the loaded machine
    (8 ms against ~1 ms at B = 16), which is the machine, not the compiled loop."""
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)


def jnp_array(x):
    import jax.numpy as jnp

    return jnp.asarray(x)


def outputs_agree(before, batch: int) -> float:
    """Max abs difference of the recurrent outputs, this tree's kernel vs `before`'s, on
    one batch (both within ~1e-6 of PyTorch: tests/test_fused_search.py)."""
    rng = np.random.default_rng(3)
    hidden = rng.standard_normal((batch, tinynet.HID)).astype(np.float32)
    action = rng.integers(0, tinynet.A, batch)
    outs = []
    for kernel in (mlp, before):
        _, rec = tinynet.programs(kernel=kernel)
        scratch = rec.scratch(batch)
        kernel.recurrent_rows(rec.ops, rec.weights, scratch, hidden, action, batch, tinynet.A)
        outs.append(np.concatenate([kernel.output(scratch, batch, rec.outs, k).ravel() for k in range(4)]))
    return float(np.abs(outs[0] - outs[1]).max())


def row(args, before, batch: int, n: int) -> dict:
    arms = {"after": program_arm(mlp, batch, n), "before": program_arm(before, batch, n)}
    arms["chained"] = program_arm(mlp, batch, n, chained=True)
    if batch > 64:
        arms["onnx"] = net_alone_fn(tinynet.TinyNetNumpy("compiled:onnx"), n, batch)
    arms["xla"] = xla_arm(batch, n)
    obs = [tinynet.make_obs(batch, seed=s) for s in range(4)]
    jobs = [(name, fn, [(o,) for o in obs]) for name, fn in arms.items() if name != "xla"]
    jobs.append(("xla", arms["xla"], [(jnp_array(o),) for o in obs]))
    load0 = os.getloadavg()
    ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, args.max_rounds, args.block_s, clock=CLOCK)
    out = {"B": batch, "num_simulations": n, "loadavg": [load0, os.getloadavg()], "probe_ms": statistics.median(probe)}
    out.update({name: summarize(t) for name, t in ts.items()})
    xla = out["xla"]["median_s"]
    out["vs_xla"] = {name: out[name]["median_s"] / xla for name in arms if name != "xla"}
    out["after_vs_before"] = out["after"]["median_s"] / out["before"]["median_s"]
    out["max_abs_diff_vs_before"] = outputs_agree(before, batch)
    print(
        f"B={batch} sims={n} "
        + "  ".join(f"{k} {out[k]['median_s'] * 1e3:.3f} ms" for k in arms)
        + "  / xla: "
        + "  ".join(f"{k} {v:.2f}" for k, v in out["vs_xla"].items())
        + f"  load {out['loadavg'][1][0]:.1f}",
        flush=True,
    )
    return out


def search_row(args, batch: int, n: int) -> dict:
    """The whole search, fused (every simulation and the network in one compiled call)
    against the per-simulation loop over ONNX Runtime, same batch: where
    ``search.fused.FUSED_MAX_BATCH`` should lie. Root visits compared first."""
    arms = {"fused": PolyzeroMuZero(tinynet.TinyNetNumpy("fused"), n)}
    arms["onnx_loop"] = PolyzeroMuZero(tinynet.TinyNetNumpy("compiled:onnx"), n)
    obs = [tinynet.make_obs(batch, seed=s) for s in range(4)]
    visits = [fn(obs[0]).root_visits for fn in arms.values()]
    jobs = [(name, fn, [(o,) for o in obs]) for name, fn in arms.items()]
    load0 = os.getloadavg()
    ts, _ = time_interleaved(jobs, args.min_calls, args.min_total_s, args.max_rounds, args.block_s, clock=CLOCK)
    out = {"B": batch, "num_simulations": n, "loadavg": [load0, os.getloadavg()]}
    out.update({name: summarize(t) for name, t in ts.items()})
    out["fused_vs_onnx_loop"] = out["fused"]["median_s"] / out["onnx_loop"]["median_s"]
    out["root_visits_equal"] = bool(np.array_equal(*visits))
    print(
        f"search B={batch} sims={n} fused {out['fused']['median_s'] * 1e3:.3f} ms  onnx loop "
        f"{out['onnx_loop']['median_s'] * 1e3:.3f} ms  ratio {out['fused_vs_onnx_loop']:.2f}  "
        f"visits equal {out['root_visits_equal']}",
        flush=True,
    )
    return out


def render(results) -> str:
    m = results["meta"]
    lines = [
        "# The tiny MLP's network path against XLA's loop, one process, interleaved",
        "",
        *shared_machine_header(m),
        f"- before: the programs and kernel of revision {m['before']}; "
        f"after: this tree's (BLAS from {m['blas_min_rows']} rows"
        + (", layers of 16k outputs on packed panels at every B)" if m.get("panels") else ")"),
        "",
        "Median CPU ms (process time) per 1 initial + n recurrent inferences at batch B (blocks of back-to-back calls, "
        "the arms round-robin, many rounds). after / before: the kernels of the fused search, each recurrent "
        "inference gathering random parents' states from a store as the search does; chained: after's "
        "programs, each state the last inference's output copied in order (as XLA's loop chains them); "
        "onnx: the per-simulation loop over ONNX Runtime (B > 64); xla: mctx's root_fn + n "
        "recurrent_fn in one jitted fori_loop. Ratio columns: arm / xla (target: after <= 1).",
        "",
        "| B | sims | after ms | before ms | chained ms | onnx ms | xla ms | after / xla | before / xla "
        "| chained / xla | onnx / xla | after / before | calls per arm | load avg (1 min, start-end) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results["rows"]:
        v = r["vs_xla"]
        arms = ("after", "before", "chained", "onnx", "xla")
        ms = [f"{r[k]['median_s'] * 1e3:.3f}" if k in r else "-" for k in arms]
        ratios = [f"**{v['after']:.2f}**", f"{v['before']:.2f}"]
        ratios += [f"{v[k]:.2f}" if k in v else "-" for k in ("chained", "onnx")]
        load = f"{r['loadavg'][0][0]:.1f}-{r['loadavg'][1][0]:.1f}"
        cells = [r["B"], r["num_simulations"], *ms, *ratios, f"{r['after_vs_before']:.2f}", r["after"]["n"], load]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines += ["", "Outputs, after vs before (max abs difference over the recurrent program's four outputs):", ""]
    lines += [
        f"- B = {r['B']}, {r['num_simulations']} sims: {r['max_abs_diff_vs_before']:.2e}" for r in results["rows"]
    ]
    if results.get("search_rows"):
        lines += ["", "The whole search, fused against the per-simulation loop over ONNX Runtime (CPU ms):", ""]
        lines += ["| B | sims | fused | ONNX loop | fused / ONNX loop | root visits equal | load avg |"]
        lines += ["|---:|---:|---:|---:|---:|---|---|"]
        for r in results["search_rows"]:
            load = f"{r['loadavg'][0][0]:.1f}-{r['loadavg'][1][0]:.1f}"
            fused, loop = r["fused"]["median_s"] * 1e3, r["onnx_loop"]["median_s"] * 1e3
            cells = [r["B"], r["num_simulations"], f"{fused:.3f}", f"{loop:.3f}", f"**{r['fused_vs_onnx_loop']:.2f}**"]
            lines.append("| " + " | ".join(str(c) for c in [*cells, r["root_visits_equal"], load]) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default="d81ad30", help="git revision of the kernel to compare with")
    ap.add_argument("--batch-sizes", default="16,256")
    ap.add_argument("--sims", default="16,64")
    ap.add_argument("--min-total-s", type=float, default=20.0)
    ap.add_argument("--min-calls", type=int, default=40)
    ap.add_argument("--max-rounds", type=int, default=400)
    ap.add_argument("--block-s", type=float, default=0.02)
    ap.add_argument("--search-batch-sizes", default="", help="also time the fused search against the ONNX loop")
    ap.add_argument("--search-sims", type=int, default=16)
    ap.add_argument("--out", default="benchmarks/results/net_path_ab.json")
    args = ap.parse_args(argv)
    try:  # before anything is set up or timed
        _git_show(args.before, "polyzero/search/kernels/mlp.py")
    except subprocess.CalledProcessError:
        ap.error(f"no kernels/mlp.py at git revision {args.before!r}")
    set_threads(1)
    _cpu_sync()
    meta = {
        "command": "benchmarks/net_path_ab.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "before": args.before,
        "blas_min_rows": mlp.BLAS_MIN_ROWS,
        "panels": hasattr(mlp, "PANEL"),
        "loadavg_start": os.getloadavg(),
        "numba": nb.__version__,
        "jax_cpu_enable_async_dispatch": False,
    }
    with tempfile.TemporaryDirectory() as tmp:
        before = kernel_at(args.before, tmp)
        rows = [
            row(args, before, b, n)
            for b in (int(x) for x in args.batch_sizes.split(",") if x)
            for n in (int(x) for x in args.sims.split(","))
        ]
    searches = [int(x) for x in args.search_batch_sizes.split(",") if x]
    search_rows = [search_row(args, b, args.search_sims) for b in searches]
    meta["loadavg_end"] = os.getloadavg()
    results = {"meta": meta, "rows": rows, "search_rows": search_rows}
    write_results(args.out, results, render(results))


if __name__ == "__main__":
    main()
