"""`polyzero train GAME --algo sog`: Student of Games' training process (paper,
"Training process", Fig. 8) in one process.

Actors (sound self-play), solvers (query solving) and the learner interleave in
a fixed round-robin, so a seed reproduces the run: each learning step plays
`sog.episodes_per_step` games, solves `sog.solves_per_step` queries from the
buffer, then makes `train.minibatches_per_step` minibatch updates from the
sliding window, and ships the new weights to the actors and solvers. These are
a data source (`GamesAndQueries`) on the one training loop
(`polyzero.train.loop.TrainingLoop`): the run directory, metrics, progress
display, checkpoints and `--resume` are those of the other algorithms.
"""

from __future__ import annotations

from pathlib import Path

import torch

from polyzero.config import RunConfig, build_config, read_toml
from polyzero.errors import UsageError
from polyzero.games import check_supported, load_game
from polyzero.games.capabilities import GameRequirements
from polyzero.games.public_states import PublicTree
from polyzero.train import checkpoint as ckpt
from polyzero.train.learner import Learner
from polyzero.train.loop import TrainingLoop

from .cvpn import BeliefEncoding, NetworkValueFunction, build_cvpn, cvpn_loss
from .gtcfr import is_perfect_information
from .selfplay import QueryBuffer, SlidingWindow, SoundSelfPlay, kept_expansions, play_game, solve_indexed_together

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


