"""Where the fused search's time goes at a large batch: its phases timed one by one.

:func:`polyzero.search.fused.simulate_fused` runs selection, the gather of the
parents' hidden states into the network's input, the network, the store of the new
states and expansion + backup in one compiled loop, where no timer reaches. Here the
same search is replayed with each phase as its own compiled call (the same kernels:
``select_leaves``, ``run_program``, ``expand_and_backup``, ``gather_inputs`` and
``store_outputs``, which ``simulate_fused`` inlines), timed by CPU time; the replay's root visits are
checked equal to the fused search's, and the fused call is timed beside it
(interleaved, medians) so that the phases' sum can be set against it.

  python benchmarks/profile_fused_tree.py --batch 256 --sims 64 --kinds puct,gumbel

With ``--ab OLD_TREE`` it compares another checkout of polyzero (e.g. ``git archive``
of an older commit, this script copied in) with this one: child processes alternate
between the two trees, and each phase's before/after ratio is taken per pair of
neighbouring runs, also divided by the network's (code neither side changed, so its
ratio is the machine's drift between the two runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numba as nb
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinynet  # noqa: E402
from common import machine_info  # noqa: E402
from polyzero.nets.inference import set_threads  # noqa: E402
from polyzero.search import fused, kernels  # noqa: E402
from polyzero.search.kernels.mlp import (  # noqa: E402
    input_block,
    run_program,
)
from search_throughput_gumbel import GUMBEL_PARAMS  # noqa: E402
from search_throughput_jobs import PolyzeroMuZero  # noqa: E402

PHASES = ("selection", "gather (input block)", "network", "store (outputs)", "expansion + backup")


@nb.njit(cache=True, nogil=True)
def _gather(ops, scratch, hidden, node, action):
    """simulate_fused's gather: the parents' states and the actions' one-hots into block 0."""
    batch = hidden.shape[1]
    fused.gather_inputs(input_block(ops, scratch, batch), hidden, node, action, 0, batch)


@nb.njit(cache=True, nogil=True)
def _store(scratch, outs, hidden, new_node, expansion):
    """simulate_fused's store: the new states into the hidden store, the rest into the expansion."""
    batch = hidden.shape[1]
    fused.store_outputs(fused.program_outputs(scratch, batch, outs), hidden, new_node, expansion, 0, batch)


class PhaseReplay:
    """Stands in for fused.simulate_fused: the same simulations, one compiled call per
    phase, CPU time per phase accumulated in `acc`."""

    def __init__(self):
        self.acc = dict.fromkeys(PHASES, 0.0)

    def __call__(self, t, rules, root, leaves, num_simulations, gumbel, hidden, ops, weights, scratch, outs, expansion):
        forced, gumbel_logits, considered, _ = root
        node, action, new_node = leaves[0], leaves[1], leaves[3]
        clock, acc = time.process_time, self.acc
        for sim in range(num_simulations):
            t0 = clock()
            kernels.select_leaves(t, rules, (forced, gumbel_logits, considered, sim if gumbel else 0), leaves, 1)
            t1 = clock()
            _gather(ops, scratch, hidden, node, action)
            t2 = clock()
            run_program(ops, weights, scratch, hidden.shape[1])
            t3 = clock()
            _store(scratch, outs, hidden, new_node, expansion)
            t4 = clock()
            kernels.expand_and_backup(t, rules, leaves, expansion, 1, False)
            t5 = clock()
            for name, dt in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                acc[name] += dt


def _search(pz, obs, kind):
    return pz(obs) if kind == "puct" else pz(obs, gumbel=None)


def profile(net, kind: str, batch: int, sims: int, rounds: int) -> dict:
    """The phases' CPU time per simulation (us) and the fused call's, interleaved."""
    extra = {"kind": kind, **GUMBEL_PARAMS} if kind != "puct" else {}
    obs = tinynet.make_obs(batch, seed=0)
    pz_fused, pz_replay = PolyzeroMuZero(net, sims, **extra), PolyzeroMuZero(net, sims, **extra)
    replay = PhaseReplay()
    real = fused.simulate_fused
    visits = []
    fused_s, replay_s = [], []
    for r in range(rounds + 1):  # round 0 warms up (and checks the trees match)
        for job in ("fused", "replay"):
            pz = pz_fused if job == "fused" else pz_replay
            pz.rng = np.random.default_rng(r)  # the same Gumbel draws for both
            fused.simulate_fused = real if job == "fused" else replay
            before = dict(replay.acc)
            t0 = time.process_time()
            try:
                res = _search(pz, obs, kind)
            finally:
                fused.simulate_fused = real
            dt = time.process_time() - t0
            if r == 0:
                replay.acc = before
                visits.append(res.root_visits.copy())
            else:
                (fused_s if job == "fused" else replay_s).append(dt)
    if not np.array_equal(visits[0], visits[1]):
        raise SystemExit("the phase replay's root visits differ from the fused search's")
    scale = 1e6 / rounds / sims
    phases = {name: round(s * scale, 1) for name, s in replay.acc.items()}
    tree = phases["selection"] + phases["expansion + backup"]
    return {
        "us_per_simulation": phases,
        "tree_share_of_phases": round(tree / sum(phases.values()), 3),
        "replay_call_ms_median": round(statistics.median(replay_s) * 1e3, 3),
        "fused_call_ms_median": round(statistics.median(fused_s) * 1e3, 3),
        "root_visits_equal": True,
    }


