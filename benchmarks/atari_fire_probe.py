"""Why a MuZero Breakout policy stops pressing FIRE (issue 56 item 4): at each of a run's
checkpoints, what its evaluation search sees at the first `--decisions` decisions of a
few episodes (the states where the ball waits for FIRE while the policy does not press it).

Per checkpoint: how often the search plays FIRE, FIRE's prior, the spread of the root's
Q over the actions beside the root value, and the cost of waiting one step that the
discount alone gives, (1 - gamma) |v|. Waiting for FIRE costs a return only through the
discount: when the spread of the model's Q between actions exceeds that cost, the search
ranks FIRE and NOOP by the model's noise, not by the ball it launches.

    python benchmarks/atari_fire_probe.py --run runs/bench/atari_breakout_s0/muzero \\
        --steps 0,50,100,200,400,717 --out atari_breakout_fire_probe
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, command_line, git_commit, machine_line, results_name, write_results  # noqa: E402
from minatar_muzero_games import eval_game  # noqa: E402


def action_meanings(game_name: str) -> list[str]:
    """The names of the game's actions (ALE's minimal set, in polyzero's order)."""
    import ale_py
    import gymnasium as gym

    gym.register_envs(ale_py)
    env = gym.make(f"ALE/{game_name}-v5")
    try:
        return list(env.unwrapped.get_action_meanings())
    finally:
        env.close()


def probe_checkpoint(ckpt: Path, game, episodes: int, decisions: int, seed: int) -> list[dict]:
    """The search's view at the first `decisions` decisions of `episodes` episodes (each
    with its own chance seed; the player plays the action its search chooses)."""
    from polyzero.games.chance import sample_chance
    from polyzero.train.agents import load_search_player

    player = load_search_player(str(ckpt), game, seed=seed)
    rows = []
    for ep in range(episodes):
        rng = np.random.default_rng(seed + ep)
        state = game.new_initial_state()
        for t in range(decisions):
            while state.is_chance_node():
                sample_chance(state, rng)
            if state.is_terminal():
                break
            view = player.analyse([state])[0]
            moves = sorted(view["moves"], key=lambda m: m["action"])
            rows.append(
                {
                    "episode": ep,
                    "decision": t,
                    "action": view["action"],
                    "value": round(view["value"], 4),
                    "prior": [round(m["prior"], 4) for m in moves],
                    "visits": [m["visits"] for m in moves],
                    "q": [None if m["q"] is None else round(m["q"], 4) for m in moves],
                }
            )
            state.apply_action(view["action"])
    return rows


def summarize(rows: list[dict], fire: int, discount: float) -> dict:
    """The checkpoint's row of the table: FIRE's share of the actions played and of the
    prior, the mean spread max Q - min Q over the actions the search visited, the mean
    root value and the discount's cost of waiting one step, (1 - gamma) |v|; per action,
    its share of the actions played and its mean prior."""
    spreads = [max(q) - min(q) for q in ([x for x in r["q"] if x is not None] for r in rows) if len(q) > 1]
    values = np.array([r["value"] for r in rows])
    played = np.bincount([r["action"] for r in rows], minlength=len(rows[0]["prior"])) / len(rows)
    return {
        "decisions": len(rows),
        "fire_played": float(played[fire]),
        "fire_prior": float(np.mean([r["prior"][fire] for r in rows])),
        "q_spread": float(np.mean(spreads)) if spreads else float("nan"),
        "value": float(values.mean()),
        "wait_cost": float((1 - discount) * np.abs(values).mean()),
        "played": [round(float(x), 4) for x in played],
        "prior": [round(float(x), 4) for x in np.mean([r["prior"] for r in rows], axis=0)],
    }


def markdown(result: dict) -> str:
    lines = [
        "# Atari Breakout: why the greedy policy stops pressing FIRE",
        "",
        f"- command: `{result['command']}` (commit {result['git'][:10]})",
        f"- machine: {result['machine']}",
        f"- run: `{result['run']}`; the evaluation's search (no noise, its own action), the first "
        f"{result['decisions']} decisions of {result['episodes']} episodes a checkpoint, chance seeds "
        f"{result['seed']}..{result['seed'] + result['episodes'] - 1}; discount {result['discount']}",
        "",
        "| learning step | decisions | FIRE played | FIRE's prior | Q spread (max - min) | root value | "
        "waiting's cost (1 - gamma) abs(v) | spread / cost | actions played (share) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["checkpoints"]:
        ratio = row["q_spread"] / row["wait_cost"] if row["wait_cost"] else float("inf")
        lines.append(
            f"| {row['step']} | {row['decisions']} | {row['fire_played']:.3f} | {row['fire_prior']:.3f} | "
            f"{row['q_spread']:.3f} | {row['value']:.2f} | {row['wait_cost']:.4f} | {ratio:.0f}x | "
            + ", ".join(f"{name} {share:.2f}" for name, share in zip(result["actions"], row["played"]) if share)
            + " |"
        )
    lines += [
        "",
        f"Actions: {', '.join(f'{i} {name}' for i, name in enumerate(result['actions']))}.",
        "",
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", type=Path, required=True, help="a MuZero run directory on atari-breakout")
    p.add_argument("--steps", default="", help="learning steps of the checkpoints to probe (default: all)")
    p.add_argument("--episodes", type=int, default=4)
    p.add_argument("--decisions", type=int, default=40, help="decisions probed from each episode's start")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=results_name, default="atari_breakout_fire_probe")
    return p


def main(argv=None) -> None:
    from polyzero.config import build_config, read_toml

    p = _parser()
    args = p.parse_args(argv)
    if args.episodes < 1 or args.decisions < 1:
        p.error("--episodes and --decisions must be at least 1")
    ckpts = sorted((args.run / "checkpoints").glob("step_*"))
    if not ckpts:
        p.error(f"{args.run} has no checkpoints (checkpoints/step_*)")
    if args.steps:
        try:
            wanted = {int(s) for s in args.steps.split(",")}
        except ValueError:
            p.error(f"--steps takes learning steps separated by commas, not {args.steps!r}")
        missing = wanted - {int(c.name.split("_")[-1]) for c in ckpts}
        if missing:
            p.error(f"{args.run} has no checkpoint at step {min(missing)}")
        ckpts = [c for c in ckpts if int(c.name.split("_")[-1]) in wanted]
    cfg = build_config(base=read_toml(args.run / "config.toml"))
    if cfg.game != "atari-breakout":
        p.error(f"{args.run} is a run on {cfg.game!r}; the probe reads Breakout's FIRE (atari-breakout)")
    actions = action_meanings("Breakout")
    game = eval_game(cfg.game, 0)
    checkpoints = []
    for ckpt in ckpts:
        rows = probe_checkpoint(ckpt, game, args.episodes, args.decisions, args.seed)
        row = {"step": int(ckpt.name.split("_")[-1]), **summarize(rows, actions.index("FIRE"), cfg.muzero.discount)}
        print(row, flush=True)
        checkpoints.append(row)
    result = {
        "command": command_line(argv),
        "git": git_commit(),
        "machine": machine_line(),
        "run": str(args.run),
        "episodes": args.episodes,
        "decisions": args.decisions,
        "seed": args.seed,
        "discount": cfg.muzero.discount,
        "actions": actions,
        "checkpoints": checkpoints,
    }
    write_results(RESULTS / f"{args.out}.json", result, markdown(result))


if __name__ == "__main__":
    main()
