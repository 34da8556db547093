"""One-game search at engine speed: polyzero's search of one tree (B = 1), sequential and
with leaf batching, against DeepMind's mctx at B = 1 in the same run, same tiny network.

Time per move (the root's network call and the whole search) at 100, 800 and 3,200
simulations for
  * polyzero, sequential (search.leaf_batch = 1): one network call per simulation;
  * polyzero, leaf batching (search.leaf_batch = 16): up to 16 leaves of the tree per
    network call, selected with virtual loss;
  * mctx.muzero_policy, jitted, B = 1 (the anchor), in its own process (the anchor venv's
    python: jax, jaxlib, mctx), timed in blocks interleaved with polyzero's (blocked
    round-robin, a speed-probe sample per round): each library runs alone in its process
    and both share the machine's phases.
All use MuZero's rule with mctx's Q transform (parent and siblings), unvisited Q = min, no
noise, the anchor's tiny MLP with the same weights (benchmarks/tinynet.py), 1 thread each.

How leaf batching changes the search: on the same positions, the root visit distribution of
leaf batching 16 against the sequential search's (total variation, top-move agreement), and
the sequential search against mctx's (visit counts equal).

Playing strength at equal time, on Go: an AlphaZero network for go(board_size=N) (a run
directory, --go-run, or trained here for --go-train-steps learning steps) plays with leaf
batching 16 against itself searching sequentially, both with --move-seconds of wall clock
per move, seats alternating; the score with a Wilson 95% interval and the simulations each
side searched per move.

Usage (results into benchmarks/results/engine_search_speed.{json,md}):
  benchmarks/.venv-anchor/bin/python benchmarks/engine_search_speed.py               # full
  benchmarks/.venv-anchor/bin/python benchmarks/engine_search_speed.py --quick --out /tmp/e.json
The anchor venv (benchmarks/.venv-anchor/, ignored by git) sees the main venv's packages
and adds jax, jaxlib and mctx from PyPI:
  .venv/bin/python -m venv benchmarks/.venv-anchor
  .venv/bin/python -c 'import site; print(site.getsitepackages()[0])' \\
      > benchmarks/.venv-anchor/lib/python3.11/site-packages/main_venv.pth
  benchmarks/.venv-anchor/bin/pip install jax jaxlib mctx
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import machine_info, probe_ms, write_results  # noqa: E402

DEFAULT_OUT = "benchmarks/results/engine_search_speed.json"
ANCHOR_PYTHON = HERE / ".venv-anchor" / "bin" / "python"
SEARCH = dict(
    selection="muzero",
    q_normalisation="parent_siblings",
    unvisited_q="min",
    c1=1.25,
    c2=19652.0,
    dirichlet_fraction=0.0,
)


def observation(seed: int) -> np.ndarray:
    import tinynet

    return tinynet.make_obs(1, seed=1000 + seed)


def timed_block(call, seeds, block_s: float, min_calls: int = 2) -> list[float]:
    """Back-to-back calls on positions `seeds` (cycling) for `block_s` seconds and at
    least `min_calls`, each timed; the first of the block dropped."""
    times, k, t_block = [], 0, time.perf_counter()
    while k < min_calls or time.perf_counter() - t_block < block_s:
        t0 = time.perf_counter()
        call(seeds[k % len(seeds)])
        times.append(time.perf_counter() - t0)
        k += 1
    return times[1:]


# ------------------------------------------------------------------ the mctx worker
def worker_main() -> None:
    """The anchor's side, run by the anchor venv's python: JSON requests on stdin."""
    import jax
    import jax.numpy as jnp
    import jaxlib
    import mctx

    import tinynet

    params = jax.tree_util.tree_map(jnp.asarray, tinynet.make_params())
    key, valid = jax.random.PRNGKey(0), jnp.zeros((1, tinynet.A), bool)
    policies, observations = {}, {}

    def run(sims, seed):
        obs = observations.setdefault(seed, jnp.asarray(observation(seed)))
        return policies[sims](params, key, obs, valid)

    for line in sys.stdin:
        req = json.loads(line)
        op, sims = req["op"], req.get("sims")
        if op == "meta":
            out = {
                "jax": jax.__version__,
                "jaxlib": jaxlib.__version__,
                "mctx": mctx.__version__,
                "devices": [str(d) for d in jax.devices()],
            }
        elif op == "prepare":
            t0 = time.perf_counter()
            policies[sims] = tinynet.mctx_policy(sims)
            run(sims, 0)
            out = {"first_call_s": time.perf_counter() - t0}
        elif op == "block":
            out = {"times": timed_block(lambda s: run(sims, s), req["seeds"], req["block_s"])}
        elif op == "visits":
            out = {"visits": [np.asarray(run(sims, s)[1])[0].tolist() for s in req["seeds"]]}
        else:
            return
        print(json.dumps(out), flush=True)


class Anchor:
    """The mctx worker process, driven over a pipe."""

    def __init__(self, python: str, threads: int):
        env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join(sys.path))
        if threads == 1:
            env["XLA_FLAGS"] = (
                env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
            ).strip()
        self.proc = subprocess.Popen(
            [python, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.xla_flags = env.get("XLA_FLAGS")

    def ask(self, **req) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the mctx worker exited (is jax/mctx installed in its python?)")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


# ------------------------------------------------------------------ polyzero's side
class PolyzeroMove:
    """One move: the root's network call and a search of `sims` simulations of one tree."""

    def __init__(self, net, sims: int, leaf_batch: int):
        from polyzero.search.params import SearchParams

        self.net = net
        self.params = SearchParams(num_simulations=sims, leaf_batch=leaf_batch, **SEARCH)
        self.rng = np.random.default_rng(0)
        self.calls = 0  # network calls of the last move (the root's included)

    def __call__(self, seed: int):
        from polyzero.search.learned import LearnedModel
        from polyzero.search.mcts import run_search

        logits, value, hidden = self.net.initial(observation(seed))
        model = LearnedModel(
            logits, value, hidden, self.net.recurrent, discount=-1.0, num_nodes=self.params.num_simulations + 1
        )
        result = run_search(model, self.params, self.rng)
        self.calls = result.model_calls
        return result


