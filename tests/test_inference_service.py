"""The shared inference service (polyzero.nets.inference_service) and the actor threads
that call it (polyzero.train.actor_threads): the outputs are the evaluator's, each
client gets its own rows back, a self-play run through it plays legal games, it shuts
down without hanging, and impossible settings are refused on one line."""

import threading
import time

import numpy as np
import pytest
import torch

from polyzero.algos import make_algorithm
from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.nets.inference_service import InferenceService, ServiceClosed, ServiceError, bucket_rows
from polyzero.train.actor_threads import ActorThreads

# Eager PyTorch blocks its matrix products by batch size, so a row's outputs may change
# in the last bits with the batch it runs in; ONNX Runtime's do not (asserted exactly).
EAGER_TOLERANCE = dict(rtol=1e-5, atol=1e-6)


class RowFunction:
    """A pure function of each row, with MuZero's entry points, that records its batches."""

    device = torch.device("cpu")

    def __init__(self, delay_s=0.0, fail_on=None):
        self.batches, self.delay_s, self.fail_on = [], delay_s, fail_on

    def __call__(self, obs):
        self.batches.append(len(obs))
        if self.fail_on is not None and (obs == self.fail_on).all(axis=1).any():
            raise ValueError("a row the network refuses")
        time.sleep(self.delay_s)
        return obs.sum(1), obs[:, 0] * 2

    def initial(self, obs):
        return obs + 1, obs.sum(1), obs.max(1)

    def recurrent(self, hidden, action):
        return action.astype(np.float32), hidden * 3, hidden.min(1), hidden - action[:, None]


def _setup(game, algo, inference, extra=()):
    cfg = build_config(game, algo, overrides=[f"net.inference={inference}", *extra])
    g = load_game(cfg.game)
    a = make_algorithm(cfg, g)
    torch.manual_seed(0)
    return cfg, g, a, a.make_evaluator(a.build_network(), "cpu")


def _random_states(game, rng, n):
    states = []
    for _ in range(n):
        s = game.new_initial_state()
        for _ in range(rng.integers(0, 5)):
            if s.is_terminal():
                break
            s.apply_action(int(rng.choice(s.legal_actions())))
        states.append(s)
    return states


@pytest.mark.parametrize("inference", ["eager", "onnx"])
def test_alphazero_outputs_through_the_service_are_the_evaluators(inference):
    pytest.importorskip("onnxruntime") if inference == "onnx" else None
    _, game, algo, direct = _setup("connect_four", "alphazero", inference)
    rng = np.random.default_rng(0)
    inputs = [algo.encode(_random_states(game, rng, n)) for n in (1, 5, 16)]
    with InferenceService(direct, wait_ms=200) as service:
        clients = [service.client() for _ in inputs]
        got = [None] * len(inputs)
        threads = [
            threading.Thread(target=lambda i=i: got.__setitem__(i, clients[i](inputs[i]))) for i in range(len(inputs))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert service.stats["forwards"] < service.stats["requests"] == 3  # they ran as one batch (or two)
    for obs, outputs in zip(inputs, got):
        for g, want in zip(outputs, direct(obs)):
            assert g.shape == want.shape
            if inference == "onnx":
                np.testing.assert_array_equal(g, want)
            else:
                np.testing.assert_allclose(g, want, **EAGER_TOLERANCE)


def test_muzero_initial_and_recurrent_through_the_service_are_the_evaluators():
    _, game, algo, direct = _setup("tic_tac_toe", "muzero", "eager")
    obs = algo.encode(_random_states(game, np.random.default_rng(1), 6))
    with InferenceService(direct, buckets=(8, 16)) as service:
        client = service.client()
        assert client.program is None  # the fused search would bypass the service
        hidden, *rest = client.initial(obs)
        want_hidden, *want_rest = direct.initial(obs)
        for g, w in zip([hidden, *rest], [want_hidden, *want_rest]):
            np.testing.assert_allclose(g, w, **EAGER_TOLERANCE)
        action = np.arange(len(obs), dtype=np.int64) % algo.num_actions
        for g, w in zip(client.recurrent(hidden, action), direct.recurrent(want_hidden, action)):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, **EAGER_TOLERANCE)
        assert service.stats["padded_rows"] == 2 * (8 - 6)  # both calls padded up to the bucket of 8


