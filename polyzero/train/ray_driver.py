"""The Ray executor of trajectory self-play (`RaySelfPlay`): the same self-play actor
class as Ray actors, one per worker, feeding the learner and replay buffer of the
training loop (`loop.TrainingLoop`) in the learner's process. `RayTrainer` is the
common trainer with this executor.

* Weights reach the workers through Ray's object store (`ray.put` once, one
  reference to all) every `ray.weights_every` learning steps; every batch of
  examples records the weights version that produced it, and the staleness
  (learner version minus example version) is logged.
* Flow control: each worker has at most one task in flight (a bounded queue
  of one batch per worker), and the learner consumes b_step new positions per
  learning step, so the ratio of training to new samples is the same as
  in-process; workers keep playing while the learner trains.
* Fault tolerance: a worker whose process dies is restarted by Ray
  (max_restarts); the batch it was playing is lost, counted once in
  `ray/worker_failures` (however many of its tasks fail while it restarts; the
  count is kept in checkpoints), and the restarted worker receives the latest weights.
* The run directory, config, metrics and checkpoints are the loop's, as
  in-process; a checkpoint written here resumes in-process and the reverse
  (the workers' games in flight are not part of it and are discarded).
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

import numpy as np

from ..errors import UsageError
from .driver import Trainer
from .executor import ExecutorState
from .ray_actors import (  # noqa: F401 - their home was here; scripts import them from here
    EvaluationWorker,
    ReanalyseWorker,
    SelfPlayWorker,
    _import_ray,
    check_cpus,
    cpu_demand,
    start_ray,
    wait_for,
)
from .ray_inference import server_of, start_servers
from .selfplay import new_stats

SERVER_STATS_TIMEOUT_S = 1.0  # the learner's wait for the inference server's stats, per step


def check_ray_inference(cfg, workers: int) -> None:
    """selfplay.shared_inference under Ray: `ray.inference_servers` servers, whose clients
    are the workers' actor threads (`selfplay.actors` each); no more servers than workers
    (one without workers would only hold its CPUs and GPU share)."""
    sp = cfg.selfplay
    if sp.shared_inference and cfg.ray.inference_servers > workers:
        raise UsageError(
            f"ray.inference_servers = {cfg.ray.inference_servers} is more than the {workers} workers: "
            "lower it or add workers"
        )
    if sp.shared_inference and cfg.ray.worker_gpus > 0:
        raise UsageError(
            "ray.worker_gpus gives each worker a network of its own; with selfplay.shared_inference "
            "the inference server holds the one network (ray.inference_gpus)"
        )


class RayTrainer(ExecutorState, Trainer):
    """Trainer whose self-play runs on `workers` Ray actors: the common trainer with the
    executor `RaySelfPlay`. The executor's state (workers, totals, evaluations, ...) reads
    as the trainer's."""

    actor_threads_here = False  # selfplay.shared_inference: the workers call a server instead

    def __init__(self, cfg, run_dir, progress: bool = True, workers: int = 2, ray_address: str | None = None):
        check_ray_inference(cfg, workers)
        super().__init__(cfg, run_dir, progress)
        self._down: set = set()  # actors whose fault is counted and who have not delivered since
        self.executor = RaySelfPlay(self, workers, ray_address)

    def _fault(self, actor) -> bool:
        """Count a fault of `actor` once: the tasks that fail while Ray restarts it, and the
        batch it returns from fresh weights, are the same fault. True when newly counted."""
        if actor in self._down:
            return False
        self._down.add(actor)
        self.failures += 1
        return True


