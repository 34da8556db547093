"""The arms of `learner_speed.py`: each algorithm's learner at a game and trunk, how its
replay is filled, and the floor (the same network passes alone, forward and backward)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from polyzero.algos import make_algorithm
from polyzero.config import build_config
from polyzero.games import load_game
from polyzero.train.selfplay import SelfPlayActor

FILL = ["search.num_simulations=2", "selfplay.concurrent_games=64", "muzero.reanalyse_fraction=0"]
SOG_TRUNK = ["net.kind=mlp", "net.width=256", "net.layers=3", "train.batch_size=128"]


@dataclass
class Arm:
    name: str
    game: str
    algo: str
    baseline: str  # the AlphaZero arm at the same trunk
    overrides: list = field(default_factory=list)


ARMS = [
    Arm("alphazero", "connect_four", "alphazero", "alphazero"),
    Arm("muzero", "connect_four", "muzero", "alphazero"),
    Arm("gumbel_muzero", "connect_four", "muzero", "alphazero", ["search.kind=gumbel"]),
    Arm("muzero_k3", "connect_four", "muzero", "alphazero", ["muzero.unroll_steps=3"]),
    Arm("muzero_k1", "connect_four", "muzero", "alphazero", ["muzero.unroll_steps=1"]),
    Arm("muzero_dyn1", "connect_four", "muzero", "alphazero", ["muzero.dynamics_blocks=1"]),
    Arm(
        "muzero_k3_dyn1",
        "connect_four",
        "muzero",
        "alphazero",
        ["muzero.unroll_steps=3", "muzero.dynamics_blocks=1"],
    ),
    Arm("alphazero_fused_step", "connect_four", "alphazero", "alphazero", ["train.fused_step=true"]),
    Arm("muzero_fused_step", "connect_four", "muzero", "alphazero", ["train.fused_step=true"]),
    Arm("alphazero_compiled", "connect_four", "alphazero", "alphazero", ["train.compile=true"]),
    Arm("muzero_compiled", "connect_four", "muzero", "alphazero", ["train.compile=true"]),
    Arm(
        "alphazero_nannon_ndmz_trunk",
        "nannon",
        "alphazero",
        "alphazero_nannon_ndmz_trunk",
        ["net.width=256", "train.batch_size=512"],
    ),
    Arm(
        "alphazero_nannon_ndmz_trunk_fused_step",
        "nannon",
        "alphazero",
        "alphazero_nannon_ndmz_trunk",
        ["net.width=256", "train.batch_size=512", "train.fused_step=true"],
    ),
    Arm("ndmz", "nannon", "ndmz", "alphazero_nannon_ndmz_trunk"),
    Arm("ndmz_fused_step", "nannon", "ndmz", "alphazero_nannon_ndmz_trunk", ["train.fused_step=true"]),
    Arm("alphazero_sog_trunk", "connect_four", "alphazero", "alphazero_sog_trunk", SOG_TRUNK),
    Arm(
        "alphazero_sog_trunk_fused_step",
        "connect_four",
        "alphazero",
        "alphazero_sog_trunk",
        [*SOG_TRUNK, "train.fused_step=true"],
    ),
    Arm("sog_cvpn", "connect_four", "sog", "alphazero_sog_trunk"),
    Arm("sog_cvpn_fused_step", "connect_four", "sog", "alphazero_sog_trunk", ["train.fused_step=true"]),
]


# ------------------------------------------------------------------ data
def filled_replay(cfg, algo, game, positions: int):
    """A replay buffer holding at least `positions` self-play positions of the untrained network."""
    net = algo.build_network()
    actor = SelfPlayActor(algo, game, cfg, algo.make_evaluator(net, torch.device("cpu")), seed=cfg.seed)
    replay = algo.make_replay()
    added = 0
    while added < positions:
        for traj in actor.tick():
            added += replay.add(algo.trajectory_examples(traj))
    return replay


def random_cvpn_window(encoding, cfg, rng: np.random.Generator):
    """Student of Games' sliding window as training uses it (the preset's capacity, uses
    per example and board symmetries), full of random examples of the CVPN's shapes:
    its minibatches cost what the trainer's do."""
    from polyzero.sog.cvpn import Example
    from polyzero.sog.selfplay import SlidingWindow

    symmetries = encoding.input_symmetries() if cfg.train.symmetries else ()
    window = SlidingWindow(encoding, cfg.train.replay_size, cfg.sog.max_updates, symmetries)
    s, a = encoding.max_slots, encoding.num_actions
    for _ in range(cfg.train.replay_size):
        legal = rng.random((s, a)) < 0.7
        legal[:, 0] = True
        policy = rng.random((s, a)) * legal
        window.add(
            Example(
                x=rng.random(encoding.input_size, dtype=np.float32),
                value=rng.uniform(-1, 1, (2, s)).astype(np.float32),
                value_mask=(rng.random((2, s)) < 0.8).astype(np.float32),
                policy=(policy / policy.sum(-1, keepdims=True)).astype(np.float32),
                policy_mask=(rng.random(s) < 0.5).astype(np.float32),
                legal=legal,
                player=int(rng.integers(0, 2)),
            )
        )
    return window


def setup(arm: Arm, batch: int | None):
    """(the algorithm or model the Learner takes, its config, a sampler of minibatches)."""
    fill = [] if arm.algo == "sog" else FILL  # the CVPN's examples are not played
    cfg = build_config(arm.game, arm.algo, overrides=fill + arm.overrides)
    if batch:
        cfg.train.batch_size = batch
    game = load_game(cfg.game)
    if arm.algo == "sog":
        from polyzero.sog.cvpn import BeliefEncoding
        from polyzero.sog.trainer import CVPNModel

        encoding = BeliefEncoding(game)
        return CVPNModel(encoding, cfg), cfg, random_cvpn_window(encoding, cfg, np.random.default_rng(cfg.seed))
    algo = make_algorithm(cfg, game)
    return algo, cfg, filled_replay(cfg, algo, game, 2 * cfg.train.batch_size)


# ------------------------------------------------------------------ the floor
def floor_pass(algo, net: torch.nn.Module, batch: dict[str, torch.Tensor]) -> None:
    """The network passes of one update, forward and backward, with nothing else."""
    name = getattr(algo, "name", "")
    outs = []
    if name in ("muzero", "ndmz"):
        s = net.represent(batch["obs"])
        outs += [*net.predict(s, root=True)] if name == "muzero" else [*net.predict(s)]
        for k in range(batch["actions"].shape[1]):
            if name == "muzero":
                s, reward = net.dynamics(s, batch["actions"][:, k])
                outs += [*net.predict(s), *([] if reward is None else [reward])]
            else:
                reward, s, ident = net.dynamics(s, batch["actions"][:, k])
                outs += [reward, ident, *net.predict(s)]
    else:
        outs += [*net(batch["x" if name == "sog" else "obs"])]
    sum(o.float().sum() for o in outs).backward()
