"""The packed-panel product's register tile, other shapes and loop orders, per layer shape.

Issue 60: ``kernels.panels.panel_product`` runs a tile of MR = 4 rows x 16 outputs (8
AVX accumulators). The classic AVX2 sgemm microkernel (BLIS / OpenBLAS Haswell) is 6 x
16: 12 accumulators + 2 panel loads + 1 broadcast = 15 of the 16 ymm registers, so each
panel load feeds 12 fused multiply-adds instead of 8. Every variant here is built from
the same intrinsic (``panels.make_tile``), checked against NumPy, and timed interleaved
with the kernel as it is, in one process, by CPU time (medians of many rounds):

* ``mr4`` the kernel (``panel_product``): 4-row tiles, row tiles outer, 1-row tiles last;
* ``mr6`` / ``mr5``: 6- or 5-row tiles, the rows left over in 4-, 2- and 1-row tiles;
* ``mr8x8``: 8 rows x 8 outputs (8 accumulators, one panel load, 8 broadcasts);
* ``panels_outer``: 4-row tiles, each panel over all rows (the panel stays in L1);
* ``blocks6x24``: rows in blocks of 24, every panel over a block's 6-row tiles (BLIS's
  order: a block of x in L1 while the panels pass it).

It also measures the core's clock by a chain of dependent fused multiply-adds (4 cycles
each on Zen 3) and reports each product against the peak that clock allows: two 8-wide
FMAs a cycle (Zen 3 and Haswell-class cores), so GMAC/s peak = 16 x GHz.

Usage:
  python benchmarks/panel_tiles.py --out benchmarks/results/panel_tiles.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ONE_THREAD, machine_info, shared_machine_header, write_results  # noqa: E402

os.environ.update(ONE_THREAD)

import numba as nb  # noqa: E402
import numpy as np  # noqa: E402

from polyzero.search.kernels import panels  # noqa: E402

# rows x inputs -> outputs: the anchor MLP's recurrent layers at B = 256, then smaller batches
SHAPES = ((256, 64, 128), (256, 128, 128), (256, 128, 64), (64, 128, 128), (16, 128, 128))
FMA_LATENCY_CYCLES = 4  # Zen 3 (and Haswell to Zen 4): a dependent FMA chain's step
FMAS_PER_CYCLE = 2  # two 256-bit FMA pipes


def _rows_outer(mr: int, vectors: int):
    """product(x, panels, k, bias, out, relu, accumulate) on MR-row tiles, row tiles outer;
    the rows left over on 4-, 2- and 1-row tiles."""
    tile, tile4, tile2, tile1 = (panels.make_tile(m, vectors) for m in (mr, 4, 2, 1))
    step = 8 * vectors

    @nb.njit(nogil=True)
    def product(x, w, k, bias, out, relu, accumulate):
        rows, n_out = out.shape
        grouped = rows - rows % mr
        for r in range(0, grouped, mr):
            for o in range(0, n_out, step):
                tile(x, w, k, bias, out, r, o, relu, accumulate)
        r = grouped
        while r + 4 <= rows:
            for o in range(0, n_out, step):
                tile4(x, w, k, bias, out, r, o, relu, accumulate)
            r += 4
        while r + 2 <= rows:
            for o in range(0, n_out, step):
                tile2(x, w, k, bias, out, r, o, relu, accumulate)
            r += 2
        for r1 in range(r, rows):
            for o in range(0, n_out, step):
                tile1(x, w, k, bias, out, r1, o, relu, accumulate)

    return product


def _blocked(mr: int, block_rows: int):
    """MR-row tiles in blocks of `block_rows` rows (panels outer within a block, a block
    outer), block_rows = 0: one block of every row (panels outer); rows left over on
    1-row tiles."""
    tile, tile1 = panels.make_tile(mr), panels.make_tile(1)
    step = panels.PANEL

    @nb.njit(nogil=True)
    def product(x, w, k, bias, out, relu, accumulate):
        rows, n_out = out.shape
        grouped = rows - rows % mr
        block = block_rows if block_rows > 0 else max(grouped, 1)
        for b0 in range(0, grouped, block):
            for o in range(0, n_out, step):
                for r in range(b0, min(b0 + block, grouped), mr):
                    tile(x, w, k, bias, out, r, o, relu, accumulate)
        for r in range(grouped, rows):
            for o in range(0, n_out, step):
                tile1(x, w, k, bias, out, r, o, relu, accumulate)

    return product


def variants() -> dict:
    """name -> (product, panel width)."""
    return {
        "mr4": (panels.panel_product, panels.PANEL),
        "mr6": (_rows_outer(6, 2), panels.PANEL),
        "mr5": (_rows_outer(5, 2), panels.PANEL),
        "mr8x8": (_rows_outer(8, 1), 8),
        "panels_outer": (_blocked(4, 0), panels.PANEL),
        "blocks6x24": (_blocked(6, 24), panels.PANEL),
    }


@nb.njit(nogil=True)
def _repeat(product, x, w, k, bias, out, reps):
    for _ in range(reps):
        product(x, w, k, bias, out, True, False)


@nb.njit(fastmath={"contract"})
def _fma_chain(n, a, b, c):
    for _ in range(n):
        a = a * b + c
    return a


def clock_ghz(steps: int = 100_000_000, rounds: int = 5) -> float:
    """The core's clock while it runs: the fastest of `rounds` chains of `steps`
    dependent FMAs (CPU time, so time other jobs held the core does not count)."""
    _fma_chain(10, 1.0, 0.5, 0.25)
    best = min(_timed(lambda: _fma_chain(steps, 1.0, 0.999999, 1e-7)) for _ in range(rounds))
    return FMA_LATENCY_CYCLES * steps / best / 1e9


def _timed(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def shape_row(shape, arms: dict, rounds: int, target_us: float) -> dict:
    """Every arm on one layer shape (ReLU, no accumulation), outputs checked against
    NumPy, then `rounds` interleaved rounds; us per product (median)."""
    rows, n_in, n_out = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, n_in)).astype(np.float32)
    wt = rng.standard_normal((n_out, n_in)).astype(np.float32)
    bias = rng.standard_normal(n_out).astype(np.float32)
    ref = np.maximum(x.astype(np.float64) @ wt.T.astype(np.float64) + bias, 0)
    macs = rows * n_in * n_out
    reps = max(1, int(target_us * 1e-6 * 40e9 / macs))  # ~target_us a call at 40 GMAC/s
    jobs = {}
    for name, (product, width) in arms.items():
        w = panels.pack_panels(wt, width).ravel()
        out = np.zeros((rows, n_out), np.float32)
        _repeat(product, x, w, n_in, bias, out, 1)
        err = float(np.abs(out - ref).max())
        if err > 1e-4 * max(1.0, float(np.abs(ref).max())):
            raise SystemExit(f"{name} on {shape}: max abs error {err:.2e} against NumPy")
        jobs[name] = (product, w, out)
    times = {name: [] for name in jobs}
    load0 = os.getloadavg()
    for _ in range(rounds):
        for name, (product, w, out) in jobs.items():
            times[name].append(_timed(lambda: _repeat(product, x, w, n_in, bias, out, reps)) / reps)
    us = {name: statistics.median(t) * 1e6 for name, t in times.items()}
    return {
        "rows": rows,
        "n_in": n_in,
        "n_out": n_out,
        "reps": reps,
        "us": us,
        "gmacs": {name: macs / t / 1e3 for name, t in us.items()},
        "loadavg": [load0, os.getloadavg()],
    }


def render(results) -> str:
    m = results["meta"]
    names = list(results["rows"][0]["us"])
    lines = [
        "# The packed-panel product's tile shapes and loop orders, per layer shape",
        "",
        *shared_machine_header(m),
        f"- clock (dependent FMA chain, before / after the shapes): {m['ghz_before']:.2f} / "
        f"{m['ghz_after']:.2f} GHz; peak = {FMAS_PER_CYCLE} x 8-wide FMA a cycle = "
        f"{m['peak_gmacs']:.1f} GMAC/s (at the lower clock)",
        "",
        f"Median CPU us per product (ReLU, no accumulation), {m['rounds']} rounds, the arms interleaved in "
        "one process; in brackets the time against mr4 (the kernel as it is, `panels.panel_product`); "
        "last columns: mr4's GMAC/s and its share of the peak.",
        "",
        "| rows x in -> out | " + " | ".join(names) + " | mr4 GMAC/s | mr4 / peak | load avg (1 min) |",
        "|---|" + "---:|" * (len(names) + 2) + "---|",
    ]
    for r in results["rows"]:
        base = r["us"]["mr4"]
        cells = [f"{r['us'][n]:.1f} ({r['us'][n] / base:.2f})" for n in names]
        g = r["gmacs"]["mr4"]
        load = f"{r['loadavg'][0][0]:.1f}-{r['loadavg'][1][0]:.1f}"
        shape = f"{r['rows']} x {r['n_in']} -> {r['n_out']}"
        lines.append(f"| {shape} | " + " | ".join(cells) + f" | {g:.1f} | {g / m['peak_gmacs']:.2f} | {load} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=80)
    ap.add_argument("--target-us", type=float, default=2000.0, help="about this long a timed call")
    ap.add_argument("--out", default="benchmarks/results/panel_tiles.json")
    args = ap.parse_args(argv)
    meta = {
        "command": "benchmarks/panel_tiles.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine_info(),
        "rounds": args.rounds,
        "numba": nb.__version__,
    }
    meta["ghz_before"] = clock_ghz()
    arms = variants()
    rows = []
    for shape in SHAPES:
        rows.append(shape_row(shape, arms, args.rounds, args.target_us))
        r = rows[-1]
        print(f"{shape}: " + "  ".join(f"{n} {u:.1f}" for n, u in r["us"].items()), flush=True)
    meta["ghz_after"] = clock_ghz()
    meta["peak_gmacs"] = FMAS_PER_CYCLE * 8 * min(meta["ghz_before"], meta["ghz_after"])
    write_results(args.out, {"meta": meta, "rows": rows}, render({"meta": meta, "rows": rows}))


if __name__ == "__main__":
    main()
