"""Benchmark `sog_glasses_variants`: which glasses-map Scotland Yard is worth solving?

The spec's glasses game (Mr X first, revealed after round 3, 5 rounds) is a forced
win for the detectives: Mr X's value is -1, so every capturing policy is
unexploitable and the map says nothing about play. This benchmark solves candidate
variants exactly (public-tree CFR+ on the whole game, `FlatCFR`, until the
exploitability of the average policies is at most --tolerance) and records Mr X's
value, the solve's exploitability (the value is exact to within it) and the size
of the public tree, so the default can be chosen among the variants whose value is
strictly between -1 and 1 (docs/scotland_yard.md).

Candidates: rounds 3-5 (everyone holds one taxi ticket per round), Mr X or the
detectives moving first each round, no reveal or a reveal after any one round;
then detectives one ticket short, and two reveals.

    python benchmarks/sog_glasses_variants.py            # resumable: WORK/<variant>.json

Writes benchmarks/results/sog_glasses_variants.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, git_commit, machine_line, write_json_atomic  # noqa: E402


def variant_spec(rounds: int, reveal: str, detectives_first: bool, detective_taxi: int | None = None) -> str:
    """A glasses variant with every parameter that differs between variants spelled out."""
    taxi = rounds if detective_taxi is None else detective_taxi
    return (
        f"scotland_yard(map=glasses,rounds={rounds},reveal_rounds={reveal},"
        f"detectives_first={str(detectives_first).lower()},mrx_taxi={rounds},detective_taxi={taxi})"
    )


def candidates() -> list[str]:
    out = []
    for rounds in (3, 4, 5):
        for first in (False, True):
            for reveal in ["none"] + [str(r) for r in range(1, rounds + 1)]:
                out.append(variant_spec(rounds, reveal, first))
    for first in (False, True):  # the detectives one ticket short of the rounds
        for reveal in ("none", "2", "3", "4"):
            out.append(variant_spec(5, reveal, first, detective_taxi=4))
        for reveal in ("2;4", "1;3", "3;5"):  # two reveals
            out.append(variant_spec(5, reveal, first))
    return out


def solve(spec: str, tolerance: float, max_iterations: int) -> dict:
    """Mr X's value of `spec` by CFR+ on the whole public tree, to `tolerance`."""
    from polyzero.games import load_game
    from polyzero.games.public_states import DECISION, TERMINAL, PublicTree
    from polyzero.sog.flat_cfr import FlatCFR

    t0 = time.time()
    game = load_game(spec)
    tree = PublicTree(game)
    solver = FlatCFR(tree)
    exploitability = float("inf")
    while solver.iteration < max_iterations:
        for _ in range(100):
            solver.iterate()
        exploitability = solver.exploitability()
        if exploitability <= tolerance:
            break
    value, low, high = (root_value(solver, b) for b in (None, 1, 0))
    decisions = tree.of_kind(DECISION)
    return {
        "spec": spec,
        "value_mrx": value,
        "exploitability": exploitability,
        "iterations": solver.iteration,
        "mrx_guaranteed": low,
        "mrx_best_response": high,
        "histories": sum(len(n.worlds) for n in tree.nodes),
        "terminals": sum(len(n.worlds) for n in tree.of_kind(TERMINAL)),
        "public_states": len(tree.nodes),
        "decision_public_states": len(decisions),
        "info_states": tree.num_info_states(),
        "seconds": time.time() - t0,
    }


def root_value(solver, best_response: int | None) -> float:
    """Mr X's value at the root: both average policies (None), or with player
    `best_response` best-responding to the other's average. Mr X's value v* lies between
    his value against the detectives' best response and his best response's value."""
    solver.evaluate_average(best_response=best_response)
    return float(solver.counterfactual_values(0, 0).sum())  # one root world, chance 1


def bracket(rec: dict) -> tuple[float, float, bool]:
    """[low, high] around Mr X's value v*, and whether it lies strictly inside (-1, 1)."""
    if "mrx_guaranteed" in rec:
        low, high = rec["mrx_guaranteed"], rec["mrx_best_response"]
    else:  # a solve cached before the brackets were recorded: the gains sum to 2 x exploitability
        low, high = rec["value_mrx"] - 2 * rec["exploitability"], rec["value_mrx"] + 2 * rec["exploitability"]
    return low, high, low > -1.0 + 1e-9 and high < 1.0 - 1e-9


def label(spec: str) -> str:
    params = dict(item.split("=", 1) for item in spec[spec.index("(") + 1 : -1].split(","))
    first = "detectives" if params["detectives_first"] == "true" else "Mr X"
    short = "" if params["detective_taxi"] == params["rounds"] else f", detectives {params['detective_taxi']} taxi"
    return f"{params['rounds']} rounds, {first} first, reveal {params['reveal_rounds']}{short}"


def report(rows: list[dict], args) -> None:
    git = git_commit()
    command = "python benchmarks/sog_glasses_variants.py " + " ".join(sys.argv[1:])
    result = {"command": command, "git": git, "machine": machine_line(), "tolerance": args.tolerance, "variants": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sog_glasses_variants.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# Benchmark `sog_glasses_variants`: Scotland Yard's glasses map, solved exactly",
        "",
        f"Machine: {result['machine']}. Command: `{command}` (commit {git[:10]}).",
        "",
        "Mr X's value (+1 he escapes, -1 he is caught) under CFR+ on the whole public tree (the solve stops "
        f"at exploitability {args.tolerance:g} or {args.max_iterations} iterations); the true value v* lies in "
        "[low, high]: low = Mr X's average policy against the detectives' best response, high = his best "
        "response to theirs (solves cached before these were recorded: the value -/+ twice the "
        "exploitability). "
        "Mr X starts at 6, the detectives at 1 and 11, everyone on taxi tickets, one per round unless "
        "said.",
        "",
        "| variant | Mr X's value | [low, high] | exploitability | iterations | histories | "
        "decision public states | v* strictly inside (-1, 1) |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        low, high, inside = r["low"], r["high"], r["strictly_inside"]
        lines.append(
            f"| {label(r['spec'])} | {r['value_mrx']:+.4f} | [{low:+.4f}, {high:+.4f}] | "
            f"{r['exploitability']:.1e} | {r['iterations']} | {r['histories']:,} | "
            f"{r['decision_public_states']:,} | {'yes' if inside else 'no'} |"
        )
    (RESULTS / "sog_glasses_variants.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "bench" / "sog_glasses_variants")
    p.add_argument("--tolerance", type=float, default=1e-3, help="stop the solve at this exploitability")
    p.add_argument("--max-iterations", type=int, default=20000)
    p.add_argument("--only", nargs="*", default=None, help="solve these specs instead of the candidates")
    args = p.parse_args(argv)
    rows = []
    for spec in args.only or candidates():
        path = args.work / (spec.replace("/", "_") + ".json")
        if path.exists():
            rec = json.loads(path.read_text())
        else:
            rec = solve(spec, args.tolerance, args.max_iterations)
            write_json_atomic(path, rec)
        rec["low"], rec["high"], rec["strictly_inside"] = bracket(rec)
        print(
            f"{label(spec)}: {rec['value_mrx']:+.4f} in [{rec['low']:+.4f}, {rec['high']:+.4f}] (exploitability "
            f"{rec['exploitability']:.1e}, {rec['iterations']} iterations, {rec['seconds']:.0f} s)",
            flush=True,
        )
        rows.append(rec)
    report(rows, args)


if __name__ == "__main__":
    main()