def test_concurrent_clients_get_their_own_rows_back():
    fn = RowFunction(delay_s=0.002)
    with InferenceService(fn, max_batch=40, wait_ms=5) as service:
        errors = []

        def client_loop(k):
            client = service.client()
            rng = np.random.default_rng(k)
            for step in range(25):
                rows = int(rng.integers(1, 12))
                obs = rng.random((rows, 4)).astype(np.float32) + 10 * k  # distinct per client
                method = ("__call__", "initial", "recurrent")[step % 3]
                args = (obs,) if method != "recurrent" else (obs, rng.integers(0, 7, rows))
                got = getattr(client, method)(*args)
                want = getattr(RowFunction(), method)(*args)
                if not all(np.array_equal(g, w) for g, w in zip(got, want)):
                    errors.append((k, step))
            client.close()

        threads = [threading.Thread(target=client_loop, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert max(fn.batches) <= 40 and service.stats["requests"] == 6 * 25
    assert service.stats["forwards"] < service.stats["requests"]  # requests were joined


def test_an_oversized_request_runs_whole_and_buckets_pad():
    fn = RowFunction()
    with InferenceService(fn, max_batch=8, buckets=(4, 8)) as service:
        client = service.client()
        got = client(np.ones((13, 2), np.float32))
        assert got[0].shape == (13,) and fn.batches == [13]
        client(np.ones((3, 2), np.float32))
        assert fn.batches[-1] == 4 and service.stats["padded_rows"] == 1
    assert bucket_rows(5, (4, 8)) == 8 and bucket_rows(9, (4, 8)) == 9 and bucket_rows(3, ()) == 3


def test_an_error_reaches_its_caller_and_the_service_keeps_serving():
    fn = RowFunction(fail_on=np.float32(7))
    with InferenceService(fn) as service:
        client = service.client()
        with pytest.raises(ServiceError, match="ValueError: a row the network refuses") as info:
            client(np.full((2, 3), 7, np.float32))
        assert isinstance(info.value.__cause__, ValueError)
        np.testing.assert_array_equal(client(np.ones((2, 3), np.float32))[0], [3, 3])


def test_clients_of_one_failed_batch_each_get_their_own_error():
    fn = RowFunction(fail_on=np.float32(7))
    with InferenceService(fn, wait_ms=1000) as service:  # the batch waits for both clients
        clients, errors = [service.client(), service.client()], [None, None]

        def send(i):
            try:
                clients[i](np.full((1, 3), 7, np.float32))
            except ServiceError as error:
                errors[i] = error

        threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    assert fn.batches == [2]  # one forward failed for both
    assert errors[0] is not errors[1] and errors[0].__cause__ is errors[1].__cause__
    assert all(isinstance(e, ServiceError) and isinstance(e.__cause__, ValueError) for e in errors)


def test_the_local_and_the_ray_client_share_one_set_of_entry_points():
    from polyzero.nets.inference_service import ENTRY_POINTS, EntryPoints, ServiceClient
    from polyzero.train.ray_inference import RemoteEvaluator

    assert all(callable(getattr(EntryPoints, name)) for name in ENTRY_POINTS)
    for cls in (ServiceClient, RemoteEvaluator):
        assert issubclass(cls, EntryPoints) and not set(ENTRY_POINTS) & set(vars(cls))
    remote = RemoteEvaluator.__new__(RemoteEvaluator)  # no Ray: its request goes straight back
    remote.ray = type("FakeRay", (), {"get": staticmethod(lambda ref: ref)})
    remote.server = type("FakeServer", (), {"call": type("Method", (), {"remote": staticmethod(lambda *a: a)})})
    hidden, action = np.zeros((2, 3)), np.zeros(2)
    method, arrays, packed = remote.recurrent(hidden, action)
    assert method == "recurrent" and arrays[0] is hidden and arrays[1] is action and packed == (False, False)


def test_requests_carry_board_planes_as_uint8_and_nothing_else():
    from polyzero.train.ray_inference import pack_planes, unpack_planes

    planes = (np.random.default_rng(0).random((256, 3, 6, 7)) > 0.5).astype(np.float32)
    counts = np.array([[0, 3, 255]], np.float32)
    others = [
        np.array([[0.0, 0.5]], np.float32),  # a fraction
        np.array([[-1.0, 2.0]], np.float32),  # negative
        np.array([[256.0]], np.float32),  # past uint8
        np.array([[np.nan, 1.0]], np.float32),
        np.array([[np.inf]], np.float32),
        np.array([[0.0, 1.0]], np.float64),  # not float32: left as it is
        np.array([3, 4], np.int64),
    ]
    arrays, packed = pack_planes((planes, counts, *others))
    assert packed == (True, True) + (False,) * len(others)
    assert arrays[0].dtype == np.uint8 and arrays[0].nbytes * 4 == planes.nbytes
    assert all(a is b for a, b in zip(arrays[2:], others))
    back = unpack_planes(arrays, packed)
    for a, b in zip(back, (planes, counts, *others)):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")


def test_packing_keeps_every_array_s_shape_and_values():
    """pack_planes on arrays a search may send beside contiguous planes: each comes back
    float32 of its shape with equal values (-0.0 as 0.0, which compares equal), and the
    caller's array is never written."""
    from polyzero.train.ray_inference import pack_planes, unpack_planes

    grid = np.arange(24, dtype=np.float32).reshape(4, 6) % 3
    arrays = (
        np.zeros((0, 3, 6, 7), np.float32),  # no rows
        grid[:, ::2],  # a strided view
        np.asfortranarray(grid),
        np.array([[-0.0, 1.0]], np.float32),
        np.array(2.0, np.float32),  # no axes
    )
    before = [a.copy() for a in arrays]
    small, packed = pack_planes(arrays)
    assert packed == (True,) * len(arrays) and all(a.dtype == np.uint8 for a in small)
    for back, a, b in zip(unpack_planes(small, packed), arrays, before):
        assert back.dtype == np.float32 and back.shape == a.shape and np.array_equal(back, a)
        assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))


