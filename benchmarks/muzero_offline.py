"""Does MuZero's own loss teach its model a one-move win, on data that shows it?

Offline, no self-play: games from a fixed behaviour policy (random play that takes an
immediate win with probability --take when it has one) enter MuZero's replay as
self-play games would (`trajectory_examples`, the preset's replay and symmetries),
and the preset's learner trains on them with MuZero's loss (Eq. 1, the K-step
unroll). Policy targets are the behaviour policy, value targets the game's outcome.
Every --every learning updates it reads the learned model one step ahead on held-out
positions with an immediate win (as `selfplay_diversity.py --tactics` does): the
share whose highest-Q move wins, the mean Q of winning and other moves, and the
share of wins the learned-model search takes at the preset's simulations.

This separates the loss and model from the self-play loop: if the model learns the
test here, what self-play training lacks is data, not the recipe. With --control, a
plain network (an MLP on the observation and the one-hot action, no h, g or f) learns
the same minibatches' value targets after one move beside it, a yardstick for how hard
the test is to learn from these targets at all. With --terms, the model learns a
one-step unroll on a subset of the loss's terms instead (value0: v^0 against z_t;
value1: v^1 against z_{t+1}; policy: p^0 and p^1), with Adam and no weight decay, to
tell which term keeps it from learning the test. With --replay-from CKPT, the data is
instead the replay buffer a self-play run kept in that checkpoint (its own targets), so a
fresh model can be trained on what self-play gave the run.

  python benchmarks/muzero_offline.py tic_tac_toe --updates 2000
  python benchmarks/muzero_offline.py connect_four --updates 1000 --set muzero.unroll_steps=1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from polyzero.algos import make_algorithm  # noqa: E402
from polyzero.algos.base import Trajectory  # noqa: E402
from polyzero.config import build_config  # noqa: E402
from polyzero.games import load_game  # noqa: E402
from polyzero.train.learner import Learner  # noqa: E402
from selfplay_diversity import immediate_wins, model_q, one_step, share_good, tactic_positions  # noqa: E402


def behaviour_game(algo, game, take: float, rng: np.random.Generator, informative: bool) -> Trajectory:
    """One game of random play that takes an immediate win with probability `take`; its
    policy targets are the behaviour policy itself, or uniform over the legal moves
    (`informative` False: then only the value targets tell a winning move apart)."""
    traj, state = Trajectory(), game.new_initial_state()
    num_actions = game.num_distinct_actions()
    while not state.is_terminal():
        legal, wins = state.legal_actions(), immediate_wins(state)
        policy = np.zeros(num_actions, np.float32)
        policy[legal] = (1.0 - take) / len(legal) if wins else 1.0 / len(legal)
        if wins:
            policy[wins] += take / len(wins)
        action = int(rng.choice(num_actions, p=policy / policy.sum()))
        mask = np.zeros(num_actions, np.float32)
        mask[legal] = 1.0
        traj.observations.append(algo.encode([state])[0])
        traj.policies.append(policy if informative else mask / mask.sum())
        traj.players.append(state.current_player())
        traj.actions.append(action)
        traj.legal.append(mask > 0)
        traj.root_values.append(0.0)
        traj.returns_before.append(0.0)
        last_mover = state.current_player()
        state.apply_action(action)
    traj.returns = np.asarray(state.returns(), np.float32)
    traj.ended = True
    if algo.records_final_observation:
        traj.final_observation = algo.encode_final(state, last_mover)
    return traj


class PlainQ(torch.nn.Module):
    """The control: v(o_t, a_t), the value for the side to move after a_t, straight from
    the observation and the action (2 x 128 ReLU, tanh)."""

    def __init__(self, obs_size: int, num_actions: int):
        super().__init__()
        self.num_actions = num_actions
        self.net = torch.nn.Sequential(
            torch.nn.Linear(obs_size + num_actions, 128),
            torch.nn.ReLU(),
            torch.nn.Linear(128, 128),
            torch.nn.ReLU(),
            torch.nn.Linear(128, 1),
        )

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        onehot = torch.nn.functional.one_hot(action, self.num_actions).float()
        return torch.tanh(self.net(torch.cat([obs.flatten(1), onehot], 1))).squeeze(-1)

    def update(self, optimizer, batch: dict) -> None:
        value = self(torch.from_numpy(batch["obs"]), torch.from_numpy(batch["actions"][:, 0]))
        loss = ((value - torch.from_numpy(batch["target_value"][:, 1])) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def partial_update(net, optimizer, batch: dict, terms: set[str]) -> None:
    """One Adam step of a one-step unroll on the chosen terms of Eq. 1 (no scaling, no L2)."""
    net.train()
    t = {k: torch.from_numpy(v) for k, v in batch.items() if k != "index"}
    s0 = net.represent(t["obs"])
    s1, _ = net.dynamics(s0, t["actions"][:, 0])
    (logits0, v0), (logits1, v1) = net.predict(s0, root=True), net.predict(s1)
    loss = torch.zeros(())
    if "value0" in terms:
        loss = loss + ((v0 - t["target_value"][:, 0]) ** 2).mean()
    if "value1" in terms:
        loss = loss + ((v1 - t["target_value"][:, 1]) ** 2).mean()
    if "policy" in terms:
        for k, logits in enumerate((logits0, logits1)):
            ce = -(t["target_policy"][:, k] * torch.log_softmax(logits, -1)).sum(-1)
            loss = loss + (ce * t["policy_mask"][:, k]).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


@torch.no_grad()
def model_test(algo, net, positions, sims: int, rng: np.random.Generator) -> dict:
    """The learned model one step ahead on win positions, and its search's share of wins."""
    net.eval()
    q = one_step(algo, positions, model_q(net))
    params = algo.cfg.search.params(sims)
    result = algo.search(
        algo.make_evaluator(net, torch.device("cpu")), [s for s, _ in positions], params, rng, add_noise=False
    )
    return {
        "argmax_q_wins": q["argmax_wins"],
        "q_win": q["win"],
        "q_other": q["other"],
        "search_takes": share_good(result.root_visits.argmax(-1), positions),
        "prior_takes": share_good(result.root_prior.argmax(-1), positions),
    }


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("game", help="a board game with a muzero preset: tic_tac_toe, connect_four")
    ap.add_argument("--games", type=int, default=4000, help="behaviour games in replay")
    ap.add_argument(
        "--replay-from",
        type=Path,
        default=None,
        metavar="CKPT",
        help="train on the replay buffer of this self-play checkpoint instead",
    )
    ap.add_argument("--take", type=float, default=0.5, help="probability of taking an immediate win")
    ap.add_argument(
        "--uniform-policy",
        action="store_true",
        help="policy targets uniform over the legal moves, not the behaviour policy",
    )
    ap.add_argument("--updates", type=int, default=2000, help="learning updates (minibatches)")
    ap.add_argument("--every", type=int, default=250, help="test the model every this many updates")
    ap.add_argument("--tests", type=int, default=200, help="held-out win positions")
    ap.add_argument(
        "--control",
        action="store_true",
        help="also train the plain network on the same minibatches (control_argmax_q_wins)",
    )
    ap.add_argument(
        "--terms",
        default="full",
        help="full (MuZero's loss, the learner) or a comma list of value0, value1, policy "
        "(a one-step unroll on those terms alone)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], help="config overrides, as for polyzero train")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", type=Path, default=None, help="append the rows to this JSON file")
    return ap