class GamesAndQueries:
    """Student of Games' data source (paper, "Training process", Fig. 8): each step
    `sog.episodes_per_step` sound self-play games, then up to `sog.solves_per_step`
    queries from the buffer solved; its state is the query buffer, the sliding window
    (the replay) and the counters."""

    def __init__(self, game, encoding, cfg: RunConfig, actor_values, solver_values, replay):
        self.game, self.encoding, self.cfg, self.replay = game, encoding, cfg, replay
        self.actor_values, self.solver_values = actor_values, solver_values
        # Public states and their expansions made once for the whole run, every search's
        # tree attaching them (`search_tree.Expansions`: the same numbers, made once, not
        # once per step and game); bounded by its `max_worlds`.
        self.expansions = kept_expansions(game)
        self.actor = SoundSelfPlay(
            game, encoding, actor_values, cfg.sog.search_settings(), cfg.sog.p_td, expansions=self.expansions
        )
        self.queries = QueryBuffer(game, cfg.sog.query_buffer)
        self.counts = {
            "games": 0,
            "positions": 0,
            "solves": 0,
            "queries_seen": 0,
            "queries_kept": 0,
            "td_targets": 0,
            "updates": 0,
        }
        self.solved = 0  # query solves of the last step
        self.updates = 0  # minibatch updates of the last step

    def collect(self, loop) -> None:
        """This step's self-play games, then its query solves; each result enters through
        the trainer's `_add_game` / `_add_solve`."""
        for _ in range(self.cfg.sog.episodes_per_step):
            loop._add_game(
                play_game(
                    self.actor, self.cfg.seed, self.counts["games"], self.cfg.sog.q_search, self.cfg.sog.query_buffer
                )
            )
        settings = self.cfg.sog.search_settings(solver=True)
        self.solved = 0
        while self.solved < self.cfg.sog.solves_per_step:
            # together: all the buffer holds of what is left to solve, in one lockstep batch
            # (rounds repeat while solves yield queries for an emptied buffer); else one
            wanted = self.cfg.sog.solves_per_step - self.solved if self.cfg.sog.solve_together else 1
            queries = [q for q in (self.queries.pop() for _ in range(wanted)) if q is not None]
            if not queries:
                break
            for solved in solve_indexed_together(
                self.game,
                self.encoding,
                queries,
                self.solver_values,
                settings,
                self.cfg.seed,
                range(self.counts["solves"], self.counts["solves"] + len(queries)),
                self.cfg.sog.q_recursive,
                self.cfg.sog.query_buffer,
                shared=self.expansions,
            ):
                loop._add_solve(solved)
                self.solved += 1

    def add_game(self, episode) -> None:
        for example in episode.examples:
            self.replay.add(example)
        for query in episode.collected + episode.to_solve:
            self.queries.add(query)
        self.counts["games"] += 1
        self.counts["positions"] += episode.decisions
        self.counts["td_targets"] += episode.decisions - len(episode.to_solve)
        self.counts["queries_seen"] += episode.queries_seen
        self.counts["queries_kept"] += episode.queries_kept

    def add_solve(self, solved) -> None:
        self.replay.add(solved.example)
        for query in solved.collected:
            self.queries.add(query)
        self.counts["solves"] += 1
        self.counts["queries_seen"] += solved.queries_seen
        self.counts["queries_kept"] += solved.queries_kept

    def load_weights(self, weights: dict) -> None:
        self.actor_values.load_state_dict(weights)
        self.solver_values.load_state_dict(weights)

    def publish(self, loop) -> None:
        """The step's learning rate (halved every `sog.lr_halve_every` steps), then the
        weights to the actors and solvers."""
        every = self.cfg.sog.lr_halve_every
        lr = self.cfg.train.learning_rate * (0.5 ** (loop.step // every) if every else 1.0)
        for group in loop.learner.optimizer.param_groups:
            group["lr"] = lr
        self.load_weights(loop.learner.weights())

    def end_step(self, loop, updates: int) -> dict:
        self.updates = updates
        self.counts["updates"] += updates
        return {}

    def state(self) -> tuple[dict, dict[str, ckpt.Content]]:
        return (
            {"counts": self.counts},
            {
                "replay.npz": ckpt.npz_writer(self.replay.to_arrays()),
                "queries.npz": ckpt.npz_writer(self.queries.to_arrays()),
            },
        )

    def load(self, path, state: dict) -> None:
        self.replay.load_arrays(ckpt.read_npz(path, "replay.npz"))
        self.queries.load_arrays(ckpt.read_npz(path, "queries.npz"))
        self.counts = state["counts"]

    def resumed(self, loop) -> str:
        self.publish(loop)
        return ""


class SoGTrainer(TrainingLoop):
    """The training loop with Student of Games' data source and the CVPN's learner."""

    def __init__(self, cfg: RunConfig, run_dir: Path, progress: bool = True):
        self._open(cfg, run_dir, progress)
        check_supported(self.game, REQUIREMENTS, "sog")
        self.encoding = BeliefEncoding(self.game)
        torch.manual_seed(cfg.seed)
        self.model = CVPNModel(self.encoding, cfg)
        self.learner = Learner(self.model, cfg.train, self.device)
        actor_values = NetworkValueFunction(self.encoding, self.model.build_network())
        solver_values = NetworkValueFunction(self.encoding, self.model.build_network())
        self.replay = SlidingWindow(
            self.encoding,
            cfg.train.replay_size,
            cfg.sog.max_updates,
            self.encoding.input_symmetries() if cfg.train.symmetries else (),
        )
        self.data = GamesAndQueries(self.game, self.encoding, cfg, actor_values, solver_values, self.replay)
        self.sources = [self.data]
        self.queries = self.data.queries
        self._start_counters()
        self._beliefs = None  # an equilibrium's belief states, for the value error in evaluation
        self.data.load_weights(self.learner.weights())

    @property
    def counts(self) -> dict:
        return self.data.counts

    @property
    def selfplay_stats(self) -> dict:
        return {"games": self.counts["games"], "positions": self.counts["positions"]}

    def _step_metrics(self, before: dict, ended: dict, step_seconds: float) -> dict:
        c = self.counts
        return {
            "train/updates": self.data.updates,
            "train/learning_rate": self.learner.optimizer.param_groups[0]["lr"],
            "selfplay/games": c["games"],
            "selfplay/positions": c["positions"],
            "selfplay/positions_per_s": (c["positions"] - before["positions"]) / step_seconds,
            "sog/solves": c["solves"],
            "sog/solves_this_step": self.data.solved,
            "sog/query_buffer": len(self.queries),
            "sog/queries_seen": c["queries_seen"],
            "sog/queries_kept": c["queries_kept"],
            "sog/td_targets": c["td_targets"],
            **ended,
        }

    def _add_game(self, episode) -> None:
        self.data.add_game(episode)

    def _add_solve(self, solved) -> None:
        self.data.add_solve(solved)

    def _evaluate_now(self) -> dict:
        return self.evaluate()

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
