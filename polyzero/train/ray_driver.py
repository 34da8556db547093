"""The Ray driver: the same self-play actor class as Ray actors, one per worker,
feeding the learner and replay buffer of the driver process.

* Weights reach the workers through Ray's object store (`ray.put` once, one
  reference to all) every `ray.weights_every` learning steps; every batch of
  examples records the weights version that produced it, and the staleness
  (learner version minus example version) is logged.
* Flow control: each worker has at most one task in flight (a bounded queue
  of one batch per worker), and the learner consumes b_step new positions per
  learning step, so the ratio of training to new samples is the same as
  in-process; workers keep playing while the learner trains.
* Fault tolerance: a worker whose process dies is restarted by Ray
  (max_restarts); the batch it was playing is lost, counted in
  `ray/worker_failures`, and the restarted worker receives the latest weights.
* The run directory, config, metrics and checkpoints are the in-process
  driver's; a checkpoint written here resumes in-process and the reverse
  (the workers' games in flight are not part of it and are discarded).
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

from ..errors import UsageError
from .driver import Trainer
from .selfplay import new_stats


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UsageError("--workers needs Ray: pip install 'polyzero[ray]'") from None
    return ray


def cpu_demand(cfg, workers: int) -> float:
    """The CPUs of Ray a run's actors ask for: the self-play workers and the evaluation,
    reanalyse and query-solver actors its config asks for (archive actors and the
    learner ask for none)."""
    actors = workers
    if cfg.algo == "sog":
        actors += cfg.ray.solvers
    else:
        actors += cfg.ray.evaluators if cfg.eval.every else 0
        actors += cfg.ray.reanalysers if cfg.algo == "muzero" and cfg.muzero.reanalyse_fraction > 0 else 0
    return actors * cfg.ray.worker_cpus


def start_ray(ray, cpus: float, address: str | None) -> bool:
    """Join the cluster at `address`, or start a local Ray instance bound to 127.0.0.1
    without a dashboard, offering `cpus` CPUs or this machine's, whichever is more; True
    when this call started (and so owns) Ray."""
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(num_cpus=max(math.ceil(cpus), os.cpu_count() or 1), include_dashboard=False,
                 _node_ip_address="127.0.0.1", log_to_driver=False,
                 runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
    return True


def wait_for(trainer, refs: list) -> list:
    """`ray.wait` for one of `refs`, looking every half second for the SIGTERM a Ray
    learner only flags (`RunDirectory.raise_on_signal`)."""
    while True:
        ready, _ = trainer.ray.wait(refs, num_returns=1, timeout=0.5)
        if ready:
            return ready
        trainer._check_interrupt()


def check_cpus(ray, cfg, workers: int) -> None:
    """Refuse a run whose actors ask for more CPUs than the cluster has: Ray would keep
    the rest pending, and the run would wait for them forever."""
    need, have = cpu_demand(cfg, workers), ray.cluster_resources().get("CPU", 0)
    if need > have:
        extra = "ray.solvers" if cfg.algo == "sog" else "ray.evaluators, ray.reanalysers"
        raise UsageError(f"{workers} self-play workers and the run's other actors need {need:g} CPUs of Ray "
                         f"(ray.worker_cpus = {cfg.ray.worker_cpus:g} each); the cluster has {have:g}: "
                         f"lower --workers, {extra} or ray.worker_cpus")


class SelfPlayWorker:
    """A plain class Ray runs as an actor: one SelfPlayActor and its network."""

    def __init__(self, cfg_dict: dict, index: int, archive_actor: bool = False):
        from ..algos import make_algorithm
        from ..config import build_config
        from ..games import load_game
        from ..nets.inference import resolve_device, set_threads
        from .selfplay import SelfPlayActor

        cfg = build_config(base=cfg_dict)
        set_threads(cfg.threads)
        game = load_game(cfg.game)
        self.algo = make_algorithm(cfg, game)
        # Ray (2.60) no longer hides the GPU from actors that asked for none: a worker
        # uses it only when the config gives workers a share (ray.worker_gpus).
        device = resolve_device(cfg.device if cfg.ray.worker_gpus > 0 else "cpu")
        self.evaluator = self.algo.make_evaluator(self.algo.build_network(), device)
        # A restarted worker gets fresh randomness, so it does not replay its games.
        seed = [cfg.seed, index + 1, int.from_bytes(os.urandom(4), "little")]
        from ..goexploit import make_worker_actor, needs_search_control

        if archive_actor:  # Go-Exploit's archive actor (Algorithm 3): games from s_0, search states
            from ..goexploit.control import make_archive_actor

            self.actor = make_archive_actor(self.algo, game, cfg, self.evaluator, seed)
        elif needs_search_control(cfg):  # Go-Exploit / KataGo: start histories come with each task
            self.actor = make_worker_actor(self.algo, game, cfg, self.evaluator, seed)
        else:
            self.actor = SelfPlayActor(self.algo, game, cfg, self.evaluator, seed=seed)
        self.version = -1

    def pid(self) -> int:
        return os.getpid()

    def set_weights(self, weights: dict, version: int) -> int:
        """New weights, `version` = the learner's step (which also sets an acting
        temperature schedule's point)."""
        self.evaluator.load_state_dict(weights)
        self.version = version
        schedule = getattr(self.algo, "acting_temperature", None)
        if schedule is not None:
            self.actor.temperature = schedule(version)
        return version

    def play(self, min_positions: int, starts: list | None = None) -> dict:
        """Play until at least `min_positions` positions of finished games are ready;
        `starts`: Go-Exploit start histories drawn by the driver, used in turn."""
        t0 = time.perf_counter()
        if starts is not None:
            from collections import deque

            self.actor.start_queue = deque(starts)
        before = dict(self.actor.stats)
        batches, n = [], 0
        while n < min_positions:
            for traj in self.actor.tick():
                batches.append(self.algo.trajectory_examples(traj))
                n += traj.samples or len(traj.actions)
        delta = {k: self.actor.stats[k] - before[k] for k in before}
        # One batch of examples per finished game: a sequence replay keeps games apart.
        out = {"examples": batches, "stats": delta, "version": self.version,
               "seconds": time.perf_counter() - t0, "pid": os.getpid()}
        if hasattr(self.actor, "drain_new_states"):  # visited states for the driver's archive
            out["visited"] = self.actor.drain_new_states()
        if getattr(self.actor, "unique", None) is not None:  # Section 6.1's count, gathered by the learner
            out["unique"] = self.actor.unique.drain_new()
        return out


    def play_archive(self, games: int) -> dict:
        """Archive actor: play until `games` complete games from s_0 have ended; their
        search states go back for the driver's archive (nothing is trained on them)."""
        finished = 0
        while finished < games:
            finished += len(self.actor.tick())
        return {"states": self.actor.drain_new_states(), "games": finished, "version": self.version,
                "pid": os.getpid()}