def time_moves(anchor: Anchor | None, net, sims: int, args) -> dict:
    """Blocked round-robin of sequential, leaf-batched (and mctx) moves at `sims`."""
    seeds = list(range(args.positions))
    jobs = {
        "sequential": PolyzeroMove(net, sims, 1),
        f"leaf_batch_{args.leaf_batch}": PolyzeroMove(net, sims, args.leaf_batch),
    }
    row = {"simulations": sims}
    for move in jobs.values():
        move(0)  # compile and warm up
    if anchor is not None:
        row["mctx_first_call_s"] = anchor.ask(op="prepare", sims=sims)["first_call_s"]
    times = {name: [] for name in [*jobs, *(["mctx"] if anchor else [])]}
    probes, t_start, rounds = [], time.perf_counter(), 0
    while (
        min(len(v) for v in times.values()) < args.min_calls or time.perf_counter() - t_start < args.min_total_s
    ) and rounds < args.max_rounds:
        for name, move in jobs.items():
            times[name] += timed_block(move, seeds, args.block_s)
        if anchor is not None:
            times["mctx"] += anchor.ask(op="block", sims=sims, seeds=seeds, block_s=args.block_s)["times"]
        probes.append(probe_ms())
        rounds += 1
    for name, ts in times.items():
        row[name] = {
            "n": len(ts),
            "median_ms": statistics.median(ts) * 1e3,
            "min_ms": min(ts) * 1e3,
            "max_ms": max(ts) * 1e3,
        }
    row["calls_per_move"] = {name: move.calls for name, move in jobs.items()}
    row["probe_ms_median"] = statistics.median(probes)
    if anchor is not None:
        for name in jobs:
            row[f"{name}_speedup_vs_mctx"] = row["mctx"]["median_ms"] / row[name]["median_ms"]
    return row


