"""`polyzero train GAME --algo sog`: Student of Games' training process (paper,
"Training process", Fig. 8) in one process.

Actors (sound self-play), solvers (query solving) and the learner interleave in
a fixed round-robin, so a seed reproduces the run: each learning step plays
`sog.episodes_per_step` games, solves `sog.solves_per_step` queries from the
buffer, then makes `train.minibatches_per_step` minibatch updates from the
sliding window, and ships the new weights to the actors and solvers. The run
directory, metrics, progress display, checkpoints and `--resume` are those of
the other algorithms (`polyzero.train`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from polyzero.config import RunConfig, build_config, read_toml, to_toml
from polyzero.errors import UsageError
from polyzero.games import check_supported, game_spec_string, load_game
from polyzero.games.capabilities import GameRequirements
from polyzero.games.public_states import PublicTree
from polyzero.train import checkpoint as ckpt
from polyzero.train.driver import RunDirectory, _npz_bytes, resume_message
from polyzero.train.learner import Learner
from polyzero.train.metrics import MetricsLog
from polyzero.train.resume import apply_optimizer_settings

from .cvpn import BeliefEncoding, NetworkValueFunction, build_cvpn, cvpn_loss
from .gtcfr import is_perfect_information
from .selfplay import QueryBuffer, SlidingWindow, SoundSelfPlay, play_game, solve_indexed

MAE_TREE_LIMIT = 2000  # public states; larger games get no value error in evaluation
REQUIREMENTS = GameRequirements(chance_nodes=True, imperfect_information=True, single_player=False)


class CVPNModel:
    """What `polyzero.train.learner.Learner` asks of an algorithm: the network and its loss."""

    name = "sog"

    def __init__(self, encoding: BeliefEncoding, cfg: RunConfig):
        self.encoding = encoding
        self.cfg = cfg

    def build_network(self):
        net = self.cfg.net
        resnet = net.kind == "resnet"
        return build_cvpn(
            self.encoding,
            net.width,
            net.layers,
            net.blocks if resnet else 0,
            net.channels if resnet and net.board_tower else 0,
        )

    def loss(self, net, batch):
        return cvpn_loss(net, batch, self.cfg.sog.value_weight, self.cfg.sog.policy_weight)


def load_cvpn(path: str | Path, device="cpu") -> tuple[NetworkValueFunction, RunConfig]:
    """A SoG run directory or checkpoint as a leaf value function."""
    point = ckpt.resolve_checkpoint(path)
    cfg = build_config(config_file=None, base=read_toml(point / "config.toml"))
    if cfg.algo != "sog":
        raise UsageError(f"{path} is a {cfg.algo} run, not a Student of Games (sog) run")
    game = load_game(cfg.game)
    encoding = BeliefEncoding(game)
    net = CVPNModel(encoding, cfg).build_network()
    net.load_state_dict(ckpt.read_learner(point)["net"])
    return NetworkValueFunction(encoding, net, device), cfg


def sog_agent(game, cfg: RunConfig, value_fn, simulations: int | None = None, seed: int = 0, suffix: str = ""):
    """SoG(s, 1), the run's search settings with `value_fn` at the leaves (s: sog.eval_simulations)."""
    from .resolve import SoGPlayer

    settings = cfg.sog.search_settings()
    settings.simulations = simulations or cfg.sog.eval_simulations
    settings.expansions_per_update = 1.0
    return SoGPlayer(game, settings, value_fn, seed=seed, name=f"sog:{settings.simulations},1{suffix}")