class EvaluationWorker:
    """A plain class Ray runs as an actor: scores weights it is sent against the
    configured opponents, so periodic evaluation does not stall the learner."""

    def __init__(self, cfg_dict: dict):
        from ..algos import make_algorithm
        from ..config import build_config
        from ..eval import register_player_loader
        from ..games import load_game
        from ..nets.inference import set_threads
        from .agents import load_search_player

        self.cfg = build_config(base=cfg_dict)
        set_threads(self.cfg.threads)
        register_player_loader(load_search_player)  # opponents may be run directories
        self.game = load_game(self.cfg.game)
        self.algo = make_algorithm(self.cfg, self.game)

    def evaluate(self, weights: dict, step: int, games: int, seed: int, opponents: list[str]) -> dict:
        from .driver import agent_player, evaluate_agent

        agent = agent_player(self.algo, self.cfg, weights, "cpu", step, seed)
        return evaluate_agent(self.game, self.cfg, agent, games, seed, opponents)


class ReanalyseWorker:
    """A plain class Ray runs as an actor: MuZero Reanalyze's searches (latest
    parameters) and target-network values on positions the driver sends."""

    def __init__(self, cfg_dict: dict, index: int):
        from ..algos import make_algorithm
        from ..config import build_config
        from ..games import load_game
        from ..nets.inference import set_threads
        from .reanalyse import Reanalyser

        cfg = build_config(base=cfg_dict)
        set_threads(cfg.threads)
        self.reanalyser = Reanalyser(make_algorithm(cfg, load_game(cfg.game)), cfg, "cpu", [cfg.seed, 100 + index])

    def set_weights(self, weights: dict, step: int, target: dict | None = None) -> None:
        self.reanalyser.set_weights(weights, step)
        if target is not None:
            self.reanalyser.target.load_state_dict(target)

    def compute(self, obs, legal, boot_obs, boot_legal):
        return self.reanalyser.compute(obs, legal, boot_obs, boot_legal)


