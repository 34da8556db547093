"""`polyzero sog-probe RUN`: a Student of Games run's CVPN against exact values."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import UsageError
from ..validation import check_output_file, path_arg, seed_arg

MAX_PUBLIC_STATES = 20_000  # the whole game is solved and queried at every public state

EXAMPLES = """examples:
  polyzero sog-probe runs/leduc-sog
  polyzero sog-probe runs/leduc-sog --points 10 --queries 0 --json leduc_probe.json
  polyzero sog-probe runs/tic_tac_toe-sog --points 10 --json ttt_probe.json
"""


def register(sub) -> None:
    import argparse

    p = sub.add_parser(
        "sog-probe",
        help="a Student of Games run's CVPN and query-solving targets against exact values",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
        description="For a run of 'polyzero train GAME --algo sog' on a game small enough to solve whole "
        "(Kuhn, Leduc, small Liar's Dice or Scotland Yard): (1) at checkpoints spread over the "
        "training time, the CVPN's error against the exact counterfactual values of an "
        "equilibrium (CFR+ on the whole game), by depth; (2) at the newest checkpoint, queries "
        "from the run's query buffer answered by the network, by the run's query solver (the "
        "training target) and by an exact re-solve, and the first two's errors against the "
        "third, by depth. Errors are mean absolute differences of each information state's "
        "expected return (counterfactual value over its chance-and-opponent reach), in the "
        "game's units (chips for poker); in brackets, weighted by each information state's "
        "probability (under the equilibrium; within each query for the buffer's queries). "
        "On a deterministic perfect-information game (tic-tac-toe) every position is solved by "
        "minimax instead and the CVPN is compared there: its value error and sign agreement for "
        "the player to move, and its policy head's probability on the optimal moves (beside a "
        "uniform policy's), by depth; --iterations, --queries and --exact-iterations do not apply.",
    )
    p.add_argument("run_dir", metavar="RUN", help="a Student of Games run directory (with checkpoints/)")
    p.add_argument(
        "--points", type=int, default=5, help="checkpoints after the first, spread over the training time (default: 5)"
    )
    p.add_argument("--iterations", type=int, default=1000, help="CFR+ iterations of the whole-game solve")
    p.add_argument("--queries", type=int, default=30, help="buffer queries solved three ways (0: skip)")
    p.add_argument("--exact-iterations", type=int, default=1000, help="CFR+ iterations of each exact re-solve")
    p.add_argument(
        "--seed", type=seed_arg, default=0, help="seed of the buffer queries drawn and their solves (default: 0)"
    )
    p.add_argument(
        "--json", type=path_arg(check_output_file, "--json"), default=None, help="also write the results here"
    )
    p.set_defaults(run=run)


def _checkpoints(run_dir: Path) -> list[dict]:
    from ..train import checkpoint as ckpt

    root = run_dir / "checkpoints"
    if not root.is_dir():
        raise UsageError(f"{run_dir} is not a run directory (no checkpoints/ in it)")
    out = []
    for path in sorted(root.glob("step_*")):
        state = ckpt.read_state(path)
        out.append({"path": path, "step": state["step"], "minutes": state.get("train_time", 0.0) / 60})
    if not out:
        raise UsageError(f"{run_dir} has no checkpoints yet")
    return out


def _validate(args) -> None:
    for name in ("points", "iterations", "exact_iterations"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if args.queries < 0:
        raise UsageError("--queries must be 0 or more")


def _buffer_queries(game, point: Path, count: int, seed: int, beliefs) -> tuple[list, str]:
    """Up to `count` queries from the checkpoint's query buffer (else from the equilibrium's)."""
    import numpy as np

    from ..sog.query_store import QueryBuffer, StoredQuery
    from ..train import checkpoint as ckpt

    rng = np.random.default_rng(seed)
    source = "the run's query buffer"
    try:
        buffer = QueryBuffer(game, 1 << 30)
        buffer.load_arrays(ckpt.read_npz(point, "queries.npz"))
        queries = list(buffer.items)
    except (FileNotFoundError, KeyError, UsageError):
        queries = []
    if not queries:
        queries, source = beliefs.queries, "the equilibrium's belief states (the buffer is empty)"
    pick = rng.choice(len(queries), size=min(count, len(queries)), replace=False)
    chosen = [queries[i] for i in sorted(pick)]  # the buffer's are stored: rebuilt here
    return [q.query(game) if isinstance(q, StoredQuery) else q for q in chosen], source


def _row(err: dict) -> str:
    """'all [weighted]  d1:e [w] d2:...' for one line of the report."""

    def pair(e, w):
        return f"{e:.4f} [{w:.4f}]" if w is not None else f"{e:.4f}"

    depths = " ".join(f"d{d}:{pair(e, err['by_depth_weighted'][d])}" for d, e in err["by_depth"].items())
    return f"{pair(err['all'], err['all_weighted'])}   {depths}"


def _minimax_probe(args, run_dir: Path, game, cfg, points: list[dict]) -> int:
    """The CVPN at every position of a perfect-information game against its minimax value."""
    from ..sog.minimax_probe import minimax_positions, network_vs_minimax
    from ..sog.trainer import load_cvpn

    try:
        positions = minimax_positions(game, MAX_PUBLIC_STATES)
    except ValueError as exc:
        raise UsageError(f"sog-probe solves the whole game: {exc}") from None
    print(f"{cfg.game}: {len(positions):,} positions not over, solved by minimax")
    print("  value error (sign agreement) / policy on optimal moves (uniform's), by depth")
    result = {"run": str(run_dir), "game": cfg.game, "exact": "minimax", "checkpoints": []}
    for point in points:
        value_fn, _ = load_cvpn(point["path"])
        probe = network_vs_minimax(value_fn, positions)
        result["checkpoints"].append({"step": point["step"], "minutes": point["minutes"], **probe})
        line = " ".join(
            f"d{d}:{m['value_error']:.2f}({m['sign_agreement']:.2f})/{m['policy_on_optimal']:.2f}"
            f"({m['uniform_on_optimal']:.2f})"
            for d, m in probe["by_depth"].items()
        )
        a = probe["all"]
        print(
            f"step {point['step']:>6} ({point['minutes']:6.1f} min): all {a['value_error']:.3f}"
            f"({a['sign_agreement']:.2f})/{a['policy_on_optimal']:.2f}({a['uniform_on_optimal']:.2f})  {line}",
            flush=True,
        )
    _write_json(args, result)
    return 0


def _write_json(args, result: dict) -> None:
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2))


def run(args) -> int:
    from ..games import load_game
    from ..sog.gtcfr import is_perfect_information
    from ..sog.probe import exact_beliefs, network_error, spread_checkpoints, target_error
    from ..sog.trainer import load_cvpn

    _validate(args)
    run_dir = Path(args.run_dir)
    points = spread_checkpoints(_checkpoints(run_dir), args.points)
    _, cfg = load_cvpn(points[-1]["path"])
    game = load_game(cfg.game)
    if is_perfect_information(game):
        return _minimax_probe(args, run_dir, game, cfg, points)
    try:
        beliefs = exact_beliefs(game, args.iterations, MAX_PUBLIC_STATES)
    except ValueError as exc:
        raise UsageError(f"sog-probe solves the whole game: {exc}") from None
    print(f"{cfg.game}: {len(beliefs.queries)} equilibrium belief states (CFR+, {args.iterations} iterations)")
    result = {"run": str(run_dir), "game": cfg.game, "iterations": args.iterations, "checkpoints": []}
    for point in points:
        value_fn, _ = load_cvpn(point["path"])
        err = network_error(value_fn, beliefs)
        result["checkpoints"].append({"step": point["step"], "minutes": point["minutes"], **err})
        print(f"step {point['step']:>6} ({point['minutes']:6.1f} min): network error {_row(err)}", flush=True)
    if args.queries:
        last = points[-1]
        value_fn, _ = load_cvpn(last["path"])
        queries, source = _buffer_queries(game, last["path"], args.queries, args.seed, beliefs)
        solved = target_error(
            game, value_fn, cfg.sog.search_settings(solver=True), queries, args.exact_iterations, args.seed
        )
        result["targets"] = {
            "step": last["step"],
            "queries": len(queries),
            "source": source,
            "exact_iterations": args.exact_iterations,
            **solved,
        }
        print(
            f"step {last['step']}: {len(queries)} queries from {source}, each answered by the network, "
            f"the solver (GT-CFR({cfg.sog.solve_simulations}, {cfg.sog.solve_expansions_per_update:g})) "
            f"and an exact re-solve (CFR+, {args.exact_iterations} iterations)"
        )
        for name, label in (
            ("network", "network vs exact"),
            ("target", "target vs exact"),
            ("target_vs_network", "target vs network"),
        ):
            print(f"  {label:18} {_row(solved[name])}")
    _write_json(args, result)
    return 0