def compare_visits(anchor: Anchor | None, net, sims: int, args) -> dict:
    """Root visits of leaf batching against the sequential search (and of the sequential
    search against mctx) on `args.compare_positions` positions."""
    seeds = list(range(100, 100 + args.compare_positions))
    seq = np.array([PolyzeroMove(net, sims, 1)(s).root_visits[0] for s in seeds], float)
    bat = np.array([PolyzeroMove(net, sims, args.leaf_batch)(s).root_visits[0] for s in seeds], float)
    tv = 0.5 * np.abs(seq / sims - bat / sims).sum(1)
    out = {
        "simulations": sims,
        "positions": len(seeds),
        "total_variation_mean": float(tv.mean()),
        "total_variation_max": float(tv.max()),
        "total_variation_quartiles": [float(q) for q in np.percentile(tv, [25, 50, 75])],
        "top_move_agreement": float(np.mean(seq.argmax(1) == bat.argmax(1))),
        "top_move_visit_share": {
            "sequential": float(np.mean(seq.max(1) / sims)),
            "leaf_batch": float(np.mean(bat.max(1) / sims)),
        },
    }
    if anchor is not None:
        mv = np.array(anchor.ask(op="visits", sims=sims, seeds=seeds)["visits"], float)
        out["sequential_equals_mctx_fraction"] = float(np.mean((mv == seq).all(1)))
        out["sequential_vs_mctx_max_abs_diff"] = float(np.abs(mv - seq).max())
    return out


# ------------------------------------------------------------------ Go at equal time
def go_player(args):
    """The Go network: --go-run's, or one trained here for --go-train-steps steps."""
    from polyzero.train.agents import load_search_player

    game_spec = f"go(board_size={args.go_board},komi={args.go_komi})"
    run = args.go_run
    if run is None:
        from polyzero.config import build_config
        from polyzero.train.driver import Trainer

        run = str(Path(args.go_work) / f"go{args.go_board}_seed{args.seed}_steps{args.go_train_steps}")
        if not Path(run).exists():
            cfg = build_config(
                game_spec,
                "alphazero",
                overrides=[
                    "net.kind=resnet",
                    "net.blocks=2",
                    "net.channels=32",
                    "search.num_simulations=32",
                    "selfplay.concurrent_games=32",
                    "train.positions_per_step=256",
                    "train.minibatches_per_step=4",
                    "train.batch_size=128",
                    "train.replay_size=8192",
                    f"train.steps={args.go_train_steps}",
                    "train.symmetries=true",
                    "eval.every=0",
                    "eval.final_games=0",
                    "threads=1",
                    f"seed={args.seed}",
                ],
            )
            t0 = time.perf_counter()
            Trainer.create(cfg, Path(run), progress=False).run()
            print(f"trained {run} for {args.go_train_steps} steps in {time.perf_counter() - t0:.0f} s", flush=True)
    from polyzero.games import load_game

    game = load_game(game_spec)
    return game, run, load_search_player(run, game, seed=args.seed)


def go_arena(args) -> dict:
    """Leaf batching against the sequential search, same network, equal time per move."""
    from polyzero.algos.player import SearchPlayer
    from polyzero.eval.arena import play_match

    game, run, base = go_player(args)
    searched: dict[str, list[int]] = {}

    class Counting(SearchPlayer):
        def search(self, state, **kwargs):
            result = super().search(state, **kwargs)
            searched.setdefault(self.name, []).append(int(result.root_visits.sum()))
            return result

    def player(k, name):
        params = dataclasses.replace(base.params, num_simulations=args.go_max_simulations, leaf_batch=k)
        return Counting(
            base.algo,
            base.evaluate,
            params,
            name,
            seed=args.seed,
            sample_moves=args.go_sample_moves,
            move_seconds=args.move_seconds,
        )

    batched, sequential = player(args.leaf_batch, f"leaf_batch_{args.leaf_batch}"), player(1, "sequential")
    t0 = time.perf_counter()
    res = play_match(game, batched, sequential, args.go_games, seed=args.seed)
    return {
        "game": f"go(board_size={args.go_board},komi={args.go_komi})",
        "network": run,
        "train_steps": args.go_train_steps if args.go_run is None else None,
        "move_seconds": args.move_seconds,
        "games": res.games,
        "wins": res.wins,
        "draws": res.draws,
        "losses": res.losses,
        "score_leaf_batch": res.score,
        "ci95": [res.ci_low, res.ci_high],
        "simulations_per_move": {
            name: {"mean": float(np.mean(v)), "median": float(np.median(v))} for name, v in searched.items()
        },
        "sample_moves": args.go_sample_moves,
        "seconds": time.perf_counter() - t0,
    }