class RaySelfPlay:
    """The executor of trajectory self-play on Ray actors (see the module docstring); the
    loop's other sources (Reanalyze's target network, Go-Exploit's archive) stay in the
    learner's process, Reanalyze's searches and evaluations move to actors of their own."""

    def __init__(self, loop, workers: int, ray_address: str | None):
        cfg = loop.cfg
        self.loop, self.cfg = loop, cfg
        self.ray = _import_ray()
        self.num_workers = workers
        self.ray_address = ray_address
        self.weights_every = cfg.ray.weights_every
        self.totals = new_stats()
        self.staleness: list[int] = []
        self.worker_seconds = 0.0
        self.collect_wait = 0.0  # seconds the learner waited for workers' results since the last step's metrics
        self.worker_work: dict[int, list] = {}  # worker index -> [positions, simulations, seconds]
        self.eval_workers: list = []
        self.evaluations: dict = {}  # in-flight evaluation -> (learning step, train time, actor)
        self.eval_waiting = None  # the newest weights to score once an evaluation actor is free
        self.evaluations_skipped = 0  # weights replaced while waiting: evaluation lags, never queues
        self.workers = []
        self.servers: list = []  # selfplay.shared_inference: the workers' network (ray_inference)
        self._stats_refs: list | None = None  # the servers' stats, asked for and not yet in
        # The sources' parts under Ray (`sources.RayPart`: Go-Exploit's archive actors,
        # Reanalyze's actors).
        self.parts = [part for part in map(self._ray_part, loop.sources) if part is not None]
        self.in_flight: dict = {}
        self.worker_pids: dict = {}
        self._owns_ray = False
        self.loop.selfplay.actor_state = self._actor_state  # the workers' totals; their games are not kept

    def _ray_part(self, source):
        make = getattr(source, "ray_part", None)
        return make(self) if make is not None else None

    def _part_of(self, actor):
        """The part whose actor `actor` is; None for a self-play worker."""
        return next((part for part in self.parts if actor in part.actors), None)

    def _check_interrupt(self) -> None:  # what `wait_for` looks at every half second
        self.loop._check_interrupt()

    # ------------------------------------------------------------ lifecycle
    @contextmanager
    def session(self, loop):
        self._start()
        try:
            yield
        finally:
            self._stop()

    def _start(self) -> None:
        ray = self.ray
        self._owns_ray = start_ray(ray, cpu_demand(self.cfg, self.num_workers), self.ray_address)
        try:
            check_cpus(ray, self.cfg, self.num_workers)
        except UsageError:
            self._stop()
            raise
        cfg_dict = self.cfg.to_dict()
        if self.cfg.selfplay.shared_inference:  # the workers' network (polyzero.train.ray_inference)
            self.servers = start_servers(ray, self.cfg, self.num_workers)
        self.workers = self.start_workers(self.num_workers, 0, self.cfg.ray.worker_cpus)
        if self.cfg.eval.every:
            evaluator = ray.remote(num_cpus=self.cfg.ray.worker_cpus, max_restarts=-1, max_task_retries=0)(
                EvaluationWorker
            )
            self.eval_workers = [evaluator.remote(cfg_dict) for _ in range(self.cfg.ray.evaluators)]
        for part in self.parts:
            part.start(self)
        self.loop._publish_weights(force=True)

    def start_workers(self, count: int, first_index: int, cpus: float, *args) -> list:
        """`count` self-play worker actors (indices from `first_index`; `args`: the rest of
        `SelfPlayWorker`'s), each asking Ray for `cpus` CPUs."""
        remote = self.ray.remote(num_cpus=cpus, num_gpus=self.cfg.ray.worker_gpus, max_restarts=-1, max_task_retries=0)(
            SelfPlayWorker
        )
        cfg_dict = self.cfg.to_dict()
        servers = self.servers if not args else []
        return [
            remote.remote(cfg_dict, i, *args, server=server_of(servers, i))
            for i in range(first_index, first_index + count)
        ]

    def _part_actors(self) -> list:
        return [actor for part in self.parts for actor in part.actors]

    def _stop(self) -> None:
        for w in self.workers + self._part_actors() + self.eval_workers + self.servers:
            self.ray.kill(w, no_restart=True)
        self.servers, self._stats_refs = [], None
        self.eval_workers, self.evaluations, self.eval_waiting = [], {}, None
        self.workers, self.in_flight = [], {}
        for part in self.parts:
            part.stop(self)
            part.actors = []
        if self._owns_ray:
            self.ray.shutdown()

    # ------------------------------------------------------------ the loop's calls
    def stats(self, loop) -> dict:
        return self.totals

    def evaluate(self, loop, log) -> bool:
        """Hand the current weights to a free evaluation actor; log the evaluations that
        have finished (each under the learning step of the weights it scored). With every
        evaluation actor busy, the weights wait, and newer weights replace them (counted in
        ray/evaluations_skipped): a learner faster than its evaluators (a GPU learner) must
        not pile up evaluations it then waits for at the end of the run."""
        self._log_evaluations(log, wait=False)
        if self.cfg.eval.every and self.loop.step % self.cfg.eval.every == 0:
            self.evaluations_skipped += self.eval_waiting is not None
            self.eval_waiting = (self.loop.step, self.loop.train_time, self.loop.learner.weights())
        self._dispatch_evaluation()
        return True

    def _dispatch_evaluation(self) -> None:
        busy = {worker for _, _, worker in self.evaluations.values()}
        free = [w for w in self.eval_workers if w not in busy]
        if self.eval_waiting is None or not free:
            return
        step, train_time, weights = self.eval_waiting
        self.eval_waiting = None
        ref = free[0].evaluate.remote(
            self.ray.put(weights),
            step,
            self.cfg.eval.games,
            self.cfg.seed + 1000 * step,
            self.cfg.eval.opponent_specs(step),
        )
        self.evaluations[ref] = (step, train_time, free[0])

    def finish(self, loop, log) -> None:
        while self.evaluations or self.eval_waiting is not None:
            self._dispatch_evaluation()
            self._log_evaluations(log, wait=True)
        for part in self.parts:
            part.finish(self)

    def _log_evaluations(self, log, wait: bool) -> None:
        if not self.evaluations:
            return
        refs = list(self.evaluations)
        ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=None if wait else 0)
        for ref in ready:
            step, train_time, actor = self.evaluations.pop(ref)
            try:
                self.loop.last_eval = self.ray.get(ref)
            except (self.ray.exceptions.RayActorError, self.ray.exceptions.WorkerCrashedError) as exc:
                if self._fault(actor):
                    print(
                        f"evaluation of step {step} lost ({type(exc).__name__}); Ray restarts the evaluation actor",
                        file=sys.stderr,
                    )
                continue
            self.loop._down.discard(actor)
            self.loop.log_evaluation(log, step, self.loop.last_eval, train_time)

    def _part_result(self, part, actor, ref) -> None:
        """A task of a part's own actor ended: its result to the part, then its next task."""
        try:
            part.result(self.loop, self.ray.get(ref))
            self.loop._down.discard(actor)
        except (self.ray.exceptions.RayActorError, self.ray.exceptions.WorkerCrashedError) as exc:
            if self._fault(actor):
                print(f"{type(part).__name__} actor failed ({type(exc).__name__}); Ray restarts it", file=sys.stderr)
            self._send_weights(actor)
        self._submit(actor)

    def _submit(self, worker) -> None:
        part = self._part_of(worker)
        if part is not None:
            self.in_flight[part.submit(worker)] = worker
            return
        chunk = max(1, self.cfg.train.positions_per_step // max(self.num_workers, 1))
        task: dict = {}
        for part in self.parts:
            task.update(part.task(chunk))
        self.in_flight[worker.play.remote(chunk, **task)] = worker

    def collect(self, loop) -> None:
        ray = self.ray
        self._ask_server_stats()
        for w in self.workers + self._part_actors():
            if w not in self.in_flight.values():
                self._submit(w)
        while self.loop.pending < self.cfg.train.positions_per_step:
            waited = time.perf_counter()
            ref = wait_for(self, list(self.in_flight))[0]
            self.collect_wait += time.perf_counter() - waited
            worker = self.in_flight.pop(ref)
            part = self._part_of(worker)
            if part is not None:
                self._part_result(part, worker, ref)
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
            self.loop._down.discard(worker)
            for examples in out["examples"]:
                self.loop.pending += self.loop.replay.add(examples)
            for part in self.parts:
                part.take(self.loop, out)
            for k, v in out["stats"].items():
                self.totals[k] += v
            self.staleness.append(self.loop.step - out["version"])
            self.worker_seconds += out["seconds"]
            done = self.worker_work.setdefault(self.workers.index(worker), [0, 0, 0.0])
            done[0] += out["stats"]["positions"]
            done[1] += out["stats"]["simulations"]
            done[2] += out["seconds"]
            self._submit(worker)
        self.loop.pending -= self.cfg.train.positions_per_step

    def _fault(self, actor) -> bool:
        return self.loop._fault(actor)

    def _worker_lost(self, worker, why: str) -> None:
        if self._fault(worker):
            print(f"self-play worker failed ({why}); Ray restarts it and its batch is dropped", file=sys.stderr)
        self._send_weights(worker)
        self._submit(worker)

    def _send_weights(self, worker) -> None:
        """The latest weights to a lost actor Ray restarts, and to the inference servers,
        which may have restarted with it."""
        worker.set_weights.remote(self._weights_ref, self._weights_version)
        self._send_server_weights()

    def _send_server_weights(self) -> None:
        """The latest weights to the inference servers (a version one holds is not loaded
        again); a restarting server gets them once it is up, instead of serving the
        untrained weights its constructor made until the next publication."""
        for server in self.servers:
            server.set_weights.remote(self._weights_ref, self._weights_version)

    def publish(self, loop, force: bool = False) -> None:
        """After a learning step, the other sources' weights in this process (Reanalyze's
        target network), then, every `ray.weights_every` steps (`force`: now, without the
        others), the workers' through the object store."""
        if not force:
            for source in self.loop.sources:
                if source is not self.loop.selfplay:
                    source.publish(loop)
        if not force and self.loop.step % self.weights_every:
            return
        self._weights_ref = self.ray.put(self.loop.learner.weights())
        self._weights_version = self.loop.step
        for w in self.workers + self._part_actors():
            w.set_weights.remote(self._weights_ref, self._weights_version)
        self._send_server_weights()  # once a publication, not once a worker
        for part in self.parts:
            part.publish(self, self._weights_ref, self.loop.step)

    def runtime_metrics(self, loop, step_seconds: float) -> dict:
        out = {
            "ray/workers": self.num_workers,
            "ray/worker_failures": self.loop.failures,
            "ray/queue": len(self.in_flight),
            # the step's wait for its sources' results: near 0 when they were ready (the
            # learner sets the pace), most of the step when the workers or their servers do
            "ray/collect_wait_s": self.collect_wait,
        }
        self.collect_wait = 0.0
        for part in self.parts:
            out.update(part.metrics())
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
        if self.servers:
            out.update(self._server_metrics())
        return out

    def _ask_server_stats(self) -> None:
        """At a learning step's start (`collect`): the servers' stats, read after the step,
        so their replies come while the learner collects and learns. Asked after the step,
        the learner waited for the slowest of N busy servers each step: on the GPU box
        the time between steps that wrote no checkpoint grew with the servers (medians of
        4, 7 and 22 ms with 1, 2 and 4 servers, 5%, 11% and 24-25% of wall clock;
        `benchmarks/results/gpu_box_h200_ray_arms_call1.md`)."""
        if self.servers and self._stats_refs is None:
            self._stats_refs = [server.stats.remote() for server in self.servers]

    def _server_metrics(self) -> dict:
        """The shared inference servers' batches so far, together, without stalling the
        learner on a busy or restarting server: replies not in within
        SERVER_STATS_TIMEOUT_S are left for a later step (one request per server
        outstanding, never a queue of them). A server found restarted (its version still
        the constructor's -1: any weights it loaded since are the latest) gets them again;
        a reply asked for before the step's publication carries the previous version and
        is no restart."""
        self._ask_server_stats()
        try:
            served = self.ray.get(self._stats_refs, timeout=SERVER_STATS_TIMEOUT_S)
        except self.ray.exceptions.GetTimeoutError:
            return {}
        except self.ray.exceptions.RayActorError:  # restarting: its numbers start again
            self._stats_refs = None
            self._send_server_weights()
            return {}
        self._stats_refs = None
        if min(s["version"] for s in served) < 0:  # restarted since: untrained weights
            self._send_server_weights()
        forwards, rows = sum(s["forwards"] for s in served), sum(s["rows"] for s in served)
        out = {"ray/inference_forwards": forwards, "ray/inference_rows_per_forward": rows / max(forwards, 1)}
        if len(served) > 1:  # how evenly the servers share the work
            out.update({f"ray/inference_server{j}/forwards": s["forwards"] for j, s in enumerate(served)})
        return out

    def _actor_state(self) -> tuple[dict, dict]:
        meta = {"rng": self.loop.actor.rng.bit_generator.state, "stats": dict(self.totals), "slots": []}
        unique = getattr(self.loop.actor, "unique", None)  # the workers' unique states, gathered
        return meta, unique.state_arrays("gx_unique_") if unique is not None else {}

    def restored(self, loop) -> None:
        self.totals = dict(self.loop.actor.stats)