def main() -> None:
    ap = _parser()
    args = ap.parse_args()
    terms = set() if args.terms == "full" else set(args.terms.split(","))
    if not terms <= {"value0", "value1", "policy"}:
        ap.error(f"--terms: 'full' or a comma list of value0, value1, policy, not {args.terms!r}")
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    cfg = build_config(args.game, "muzero", overrides=args.set)
    game = load_game(cfg.game)
    algo = make_algorithm(cfg, game)
    replay = algo.make_replay()
    start = time.time()
    if args.replay_from:
        replay.load_npz(args.replay_from / "replay.npz")
        print(f"{len(replay)} positions of self-play from {args.replay_from}", flush=True)
    else:
        for _ in range(args.games):
            replay.add(algo.trajectory_examples(behaviour_game(algo, game, args.take, rng, not args.uniform_policy)))
        print(f"{args.games} games, {len(replay)} positions in replay ({time.time() - start:.0f} s)", flush=True)
    positions, _ = tactic_positions(game, args.tests, args.seed + 1000)
    learner = Learner(algo, cfg.train, torch.device("cpu"))
    adam = torch.optim.Adam(learner.net.parameters(), lr=cfg.train.learning_rate) if terms else None
    control = PlainQ(int(np.prod(algo.encoder.shape)), algo.num_actions) if args.control else None
    control_opt = torch.optim.Adam(control.parameters(), lr=cfg.train.learning_rate) if control else None
    rows = []
    for update in range(args.updates + 1):
        if update % args.every == 0:
            row = {
                "label": args.label,
                "game": args.game,
                "set": args.set,
                "terms": args.terms,
                "data": str(args.replay_from) if args.replay_from else f"{args.games} games",
                "update": update,
                "seconds": round(time.time() - start, 1),
                **model_test(algo, learner.net, positions, cfg.search.num_simulations, rng),
            }
            if control is not None:
                row["control_argmax_q_wins"] = one_step(
                    algo, positions, lambda obs, actions: -control(obs, actions).numpy()
                )["argmax_wins"]
            rows.append(row)
            print(json.dumps(row), flush=True)
        if update < args.updates:
            batch = replay.sample(cfg.train.batch_size, rng)
            if terms:
                partial_update(learner.net, adam, batch, terms)
            else:
                learner.update(batch)
            if control is not None:
                control.update(control_opt, batch)
    if args.out:
        old = json.loads(args.out.read_text()) if args.out.exists() else []
        args.out.write_text(json.dumps(old + rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
