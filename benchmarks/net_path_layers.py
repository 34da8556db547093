"""The tiny MLP's recurrent program layer by layer: ours against XLA's, same shapes.

Where the network path's time goes (issue 60: polyzero's network-alone time against
XLA's loop). For every operation of the recurrent program at batch B, the same
operation K times in one compiled loop: ours ``run_program`` on that one operation,
XLA's the same ``act(x @ W + b)`` in a jitted ``fori_loop`` (each step's input
depends on the last step's output through one element, so that XLA cannot hoist the
product out of the loop). Then the whole program (ours) and the whole
``recurrent_fn`` (XLA). CPU time of the process, arms interleaved in blocks, medians;
one thread for every library, as ``net_path_ab.py``.

Usage:
  python benchmarks/net_path_layers.py --out benchmarks/results/net_path_layers.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ONE_THREAD, machine_info, shared_machine_header, time_interleaved, write_results  # noqa: E402

os.environ.update(ONE_THREAD)
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numba as nb  # noqa: E402
import numpy as np  # noqa: E402

import tinynet  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.search.kernels import mlp  # noqa: E402

ACT_NAMES = {mlp.ACT_NONE: "none", mlp.ACT_RELU: "relu", mlp.ACT_TANH: "tanh"}


@nb.njit
def _repeat(ops, weights, scratch, rows, reps):
    for _ in range(reps):
        mlp.run_program(ops, weights, scratch, rows)


def ours(program, ops, batch: int, reps: int):
    """fn(): `ops` (rows of the program's) run `reps` times on the scratch of one
    recurrent inference of random states and actions: block 0 holds a one-hot in the
    action's columns, as in the search (a random block 0 had a value in each of them,
    which the first layer's sparse rows then added one by one: 67 against ~50 us)."""
    rng = np.random.default_rng(0)
    scratch = program.scratch(batch)
    hidden = rng.standard_normal((batch, tinynet.HID)).astype(np.float32)
    action = rng.integers(0, tinynet.A, batch)
    mlp.recurrent_rows(program.ops, program.weights, scratch, hidden, action, batch, tinynet.A)

    def fn():
        _repeat(ops, program.weights, scratch, batch, reps)

    fn()
    return fn


def xla_dense(weight, bias, act: int, batch: int, reps: int):
    """fn(): act(x @ W + b) `reps` times in one jitted fori_loop, W [n_in, n_out]."""
    import jax
    import jax.numpy as jnp

    activate = {mlp.ACT_NONE: lambda y: y, mlp.ACT_RELU: jax.nn.relu, mlp.ACT_TANH: jnp.tanh}[act]
    w, b = jnp.asarray(weight), jnp.asarray(bias)
    x0 = jnp.asarray(np.random.default_rng(0).random((batch, weight.shape[0]), np.float32))

    @jax.jit
    def loop(x):
        def body(i, carry):
            x, c = carry
            y = activate(x @ w + b)
            return x.at[0, 0].set(x[0, 0] + c * 0), y[0, 0]

        return jax.lax.fori_loop(0, reps, body, (x, jnp.float32(0)))

    def fn():
        jax.block_until_ready(loop(x0))

    fn()
    return fn


def xla_recurrent(batch: int, reps: int):
    """fn(): recurrent_fn `reps` times, each on the last one's state."""
    import jax
    import jax.numpy as jnp

    _, recurrent_fn = tinynet.mctx_net()
    params = jax.tree_util.tree_map(jnp.asarray, tinynet.make_params())
    h0 = jnp.asarray(np.random.default_rng(0).random((batch, tinynet.HID), np.float32))

    @jax.jit
    def loop(h):
        def body(i, carry):
            h, acc = carry
            action = (jnp.arange(batch, dtype=jnp.int32) + i) % tinynet.A
            out, h2 = recurrent_fn(params, None, action, h)
            return h2, acc + out.value + out.prior_logits[:, 0] + out.reward

        return jax.lax.fori_loop(0, reps, body, (h, jnp.zeros(batch, jnp.float32)))

    def fn():
        jax.block_until_ready(loop(h0))

    fn()
    return fn


def layer_rows(program):
    """(label, op index, (W [n_in, n_out], bias, act) or None) per operation."""
    out = []
    for k, op in enumerate(program.ops):
        if op[0] == mlp.DENSE:
            n_in, n_out, w, b, act = op[2], op[4], op[5], op[6], op[7]
            wt = program.weights[w : w + n_in * n_out].reshape(n_out, n_in)
            label = f"dense {n_in}->{n_out} {ACT_NAMES[int(act)]}"
            out.append((label, k, (wt.T.copy(), program.weights[b : b + n_out].copy(), int(act))))
        else:
            out.append((f"op {int(op[0])} cols {int(op[4])}", k, None))
    return out


def profile(args, batch: int) -> dict:
    _, rec = tinynet.programs()
    reps = max(1, args.macs // (batch * 20000))
    jobs, labels = [], []
    for label, k, dense in layer_rows(rec):
        jobs.append((f"{k} ours", ours(rec, rec.ops[k : k + 1], batch, reps), [()]))
        if dense is not None:
            jobs.append((f"{k} xla", xla_dense(*dense, batch, reps), [()]))
        labels.append((k, label))
    jobs.append(("all ours", ours(rec, rec.ops, batch, reps), [()]))
    jobs.append(("all xla", xla_recurrent(batch, reps), [()]))
    load0 = os.getloadavg()
    ts, _ = time_interleaved(jobs, args.min_calls, args.min_total_s, 10**6, 0.02, clock=time.process_time)
    us = {name: statistics.median(t) / reps * 1e6 for name, t in ts.items()}
    layers = []
    for k, label in labels + [("all", "whole recurrent program / recurrent_fn")]:
        o, x = us[f"{k} ours"], us.get(f"{k} xla")
        layers.append({"op": k, "label": label, "ours_us": o, "xla_us": x, "ratio": o / x if x else None})
        print(f"B={batch} {label:34s} ours {o:8.2f} us  xla " + (f"{x:8.2f} us  {o / x:.2f}" if x else "-"))
    return {"B": batch, "reps": reps, "loadavg": [load0, os.getloadavg()], "layers": layers}


def render(results) -> str:
    m = results["meta"]
    lines = [
        "# The tiny MLP's recurrent program layer by layer, ours against XLA's",
        "",
        *shared_machine_header(m),
        "",
        "Median CPU us per operation call (each op K times in one compiled loop, ours and XLA's "
        "interleaved). XLA's whole recurrent_fn computes the state and reward as one 128 -> 65 product.",
        "",
        "| B | operation | ours us | xla us | ours / xla | load avg (1 min) |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for r in results["rows"]:
        load = f"{r['loadavg'][0][0]:.1f}-{r['loadavg'][1][0]:.1f}"
        for layer in r["layers"]:
            x = f"{layer['xla_us']:.2f}" if layer["xla_us"] else "-"
            ratio = f"{layer['ratio']:.2f}" if layer["ratio"] else "-"
            lines.append(f"| {r['B']} | {layer['label']} | {layer['ours_us']:.2f} | {x} | {ratio} | {load} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch-sizes", default="16,256")
    ap.add_argument("--macs", type=int, default=20_000_000, help="work per timed call (sets K)")
    ap.add_argument("--min-total-s", type=float, default=10.0)
    ap.add_argument("--min-calls", type=int, default=30)
    ap.add_argument("--out", default="benchmarks/results/net_path_layers.json")
    args = ap.parse_args(argv)
    set_threads(1)
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    meta = {
        "command": "benchmarks/net_path_layers.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "blas_min_rows": mlp.BLAS_MIN_ROWS,
    }
    rows = [profile(args, int(b)) for b in args.batch_sizes.split(",") if b]
    write_results(args.out, {"meta": meta, "rows": rows}, render({"meta": meta, "rows": rows}))


if __name__ == "__main__":
    main()
