"""Benchmark `sog_tic_tac_toe` (issue 59): does Student of Games' training make the
tic-tac-toe agent stronger than its untrained network at equal search?

    python benchmarks/sog_tic_tac_toe.py all --seeds 0,1,2 --search-seeds 10

Phases (each resumable):

- **train**: the shipped preset (`sog_tic_tac_toe`) for `--steps` learning steps on each
  training seed (`polyzero train tic_tac_toe --algo sog --seed S`, one thread; resumed from
  its last checkpoint if stopped). Its step-0 checkpoint is the untrained network (the same
  initialisation, saved before any learning step).
- **eval**: for each training seed and each of `--search-seeds` search seeds, `--games`
  games (seats alternated) of each pairing: trained SoG(s, 1) against untrained SoG(s, 1),
  and each of them against `--reference` (default `mcts:100`); each cell cached under
  WORK/eval/.
- **report**: per training seed the pooled score of each pairing with its Wilson interval
  (and the per-search-seed scores); across training seeds the mean of the per-seed scores
  with a 95% t-interval. benchmarks/results/OUT.{json,md}.

The target (issue 59, set before any result): trained SoG ahead of untrained SoG at equal
search, i.e. the 95% t-interval over training seeds of the head-to-head score above 0.5.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    ONE_THREAD,
    POLYZERO,
    RESULTS,
    ROOT,
    cached,
    git_commit,
    interval,
    machine_line,
    results_name,
    run_phases,
    seed_list,
    wilson,
    write_results,
)

PAIRINGS = {  # name -> (agent, opponent); "ref" is --reference
    "trained_vs_untrained": ("trained", "untrained"),
    "trained_vs_ref": ("trained", "ref"),
    "untrained_vs_ref": ("untrained", "ref"),
}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("phase", choices=["train", "probe", "eval", "report", "all"], help="probe: only the minimax probe")
    p.add_argument("--seeds", type=seed_list, default=[0, 1, 2], help="training seeds (default 0,1,2)")
    p.add_argument("--search-seeds", type=int, default=10, help="search seeds per training seed (default 10)")
    p.add_argument("--games", type=int, default=2, help="games per pairing and search seed, seats alternated")
    p.add_argument("--steps", type=int, default=100, help="learning steps of each training run (default 100)")
    p.add_argument("--simulations", type=int, default=100, help="s of both SoG(s, 1) agents (default 100)")
    p.add_argument("--final", choices=["sample", "argmax"], default="sample", help="how SoG picks its move")
    p.add_argument("--reference", default="mcts:100", help="the fixed opponent of both agents")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="training overrides")
    p.add_argument("--work", type=Path, default=ROOT / "runs" / "bench" / "sog_tic_tac_toe")
    p.add_argument("--out", type=results_name, default="sog_tic_tac_toe", help="results name under benchmarks/results")
    args = p.parse_args(argv)
    if args.search_seeds < 1 or args.games < 2 or args.games % 2 or args.steps < 1:
        p.error("--search-seeds and --steps must be at least 1, --games even and at least 2")
    return args


def run_dir(args, seed: int) -> Path:
    return args.work / f"seed{seed}"


def checkpoint(args, seed: int, step: int) -> Path:
    return run_dir(args, seed) / "checkpoints" / f"step_{step:06d}"


def phase_train(args, work: Path) -> None:
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
    for seed in args.seeds:
        if checkpoint(args, seed, args.steps).exists():
            continue
        run = run_dir(args, seed)
        if (run / "checkpoints" / "latest").exists():
            cmd = POLYZERO + ["train", "--resume", str(run), "--no-progress"]
        else:
            sets = ["threads=1", "eval.every=0", "eval.final_games=0", f"train.steps={args.steps}"]
            sets += ["train.keep_checkpoints=100000", *args.set]
            cmd = POLYZERO + ["train", "tic_tac_toe", "--algo", "sog", "--seed", str(seed), "--run-dir", str(run)]
            cmd += ["--no-progress"] + [x for s in sets for x in ("--set", s)]
        print("[train]", " ".join(cmd[2:]), flush=True)
        subprocess.run(cmd, check=True, env=env)


def spec(args, seed: int, who: str) -> str:
    if who == "ref":
        return args.reference
    step = args.steps if who == "trained" else 0
    return f"sog:{args.simulations},1,final={args.final},net={checkpoint(args, seed, step)}"


def play_cell(agent: str, opponent: str, games: int, seed: int) -> dict:
    """`games` games, the agent in seat 0 in the even ones; players and games seeded by `seed`."""
    import torch

    from polyzero.eval import make_player, play_match
    from polyzero.games import load_game

    torch.set_num_threads(1)
    game = load_game("tic_tac_toe")
    res = play_match(game, make_player(agent, game, seed=seed), make_player(opponent, game, seed=seed), games, seed)
    return {"wins": res.wins, "draws": res.draws, "losses": res.losses, "machine": machine_line()}


def cell_name(args, seed: int, pairing: str, search_seed: int) -> str:
    """The cache name of a cell: what the agents play with, so that variants keep their own."""
    reference = "".join(c for c in args.reference if c.isalnum())
    return f"seed{seed}-step{args.steps}-{pairing}-sog{args.simulations}-{args.final}-{reference}-k{search_seed}"


def phase_probe(args, work: Path) -> None:
    """The CVPN against minimax at every position (`polyzero sog-probe`'s perfect-information
    probe), untrained and trained, per training seed."""
    from polyzero.games import load_game
    from polyzero.sog.minimax_probe import minimax_positions, network_vs_minimax
    from polyzero.sog.trainer import load_cvpn

    solved: list = []  # the positions, solved once when a probe is not cached

    def probe(seed: int, step: int) -> dict:
        if not solved:
            solved.extend(minimax_positions(load_game("tic_tac_toe")))
        return network_vs_minimax(load_cvpn(checkpoint(args, seed, step))[0], solved)

    for seed in args.seeds:
        for step in (0, args.steps):
            cached(
                work, f"probe-seed{seed}-step{step}", lambda s=seed, t=step: probe(s, t), show=lambda r: f"{r['all']}"
            )


def phase_eval(args, work: Path) -> None:
    phase_probe(args, work)
    for k in range(args.search_seeds):  # search seeds outermost: a stopped run has every pairing alike
        for seed in args.seeds:
            for pairing, (a, b) in PAIRINGS.items():
                agent, opponent = spec(args, seed, a), spec(args, seed, b)
                cell_seed = 1000 * seed + k
                cached(
                    work,
                    cell_name(args, seed, pairing, k),
                    lambda x=agent, y=opponent, s=cell_seed: play_cell(x, y, args.games, s),
                )


def score(cells: list[dict]) -> dict:
    """Pooled W/D/L of cells, the score (draws half) and its Wilson interval."""
    w, d, l = (sum(c[k] for c in cells) for k in ("wins", "draws", "losses"))  # noqa: E741
    n = w + d + l
    s = (w + d / 2) / n
    return {"wins": w, "draws": d, "losses": l, "games": n, "score": s, "wilson95": list(wilson(s, n))}


def summarise(args, work: Path) -> dict:
    """Per training seed and pairing the pooled score and per-search-seed scores; across
    training seeds the mean of the per-seed scores (95% t-interval), and the gain over
    the reference (trained minus untrained score against it)."""
    per_seed = {}
    for seed in args.seeds:
        row = {}
        for pairing in PAIRINGS:
            paths = [work / "eval" / f"{cell_name(args, seed, pairing, k)}.json" for k in range(args.search_seeds)]
            cells = [json.loads(p.read_text()) for p in paths if p.exists()]
            if not cells:
                continue
            row[pairing] = {
                **score(cells),
                "search_seeds": len(cells),
                "by_search_seed": [score([c])["score"] for c in cells],
            }
        if "trained_vs_ref" in row and "untrained_vs_ref" in row:
            row["gain_vs_ref"] = row["trained_vs_ref"]["score"] - row["untrained_vs_ref"]["score"]
        per_seed[str(seed)] = row
    across = {}
    for name in (*PAIRINGS, "gain_vs_ref"):
        values = [r[name]["score"] if name in PAIRINGS else r[name] for r in per_seed.values() if name in r]
        if values:
            mean, lo, hi = interval(values)
            across[name] = {"values": values, "mean": mean, "t95": [lo, hi], "training_seeds": len(values)}
    probe = {}
    for seed in args.seeds:
        for step, who in ((0, "untrained"), (args.steps, "trained")):
            path = work / "eval" / f"probe-seed{seed}-step{step}.json"
            if path.exists():
                probe.setdefault(who, {})[str(seed)] = json.loads(path.read_text())["all"]
    for rows in probe.values():
        seeds = list(rows)
        rows["mean"] = {}
        for key in ("value_error", "sign_agreement", "policy_on_optimal", "uniform_on_optimal"):
            mean, lo, hi = interval([rows[s][key] for s in seeds])
            rows["mean"][key] = {"mean": mean, "t95": [lo, hi]}
    h2h = across.get("trained_vs_untrained")
    met = bool(h2h and h2h["training_seeds"] >= 3 and h2h["t95"][0] > 0.5)
    return {"per_training_seed": per_seed, "across_training_seeds": across, "probe": probe, "target_met": met}


def markdown(result: dict) -> str:
    cfg = result["config"]
    lines = [
        "# Student of Games on tic-tac-toe: trained vs untrained at equal search",
        "",
        f"Command: `{result['command']}`  ",
        f"Training: the `sog_tic_tac_toe` preset, {cfg['steps']} learning steps, seeds {cfg['seeds']}"
        + (f", overrides {cfg['set']}" if cfg["set"] else "")
        + f"; agents SoG({cfg['simulations']}, 1), final={cfg['final']}; the untrained agent is step 0 of the"
        f" same run. {cfg['search_seeds']} search seeds x {cfg['games']} games per pairing, seats alternated;"
        f" reference `{cfg['reference']}`.  ",
        f"Machine (shared with other sessions' jobs): {result['machine']}; commit {result['commit']}.",
    ]
    if not result["across_training_seeds"]:
        return "\n".join(lines + ["", "No games played (the probe phase only)."] + probe_lines(result)) + "\n"
    return "\n".join(lines + games_lines(result) + probe_lines(result) + target_lines(result)) + "\n"


def games_lines(result: dict) -> list[str]:
    """The pairings' table: per training seed and the mean over them."""
    cfg = result["config"]
    lines = [
        "",
        "| pairing | " + " | ".join(f"seed {s}" for s in result["per_training_seed"]) + " | mean over seeds [95% t] |",
        "|---|" + "---|" * len(result["per_training_seed"]) + "---|",
    ]
    across = result["across_training_seeds"]
    for name in (*PAIRINGS, "gain_vs_ref"):
        cells = []
        for row in result["per_training_seed"].values():
            r = row.get(name)
            if r is None:
                cells.append("-")
            elif name == "gain_vs_ref":
                cells.append(f"{r:+.3f}")
            else:
                lo, hi = r["wilson95"]
                cells.append(f"{r['score']:.3f} [{lo:.2f}, {hi:.2f}] (W{r['wins']} D{r['draws']} L{r['losses']})")
        a = across.get(name)
        mean = f"{a['mean']:+.3f}" if a and name == "gain_vs_ref" else f"{a['mean']:.3f}" if a else "-"
        band = f" [{a['t95'][0]:.3f}, {a['t95'][1]:.3f}]" if a and a["training_seeds"] > 1 else ""
        label = name.replace("gain_vs_ref", "gain vs ref").replace("_vs_", " vs ").replace("ref", cfg["reference"])
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {mean}{band} |")
    return lines


