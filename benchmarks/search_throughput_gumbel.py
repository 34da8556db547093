"""search_throughput's Gumbel mode (--gumbel): polyzero's Gumbel and Full Gumbel
searches (mctx-equivalent settings) beside pUCT and jitted mctx.gumbel_muzero_policy,
same network, interleaved; root visits, A_{n+1} and pi' first compared with mctx's on
mctx's own Gumbel draws; the tree's cost per (batch element x simulation x level)."""

from __future__ import annotations

import statistics
import time

import numpy as np

import tinynet
from common import summarize, time_interleaved
from search_throughput_jobs import MUZERO_PARAMS, PolyzeroMuZero, batch_inputs, make_mctx, net_alone_fn

# mctx-equivalent Gumbel settings: gumbel_muzero_policy's qtransform_completed_by_mix_value
# (value_scale 0.1, maxvisit_init 50, min-max of the completed Q), m = 16.
GUMBEL_PARAMS = dict(
    gumbel_q_normalisation="completed_minmax", c_visit=50.0, c_scale=0.1, max_considered_actions=16, gumbel_scale=1.0
)


def mctx_gumbel_draw(key, batch):
    """The Gumbel vector gumbel_muzero_policy draws from `key` (its first split)."""
    import jax

    _, gumbel_rng = jax.random.split(key)
    return np.asarray(jax.random.gumbel(gumbel_rng, shape=(batch, tinynet.A), dtype=np.float32), np.float64)


def bookkeeping_per_level(pz, obs, calls=5):
    """Median over calls of (call time - network time) / (B x levels visited), where a
    simulation visits as many levels as its new node's depth (MuZero trees have no
    terminal revisits): the tree's cost per batch element, simulation and level."""
    out = []
    for _ in range(calls):
        net0 = pz.net_s
        t0 = time.perf_counter()
        res = pz(obs)
        total = time.perf_counter() - t0
        used = np.arange(res.tree.depth.shape[1])[None, :] < res.tree.num_nodes[:, None]
        levels = int(res.tree.depth[used].sum())
        out.append((total - (pz.net_s - net0)) / levels)
    return statistics.median(out), levels / res.tree.batch_size / pz.params.num_simulations


def gumbel_section(args, net, jparams, batch_sizes, sims_list):
    """Gumbel and Full Gumbel search beside pUCT and mctx.gumbel_muzero_policy, same
    network, interleaved; root visit counts checked against mctx first with mctx's own
    Gumbel draws (Full Gumbel in the mctx-equivalent mode)."""
    out = {"params": GUMBEL_PARAMS, "rows": [], "visit_check": []}
    for b in batch_sizes:
        obs_list, no_mask, invalid = batch_inputs(b)
        for n in sims_list:
            searches = {
                "puct": PolyzeroMuZero(net, n),
                "gumbel": PolyzeroMuZero(net, n, kind="gumbel", **GUMBEL_PARAMS),
                "full_gumbel": PolyzeroMuZero(net, n, kind="full_gumbel", **GUMBEL_PARAMS),
            }
            for pz in searches.values():
                pz(obs_list[0])  # warm (numba compile/cache load)
            row = {"B": b, "num_simulations": n}
            jobs = [(name, pz, [(o,) for o in obs_list]) for name, pz in searches.items()]
            jobs.append(("net_alone", net_alone_fn(net, n, b), [(o,) for o in obs_list]))
            if jparams is not None:
                import jax
                import jax.numpy as jnp

                mc = make_mctx(n, gumbel=True)
                keys = list(jax.random.split(jax.random.PRNGKey(42), 4))
                jobs_args = [(jparams, keys[i], jnp.asarray(obs_list[i]), jnp.asarray(no_mask)) for i in range(4)]
                mc(*jobs_args[0])
                for label, inv in (("all legal", no_mask), ("random root mask", invalid)):
                    g = mctx_gumbel_draw(keys[0], b)
                    res = searches["full_gumbel"](obs_list[0], root_legal=~inv, gumbel=g)
                    act, mv, _, weights = mc(jparams, keys[0], jnp.asarray(obs_list[0]), jnp.asarray(inv))
                    mv = np.asarray(mv)
                    diff = np.abs(res.root_visits.astype(np.int64) - mv)
                    chk = {
                        "B": b,
                        "num_simulations": n,
                        "root": label,
                        "rows_exact": float((diff.sum(axis=1) == 0).mean()),
                        "max_abs_diff": int(diff.max()),
                        "actions_equal": float((res.action == np.asarray(act)).mean()),
                        "max_abs_policy_diff": float(np.abs(res.policy_target - np.asarray(weights)).max()),
                        "masked_actions_visited": int(res.root_visits[inv].sum()) + int(mv[inv].sum()),
                    }
                    out["visit_check"].append(chk)
                    print(
                        f"gumbel visit check B={b} sims={n} ({label}): rows exact "
                        f"{chk['rows_exact']:.3f}, max |diff| {chk['max_abs_diff']}, actions "
                        f"equal {chk['actions_equal']:.3f}, max |pi' diff| "
                        f"{chk['max_abs_policy_diff']:.1e}",
                        flush=True,
                    )
                jobs.append(("mctx_gumbel", mc, jobs_args))
            ts, probe = time_interleaved(jobs, args.min_calls, args.min_total_s, max_rounds=500)
            row["probe_ms"] = statistics.median(probe)
            for name in ts:
                s = summarize(ts[name])
                s["sims_per_s"] = b * n / s["median_s"]
                row[name] = s
            for name, pz in searches.items():
                per_level, levels_per_sim = bookkeeping_per_level(pz, obs_list[1])
                row[f"{name}_bookkeeping_us_per_level"] = per_level * 1e6
                row[f"{name}_levels_per_simulation"] = levels_per_sim
                row[f"{name}_depth"] = pz(obs_list[1]).tree.depth_stats()
            for name in ("gumbel", "full_gumbel"):
                row[f"{name}_bookkeeping_vs_puct"] = (
                    row[f"{name}_bookkeeping_us_per_level"] / row["puct_bookkeeping_us_per_level"]
                )
                if "mctx_gumbel" in row:
                    row[f"{name}_speedup_vs_mctx"] = row["mctx_gumbel"]["median_s"] / row[name]["median_s"]
            line = f"B={b:4d} sims={n:3d} " + "  ".join(f"{name} {row[name]['median_s'] * 1e3:8.3f} ms" for name in ts)
            line += "  bookkeeping/level vs puct: " + ", ".join(
                f"{k} {row[f'{k}_bookkeeping_vs_puct']:.2f}" for k in ("gumbel", "full_gumbel")
            )
            print(line, flush=True)
            out["rows"].append(row)
    return out


