"""What the Ray drivers share: starting Ray and checking its CPUs, waiting on Ray
while watching for an interrupt, and the plain classes Ray runs as actors (self-play,
evaluation and reanalyse workers). Their users are the Ray executors
(`ray_driver.RaySelfPlay`, `polyzero.sog.ray_trainer.RayGamesAndQueries`) and
`supervisor.SupervisedRun`.
"""

from __future__ import annotations

import math
import os
import time

from ..errors import UsageError
from ..plugins import selfplay_plugin
from .sources import extra_actors


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UsageError("--workers needs Ray: pip install 'polyzero[ray]'") from None
    return ray


def cpu_demand(cfg, workers: int) -> float:
    """The CPUs of Ray a run's actors ask for: the self-play workers and the actors its
    config asks for beside them (`sources.extra_actors`: evaluation, reanalyse, query
    solvers; archive actors and the learner ask for none)."""
    return (workers + sum(extra_actors(cfg).values())) * cfg.ray.worker_cpus


# Arguments up to this size go inline rather than through the object store (Ray's default
# is 100 KB): an inference request (`ray_inference`) of 129 KB made its round trip in
# about half the time (benchmarks/results/ray_request_transport.md); MuZero's hidden
# states, which are not packed as board planes are, need it.
INLINE_BYTES = 1 << 20


def start_ray(ray, cpus: float, address: str | None, inline_bytes: int | None = INLINE_BYTES) -> bool:
    """Join the cluster at `address`, or start a local Ray instance bound to 127.0.0.1
    without a dashboard, offering `cpus` CPUs or this machine's, whichever is more, passing
    arguments up to `inline_bytes` inline (None: Ray's default); True when this call
    started (and so owns) Ray."""
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(
            num_cpus=max(math.ceil(cpus), os.cpu_count() or 1),
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}},
            _system_config={} if inline_bytes is None else {"max_direct_call_object_size": inline_bytes},
        )
    return True


def wait_for(trainer, refs: list) -> list:
    """`ray.wait` for one of `refs`, looking every half second for a SIGTERM or Ctrl-C
    (signals only set a flag, `RunDirectory.interrupt_requested`)."""
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
        extra = ", ".join(extra_actors(cfg))
        raise UsageError(
            f"{workers} self-play workers and the run's other actors need {need:g} CPUs of Ray "
            f"(ray.worker_cpus = {cfg.ray.worker_cpus:g} each); the cluster has {have:g}: "
            f"lower --workers, {extra} or ray.worker_cpus"
        )


class SelfPlayWorker:
    """A plain class Ray runs as an actor: one SelfPlayActor and its network."""

    def __init__(self, cfg_dict: dict, index: int, archive_actor: bool = False, server=None):
        from ..algos import make_algorithm
        from ..config import build_config
        from ..games import load_game
        from ..nets.inference import resolve_device, set_threads
        from .actor_threads import ActorThreads
        from .ray_inference import RemoteEvaluator
        from .selfplay import SelfPlayActor

        cfg = build_config(base=cfg_dict)
        set_threads(cfg.threads)
        game = load_game(cfg.game)
        self.algo = make_algorithm(cfg, game)
        # Ray (2.60) no longer hides the GPU from actors that asked for none: a worker
        # uses it only when the config gives workers a share (ray.worker_gpus).
        device = resolve_device(cfg.device if cfg.ray.worker_gpus > 0 else "cpu")
        if server is not None:  # selfplay.shared_inference: the run's one network, on the server
            self.evaluator = RemoteEvaluator(server)
        else:
            self.evaluator = self.algo.make_evaluator(self.algo.build_network(), device, selfplay=True)
        # A restarted worker gets fresh randomness, so it does not replay its games.
        seed = [cfg.seed, index + 1, int.from_bytes(os.urandom(4), "little")]
        plugin = selfplay_plugin(cfg)  # Go-Exploit / KataGo (polyzero.plugins.SELFPLAY_PLUGINS)
        if plugin is not None:  # an archive actor (Algorithm 3), or start histories with each task
            self.actor = plugin.worker_actor(self.algo, game, cfg, self.evaluator, seed, archive_actor)
        elif server is not None and cfg.selfplay.actors > 1:  # threads, each calling the server
            clients = [self.evaluator] + [RemoteEvaluator(server) for _ in range(cfg.selfplay.actors - 1)]
            self.actor = ActorThreads(self.algo, game, cfg, None, seed, clients=clients)
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

    def play(self, min_positions: int, **task) -> dict:
        """Play until at least `min_positions` positions of finished games are ready;
        `task`: what a data source's Ray part sends with it (`sources.RayPart.task`), for
        the actor's `begin_task`."""
        t0 = time.perf_counter()
        if task:
            self.actor.begin_task(**task)
        before = dict(self.actor.stats)
        batches, n = [], 0
        while n < min_positions:
            for traj in self.actor.tick():
                batches.append(self.algo.trajectory_examples(traj))
                n += traj.samples or len(traj.actions)
        delta = {k: self.actor.stats[k] - before[k] for k in before}
        # One batch of examples per finished game: a sequence replay keeps games apart.
        out = {
            "examples": batches,
            "stats": delta,
            "version": self.version,
            "seconds": time.perf_counter() - t0,
            "pid": os.getpid(),
        }
        return {**out, **self._task_result()}

    def play_games(self, games: int) -> dict:
        """Play until `games` more games have ended, training on none (e.g. Go-Exploit's
        archive actor, Algorithm 3); what the actor sends back with them."""
        finished = 0
        while finished < games:
            finished += len(self.actor.tick())
        return {"games": finished, "version": self.version, "pid": os.getpid(), **self._task_result()}

    def _task_result(self) -> dict:
        """A plug-in actor's part of a task's result (`task_result`: e.g. Go-Exploit's states)."""
        result = getattr(self.actor, "task_result", None)
        return result() if result is not None else {}


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
        from ..algos.reanalyse import Reanalyser
        from ..config import build_config
        from ..games import load_game
        from ..nets.inference import set_threads

        cfg = build_config(base=cfg_dict)
        set_threads(cfg.threads)
        self.reanalyser = Reanalyser(make_algorithm(cfg, load_game(cfg.game)), cfg, "cpu", [cfg.seed, 100 + index])

    def set_weights(self, weights: dict, step: int, target: dict | None = None) -> None:
        self.reanalyser.set_weights(weights, step)
        if target is not None:
            self.reanalyser.target.load_state_dict(target)

    def compute(self, obs, legal, boot_obs, boot_legal):
        return self.reanalyser.compute(obs, legal, boot_obs, boot_legal)
