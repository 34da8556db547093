"""OpenSpiel's own AlphaZero (open_spiel.python.algorithms.alpha_zero, JAX/flax nnx)
as the peer anchor of benchmarks/connect_four_alphazero.py.

  python benchmarks/openspiel_az.py train --dir DIR --budget-min 40 --mark-min 10

runs `alpha_zero.alpha_zero(config)` unchanged (--actors actor processes, 1 by
default, + the learner in this process, no evaluator processes). A thread copies the learner's latest weights
(the rolling `checkpoint--1` the learner writes after every learning step, which is
what the actors play with) to `checkpoint-wcNNNNNN` (NNNNNN = seconds) at every
`--mark-min` of wall clock since the launch, appends the mark, the elapsed seconds
and the learning step to `wallclock.jsonl`, and stops the run (SIGINT, which
alpha_zero() handles) at `--budget-min`. OpenSpiel's AlphaZero has no seed and no
resume; re-running with a larger budget restarts the learner from the last
wall-clock checkpoint (weights and Adam state; the replay buffer starts empty).

`OpenSpielAZPlayer` loads such a checkpoint with OpenSpiel's own model class and
plays with `mcts.MCTSBot` + `AlphaZeroEvaluator` (no noise, most-visited move),
behind polyzero's Player protocol (`name`, `reset(seed)`, `act(states)`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

# Hyperparameters matched to polyzero's shipped preset (alphazero_connect_four.toml)
# where OpenSpiel's Config has an equivalent.
OPENSPIEL_CONFIG = dict(
    game="connect_four",
    learning_rate=1e-3,  # train.learning_rate
    weight_decay=1e-5,  # train.l2 (an L2 term in the loss, Adam)
    decouple_weight_decay=False,
    train_batch_size=256,  # train.batch_size
    replay_buffer_size=2**14,  # train.replay_size = 16384
    replay_buffer_reuse=32,  # 16384 // 32 = 512 new states per learning step = train.positions_per_step
    max_steps=0,  # unbounded: stopped by wall clock
    checkpoint_freq=10**9,  # only the rolling checkpoint--1; wall-clock copies are ours
    actors=1,
    evaluators=0,
    evaluation_window=100,
    eval_levels=7,
    uct_c=1.0,  # search.c_puct
    max_simulations=16,  # search.num_simulations (self-play; 50 before 2026-11-25)
    policy_alpha=1.0,  # search.dirichlet_alpha
    policy_epsilon=0.25,  # search.dirichlet_fraction
    temperature=1.0,  # selfplay.temperature
    temperature_drop=10,  # selfplay.sample_moves
    nn_model="resnet",
    nn_width=64,  # net.channels
    nn_depth=3,  # net.blocks
    observation_shape=None,
    output_size=None,
    verbose=False,
    quiet=True,
    nn_api_version="nnx",
)


def _copy_latest(run_dir: Path, name: str, learned) -> None:
    """The learner's latest weights copied to RUN_DIR/NAME: its rolling checkpoint, or
    the initial one until `learned()`; retried while the learner rewrites them."""
    import shutil

    for _ in range(100):
        src = run_dir / "checkpoint--1"
        if not src.exists() or not learned():
            src = run_dir / "checkpoint-0"
        try:
            shutil.copytree(src, run_dir / name, dirs_exist_ok=True)
            break
        except (OSError, shutil.Error):
            time.sleep(0.5)


def _settings(args, run_dir: Path, resumed: bool) -> dict:
    """OPENSPIEL_CONFIG with --actors; a resumed run keeps the settings it started with."""
    settings = {**OPENSPIEL_CONFIG, "actors": args.actors}
    saved = run_dir / "config.json"
    if resumed and saved.exists():
        started = json.loads(saved.read_text())
        settings.update({k: started[k] for k in OPENSPIEL_CONFIG if k in started and k != "actors"})
    return settings


def _stop_training() -> None:
    """End the training process once its last mark is written."""
    import multiprocessing
    import signal

    os.kill(os.getpid(), signal.SIGINT)  # alpha_zero() stops its actors and returns
    # ... unless the interrupt lands where OpenSpiel swallows it (seen once: the
    # learner went on waiting for its actor); the marks are written, so end it.
    time.sleep(120)
    for child in multiprocessing.active_children():
        child.kill()
    os._exit(0)


def _train(args) -> None:
    import threading

    from open_spiel.python.algorithms.alpha_zero import alpha_zero as az

    run_dir = Path(args.dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    marks_file = run_dir / "wallclock.jsonl"
    done = read_marks(run_dir)
    budget = args.budget_min * 60.0
    mark_s = args.mark_min * 60.0
    if done and done[-1]["mark_s"] >= budget - 1e-6:
        print(f"{run_dir}: already trained to {done[-1]['mark_s'] / 60:.0f} min")
        return
    # Resume (OpenSpiel's AlphaZero has none): the learner restarts from the last
    # wall-clock checkpoint (weights and optimiser state; the replay buffer starts empty).
    resume_from = done[-1] if done else None
    offset = resume_from["elapsed"] if resume_from else 0.0
    steps0 = resume_from["learning_step"] if resume_from else 0
    t0 = time.time() - offset
    state = {"step": steps0}
    original_init = az._init_model_from_config

    def init_model(config):  # the learner's model (this process only)
        model = original_init(config)
        if resume_from:
            model.load_checkpoint(resume_from["checkpoint"].removeprefix("checkpoint-"))
        save = model.save_checkpoint

        def save_checkpoint(step):
            out = save(step)
            if step != 0:
                state["step"] += 1
            return out

        model.save_checkpoint = save_checkpoint
        return model

    def keeper():
        """At each mark, copy the learner's latest weights (what the actors play with)."""
        k = int(offset // mark_s) + 1
        while True:
            mark = min(k * mark_s, budget)
            time.sleep(max(0.0, t0 + mark - time.time()))
            name = f"checkpoint-wc{int(round(mark)):06d}"
            _copy_latest(run_dir, name, lambda: state["step"] != steps0)
            with open(marks_file, "a") as f:
                f.write(
                    json.dumps(
                        {
                            "mark_s": mark,
                            "elapsed": time.time() - t0,
                            "learning_step": state["step"],
                            "checkpoint": name,
                            "wall_time": time.time(),
                        }
                    )
                    + "\n"
                )
            if mark >= budget:
                _stop_training()
            k += 1

    az._init_model_from_config = init_model
    config = az.Config(path=str(run_dir), **_settings(args, run_dir, resumed=resume_from is not None))
    with open(run_dir / "sessions.jsonl", "a") as f:
        f.write(json.dumps({"start": time.time(), "offset_s": offset, "budget_s": budget, "mark_s": mark_s}) + "\n")
    threading.Thread(target=keeper, daemon=True).start()
    az.alpha_zero(config)


def read_marks(run_dir) -> list[dict]:
    f = Path(run_dir) / "wallclock.jsonl"
    if not f.exists():
        return []
    return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


def load_model(run_dir: str | Path, checkpoint: str):
    """OpenSpiel's model class, restored from `run_dir/checkpoint`."""
    import pyspiel
    from open_spiel.python.algorithms.alpha_zero import utils

    cfg = json.loads((Path(run_dir) / "config.json").read_text())
    game = pyspiel.load_game(cfg["game"])
    model = utils.api_selector(cfg.get("nn_api_version", "nnx")).Model.build_model(
        cfg["nn_model"],
        game.observation_tensor_shape(),
        game.num_distinct_actions(),
        cfg["nn_width"],
        cfg["nn_depth"],
        cfg["weight_decay"],
        cfg["learning_rate"],
        str(Path(run_dir).resolve()),
        decouple_weight_decay=cfg["decouple_weight_decay"],
    )
    model.load_checkpoint(checkpoint.removeprefix("checkpoint-"))
    return model, cfg


def jit_inference(model) -> None:
    """Replace `model.inference` (eager flax nnx in OpenSpiel 2.0.2: ~20 ms a call on one
    core) by a jitted function computing the same thing. Used for evaluation only, where
    time is not measured; training runs OpenSpiel's code unchanged."""
    import flax.nnx as nn
    import jax
    import jax.numpy as jnp

    @jax.jit
    def forward(params, batch_stats, observation, legals_mask):
        net = nn.merge(model._state.graphdef, params, batch_stats)
        net.eval()
        policy_logits, value = net(observation)
        policy_logits = jnp.where(legals_mask, policy_logits, jnp.finfo(jnp.float32).min)
        return value, jax.nn.softmax(policy_logits)

    def inference(observation, legals_mask):
        value, policy = forward(
            model._state.params,
            model._state.batch_stats,
            jnp.asarray(observation, dtype=jnp.float32),
            jnp.asarray(legals_mask, dtype=bool),
        )
        return np.asarray(value), np.asarray(policy)

    import numpy as np

    model.inference = inference


class OpenSpielAZPlayer:
    """An OpenSpiel AlphaZero checkpoint behind polyzero's Player protocol: MCTSBot with
    AlphaZeroEvaluator, `simulations` per move, no Dirichlet noise, most-visited move."""

    def __init__(self, run_dir, checkpoint: str, game, simulations: int = 100, jit: bool = True):
        import numpy as np
        from open_spiel.python.algorithms import mcts
        from open_spiel.python.algorithms.alpha_zero import evaluator as evaluator_lib

        self._mcts, self._np = mcts, np
        self.model, cfg = load_model(run_dir, checkpoint)
        if jit:
            jit_inference(self.model)
        self.game = game
        self.simulations = simulations
        self.uct_c = cfg["uct_c"]
        self.evaluator = evaluator_lib.AlphaZeroEvaluator(game, self.model)
        self.name = f"openspiel-az:{checkpoint}@{simulations}"
        self.reset(0)

    def reset(self, seed: int = 0) -> None:
        self.bot = self._mcts.MCTSBot(
            self.game,
            self.uct_c,
            self.simulations,
            self.evaluator,
            solve=False,
            random_state=self._np.random.RandomState(seed),
            dirichlet_noise=None,
            child_selection_fn=self._mcts.SearchNode.puct_value,
            dont_return_chance_node=True,
        )

    def act(self, states) -> list[int]:
        return [int(self.bot.step(s)) for s in states]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--dir", required=True)
    t.add_argument("--budget-min", type=float, default=60.0)
    t.add_argument("--mark-min", type=float, default=10.0)
    t.add_argument("--actors", type=int, default=OPENSPIEL_CONFIG["actors"], help="self-play actor processes")
    args = p.parse_args(argv)
    if args.cmd == "train":
        _train(args)


if __name__ == "__main__":
    main()