def target_lines(result: dict) -> list[str]:
    return [
        "",
        "Per seed: pooled score over the search seeds [Wilson 95%]. gain_vs_ref: trained minus untrained score "
        "against the reference. Target (set before the results): the head-to-head's 95% t-interval over >= 3 "
        f"training seeds above 0.5: **{'met' if result['target_met'] else 'not met'}**.",
    ]


def probe_lines(result: dict) -> list[str]:
    """The probe's rows: value error (sign agreement) / policy on optimal moves per seed and mean."""
    probe = result["probe"]
    if not probe:
        return []
    seeds = [s for s in next(iter(probe.values())) if s != "mean"]
    lines = [
        "",
        "The CVPN against minimax at tic-tac-toe's 4,520 positions not over: value error (sign agreement)"
        " / probability on optimal moves (a uniform policy's: "
        f"{next(iter(probe.values()))['mean']['uniform_on_optimal']['mean']:.2f}).",
        "",
        "| network | " + " | ".join(f"seed {s}" for s in seeds) + " | mean [95% t] value error |",
        "|---|" + "---|" * len(seeds) + "---|",
    ]
    for who, rows in probe.items():
        cells = [
            f"{rows[s]['value_error']:.3f} ({rows[s]['sign_agreement']:.2f}) / {rows[s]['policy_on_optimal']:.2f}"
            for s in seeds
        ]
        m = rows["mean"]["value_error"]
        band = f" [{m['t95'][0]:.3f}, {m['t95'][1]:.3f}]" if len(seeds) > 1 else ""
        lines.append(f"| {who} | " + " | ".join(cells) + f" | {m['mean']:.3f}{band} |")
    return lines


def phase_report(args, work: Path) -> None:
    summary = summarise(args, work)
    if not summary["across_training_seeds"] and not summary["probe"]:
        # A wrong --work must not overwrite the committed results with an empty report.
        print(f"sog_tic_tac_toe.py: error: no games or probe results under {work / 'eval'}", file=sys.stderr)
        raise SystemExit(2)
    result = {
        "command": "python benchmarks/sog_tic_tac_toe.py all " + " ".join(a for a in args.argv if a != args.phase),
        "config": {
            k: vars(args)[k]
            for k in ("seeds", "search_seeds", "games", "steps", "simulations", "final", "reference", "set")
        },
        "machine": machine_line(),
        "commit": git_commit(),
        **summary,
    }
    write_results(RESULTS / f"{args.out}.json", result, markdown(result))
    print(markdown(result))


def main(argv=None) -> None:
    args = parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    if args.phase == "probe":
        phase_probe(args, args.work)
    run_phases(args, args.work, phase_train, phase_eval, phase_report)


if __name__ == "__main__":
    main()