def test_a_ray_worker_runs_its_actor_threads_each_calling_the_server(monkeypatch):
    # The Ray worker's classes in this process: the server's calls go straight to an
    # InferenceServer here, packed as Ray would carry them.
    from polyzero.train.ray_actors import SelfPlayWorker
    from polyzero.train.ray_inference import InferenceServer, RemoteEvaluator, pack_planes

    overrides = ["selfplay.shared_inference=true", "selfplay.actors=2", "selfplay.concurrent_games=4"]
    cfg = build_config("tic_tac_toe", "alphazero", overrides=overrides + ["search.num_simulations=4"])
    server = InferenceServer(cfg.to_dict(), clients=2)
    callers = set()

    def call(self, method, arrays):
        callers.add(id(self))
        return server.call(method, *pack_planes(arrays))

    monkeypatch.setattr(RemoteEvaluator, "_call", call)
    worker = SelfPlayWorker(cfg.to_dict(), 0, server=object())
    try:
        out = worker.play(min_positions=20)
        assert isinstance(worker.actor, ActorThreads) and len(worker.actor.actors) == 2
        assert len(callers) == 2  # a client of the server per thread
        assert all(a.stats["positions"] > 0 for a in worker.actor.actors)
        assert out["stats"]["positions"] == sum(a.stats["positions"] for a in worker.actor.actors)
    finally:
        worker.actor.close()
        server.service.close()


