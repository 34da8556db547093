"""One inference service for the Ray self-play workers (`--workers N` with
`selfplay.shared_inference`; issue 60, item 3, docs/cluster.md "One GPU box").

The network lives in a Ray actor, :class:`InferenceServer`, on the run's device
(the GPU where there is one; `ray.inference_servers` of them share the workers and the
GPU, for when one server's Python rather than the GPU is the limit); Ray runs up to
`max_concurrency` of its method calls at once in threads, and each calls the
:class:`~polyzero.nets.inference_service.InferenceService` inside it, which joins the
concurrent calls into one batch. Each worker's search calls a :class:`RemoteEvaluator`,
the evaluator interface over Ray, so the workers walk their trees in processes of
their own (no GIL shared) while the server batches their leaves. With
`selfplay.actors` above 1 each worker runs that many actor threads, each with its own
games and its own calls to the server: while one waits for a reply the others walk
their trees (on a GPU box the single-threaded workers ran at about 40% of a core,
waiting).

A request is one Ray call, and Ray passes an argument inline only below 100 KB; above
it goes through the object store, which on the loaded 2-core machine made a 256-row
Connect Four request's round trip 1.7-1.9x as long as the same rows inline (as uint8,
or as float32 under a 1 MiB limit; benchmarks/results/ray_request_transport.md). Board
planes are small whole numbers, so a request carries them as uint8 (:func:`pack_planes`,
4x smaller: 256 Connect Four observations are 32 KB instead of 129 KB), and a local
cluster raises the inline limit for the rest (`ray_actors.start_ray`).
"""

from __future__ import annotations

import numpy as np

from ..nets.inference_service import EntryPoints


def pack_planes(arrays: tuple[np.ndarray, ...]) -> tuple[tuple[np.ndarray, ...], tuple[bool, ...]]:
    """Each float32 array whose every value is a whole number 0..255 as uint8, and which
    were packed: exact (uint8 -> float32 gives the same numbers back; -0.0 comes back as
    0.0), and a pass over the request on the worker to find out."""
    out: list[np.ndarray] = []
    packed: list[bool] = []
    for a in arrays:
        small = a
        if a.dtype == np.float32:
            with np.errstate(invalid="ignore"):  # NaN or out of range: no match, not packed
                small = a.astype(np.uint8)
        fits = small is not a and np.array_equal(small, a)
        out.append(small if fits else a)
        packed.append(fits)
    return tuple(out), tuple(packed)


def unpack_planes(arrays: tuple[np.ndarray, ...], packed: tuple[bool, ...]) -> tuple[np.ndarray, ...]:
    """The inverse of :func:`pack_planes`."""
    return tuple(a.astype(np.float32) if p else a for a, p in zip(arrays, packed, strict=True))


class InferenceServer:
    """A plain class Ray runs as a threaded actor: the run's network on its device
    behind one InferenceService; `clients` clients (the workers' actor threads, each
    searching almost all the time, are the clients a batch waits for)."""

    def __init__(self, cfg_dict: dict, clients: int):
        from ..algos import make_algorithm
        from ..config import build_config
        from ..games import load_game
        from ..nets.inference import resolve_device, set_threads
        from ..nets.inference_service import InferenceService
        from .actor_threads import service_settings

        cfg = build_config(base=cfg_dict)
        set_threads(cfg.threads)
        algo = make_algorithm(cfg, load_game(cfg.game))
        evaluator = algo.make_evaluator(algo.build_network(), resolve_device(cfg.device), selfplay=True)
        self.service = InferenceService(evaluator, **service_settings(cfg))
        self.clients = [self.service.client() for _ in range(clients)]
        self.version = -1

    def call(self, method: str, arrays: tuple, packed: tuple) -> tuple:
        return self.service.call(method, unpack_planes(arrays, packed))

    def set_weights(self, weights: dict, version: int) -> int:
        """The executor sends each publication once, and again when a lost actor or the
        server restarts: a version the server holds already is not loaded again (an ONNX
        Runtime refresh, 11-39 ms, stalls every worker's calls)."""
        if version != self.version:
            self.service.load_state_dict(weights)
            self.version = version
        return version

    def stats(self) -> dict:
        return {**self.service.stats, "version": self.version}


class RemoteEvaluator(EntryPoints):
    """The evaluator interface over Ray: each call one request to the server. Its weights
    are the server's (the Ray executor sends them there), so `load_state_dict` has
    nothing to load."""

    def __init__(self, server):
        import ray

        self.ray, self.server = ray, server

    def _call(self, method: str, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        return self.ray.get(self.server.call.remote(method, *pack_planes(arrays)))

    def load_state_dict(self, state: dict) -> None:
        pass


def start_servers(ray, cfg, workers: int) -> list:
    """The `ray.inference_servers` server actors, each with a worker's CPUs and an even
    share of `ray.inference_gpus` when the run's device is CUDA (refused on one line where
    the cluster has not that much free). Worker i calls server i mod N (:func:`server_of`),
    so each server's clients are its workers' actor threads."""
    from ..errors import UsageError
    from ..nets.inference import resolve_device

    count = cfg.ray.inference_servers
    gpus = cfg.ray.inference_gpus if resolve_device(cfg.device).type == "cuda" else 0
    free = ray.available_resources().get("GPU", 0)
    if gpus > free:
        raise UsageError(
            f"the inference servers ask for ray.inference_gpus = {gpus:g} of a GPU and {free:g} is free "
            f"(the learner holds ray.learner_gpus = {cfg.ray.learner_gpus:g}): lower one of them"
        )
    servers = []
    for j in range(count):
        clients = len(range(j, workers, count)) * cfg.selfplay.actors  # its workers' actor threads
        remote = ray.remote(
            num_cpus=cfg.ray.worker_cpus,
            num_gpus=gpus / count,
            max_concurrency=clients + 1,
            max_restarts=-1,
            max_task_retries=0,
        )
        servers.append(remote(InferenceServer).remote(cfg.to_dict(), clients))
    return servers


def server_of(servers: list, worker_index: int):
    """The server worker `worker_index` calls (None without servers)."""
    return servers[worker_index % len(servers)] if servers else None