class RayTrainer(Trainer):
    """Trainer whose self-play runs on `workers` Ray actors."""

    raise_on_signal = False  # SIGTERM is flagged, checked while waiting (`wait_for`)

    def __init__(self, cfg, run_dir, progress: bool = True, workers: int = 2,
                 ray_address: str | None = None):
        super().__init__(cfg, run_dir, progress)
        self.ray = _import_ray()
        self.num_workers = workers
        self.ray_address = ray_address
        self.weights_every = cfg.ray.weights_every
        self.totals = new_stats()
        self.failures = 0
        self.staleness: list[int] = []
        self.worker_seconds = 0.0
        self.worker_work: dict[int, list] = {}  # worker index -> [positions, simulations, seconds]
        self.eval_workers: list = []
        self.evaluations: dict = {}  # in-flight evaluation -> (learning step, train time, actor)
        self.eval_waiting = None  # the newest weights to score once an evaluation actor is free
        self.evaluations_skipped = 0  # weights replaced while waiting: evaluation lags, never queues
        self.reanalysers: list = []
        self.reanalysing: dict = {}  # in-flight reanalysis -> (actor, planned positions)
        self.reanalysed = 0  # stored policies refreshed by reanalyse actors
        self.reanalyse_rng = np.random.default_rng([cfg.seed, 9])
        self.workers = []
        self.archive_workers = []  # Go-Exploit search states: their own pool (start.archive_workers)
        self.in_flight: dict = {}
        self.worker_pids: dict = {}
        self._owns_ray = False

    # ------------------------------------------------------------ lifecycle
    def _start(self) -> None:
        ray = self.ray
        self._owns_ray = start_ray(ray, cpu_demand(self.cfg, self.num_workers), self.ray_address)
        try:
            check_cpus(ray, self.cfg, self.num_workers)
        except UsageError:
            self._stop()
            raise
        remote = ray.remote(num_cpus=self.cfg.ray.worker_cpus, num_gpus=self.cfg.ray.worker_gpus,
                            max_restarts=-1, max_task_retries=0)(SelfPlayWorker)
        cfg_dict = self.cfg.to_dict()
        self.workers = [remote.remote(cfg_dict, i) for i in range(self.num_workers)]
        if self.reanalyser is not None:
            # Reanalyze moves to actors of its own: they refresh random stored unrolls while
            # the learner trains, instead of the learner re-searching its own minibatches.
            self.replay.reanalyser = None
            remote_re = ray.remote(num_cpus=self.cfg.ray.worker_cpus, max_restarts=-1,
                                   max_task_retries=0)(ReanalyseWorker)
            self.reanalysers = [remote_re.remote(cfg_dict, i) for i in range(self.cfg.ray.reanalysers)]
            target = self.reanalyser.state_dict()["target"]
            for w in self.reanalysers:
                w.set_weights.remote(self.learner.weights(), -1, target)
        if self.cfg.eval.every:
            evaluator = ray.remote(num_cpus=self.cfg.ray.worker_cpus, max_restarts=-1,
                                   max_task_retries=0)(EvaluationWorker)
            self.eval_workers = [evaluator.remote(cfg_dict) for _ in range(self.cfg.ray.evaluators)]
        if self.search_control is not None and self.search_control.kind == "search" \
                and self.cfg.start.archive_workers > 0:
            # They play a small share of the moves (the paper's 50 archive actors beside 700
            # training actors), so they ask Ray for no CPU of their own: they never wait for
            # the training workers' CPUs to free up.
            archive_remote = ray.remote(num_cpus=0, num_gpus=self.cfg.ray.worker_gpus,
                                        max_restarts=-1, max_task_retries=0)(SelfPlayWorker)
            self.archive_workers = [archive_remote.remote(cfg_dict, 1000 + i, True)
                                    for i in range(self.cfg.start.archive_workers)]
            self.search_control.remote_archive_actors = True
        self._publish_weights(force=True)

    def _stop(self) -> None:
        for w in self.workers + self.archive_workers + self.reanalysers + self.eval_workers:
            self.ray.kill(w, no_restart=True)
        self.eval_workers, self.evaluations, self.reanalysers, self.reanalysing = [], {}, [], {}
        self.eval_waiting = None
        self.workers, self.archive_workers, self.in_flight = [], [], {}
        if self._owns_ray:
            self.ray.shutdown()

    def run(self) -> dict:
        self._start()
        try:
            return super().run()
        finally:
            self._stop()

    # ------------------------------------------------------------ driver hooks
    @property
    def selfplay_stats(self) -> dict:
        return self.totals

    def _periodic_evaluation(self, log) -> None:
        """Hand the current weights to a free evaluation actor; log the evaluations that
        have finished (each under the learning step of the weights it scored). With every
        evaluation actor busy, the weights wait, and newer weights replace them (counted in
        ray/evaluations_skipped): a learner faster than its evaluators (a GPU learner) must
        not pile up evaluations it then waits for at the end of the run."""
        self._log_evaluations(log, wait=False)
        if self.cfg.eval.every and self.step % self.cfg.eval.every == 0:
            self.evaluations_skipped += self.eval_waiting is not None
            self.eval_waiting = (self.step, self.train_time, self.learner.weights())
        self._dispatch_evaluation()

    def _dispatch_evaluation(self) -> None:
        busy = {worker for _, _, worker in self.evaluations.values()}
        free = [w for w in self.eval_workers if w not in busy]
        if self.eval_waiting is None or not free:
            return
        step, train_time, weights = self.eval_waiting
        self.eval_waiting = None
        ref = free[0].evaluate.remote(self.ray.put(weights), step, self.cfg.eval.games,
                                      self.cfg.seed + 1000 * step, self.cfg.eval.opponent_specs(step))
        self.evaluations[ref] = (step, train_time, free[0])

    def _finish_background_work(self, log) -> None:
        while self.evaluations or self.eval_waiting is not None:
            self._dispatch_evaluation()
            self._log_evaluations(log, wait=True)
        self._reanalyse(wait=True, dispatch=False)

    def _log_evaluations(self, log, wait: bool) -> None:
        if not self.evaluations:
            return
        refs = list(self.evaluations)
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=None if wait else 0)
        for ref in ready:
            step, train_time, _ = self.evaluations.pop(ref)
            try:
                self.last_eval = self.ray.get(ref)
            except (self.ray.exceptions.RayActorError, self.ray.exceptions.WorkerCrashedError) as exc:
                self.failures += 1
                print(f"evaluation of step {step} lost ({type(exc).__name__}); Ray restarts the "
                      "evaluation actor", file=sys.stderr)
                continue
            self.log_evaluation(log, step, self.last_eval, train_time)

    def _archive_result(self, worker, ref) -> None:
        """An archive worker's games ended: their search states enter the archive (Algorithm 3)."""
        try:
            out = self.ray.get(ref)
            self.search_control.archive.update(out["states"])
            self.search_control.remote_archive_games += out["games"]
        except (self.ray.exceptions.RayActorError, self.ray.exceptions.WorkerCrashedError) as exc:
            self.failures += 1
            print(f"archive worker failed ({type(exc).__name__}); Ray restarts it", file=sys.stderr)
            self._send_weights(worker)
        self._submit(worker)

    def _submit(self, worker) -> None:
        if worker in self.archive_workers:
            self.in_flight[worker.play_archive.remote(max(1, self.cfg.start.archive_games_per_step))] = worker
            return
        chunk = max(1, self.cfg.train.positions_per_step // max(self.num_workers, 1))
        if self.search_control is not None and self.search_control.archive is not None:
            # Go-Exploit start states for the games this task may begin: a generous supply
            # (every game at least one position, plus the slots refilled), lambda applied.
            starts = self.search_control.sample_starts(chunk + 2 * self.cfg.selfplay.concurrent_games)
            self.in_flight[worker.play.remote(chunk, starts)] = worker
            return
        self.in_flight[worker.play.remote(chunk)] = worker

    def _collect(self) -> None:
        ray = self.ray
        for w in self.workers + self.archive_workers:
            if w not in self.in_flight.values():
                self._submit(w)
        while self.pending < self.cfg.train.positions_per_step:
            ref = wait_for(self, list(self.in_flight))[0]
            worker = self.in_flight.pop(ref)
            if worker in self.archive_workers:
                self._archive_result(worker, ref)
                continue
            try:
                out = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError) as exc:
                self._worker_lost(worker, type(exc).__name__)
                continue
            known = self.worker_pids.setdefault(worker, out["pid"])
            if known != out["pid"] or out["version"] < 0:
                # Restarted between tasks: its batch came from freshly initialised weights.
                self.worker_pids[worker] = out["pid"]
                self._worker_lost(worker, "restarted")
                continue
            for examples in out["examples"]:
                self.pending += self.replay.add(examples)
            if self.search_control is not None:
                self.search_control.pending.extend(out.get("visited", []))
            if "unique" in out:
                self.actor.unique.merge(*out["unique"])
            for k, v in out["stats"].items():
                self.totals[k] += v
            self.staleness.append(self.step - out["version"])
            self.worker_seconds += out["seconds"]
            done = self.worker_work.setdefault(self.workers.index(worker), [0, 0, 0.0])
            done[0] += out["stats"]["positions"]
            done[1] += out["stats"]["simulations"]
            done[2] += out["seconds"]
            self._submit(worker)

    def _worker_lost(self, worker, why: str) -> None:
        self.failures += 1
        print(f"self-play worker failed ({why}); Ray restarts it and its batch is dropped", file=sys.stderr)
        self._send_weights(worker)
        self._submit(worker)

    def _send_weights(self, worker) -> None:
        worker.set_weights.remote(self._weights_ref, self._weights_version)

    def _publish_weights(self, force: bool = False) -> None:
        if not force and self.step % self.weights_every:
            return
        self._weights_ref = self.ray.put(self.learner.weights())
        self._weights_version = self.step
        for w in self.workers + self.archive_workers:
            self._send_weights(w)
        for w in self.reanalysers:
            w.set_weights.remote(self._weights_ref, self.step)
        self._reanalyse()

    def _reanalyse(self, wait: bool = False, dispatch: bool = True) -> None:
        """Write back what reanalyse actors finished; give each idle one the unrolls of as
        many random stored positions as a learning step samples times the fraction."""
        from .reanalyse import apply, plan

        if self.reanalysing:
            done, _ = self.ray.wait(list(self.reanalysing), num_returns=len(self.reanalysing),
                                    timeout=None if wait else 0)
            for ref in done:
                worker, work = self.reanalysing.pop(ref)
                try:
                    self.reanalysed += apply(self.replay, work, *self.ray.get(ref))
                except (self.ray.exceptions.RayActorError, self.ray.exceptions.WorkerCrashedError):
                    self.failures += 1
        if not dispatch:
            return
        busy = {worker for worker, _ in self.reanalysing.values()}
        count = int(round(self.cfg.muzero.reanalyse_fraction * self.cfg.train.minibatches_per_step
                          * self.cfg.train.batch_size))
        for worker in self.reanalysers:
            if worker in busy or len(self.replay) == 0:
                continue
            slots, _ = self.replay.sample_slots(count, self.reanalyse_rng)
            work = plan(self.replay, slots, self.cfg.muzero.reanalyse_targets)
            if work is not None:
                ref = worker.compute.remote(work["obs"], work["legal"], work["boot_obs"], work["boot_legal"])
                self.reanalysing[ref] = (worker, work)

    def _runtime_metrics(self, step_seconds: float) -> dict:
        out = {"ray/workers": self.num_workers, "ray/worker_failures": self.failures,
               "ray/queue": len(self.in_flight)}
        if self.reanalysers:
            out["ray/reanalysed_positions"] = self.reanalysed
        if self.eval_workers:
            out["ray/evaluations_skipped"] = self.evaluations_skipped
        if self.staleness:
            out["ray/weight_staleness"] = float(np.mean(self.staleness))
            self.staleness = []
        # Per-actor throughput since the last learning step, over the time each was playing.
        for i, (positions, simulations, seconds) in sorted(self.worker_work.items()):
            if seconds > 0:
                out[f"ray/worker{i}/positions_per_s"] = positions / seconds
                out[f"ray/worker{i}/simulations_per_s"] = simulations / seconds
        self.worker_work = {}
        return out

    def _actor_state(self) -> tuple[dict, dict]:
        meta = {"rng": self.actor.rng.bit_generator.state, "stats": dict(self.totals), "slots": []}
        unique = getattr(self.actor, "unique", None)  # the workers' unique states, gathered
        return meta, unique.state_arrays("gx_unique_") if unique is not None else {}

    def _restore(self, path) -> None:
        super()._restore(path)
        self.totals = dict(self.actor.stats)