def test_close_does_not_hang_and_later_calls_fail():
    fn = RowFunction(delay_s=0.2)
    service = InferenceService(fn)
    client = service.client()
    results = []
    t = threading.Thread(target=lambda: results.append(client(np.ones((1, 2), np.float32))))
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    service.close(timeout_s=5)
    t.join(5)
    assert time.perf_counter() - t0 < 5 and not t.is_alive() and len(results) == 1  # the running one finished
    with pytest.raises(ServiceClosed):
        client(np.ones((1, 2), np.float32))
    with pytest.raises(ServiceClosed):
        service.client()


def test_a_request_queued_as_the_service_closes_fails_at_once():
    # close() between a client's check that the service runs and its put: the thread has
    # drained the queue and stopped, so nobody will answer; the client must not wait out
    # its timeout (600 s by default).
    from polyzero.nets.inference_service import _STOP

    service = InferenceService(RowFunction(), timeout_s=60)
    real = service._queue

    class CloseFirst:  # the queue, closing the service before a request goes in
        def put(self, item):
            if item is not _STOP:
                service.close()
            real.put(item)

        def __getattr__(self, name):
            return getattr(real, name)

    service._queue = CloseFirst()
    t0 = time.perf_counter()
    with pytest.raises(ServiceClosed, match="closed before"):
        service.client()(np.ones((1, 2), np.float32))
    assert time.perf_counter() - t0 < 5


def test_a_client_gives_up_when_the_service_does_not_answer():
    service = InferenceService(RowFunction(delay_s=1.0), timeout_s=0.1)
    with pytest.raises(ServiceClosed, match="no answer"):
        service.client()(np.ones((1, 2), np.float32))
    service.close()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["selfplay.actors=3"], "set selfplay.shared_inference = true"),
        (["selfplay.actors=0"], "selfplay.actors must be positive"),
        (["selfplay.inference_wait_ms=2"], "applies with selfplay.shared_inference"),
        (["ray.inference_gpus=0.25"], "ray.inference_gpus applies with selfplay.shared_inference"),
        (["ray.inference_servers=2"], "ray.inference_servers applies with selfplay.shared_inference"),
        (["selfplay.shared_inference=true", "ray.inference_servers=0"], "ray.inference_servers must be positive"),
        (["selfplay.shared_inference=true", "selfplay.inference_buckets=[64,16]"], "strictly ascending"),
        (
            ["selfplay.shared_inference=true", "selfplay.inference_max_batch=32", "selfplay.inference_buckets=[64]"],
            "exceeds",
        ),
        (["selfplay.shared_inference=true", "selfplay.inference_dtype=int8"], "inference_dtype must be one of"),
        (["selfplay.shared_inference=true", "selfplay.inference_wait_ms=-1"], "wait_ms must lie"),
    ],
)
def test_bad_settings_are_refused_on_one_line(overrides, message):
    with pytest.raises(UsageError, match=message) as info:
        build_config("tic_tac_toe", "alphazero", overrides=overrides)
    assert "\n" not in str(info.value)


def test_half_precision_needs_a_cuda_device():
    with pytest.raises(UsageError, match="CUDA device only"):
        InferenceService(RowFunction(), dtype="bfloat16")


def test_actor_threads_play_legal_games_through_one_service():
    overrides = ["selfplay.actors=2", "selfplay.shared_inference=true", "selfplay.concurrent_games=4"]
    overrides += ["search.num_simulations=8"]
    cfg, game, algo, evaluator = _setup("tic_tac_toe", "alphazero", "eager", overrides)
    actors = ActorThreads(algo, game, cfg, evaluator, seed=3)
    try:
        finished = []
        for _ in range(12):
            finished += actors.tick()
        assert actors.stats["games"] == len(finished) >= 8
        assert actors.service.stats["rows"] >= actors.stats["searches"]  # every search went through it
        for traj in finished:
            state = game.new_initial_state()
            for action, legal in zip(traj.actions, traj.legal):
                assert action in state.legal_actions() and legal[action]
                state.apply_action(action)
            assert state.is_terminal()
        actors.temperature = 0.5
        assert all(a.temperature == 0.5 for a in actors.actors)
        meta, arrays = actors.state_dict()
        assert len(meta["actors"]) == 2 and len(meta["slots"]) == 8
    finally:
        actors.close()
    assert not actors.service._thread.is_alive()


