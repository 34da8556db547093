"""How varied a run's self-play is: a probe for self-play collapse.

For each checkpoint, the run's own self-play actor (its acting temperature, noise
and simulations) plays `--games` games with the checkpoint's weights; we report the
share of distinct openings, the entropy of the search policies (the policy targets)
early and late in the game, how far the root values sit from the outcomes, and the
outcomes themselves. A learner whose self-play collapses shows few distinct
openings, near-zero policy entropy and root values that match every outcome.

With --tactics N, the checkpoint's agent (no noise, most-visited move) also meets N
positions from random play where the mover can win at once, and N where it must
block the opponent's only immediate win, at 1 simulation (the raw prior) and at the
run's evaluation simulations: the share of wins taken and of blocks made. For a
MuZero checkpoint it also reads the learned model one step ahead on the win
positions (eval mode): Q(s, a) = r(s, a) - v(g(s, a)) for every legal a, the share
of positions whose highest-Q (and highest-reward) move wins, and the mean Q and r
of winning and other moves. For two-player games the probe also counts, along the
self-play games, the chances to win at once, the share taken, and how often a mover
who let one pass still won the game (the outcome its learned model is taught for the
move it played instead).

  python benchmarks/selfplay_diversity.py runs/c4 --checkpoints 0,50,100 --games 128
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from polyzero.algos import make_algorithm  # noqa: E402
from polyzero.config import build_config, read_toml  # noqa: E402
from polyzero.games import load_game  # noqa: E402
from polyzero.train.agents import load_search_player  # noqa: E402
from polyzero.train.checkpoint import read_learner  # noqa: E402
from polyzero.train.selfplay import SelfPlayActor  # noqa: E402


def entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def load_checkpoint(ckpt: Path):
    """(config, game, algorithm, network with the checkpoint's weights)."""
    cfg = build_config(base=read_toml(ckpt / "config.toml"))
    game = load_game(cfg.game)
    algo = make_algorithm(cfg, game)
    net = algo.build_network()
    net.load_state_dict(read_learner(ckpt)["net"])
    return cfg, game, algo, net


def probe(ckpt: Path, games: int, seed: int) -> dict:
    cfg, game, algo, net = load_checkpoint(ckpt)
    actor = SelfPlayActor(algo, game, cfg, algo.make_evaluator(net, torch.device("cpu"), selfplay=True), seed=seed)
    if hasattr(algo, "acting_temperature"):
        actor.temperature = algo.acting_temperature(int(ckpt.name.split("_")[-1]))
    trajs = []
    while len(trajs) < games:
        trajs += [t for t in actor.tick() if t.ended]
    trajs = trajs[:games]
    early = [entropy(np.asarray(p)) for t in trajs for p in t.policies[:8]]
    late = [entropy(np.asarray(p)) for t in trajs for p in t.policies[8:]]
    gap = [abs(v - t.returns[pl]) for t in trajs for v, pl in zip(t.root_values, t.players)]
    first = np.array([t.returns[0] for t in trajs])
    out = {
        "checkpoint": ckpt.name,
        "games": len(trajs),
        "mean_length": float(np.mean([len(t.actions) for t in trajs])),
        "policy_entropy_moves_1_8": float(np.mean(early)),
        "policy_entropy_after_8": float(np.mean(late)),
        "root_value_error": float(np.mean(gap)),
        "first_player_win": float(np.mean(first > 0)),
        "draw": float(np.mean(first == 0)),
    }
    for k in (4, 8, 12):
        out[f"distinct_openings_{k}"] = len({tuple(t.actions[:k]) for t in trajs}) / len(trajs)
    if game.num_players() == 2:
        out.update(missed_wins(game, trajs))
    return out


def missed_wins(game, trajs) -> dict:
    """Along the self-play games: how often the mover could win at once and did, and when
    it did not, how often it still won the game -- the outcome a learned model is taught
    for the move it played instead."""
    taken, skipped = 0, []
    for t in trajs:
        state = game.new_initial_state()
        for a in t.actions:
            if state.is_chance_node():
                break
            mover, wins = state.current_player(), immediate_wins(state)
            if wins and a in wins:
                taken += 1
            elif wins:
                skipped.append(t.returns[mover])
            state.apply_action(a)
    chances = taken + len(skipped)
    return {
        "selfplay_win_chances": chances,
        "selfplay_wins_taken": taken / chances if chances else float("nan"),
        "skipped_win_mover_won": float(np.mean(np.asarray(skipped) > 0)) if skipped else float("nan"),
    }


def immediate_wins(state) -> list[int]:
    mover = state.current_player()
    wins = []
    for a in state.legal_actions():
        child = state.child(a)
        if child.is_terminal() and child.returns()[mover] > 0:
            wins.append(a)
    return wins


def tactic_positions(game, n: int, seed: int) -> tuple[list, list]:
    """n positions where the mover can win at once, and n where it cannot but the
    opponent could at exactly one place (the mover must block there), from random play."""
    rng = np.random.default_rng(seed)
    win, block = [], []
    while len(win) < n or len(block) < n:
        state = game.new_initial_state()
        while not state.is_terminal():
            wins = immediate_wins(state)
            if wins and len(win) < n:
                win.append((state.clone(), wins))
            elif not wins and len(block) < n:
                legal = state.legal_actions()
                # The opponent's immediate wins if the mover passed: those it could still take
                # after any mover's move other than the cell/column that takes it first.
                threats = {a for m in legal for a in immediate_wins(state.child(m))}
                if len(threats) == 1 and all(a in legal for a in threats):
                    block.append((state.clone(), sorted(threats)))
            state.apply_action(int(rng.choice(state.legal_actions())))
    return win, block


def tactics(ckpt: Path, positions: tuple[list, list], sims: int) -> dict:
    player = load_search_player(f"{ckpt}@{sims}")
    player.sample_moves = 0
    out = {}
    for name, group in zip(("win_taken", "block_made"), positions):
        moves = player.act([s for s, _ in group])
        out[f"{name}@{sims}"] = share_good(moves, group)
    return out


def share_good(moves, positions: list) -> float:
    """The share of (state, good moves) positions whose chosen move is a good one."""
    return float(np.mean([int(m) in good for m, (_, good) in zip(moves, positions)]))


@torch.no_grad()
def one_step(algo, positions: list, score) -> dict:
    """Each legal move of each win position scored by `score(observations, actions)` (one
    row per legal move): the share of positions whose highest-scored move wins, and the
    mean score of winning and of other moves."""
    best, s_win, s_other = [], [], []
    for state, good in positions:
        legal = state.legal_actions()
        obs = torch.from_numpy(algo.encode([state])).expand(len(legal), *algo.encoder.shape)
        values = score(obs, torch.tensor(legal))
        wins = np.array([a in good for a in legal])
        best.append(wins[int(np.argmax(values))])
        s_win += list(values[wins])
        s_other += list(values[~wins])
    return {"argmax_wins": float(np.mean(best)), "win": float(np.mean(s_win)), "other": float(np.mean(s_other))}


def model_q(net):
    """The learned model's one-step Q of the mover, r(s, a) - v(g(s, a)) (the opponent
    moves next), as a score for `one_step`."""

    def q(obs, actions):
        s2, reward = net.dynamics(net.represent(obs), actions)
        r = net.reward_scalar(reward, len(actions), s2)
        return (r - net.value_scalar(net.predict(s2)[1])).numpy()

    return q


@torch.no_grad()
def model_tactics(ckpt: Path, positions: list) -> dict:
    """The learned model's one-step view of the win positions (MuZero checkpoints)."""
    _, _, algo, net = load_checkpoint(ckpt)
    net.eval()
    q = one_step(algo, positions, model_q(net))
    out = {"model_argmax_q_wins": q["argmax_wins"], "model_q_win": q["win"], "model_q_other": q["other"]}
    if net.reward_head is not None:  # board games have one with muzero.terminal_reward only
        r = one_step(
            algo,
            positions,
            lambda obs, actions: net.reward_scalar(
                net.dynamics(net.represent(obs), actions)[1], len(actions), None
            ).numpy(),
        )
        out.update(model_argmax_r_wins=r["argmax_wins"], model_r_win=r["win"], model_r_other=r["other"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--checkpoints", default="", help="learning steps, comma list (default: all)")
    ap.add_argument("--games", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tactics", type=int, default=0, help="positions per tactic (0: none)")
    ap.add_argument("--out", type=Path, default=None, help="append the rows to this JSON file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    found = sorted((args.run_dir / "checkpoints").glob("step_*"))
    if args.checkpoints:
        wanted = {int(s) for s in args.checkpoints.split(",")}
        found = [c for c in found if int(c.name.split("_")[-1]) in wanted]
    rows = []
    positions = None
    for ckpt in found:
        rows.append(probe(ckpt, args.games, args.seed))
        if args.tactics:
            cfg = build_config(base=read_toml(ckpt / "config.toml"))
            positions = positions or tactic_positions(load_game(cfg.game), args.tactics, args.seed)
            for sims in (1, cfg.eval.simulations):
                rows[-1].update(tactics(ckpt, positions, sims))
            if cfg.algo == "muzero":
                rows[-1].update(model_tactics(ckpt, positions[0]))
        print(json.dumps(rows[-1]), flush=True)
    if args.out:  # several runs' probes in one file, each with its command
        runs = json.loads(args.out.read_text()) if args.out.exists() else []
        runs.append({"command": " ".join(["python", *sys.argv]), "rows": rows})
        args.out.write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