# ------------------------------------------------------------------ report
def markdown(results: dict) -> str:
    meta, k = results["meta"], results["meta"]["leaf_batch"]
    anchor = meta.get("mctx", {})
    lines = [
        "# One-game search at engine speed (B = 1): polyzero vs mctx",
        "",
        f"Command: `{meta['command']}`  ",
        f"Machine: {meta['machine'].get('Model name')} "
        f"({meta['machine']['cpu_count']} CPUs), load {meta['machine']['loadavg_start']} at the start; "
        f"torch {meta['torch']}, numba {meta['numba']}, mctx {anchor.get('mctx', '-')}, "
        f"jax {anchor.get('jax', '-')}; "
        f"{meta['threads']} thread(s) each; XLA_FLAGS {meta.get('xla_flags')}.",
        "",
        "Time per move (median ms; the root's network call and the search; blocked round-robin, mctx in its "
        "own process). Speed-up = mctx / polyzero; the target is >= 3x with leaf batching 16.",
        "",
        f"| simulations | sequential | leaf batch {k} | mctx | sequential vs mctx | leaf batch {k} vs mctx | "
        "network calls (seq / batched) | probe ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results["speed"]:
        bat = r[f"leaf_batch_{k}"]
        mc = r.get("mctx")
        lines.append(
            f"| {r['simulations']} | {r['sequential']['median_ms']:.2f} | {bat['median_ms']:.2f} | "
            + (
                f"{mc['median_ms']:.2f} | {r['sequential_speedup_vs_mctx']:.2f}x | "
                f"**{r[f'leaf_batch_{k}_speedup_vs_mctx']:.2f}x** | "
                if mc
                else "- | - | - | "
            )
            + f"{r['calls_per_move']['sequential']} / {r['calls_per_move'][f'leaf_batch_{k}']} | "
            f"{r['probe_ms_median']:.2f} |"
        )
    v = results["visits"]
    lines += [
        "",
        f"## How leaf batching {k} changes the search ({v['simulations']} simulations, {v['positions']} positions)",
        "",
        f"- total variation between the root visit distributions: mean {v['total_variation_mean']:.3f}, "
        f"quartiles {', '.join(f'{q:.3f}' for q in v['total_variation_quartiles'])}, max "
        f"{v['total_variation_max']:.3f};",
        f"- the same most visited move: {v['top_move_agreement']:.0%} of positions; the most visited move's "
        f"share: {v['top_move_visit_share']['sequential']:.3f} sequential, "
        f"{v['top_move_visit_share']['leaf_batch']:.3f} batched;",
    ]
    if "sequential_equals_mctx_fraction" in v:
        lines.append(
            f"- the sequential search's visit counts equal mctx's in "
            f"{v['sequential_equals_mctx_fraction']:.0%} of positions (max |diff| "
            f"{v['sequential_vs_mctx_max_abs_diff']:.0f})."
        )
    if "go" in results:
        g = results["go"]
        sims = ", ".join(f"{n} {s['mean']:.0f}" for n, s in g["simulations_per_move"].items())
        lines += [
            "",
            f"## Go at equal time: leaf batch {k} vs sequential",
            "",
            f"{g['game']}, {g['move_seconds']} s per move, network {g['network']} "
            f"({g['train_steps']} learning steps here; `None`: given), first {g['sample_moves']} moves "
            f"sampled by visits, seats alternating: **{g['score_leaf_batch']:.3f}** "
            f"[{g['ci95'][0]:.3f}, {g['ci95'][1]:.3f}] over {g['games']} games (W {g['wins']} D {g['draws']} "
            f"L {g['losses']}); simulations per move (mean): {sims}.",
        ]
    return "\n".join(lines) + "\n"


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", default="100,800,3200")
    ap.add_argument("--leaf-batch", type=int, default=16)
    ap.add_argument("--positions", type=int, default=8, help="positions the timed moves cycle over")
    ap.add_argument("--compare-positions", type=int, default=64)
    ap.add_argument("--compare-sims", type=int, default=800)
    ap.add_argument("--min-calls", type=int, default=9)
    ap.add_argument("--min-total-s", type=float, default=6.0)
    ap.add_argument("--max-rounds", type=int, default=200)
    ap.add_argument("--block-s", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--net-mode", default="script", choices=["lean", "script", "eager_ref"])
    ap.add_argument("--mctx-python", default=str(ANCHOR_PYTHON) if ANCHOR_PYTHON.exists() else sys.executable)
    ap.add_argument("--no-mctx", action="store_true")
    ap.add_argument("--no-go", action="store_true")
    ap.add_argument("--go-run", help="an AlphaZero run directory on go(board_size=--go-board)")
    ap.add_argument("--go-board", type=int, default=7)
    ap.add_argument("--go-komi", type=float, default=7.5)
    ap.add_argument("--go-train-steps", type=int, default=60)
    ap.add_argument("--go-work", default="benchmarks/work/engine_search_speed")
    ap.add_argument("--go-games", type=int, default=40)
    ap.add_argument("--go-sample-moves", type=int, default=4)
    ap.add_argument("--go-max-simulations", type=int, default=20_000)
    ap.add_argument("--move-seconds", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="small settings for a smoke run")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.quick:
        args.sims, args.positions, args.compare_positions = "100,800", 4, 8
        args.min_calls, args.min_total_s, args.block_s = 3, 0.5, 0.02
        args.go_train_steps, args.go_games, args.move_seconds = 2, 4, 0.1
    return args


def main(argv=None):
    args = parse(argv)
    if args.worker:
        return worker_main()
    import numba
    import torch

    import tinynet
    from polyzero.nets.inference import set_threads

    set_threads(args.threads)
    tinynet.check(1e-5)
    net = tinynet.TinyNetNumpy(args.net_mode)
    anchor = None if args.no_mctx else Anchor(args.mctx_python, args.threads)
    meta = {
        "command": " ".join([os.path.relpath(sys.argv[0])] + (argv or sys.argv[1:])),
        "machine": {**machine_info(), "platform": platform.platform(), "loadavg_start": os.getloadavg()},
        "torch": torch.__version__,
        "numba": numba.__version__,
        "numpy": np.__version__,
        "net_mode": args.net_mode,
        "leaf_batch": args.leaf_batch,
        "search": SEARCH,
        "threads": args.threads,
        "mctx_python": None if anchor is None else args.mctx_python,
        "xla_flags": None if anchor is None else anchor.xla_flags,
    }
    try:
        if anchor is not None:
            meta["mctx"] = anchor.ask(op="meta")
        print(json.dumps(meta), flush=True)
        speed = []
        for sims in (int(x) for x in args.sims.split(",")):
            speed.append(time_moves(anchor, net, sims, args))
            print(json.dumps(speed[-1]), flush=True)
        visits = compare_visits(anchor, net, args.compare_sims, args)
        print(json.dumps(visits), flush=True)
    finally:
        if anchor is not None:
            anchor.close()
    results = {"meta": meta, "speed": speed, "visits": visits}
    if not args.no_go:
        results["go"] = go_arena(args)
        print(json.dumps(results["go"]), flush=True)
    meta["loadavg_end"] = os.getloadavg()
    write_results(args.out, results, markdown(results))


if __name__ == "__main__":
    main()