def _play(actors, ticks):
    out = []
    for _ in range(ticks):
        out += [(t.actions, np.asarray(t.policies).round(6).tolist()) for t in actors.tick()]
    return out


def test_through_the_service_self_play_is_the_plain_actors_under_onnx():
    # ONNX Runtime's rows do not depend on their batch: one actor through the service plays
    # exactly the games of the plain actor with the same seed, and two actor threads play
    # the same games whatever the threads' timing.
    pytest.importorskip("onnxruntime")
    from polyzero.train.selfplay import SelfPlayActor

    base = ["selfplay.concurrent_games=3", "search.num_simulations=6"]
    runs = []
    for actors in (1, 1, 2, 2):
        shared = [f"selfplay.actors={actors}", "selfplay.shared_inference=true"]
        cfg, game, algo, evaluator = _setup("tic_tac_toe", "alphazero", "onnx", base + shared)
        threads = ActorThreads(algo, game, cfg, evaluator, seed=5)
        try:
            runs.append(_play(threads, 10))
        finally:
            threads.close()
        if len(runs) == 1:
            plain = SelfPlayActor(algo, game, cfg, algo.make_evaluator(algo.build_network(), "cpu"), seed=5)
            plain.evaluate.load_state_dict(evaluator.net.state_dict())
            assert _play(plain, 10) == runs[0]
    assert runs[0] == runs[1] and runs[2] == runs[3] and len(runs[2]) > len(runs[0])


