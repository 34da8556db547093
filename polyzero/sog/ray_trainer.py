"""`polyzero train GAME --algo sog --workers N`: Student of Games' actors and query
solvers as Ray actors (paper, Fig. 8: actors, a query buffer, solvers and trainers
over a distributed network).

Each learning step the driver sends the latest weights to every actor (one
object in Ray's store), hands this step's games to the N self-play actors and
up to `sog.solves_per_step` queries from its buffer to the `ray.solvers` solver
actors, all at once; the results enter the replay and the buffer in game and
solve order, then the learner trains. Game i and solve j draw their randomness
from (seed, i) and (seed, j) as in-process, so a run is reproducible for a given
number of actors; unlike in-process, a step's solves take the queries that were
waiting when the step began (they run beside its games). An actor that dies is
restarted by Ray and its work is done again (counted in `ray/worker_failures`).
Run directory, checkpoints and metrics are the training loop's
(`polyzero.train.loop`), as in-process: a run resumes under either executor.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from polyzero.errors import UsageError
from polyzero.train.executor import ExecutorState, InProcess
from polyzero.train.ray_driver import _import_ray, check_cpus, cpu_demand, start_ray, wait_for

from .trainer import SoGTrainer

# How long a dead actor's work is retried (a second apart) while Ray restarts it: a
# restart imports torch and OpenSpiel, and with 30 one-second tries the Ray SoG test
# failed on a 2-core machine whose cores were both busy with pinned training runs.
RESTART_WAIT_S = 300.0


class SoGWorker:
    """A plain class Ray runs as an actor: a CVPN, sound self-play and the query solver."""

    def __init__(self, cfg_dict: dict):
        from polyzero.config import build_config
        from polyzero.games import load_game
        from polyzero.nets.inference import set_threads

        from .cvpn import BeliefEncoding, NetworkValueFunction
        from .selfplay import SoundSelfPlay, kept_expansions
        from .trainer import CVPNModel

        cfg = build_config(base=cfg_dict)
        set_threads(cfg.threads)
        self.cfg = cfg
        self.game = load_game(cfg.game)
        self.encoding = BeliefEncoding(self.game)
        self.values = NetworkValueFunction(self.encoding, CVPNModel(self.encoding, cfg).build_network())
        # the worker's games and solves share their public states' expansions (as in-process)
        self.expansions = kept_expansions(self.game)
        settings = cfg.sog.search_settings()
        self.actor = SoundSelfPlay(self.game, self.encoding, self.values, settings, cfg.sog.p_td, self.expansions)

    def pid(self) -> int:
        return os.getpid()

    def set_weights(self, weights: dict) -> None:
        self.values.load_state_dict(weights)

    def play(self, indices: list[int]) -> list:
        from .selfplay import play_game

        capacity = self.cfg.sog.query_buffer
        return [play_game(self.actor, self.cfg.seed, i, self.cfg.sog.q_search, capacity) for i in indices]

    def solve(self, items: list) -> list:
        """Solve (index, query) items; with `sog.solve_together` their searches run
        together (one network call per round, `polyzero/sog/lockstep.py`), else one after
        another. Either way solve i draws its randomness from (seed, i), as in-process."""
        from .selfplay import solve_indexed_together

        sog = self.cfg.sog
        groups = [items] if sog.solve_together else [[item] for item in items]
        settings = sog.search_settings(solver=True)
        return [
            solved
            for group in groups
            if group
            for solved in solve_indexed_together(
                self.game,
                self.encoding,
                [query for _, query in group],
                self.values,
                settings,
                self.cfg.seed,
                [index for index, _ in group],
                sog.q_recursive,
                sog.query_buffer,
                shared=self.expansions,
            )
        ]


class RaySoGTrainer(ExecutorState, SoGTrainer):
    """Student of Games' trainer with its games and solves on Ray actors: the trainer with
    the executor `RayGamesAndQueries`, whose state (workers, solvers) reads as the trainer's."""

    def __init__(self, cfg, run_dir, progress: bool = True, workers: int = 2, ray_address: str | None = None):
        super().__init__(cfg, run_dir, progress)
        self.executor = RayGamesAndQueries(self, workers, ray_address)