class SoGTrainer(RunDirectory):
    def __init__(self, cfg: RunConfig, run_dir: Path, progress: bool = True):
        self._open(cfg, run_dir, progress)
        check_supported(self.game, REQUIREMENTS, "sog")
        self.encoding = BeliefEncoding(self.game)
        torch.manual_seed(cfg.seed)
        self.model = CVPNModel(self.encoding, cfg)
        self.learner = Learner(self.model, cfg.train, self.device)
        self.actor_values = NetworkValueFunction(self.encoding, self.model.build_network())
        self.solver_values = NetworkValueFunction(self.encoding, self.model.build_network())
        self.actor = SoundSelfPlay(self.game, self.encoding, self.actor_values, cfg.sog.search_settings(), cfg.sog.p_td)
        self.queries = QueryBuffer(self.game, cfg.sog.query_buffer)
        self.replay = SlidingWindow(
            self.encoding,
            cfg.train.replay_size,
            cfg.sog.max_updates,
            self.encoding.input_symmetries() if cfg.train.symmetries else (),
        )
        self.sample_rng = np.random.default_rng([cfg.seed, 1])
        self.step = 0
        self.counts = {
            "games": 0,
            "positions": 0,
            "solves": 0,
            "queries_seen": 0,
            "queries_kept": 0,
            "td_targets": 0,
            "updates": 0,
        }
        self.elapsed = 0.0
        self.train_time = 0.0
        self.last_eval: dict = {}
        self._beliefs = None  # an equilibrium's belief states, for the value error in evaluation
        self._publish_weights()

    # ------------------------------------------------------------ run directory
    def _restore(self, path: Path) -> None:
        state = ckpt.read_state(path)
        learner = ckpt.read_learner(path)
        try:
            self.learner.load_state_dict(learner)
            apply_optimizer_settings(self.learner.optimizer, self.cfg.train)  # then the halvings
            torch.set_rng_state(learner["torch_rng"])
            self.replay.load_arrays(ckpt.read_npz(path, "replay.npz"))
            self.queries.load_arrays(ckpt.read_npz(path, "queries.npz"))
        except UsageError:
            raise
        except Exception as exc:
            msg = f"checkpoint {path} does not match this run ({type(exc).__name__}: {exc})"
            raise UsageError(msg.splitlines()[0]) from None
        self.sample_rng.bit_generator.state = state["sample_rng"]
        self.step, self.counts = state["step"], state["counts"]
        self.elapsed, self.train_time = state["elapsed"], state["train_time"]
        self.last_eval = state.get("last_eval", {})
        self.failures = state.get("faults", {}).get("worker_failures", 0)
        self._set_learning_rate()
        self._publish_weights()
        dropped = MetricsLog(self.run_dir, tensorboard=False).truncate_after(self.step)
        print(resume_message(self.run_dir, self.step, self.cfg.train.steps, dropped), file=sys.stderr)

    def save(self) -> Path:
        learner = self.learner.state_dict()
        learner["torch_rng"] = torch.get_rng_state()
        state = {
            "step": self.step,
            "counts": self.counts,
            "elapsed": self._now(),
            "train_time": self.train_time,
            "sample_rng": self.sample_rng.bit_generator.state,
            "last_eval": self.last_eval,
            "game": game_spec_string(self.game),
            "faults": {"worker_failures": self.failures},
        }
        files = {
            "config.toml": to_toml(self.cfg.to_dict()).encode(),
            "learner.pt": ckpt.torch_bytes(learner),
            "replay.npz": _npz_bytes(self.replay.to_arrays()),
            "queries.npz": _npz_bytes(self.queries.to_arrays()),
            "state.json": json.dumps(state).encode(),
        }
        return ckpt.save_checkpoint(
            self.run_dir, self.step, files, self.cfg.train.keep_checkpoints, self.cfg.train.keep_replay_every
        )

    def _now(self) -> float:
        return self.elapsed + (time.perf_counter() - getattr(self, "_t0", time.perf_counter()))

    @property
    def selfplay_stats(self) -> dict:
        return {"games": self.counts["games"], "positions": self.counts["positions"]}

    # ------------------------------------------------------------ the round-robin
    def _publish_weights(self) -> None:
        weights = self.learner.weights()
        self.actor_values.load_state_dict(weights)
        self.solver_values.load_state_dict(weights)

    def _set_learning_rate(self) -> None:
        every = self.cfg.sog.lr_halve_every
        lr = self.cfg.train.learning_rate * (0.5 ** (self.step // every) if every else 1.0)
        for group in self.learner.optimizer.param_groups:
            group["lr"] = lr

    def _generate(self) -> int:
        """This step's self-play games, then its query solves; returns the solves done."""
        for _ in range(self.cfg.sog.episodes_per_step):
            self._add_game(play_game(self.actor, self.cfg.seed, self.counts["games"], self.cfg.sog.q_search))
        settings = self.cfg.sog.search_settings(solver=True)
        done = 0
        for _ in range(self.cfg.sog.solves_per_step):
            query = self.queries.pop()
            if query is None:
                break
            self._add_solve(
                solve_indexed(
                    self.game,
                    self.encoding,
                    query,
                    self.solver_values,
                    settings,
                    self.cfg.seed,
                    self.counts["solves"],
                    self.cfg.sog.q_recursive,
                )
            )
            done += 1
        return done

    def _add_game(self, episode) -> None:
        for example in episode.examples:
            self.replay.add(example)
        for query in episode.collected + episode.to_solve:
            self.queries.add(query)
        self.counts["games"] += 1
        self.counts["positions"] += episode.decisions
        self.counts["td_targets"] += episode.decisions - len(episode.to_solve)
        self.counts["queries_seen"] += episode.queries_seen
        self.counts["queries_kept"] += len(episode.collected)

    def _add_solve(self, solved) -> None:
        self.replay.add(solved.example)
        for query in solved.collected:
            self.queries.add(query)
        self.counts["solves"] += 1
        self.counts["queries_seen"] += solved.queries_seen
        self.counts["queries_kept"] += len(solved.collected)

    def _runtime_metrics(self) -> dict:
        return {}

    def _updates(self) -> list[dict]:
        out = []
        for _ in range(self.cfg.train.minibatches_per_step):
            batch = self.replay.sample(self.cfg.train.batch_size, self.sample_rng)
            if batch is None:
                break
            out.append(self.learner.update(batch))
            self.counts["updates"] += 1
        return out

    def run(self) -> dict:
        log, progress = self._start_run()
        try:
            with self._checkpoint_on_interrupt(progress, log):
                self._loop(progress, log)
        finally:
            self.elapsed, self._t0 = self._now(), time.perf_counter()  # a later run() continues the clock
        progress.close()
        log.close()
        return {"step": self.step, "time": self._now(), "train_time": self.train_time}

    def _loop(self, progress, log) -> None:
        cfg = self.cfg
        while self.step < cfg.train.steps:
            self._check_interrupt()
            t_step = time.perf_counter()
            positions0 = self.counts["positions"]
            solved = self._generate()
            losses = self._updates()
            self.step += 1
            self._set_learning_rate()
            self._publish_weights()
            dt = time.perf_counter() - t_step
            self.train_time += dt
            loss = {k: float(np.mean([m[k] for m in losses])) for k in losses[0]} if losses else {}
            positions_per_s = (self.counts["positions"] - positions0) / dt
            record = {
                **loss,
                "train/updates": len(losses),
                "train/learning_rate": self.learner.optimizer.param_groups[0]["lr"],
                "selfplay/games": self.counts["games"],
                "selfplay/positions": self.counts["positions"],
                "selfplay/positions_per_s": positions_per_s,
                "sog/solves": self.counts["solves"],
                "sog/solves_this_step": solved,
                "sog/query_buffer": len(self.queries),
                "sog/queries_seen": self.counts["queries_seen"],
                "sog/queries_kept": self.counts["queries_kept"],
                "sog/td_targets": self.counts["td_targets"],
                "replay/size": len(self.replay),
                "train_time": self.train_time,
                **self._runtime_metrics(),
            }
            log.log("train", self.step, self._now(), record)
            if cfg.eval.every and self.step % cfg.eval.every == 0:
                self.last_eval = self.evaluate()
                log.log("eval", self.step, self._now(), {**self.last_eval, "train_time": self.train_time})
            if self.step % cfg.train.checkpoint_every == 0 or self.step == cfg.train.steps:
                self.save()
            shown = loss or {k: float("nan") for k in ("loss/total", "loss/value", "loss/policy")}
            progress.update(self.step, shown, self.selfplay_stats, positions_per_s, self.last_eval)

    # ------------------------------------------------------------ evaluation
    def value_function(self) -> NetworkValueFunction:
        net = self.model.build_network()
        net.load_state_dict(self.learner.weights())
        return NetworkValueFunction(self.encoding, net)

    def agent_player(self, simulations: int | None = None, seed: int = 0, **_):
        return sog_agent(self.game, self.cfg, self.value_function(), simulations, seed, suffix=f"@{self.step}")

    def evaluate(self, games: int | None = None, seed: int | None = None, progress: bool = False) -> dict:
        """Imperfect-information games: exploitability of SoG(s_eval, 1) over
        `sog.eval_seeds` seeds; perfect-information games: arena scores."""
        from polyzero.train.driver import evaluate_agent

        if not is_perfect_information(self.game):
            from .exploitability import player_exploitability
            from .value_error import equilibrium_beliefs, value_error

            report = player_exploitability(
                self.game, lambda s: self.agent_player(seed=s), self.cfg.sog.eval_seeds, progress=progress
            )
            out = {
                "eval/exploitability/mean": report.mean,
                "eval/exploitability/min": report.min,
                "eval/exploitability/max": report.max,
            }
            if self._beliefs is None:  # the value error: for public trees of Kuhn's and Leduc's size
                tree = PublicTree(self.game)
                self._beliefs = (
                    equilibrium_beliefs(self.game, 500, tree) if len(tree.nodes) <= MAE_TREE_LIMIT else False
                )
            if self._beliefs:
                out["eval/value_mae"] = value_error(self.value_function(), self._beliefs)
            return out
        seed = self.cfg.seed + 1000 * self.step if seed is None else seed
        return evaluate_agent(
            self.game, self.cfg, self.agent_player(seed=seed), games or self.cfg.eval.games, seed, progress=progress
        )