def test_a_run_with_actor_threads_trains_and_resumes_exactly(tmp_path):
    # Under ONNX Runtime the service's batches change no row, and each actor's games in
    # flight are in the checkpoint: a resumed run reaches the uninterrupted run's weights.
    pytest.importorskip("onnxruntime")
    from conftest import SMALL_RUN
    from polyzero.train.checkpoint import latest_checkpoint, read_learner
    from polyzero.train.driver import Trainer

    shared = ["selfplay.actors=2", "selfplay.shared_inference=true", "net.inference=onnx", "train.checkpoint_every=2"]
    cfg = build_config("tic_tac_toe", "alphazero", overrides=[*SMALL_RUN, *shared, "train.steps=4"])
    full = Trainer.create(cfg, tmp_path / "full", progress=False)
    full.run()
    assert full.actor.stats["games"] > 0 and full.actor.service.stats["forwards"] > 0
    full.actor.close()
    half = build_config("tic_tac_toe", "alphazero", overrides=[*SMALL_RUN, *shared, "train.steps=2"])
    Trainer.create(half, tmp_path / "split", progress=False).run()
    resumed = Trainer.resume(tmp_path / "split", ["train.steps=4"], progress=False)
    resumed.run()
    resumed.actor.close()
    a, b = (read_learner(latest_checkpoint(tmp_path / d))["net"] for d in ("full", "split"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_ray_refuses_what_its_inference_server_cannot_run_on_one_line(tmp_path):
    from polyzero.train.ray_driver import RayTrainer

    cfg = build_config("tic_tac_toe", "alphazero", overrides=["selfplay.shared_inference=true", "ray.worker_gpus=0.25"])
    with pytest.raises(UsageError, match="the inference server holds the one network"):
        RayTrainer(cfg, tmp_path / "run", progress=False, workers=2)
    assert not (tmp_path / "run").exists()


def test_a_batch_waits_for_active_clients_only():
    with InferenceService(RowFunction(), wait_ms=300) as service:
        sender, other = service.client(), service.client()
        t0 = time.perf_counter()
        sender(np.ones((1, 2), np.float32))
        waited = time.perf_counter() - t0
        other.idle()  # e.g. an actor whose move is done
        t0 = time.perf_counter()
        sender(np.ones((1, 2), np.float32))
        assert time.perf_counter() - t0 < waited and waited >= 0.29  # it waited for `other` only while active
        other.active()
        assert service._active == 2


def test_half_precision_results_come_back_as_float32():
    # bfloat16 runs on CUDA only; the plumbing (autocast in the service's thread, results
    # back to float32 for the search) is the same under the CPU's autocast.
    _, game, algo, direct = _setup("connect_four", "alphazero", "eager", ["net.cache=0"])  # no cached rows
    obs = algo.encode(_random_states(game, np.random.default_rng(2), 8))
    with InferenceService(direct) as service:
        service.half = torch.bfloat16
        got = service.client()(obs)
    for g, want in zip(got, direct(obs)):
        assert g.dtype == np.float32 and not np.array_equal(g, want)  # it did run in bfloat16
        np.testing.assert_allclose(g, want, atol=0.1)


@pytest.mark.parametrize("game, algo", [("tic_tac_toe", "muzero"), ("nannon", "ndmz")])
def test_muzero_and_ndmz_actor_threads_search_through_the_service(game, algo):
    overrides = ["selfplay.actors=2", "selfplay.shared_inference=true", "selfplay.concurrent_games=2"]
    overrides += ["search.num_simulations=4"]
    cfg, g, a, evaluator = _setup(game, algo, "eager", overrides)
    actors = ActorThreads(a, g, cfg, evaluator, seed=0)
    try:
        for _ in range(3):
            actors.tick()
        assert actors.stats["searches"] == 2 * 2 * 3
        # the searches' initial calls (one per actor and move) and recurrent calls went to the service
        assert actors.service.stats["requests"] > 2 * 3 and actors.service.stats["rows"] >= 2 * 2 * 3
    finally:
        actors.close()


def test_one_actor_thread_checkpoints_as_a_plain_actor():
    # `--workers N` with selfplay.shared_inference: the step-0 checkpoint is written by the
    # in-process trainer (actor threads) and resumed by the Ray executor (a plain actor's
    # state, with its random stream), and the other way round.
    from polyzero.train.selfplay import SelfPlayActor

    shared = ["selfplay.shared_inference=true", "selfplay.concurrent_games=2", "search.num_simulations=4"]
    cfg, game, algo, evaluator = _setup("tic_tac_toe", "alphazero", "eager", shared)
    threads = ActorThreads(algo, game, cfg, evaluator, seed=7)
    try:
        threads.tick()
        meta, arrays = threads.state_dict()
        plain = SelfPlayActor(algo, game, cfg, evaluator, seed=0)
        plain.load_state_dict(meta, arrays)
        assert plain.rng.bit_generator.state == threads.actors[0].rng.bit_generator.state
        assert [s.state.history() for s in plain.slots] == [s.state.history() for s in threads.actors[0].slots]
        plain.tick()
        threads.load_state_dict(*plain.state_dict())
        assert threads.actors[0].rng.bit_generator.state == plain.rng.bit_generator.state
        assert threads.stats == plain.stats
    finally:
        threads.close()


def test_the_ray_server_loads_each_weight_version_once():
    # A publication can reach the server more than once (again after a lost worker or a
    # restart): one load per version (the class runs here without Ray).
    from polyzero.train.ray_inference import InferenceServer

    cfg = build_config("tic_tac_toe", "alphazero", overrides=["selfplay.shared_inference=true"])
    server = InferenceServer(cfg.to_dict(), clients=3)
    loads = []
    real = server.service.load_state_dict
    server.service.load_state_dict = lambda state: (loads.append(1), real(state))
    try:
        weights = server.service.evaluator.net.state_dict()
        for version in (4, 4, 4, 6, 6):
            assert server.set_weights(weights, version) == version
        assert len(loads) == 2 and server.stats()["version"] == 6
    finally:
        server.service.close()


def test_the_learner_skips_late_server_stats_and_resends_weights_to_a_restarted_server():
    # A busy or restarting server: the learner's wait for its stats is bounded and one
    # request stays outstanding until its reply is in (the class runs here without Ray).
    from types import SimpleNamespace

    from ray.exceptions import GetTimeoutError, RayActorError

    from polyzero.train.ray_driver import SERVER_STATS_TIMEOUT_S, RaySelfPlay

    replies, asked = [], []

    def get(refs, timeout=None):
        assert timeout == SERVER_STATS_TIMEOUT_S  # never an unbounded wait
        if not replies:
            raise GetTimeoutError("not yet")
        if isinstance(replies[-1], Exception):
            raise replies.pop()
        return [replies.pop()]

    ray = SimpleNamespace(
        get=get, exceptions=SimpleNamespace(GetTimeoutError=GetTimeoutError, RayActorError=RayActorError)
    )
    stats = SimpleNamespace(remote=lambda: asked.append(1) or len(asked))
    sent = []
    server = SimpleNamespace(stats=stats, set_weights=SimpleNamespace(remote=lambda *a: sent.append(a)))
    driver = SimpleNamespace(ray=ray, servers=[server], _stats_refs=None, _weights_ref="w", _weights_version=2)
    driver._send_server_weights = lambda: RaySelfPlay._send_server_weights(driver)
    driver._ask_server_stats = lambda: RaySelfPlay._ask_server_stats(driver)
    driver._ask_server_stats()  # at the step's start (collect): read after the step
    assert RaySelfPlay._server_metrics(driver) == {} and RaySelfPlay._server_metrics(driver) == {}
    assert len(asked) == 1  # the second step waited on the same request
    replies.append({"forwards": 4, "rows": 10, "version": 1})  # asked before the step's publication
    assert RaySelfPlay._server_metrics(driver) == {"ray/inference_forwards": 4, "ray/inference_rows_per_forward": 2.5}
    assert driver._stats_refs is None and not sent  # an older version is no restart
    replies.append({"forwards": 1, "rows": 1, "version": -1})  # restarted: its constructor's weights
    RaySelfPlay._server_metrics(driver)
    assert sent == [("w", 2)]  # the latest weights again, not at the next publication
    replies.append(RayActorError())  # restarting now: the weights queue for it
    assert RaySelfPlay._server_metrics(driver) == {} and sent == [("w", 2)] * 2 and driver._stats_refs is None


def test_inference_servers_share_the_workers_and_the_gpu(monkeypatch):
    """ray.inference_servers = 3 with 5 workers of 2 actor threads: worker i calls server
    i mod 3, so the servers wait for 4, 4 and 2 clients, and each holds a third of
    ray.inference_gpus."""
    import torch

    from polyzero.nets import inference
    from polyzero.train.ray_driver import check_ray_inference
    from polyzero.train.ray_inference import server_of, start_servers

    made = []

    class FakeRay:
        def available_resources(self):
            return {"GPU": 1.0}

        def remote(self, **options):
            def actor(cls):
                class Handle:
                    @staticmethod
                    def remote(cfg_dict, clients):
                        made.append((options, clients))
                        return f"server{len(made) - 1}"

                return Handle

            return actor

    monkeypatch.setattr(inference, "resolve_device", lambda device: torch.device("cuda"))
    overrides = ["selfplay.shared_inference=true", "selfplay.actors=2", "ray.inference_servers=3"]
    servers = start_servers(FakeRay(), build_config("tic_tac_toe", "alphazero", overrides=overrides), workers=5)
    assert [clients for _, clients in made] == [4, 4, 2]
    assert [o["max_concurrency"] for o, _ in made] == [5, 5, 3]
    assert [o["num_gpus"] for o, _ in made] == pytest.approx([0.5 / 3] * 3)
    assert [server_of(servers, i) for i in range(5)] == ["server0", "server1", "server2", "server0", "server1"]
    assert server_of([], 4) is None
    with pytest.raises(UsageError, match="ray.inference_servers = 3 is more than the 2 workers"):
        check_ray_inference(build_config("tic_tac_toe", "alphazero", overrides=overrides), workers=2)
    check_ray_inference(build_config("tic_tac_toe", "alphazero", overrides=overrides), workers=3)
