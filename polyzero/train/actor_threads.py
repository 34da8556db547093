"""Several self-play actors in threads of one process, sharing one inference service
(`selfplay.actors`, `selfplay.shared_inference`; issue 60, item 3).

Each actor is a :class:`~polyzero.train.selfplay.SelfPlayActor` with its own games and
random stream ([seed, its index]; actor 0: the seed) whose evaluator is a client of one
:class:`~polyzero.nets.inference_service.InferenceService`. A tick makes one move in
every actor's games, the actors in threads at once: while one waits for the network
the others walk their trees (the tree kernels release the GIL). Finished games come
back in actor order, so the trajectories of a tick do not depend on thread timing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ..nets.inference_service import InferenceService
from .selfplay import SelfPlayActor, new_stats


def service_settings(cfg) -> dict:
    """The inference service's keyword arguments from `selfplay`'s inference_* keys."""
    sp = cfg.selfplay
    return {
        "max_batch": sp.inference_max_batch,
        "buckets": tuple(sp.inference_buckets),
        "wait_ms": sp.inference_wait_ms,
        "dtype": sp.inference_dtype,
    }


def actor_seed(seed, index: int):
    """Actor 0 plays as the single actor with `seed` would; the others get streams of their
    own ([seed, index]: unlike seed + index, not another run's actor 0)."""
    if index == 0:
        return seed
    return [*seed, index] if isinstance(seed, (list, tuple)) else [seed, index]


def _actor_arrays(arrays: dict, index: int) -> dict:
    """Actor `index`'s arrays in a checkpoint of actor threads."""
    prefix = f"actor{index}_"
    return {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}


def first_actor_state(meta: dict, arrays: dict) -> tuple[dict, dict]:
    """A plain actor's state: as it is, or from a checkpoint of actor threads actor 0's
    games and random stream with the threads' totals (a Ray run's learner resumes the
    step-0 checkpoint that the command's process writes with `selfplay.actors` threads)."""
    if "actors" not in meta:
        return meta, arrays
    return {**meta["actors"][0], "stats": meta["stats"]}, _actor_arrays(arrays, 0)


class ActorThreads:
    """N actors behind the one actor interface the trainer drives (`tick`, `stats`,
    `temperature`, `state_dict`, `load_state_dict`); `evaluator` is what the trainer
    loads new weights into (the service, through one client).

    `clients`, instead of a service of this process around `evaluator`: the actors' own
    evaluators, each already a client of a service elsewhere (a Ray worker's threads,
    each calling the run's inference server: while one waits for its reply the others
    walk their trees)."""

    def __init__(self, algo, game, cfg, evaluator, seed: int, make_actor=SelfPlayActor, clients=None):
        self.service: InferenceService | None = None
        if not clients:
            self.service = service = InferenceService(evaluator, **service_settings(cfg))
            clients = [service.client() for _ in range(cfg.selfplay.actors)]
        self.clients = clients
        self.actors = [make_actor(algo, game, cfg, c, actor_seed(seed, i)) for i, c in enumerate(self.clients)]
        self._searching(False)  # active during their actor's moves only (tick)
        self.evaluator = self.clients[0]
        self._pool = ThreadPoolExecutor(len(self.actors), thread_name_prefix="polyzero-actor")

    def _searching(self, yes: bool, index: int | None = None) -> None:
        """Tell this process's service which actors are in a search (its batches wait for
        those only); clients of a service elsewhere have nothing to tell."""
        if self.service is not None:
            for c in self.clients if index is None else [self.clients[index]]:
                c.active() if yes else c.idle()

    def tick(self) -> list:
        self._searching(True)  # all of them before any sends: the first batch waits for each
        futures = [self._pool.submit(self._tick, i) for i in range(len(self.actors))]
        finished = []
        for f in futures:  # in actor order; an actor's error is raised here
            finished += f.result()
        return finished

    def _tick(self, index: int) -> list:
        try:
            return self.actors[index].tick()
        finally:
            self._searching(False, index)  # the others' batches stop waiting for this actor's requests

    @property
    def stats(self) -> dict:
        total = new_stats()
        for a in self.actors:
            for k in total:
                total[k] += a.stats[k]
        return total

    @property
    def temperature(self) -> float:
        return self.actors[0].temperature

    @temperature.setter
    def temperature(self, value: float) -> None:
        for a in self.actors:
            a.temperature = value

    def state_dict(self):
        """Every actor's games in flight; `slots` lists them all (a resume counts them).
        One actor writes a plain actor's state: the Ray executor's checkpoints and this
        one's then resume each other (`--workers` with selfplay.shared_inference)."""
        if len(self.actors) == 1:
            return self.actors[0].state_dict()
        metas, arrays = [], {}
        for i, a in enumerate(self.actors):
            meta, arrs = a.state_dict()
            metas.append(meta)
            arrays.update({f"actor{i}_{k}": v for k, v in arrs.items()})
        slots = [s for m in metas for s in m["slots"]]
        return {"actors": metas, "slots": slots, "stats": self.stats}, arrays

    def load_state_dict(self, meta: dict, arrays: dict) -> None:
        """A checkpoint of as many actors continues each; a plain actor's (one actor, or
        the Ray executor's) continues in actor 0; any other starts fresh games (the totals
        carried by actor 0)."""
        metas = meta.get("actors")
        if metas is None:
            self.actors[0].load_state_dict(meta, arrays)
            return
        if len(metas) != len(self.actors):
            first = self.actors[0]
            first.stats = {**new_stats(), **meta["stats"]}
            return
        for i, (a, m) in enumerate(zip(self.actors, metas)):
            a.load_state_dict(m, _actor_arrays(arrays, i))

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        if self.service is not None:
            for c in self.clients:
                c.close()
            self.service.close()