def render_gumbel_markdown(meta, g) -> str:
    mach = meta["machine"]
    lines = [
        "# Gumbel search throughput: polyzero vs mctx.gumbel_muzero_policy",
        "",
        f"- machine: {mach.get('Model name', '?')}, {mach.get('CPU(s)', mach.get('cpu_count'))} CPUs; "
        f"torch threads {meta['torch_threads']}, tree-kernel threads {meta.get('tree_kernel_threads', 1)}",
        f"- command: `{meta['command']}`",
        f"- seed {meta['seed']}; numba {meta.get('numba')}, jax {meta.get('jax', '-')}, mctx {meta.get('mctx', '-')}",
        f"- network: the anchor tiny MuZero MLP ({meta['net_parameters']} parameters, "
        f"{tinynet.A} actions), PyTorch '{meta['net_mode']}' path",
        f"- polyzero Gumbel settings: {g['params']}; pUCT inside `gumbel`: {MUZERO_PARAMS}",
        f"- load average start/end: {meta['loadavg_start']} / {meta.get('loadavg_end')}",
        "",
        "Median ms per policy call (root forward + search), all jobs interleaved in the same "
        "run. Speed-up = mctx / polyzero. Net alone: the same network calls without a tree "
        "(1 root + n recurrent at batch B), polyzero's floor. Bookkeeping per level = (call "
        "time - network time) / (B x levels visited), in microseconds, relative to pUCT's; "
        "Gumbel trees are shallower (levels per simulation), so per-simulation costs weigh "
        "more per level.",
        "",
        "| B | sims | pUCT ms | gumbel ms | full_gumbel ms | mctx gumbel ms | full_gumbel speed-up "
        "| gumbel speed-up | net alone ms | bookkeeping us/level puct / gumbel / full | gumbel/puct | full/puct "
        "| levels per simulation puct / gumbel / full |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for r in g["rows"]:
        mc = r.get("mctx_gumbel")
        lines.append(
            f"| {r['B']} | {r['num_simulations']} | {r['puct']['median_s'] * 1e3:.3f} | "
            f"{r['gumbel']['median_s'] * 1e3:.3f} | {r['full_gumbel']['median_s'] * 1e3:.3f} | "
            + (
                f"{mc['median_s'] * 1e3:.3f} | **{r['full_gumbel_speedup_vs_mctx']:.2f}x** | "
                f"{r['gumbel_speedup_vs_mctx']:.2f}x | "
                if mc
                else "- | - | - | "
            )
            + f"{r['net_alone']['median_s'] * 1e3:.3f} | "
            + f"{r['puct_bookkeeping_us_per_level']:.3f} / {r['gumbel_bookkeeping_us_per_level']:.3f}"
            f" / {r['full_gumbel_bookkeeping_us_per_level']:.3f} | "
            f"{r['gumbel_bookkeeping_vs_puct']:.2f} | {r['full_gumbel_bookkeeping_vs_puct']:.2f} | "
            f"{r['puct_levels_per_simulation']:.2f} / {r['gumbel_levels_per_simulation']:.2f} / "
            f"{r['full_gumbel_levels_per_simulation']:.2f} |"
        )
    if g["visit_check"]:
        lines += [
            "",
            "## Root visit counts, Full Gumbel (mctx-equivalent mode) vs mctx, same Gumbel draws",
            "",
            "| B | sims | root | rows matching exactly | max abs diff | A_{n+1} equal | max abs pi' diff "
            "| visits to masked actions |",
            "|---:|---:|---|---:|---:|---:|---:|---:|",
        ]
        for c in g["visit_check"]:
            lines.append(
                f"| {c['B']} | {c['num_simulations']} | {c['root']} | {c['rows_exact']:.3f} | "
                f"{c['max_abs_diff']} | {c['actions_equal']:.3f} | "
                f"{c['max_abs_policy_diff']:.1e} | {c['masked_actions_visited']} |"
            )
    return "\n".join(lines) + "\n"