class RayGamesAndQueries(InProcess):
    """The executor of Student of Games' source on Ray actors (see the module docstring):
    each step's games on the self-play actors and its solves on the solver actors, all in
    flight at once; the results enter in game and solve order."""

    def __init__(self, loop, workers: int, ray_address: str | None):
        self.loop, self.cfg = loop, loop.cfg
        self.ray = _import_ray()
        self.num_workers = workers
        self.ray_address = ray_address
        self.workers: list = []
        self.solvers: list = []
        self._weights = None
        self._owns_ray = False

    def _check_interrupt(self) -> None:  # what `wait_for` looks at every half second
        self.loop._check_interrupt()

    @contextmanager
    def session(self, loop):
        ray = self.ray
        self._owns_ray = start_ray(ray, cpu_demand(self.cfg, self.num_workers), self.ray_address)
        try:
            check_cpus(ray, self.cfg, self.num_workers)
        except UsageError:
            if self._owns_ray:
                ray.shutdown()
            raise
        remote = ray.remote(
            num_cpus=self.cfg.ray.worker_cpus, num_gpus=self.cfg.ray.worker_gpus, max_restarts=-1, max_task_retries=0
        )(SoGWorker)
        cfg_dict = self.cfg.to_dict()
        self.workers = [remote.remote(cfg_dict) for _ in range(self.num_workers)]
        self.solvers = [remote.remote(cfg_dict) for _ in range(self.cfg.ray.solvers)]
        self._ship_weights()
        try:
            yield
        finally:
            for w in self.workers + self.solvers:
                ray.kill(w, no_restart=True)
            self.workers, self.solvers = [], []
            if self._owns_ray:
                ray.shutdown()

    def publish(self, loop, force: bool = False) -> None:
        super().publish(loop)  # the learning rate; the weights in this process
        self._ship_weights()

    def _ship_weights(self) -> None:
        if self.workers:
            self._weights = self.ray.put(self.loop.learner.weights())
            for w in self.workers + self.solvers:
                w.set_weights.remote(self._weights)

    def _await(self, worker, method: str, work: list, ref) -> list:
        """The result of `worker.method(work)`; if the actor died, Ray restarts it and the
        work is done again there with the latest weights (tried for up to RESTART_WAIT_S)."""
        ray = self.ray
        lost = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.ActorUnavailableError)
        try:
            return ray.get(wait_for(self, [ref])[0])
        except lost:
            self.loop.failures += 1
        deadline = time.monotonic() + RESTART_WAIT_S
        while True:
            try:
                worker.set_weights.remote(self._weights)
                return ray.get(wait_for(self, [getattr(worker, method).remote(work)])[0])
            except lost:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1.0)

    def collect(self, loop) -> None:
        sog, data = self.cfg.sog, loop.data
        first = data.counts["games"]
        games = list(range(first, first + sog.episodes_per_step))
        solves = []
        for k in range(sog.solves_per_step):
            query = data.queries.pop()
            if query is None:
                break
            solves.append((data.counts["solves"] + k, query))
        plays = [(w, games[i :: len(self.workers)]) for i, w in enumerate(self.workers)]
        solving = [(w, solves[i :: len(self.solvers)]) for i, w in enumerate(self.solvers)]
        # Every actor's work is in flight before the first result is awaited.
        refs = [(w, "play", work, w.play.remote(work)) for w, work in plays if work]
        refs += [(w, "solve", work, w.solve.remote(work)) for w, work in solving if work]
        episodes, solved = {}, {}
        for worker, method, work, ref in refs:
            results = self._await(worker, method, work, ref)
            keys = work if method == "play" else [index for index, _ in work]
            (episodes if method == "play" else solved).update(zip(keys, results))
        for index in sorted(episodes):
            loop._add_game(episodes[index])
        for index in sorted(solved):
            loop._add_solve(solved[index])
        data.solved = len(solves)

    def runtime_metrics(self, loop, step_seconds: float) -> dict:
        return {
            "ray/workers": len(self.workers),
            "ray/solvers": len(self.solvers),
            "ray/worker_failures": loop.failures,
        }