def ab(args) -> dict:
    """--ab: alternate child runs of OLD_TREE and this tree; per-pair ratios (after / before)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {"before": os.path.abspath(args.ab), "after": here}
    runs = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            for side, root in trees.items():
                out = os.path.join(tmp, f"{side}{i}.json")
                argv = ["--batch", str(args.batch), "--sims", str(args.sims), "--kinds", args.kinds]
                argv += ["--rounds", str(args.rounds), "--out", out]
                env = {**os.environ, "PYTHONPATH": root}
                script = os.path.join(root, "benchmarks", "profile_fused_tree.py")
                subprocess.run([sys.executable, script, *argv], env=env, check=True, stdout=subprocess.DEVNULL)
                with open(out) as fh:
                    runs[side].append(json.load(fh))
    result = {}
    for key in (k for k in runs["after"][0] if " B=" in k):
        pairs = list(zip(runs["before"], runs["after"]))
        phases = {}
        for name in PHASES + ("fused call",):
            ratios = [_phase(a[key], name) / _phase(b[key], name) for b, a in pairs]
            drift = [_phase(a[key], "network") / _phase(b[key], "network") for b, a in pairs]
            phases[name] = {
                "before_us_median": statistics.median(_phase(b[key], name) for b, _ in pairs),
                "after_us_median": statistics.median(_phase(a[key], name) for _, a in pairs),
                "after_over_before_median": round(statistics.median(ratios), 3),
                "over_network_ratio_median": round(statistics.median(r / d for r, d in zip(ratios, drift)), 3),
            }
            print(
                f"{key} {name:24s} after/before {phases[name]['after_over_before_median']:.3f}"
                f"  (/ network's {phases[name]['over_network_ratio_median']:.3f})"
            )
        result[key] = phases
    return result


def _phase(row, name):
    """A phase's us per simulation, or the fused call's ms."""
    return row["fused_call_ms_median"] if name == "fused call" else row["us_per_simulation"][name]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--sims", type=int, default=64)
    ap.add_argument("--kinds", default="puct,gumbel")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--out", default=None, help="JSON results file")
    ap.add_argument("--ab", metavar="OLD_TREE", help="compare OLD_TREE's phases with this tree's")
    ap.add_argument("--pairs", type=int, default=5, help="--ab: before/after pairs of runs")
    args = ap.parse_args(argv)
    if args.ab:
        load0 = os.getloadavg()
        out = {"argv": sys.argv[1:], "machine": machine_info(), "shared_machine": True, "load_start": load0}
        out.update(ab(args))
        out["load_end"] = os.getloadavg()
        print("load", load0, "->", out["load_end"])
        if args.out:
            with open(args.out, "w") as fh:
                json.dump(out, fh, indent=1)
        return
    set_threads(1)
    os.environ[kernels.PARALLEL_TREES_ENV] = "never"
    net = tinynet.TinyNetNumpy("compiled:auto")
    load0 = os.getloadavg()
    out = {"argv": sys.argv[1:], "machine": machine_info(), "shared_machine": True, "load_start": load0}
    for kind in args.kinds.split(","):
        row = profile(net, kind, args.batch, args.sims, args.rounds)
        out[f"{kind} B={args.batch} sims={args.sims}"] = row
        print(f"{kind} B={args.batch} {args.sims} sims: us per simulation (CPU time)")
        for name, us in row["us_per_simulation"].items():
            print(f"  {name:24s} {us:9.1f}")
        print(f"  replay call {row['replay_call_ms_median']} ms, fused call {row['fused_call_ms_median']} ms")
    out["load_end"] = os.getloadavg()
    print("load", load0, "->", out["load_end"])
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
