"""Where polyzero's MuZero-mode search spends its time outside the network.

Runs run_search's loop body step by step (a copy of polyzero.search.mcts.run_search
with a timer around every stage, same calls and arguments) on the tiny net, and
prints microseconds per simulation for each stage. Also times the numba
kernels' dispatch floor (a call on a batch of 1 tree) and masked_softmax alone.

  python benchmarks/profile_search.py --batch-sizes 16,256 --sims 64
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tinynet  # noqa: E402

from polyzero.search import kernels  # noqa: E402
from polyzero.search.learned import LearnedModel  # noqa: E402
from polyzero.search.params import SearchParams  # noqa: E402
from polyzero.search.policy import masked_softmax  # noqa: E402
from polyzero.search.tree import Tree  # noqa: E402


def instrumented_search(model, params, acc):
    """polyzero.search.mcts.run_search (no noise, no root hook), timed per stage."""
    pc = time.perf_counter
    t = pc()
    root = model.initial()
    batch, num_actions = root.prior_logits.shape
    legal_root = root.legal.astype(np.bool_)
    tree = Tree.allocate(batch, params.num_simulations + 1, num_actions)
    prior = masked_softmax(root.prior_logits, legal_root)
    tree.prior[:, 0] = prior
    tree.legal[:, 0] = legal_root
    tree.value[:, 0] = root.value
    tree.raw_value[:, 0] = root.value
    tree.visits[:, 0] = 1
    rule, norm, unvisited = params.codes
    leaf_node = np.zeros(batch, np.int32)
    leaf_action = np.zeros(batch, np.int32)
    leaf_kind = np.zeros(batch, np.int8)
    no_root_action = np.full(batch, -1, np.int32)
    acc["setup (Tree.allocate, root prior)"] += pc() - t
    for _ in range(params.num_simulations):
        t0 = pc()
        kernels.select_leaves(
            tree.children, tree.visits, tree.value, tree.reward, tree.discount, tree.prior,
            tree.legal, tree.terminal, tree.q_min, tree.q_max, no_root_action, rule, norm,
            unvisited, params.c_puct, params.c1, params.c2, params.value_min,
            params.value_max, leaf_node, leaf_action, leaf_kind)
        t1 = pc()
        active = leaf_kind == kernels.NEW_LEAF
        new_node = tree.num_nodes.copy()
        t2 = pc()
        exp = model.step(leaf_node, leaf_action, new_node, active)
        t3 = pc()
        new_prior = masked_softmax(exp.prior_logits, exp.legal | ~active[:, None])
        t4 = pc()
        args = (new_prior, exp.legal.astype(np.bool_), np.asarray(exp.value, np.float64),
                np.asarray(exp.reward, np.float64), np.asarray(exp.discount, np.float64),
                exp.terminal.astype(np.bool_))
        t5 = pc()
        kernels.expand_and_backup(
            tree.children, tree.parent, tree.action, tree.depth, tree.visits, tree.value,
            tree.raw_value, tree.reward, tree.discount, tree.prior, tree.legal,
            tree.terminal, tree.num_nodes, tree.q_min, tree.q_max, leaf_node, leaf_action,
            leaf_kind, *args, tree.chance, np.zeros(len(leaf_kind), np.bool_))
        t6 = pc()
        acc["select_leaves (numba)"] += t1 - t0
        acc["active/new_node arrays"] += t2 - t1
        acc["model.step total"] += t3 - t2
        acc["masked_softmax"] += t4 - t3
        acc["astype/asarray conversions"] += t5 - t4
        acc["expand_and_backup (numba)"] += t6 - t5
    return tree


class TimedNet:
    def __init__(self, net, acc):
        self.net, self.acc = net, acc

    def __call__(self, h, a):
        t = time.perf_counter()
        out = self.net.recurrent(h, a)
        self.acc["  recurrent_fn (network, inside model.step)"] += time.perf_counter() - t
        return out


def dispatch_floor(fn, args, n=2000):
    for _ in range(50):
        fn(*args)
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn(*args)
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-sizes", default="16,256")
    ap.add_argument("--sims", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--net-mode", default="script")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    net = tinynet.TinyNetNumpy(args.net_mode)
    params = SearchParams(num_simulations=args.sims, selection="muzero",
                          q_normalisation="parent_siblings", unvisited_q="min")
    out = {}
    for b in [int(x) for x in args.batch_sizes.split(",")]:
        obs = tinynet.make_obs(b, seed=0)
        acc = defaultdict(float)
        total = 0.0
        for r in range(args.repeats + 1):
            a2 = acc if r else defaultdict(float)
            t = time.perf_counter()
            lg, v, h = net.initial(obs)
            a2["root network"] += time.perf_counter() - t
            model = LearnedModel(lg, v, h, TimedNet(net, a2), -1.0, num_nodes=args.sims + 1)
            instrumented_search(model, params, a2)
            if r:
                total += time.perf_counter() - t
        per_sim = {k: v / args.repeats / args.sims * 1e6 for k, v in acc.items()}
        total_us = total / args.repeats / args.sims * 1e6
        rows = {k: (round(v, 1), round(v / total_us, 3)) for k, v in per_sim.items()}
        rows["TOTAL per simulation"] = (round(total_us, 1), 1.0)
        # floors: masked_softmax alone and numba dispatch on a 1-tree batch
        lg_b = np.random.default_rng(0).standard_normal((b, tinynet.A)).astype(np.float32)
        legal = np.ones((b, tinynet.A), bool)
        rows["(masked_softmax alone, us)"] = round(dispatch_floor(masked_softmax, (lg_b, legal)) * 1e6, 1)
        t1 = Tree.allocate(1, 2, tinynet.A)
        t1.legal[:, 0] = True
        t1.visits[:, 0] = 1
        z = [np.zeros(1, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int8)]
        rows["(select_leaves dispatch floor, 1 tree, us)"] = round(dispatch_floor(
            kernels.select_leaves,
            (t1.children, t1.visits, t1.value, t1.reward, t1.discount, t1.prior, t1.legal,
             t1.terminal, t1.q_min, t1.q_max, np.full(1, 0, np.int32), 0, 2, 0, 1.0, 1.25,
             19652.0, -1.0, 1.0, *z)) * 1e6, 1)
        out[b] = rows
        print(f"\nB={b} sims={args.sims} (us per simulation, share of total)")
        for k, v in rows.items():
            print(f"  {k:48s} {v}")
    if args.json_out:
        with open(args.json_out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
