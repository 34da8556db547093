"""One network on one device serving many self-play actors (issue 60, item 3).

Each actor's search calls its evaluator once per simulation round with the leaves of
its own trees; with one evaluator per actor a GPU sees many small batches, one after
another. An :class:`InferenceService` owns the one evaluator (AlphaZero's
:class:`~polyzero.nets.inference.Evaluator`, :class:`~polyzero.nets.muzero.MuZeroInference`,
:class:`~polyzero.nets.ndmz.NDMZInference`) and a request queue; each actor holds a
:class:`ServiceClient` with the evaluator's call interface (``__call__``, and MuZero's
and NDMZ's ``initial`` and ``recurrent``), so a search takes one unchanged. The
service's thread joins the requests waiting for the same entry point into one batch
(up to ``max_batch`` rows), optionally padded up to a fixed bucket size (the fixed
shapes CUDA graphs and compiled programs want), runs one forward and hands each
client its own rows back.

While the service's forward runs (ONNX Runtime and PyTorch release the GIL) the other
actors' threads walk their trees (the Numba kernels are compiled ``nogil``), so on a
CPU the service overlaps tree work with network work; on a GPU it also makes the
batches larger. Where the device is CUDA the batch is gathered into pinned host
memory (the evaluator's copy to the device is then asynchronous) and, behind an
off-by-default switch, run under ``torch.autocast`` in bfloat16 or float16. Those
CUDA parts are not measured yet (docs/cluster.md, "One GPU box").

Batch composition changes a row's float rounding under eager PyTorch (BLAS blocks
by batch size); under ONNX Runtime a row's outputs do not depend on its batch
(tests/test_inference_service.py states both).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Sequence

import numpy as np
import torch

from ..errors import UsageError
from ..validation import check_inference_service

HALF_DTYPES = {"float32": None, "bfloat16": torch.bfloat16, "float16": torch.float16}
ENTRY_POINTS = ("__call__", "initial", "recurrent")
_STOP = object()
POLL_S = 0.1  # how often a waiting client checks that the service's thread still runs


class ServiceClosed(RuntimeError):
    """The service stopped (closed, or its thread died) while a request waited."""


class ServiceError(RuntimeError):
    """The evaluator raised in the service's thread: each client whose rows were in that
    forward gets its own, chained from the evaluator's error (``__cause__``), whose type
    and message it names (one exception object raised in several threads would mix their
    tracebacks)."""


class _Request:
    __slots__ = ("method", "arrays", "rows", "done", "result", "error")

    def __init__(self, method: str, arrays: tuple[np.ndarray, ...]):
        self.method, self.arrays, self.rows = method, arrays, len(arrays[0])
        self.done = threading.Event()
        self.result: tuple[np.ndarray, ...] | None = None
        self.error: BaseException | None = None

    def key(self) -> tuple:
        """Requests join one batch when they call the same entry point on rows of one shape."""
        return (self.method, tuple((a.dtype.str, a.shape[1:]) for a in self.arrays))

    def finish(self, result=None, error=None) -> None:
        self.result, self.error = result, error
        self.done.set()


def bucket_rows(rows: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds `rows` (`buckets` ascending); `rows` itself
    when there are none or it exceeds the largest."""
    for size in buckets:
        if size >= rows:
            return size
    return rows


class InferenceService:
    """Owns `evaluator` (its network on its device) and serves :class:`ServiceClient` s.

    `max_batch`: the most rows one forward takes (0: every waiting request of one entry
    point at once; a single larger request still runs whole). `buckets`: ascending row
    counts a batch is padded up to (repeating its last row, a valid input, whose
    outputs are dropped). `wait_ms`: how long the service waits, after the first
    request of a batch, for the other clients' (0: it takes what is queued; on a CPU
    this keeps the actors' tree work overlapping with the network, on a GPU a few ms
    make the batches larger). `dtype`: ``float32``, or on CUDA ``bfloat16`` /
    ``float16`` under autocast. `timeout_s`: how long a client waits for its rows
    before it gives up (a dead service must not hang an actor).
    """

    def __init__(
        self,
        evaluator,
        max_batch: int = 0,
        buckets: Sequence[int] = (),
        wait_ms: float = 0.0,
        dtype: str = "float32",
        timeout_s: float = 600.0,
    ):
        self.evaluator = evaluator
        self.device = torch.device(getattr(evaluator, "device", "cpu"))
        check_inference_service(max_batch, buckets, wait_ms, dtype)
        if dtype != "float32" and self.device.type != "cuda":
            raise UsageError(f"the inference service runs {dtype} on a CUDA device only; this one is {self.device}")
        self.max_batch, self.buckets, self.wait_s = max_batch, tuple(buckets), wait_ms / 1000
        self.half = HALF_DTYPES[dtype]
        self.timeout_s = timeout_s
        self.pinned = self.device.type == "cuda"
        self._buffers: dict[tuple, list[np.ndarray]] = {}
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()  # one forward or weight load at a time
        self._active = 0  # clients in a search (ServiceClient.idle says when one is not)
        self._count_lock = threading.Lock()
        self._closed = False
        self.stats = {"forwards": 0, "requests": 0, "rows": 0, "padded_rows": 0}
        self._thread = threading.Thread(target=self._serve, name="polyzero-inference", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ clients
    def client(self) -> ServiceClient:
        if self._closed:
            raise ServiceClosed("the inference service is closed")
        self._count_active(+1)
        return ServiceClient(self)

    def _count_active(self, change: int) -> None:
        """Clients that may send a request soon: the ones a batch waits for (wait_ms)."""
        with self._count_lock:
            self._active += change

    def call(self, method: str, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        """`evaluator.method(*arrays)` through the service (from any thread)."""
        if self._closed or not self._thread.is_alive():
            raise ServiceClosed("the inference service is closed")
        request = _Request(method, tuple(np.ascontiguousarray(a) for a in arrays))
        self._queue.put(request)
        deadline = time.monotonic() + self.timeout_s
        while not request.done.wait(POLL_S):
            # closed between the check above and the put: its thread has drained the queue
            if not self._thread.is_alive() and not request.done.is_set():
                raise ServiceClosed("the inference service closed before this request ran")
            if time.monotonic() > deadline:
                raise ServiceClosed(f"the inference service gave no answer in {self.timeout_s:g} s")
        error = request.error
        if isinstance(error, ServiceClosed):  # made for this request alone
            raise error
        if error is not None:
            raise ServiceError(f"the inference service's {method} failed: {type(error).__name__}: {error}") from error
        return request.result  # type: ignore[return-value]

    def load_state_dict(self, state: dict) -> None:
        """New weights, between two forwards."""
        with self._lock:
            self.evaluator.load_state_dict(state)

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the thread; requests still queued fail with ServiceClosed."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout_s)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ the thread
    def _serve(self) -> None:
        try:
            while True:
                requests, stop = self._gather()
                if requests:
                    self._run(requests)
                if stop:
                    break
        finally:
            self._fail_queued()

    def _gather(self) -> tuple[list[_Request], bool]:
        """The first request (blocking), then every one queued, waiting up to wait_s for
        the other clients while there are fewer requests than clients."""
        first = self._queue.get()
        if first is _STOP:
            return [], True
        requests, rows = [first], first.rows
        deadline = time.perf_counter() + self.wait_s
        while not self.max_batch or rows < self.max_batch:
            remaining = deadline - time.perf_counter()
            try:
                if remaining > 0 and len(requests) < self._active:
                    item = self._queue.get(timeout=remaining)
                else:
                    item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return requests, True
            requests.append(item)
            rows += item.rows
        return requests, False

    def _run(self, requests: list[_Request]) -> None:
        groups: dict[tuple, list[_Request]] = {}
        for r in requests:
            groups.setdefault(r.key(), []).append(r)
        for key, group in groups.items():
            for chunk in self._chunks(group):
                try:
                    self._forward(key, chunk)
                except Exception as error:  # noqa: BLE001 -- each caller raises a ServiceError from it
                    for r in chunk:
                        r.finish(error=error)

    def _chunks(self, group: list[_Request]):
        """Consecutive requests of at most max_batch rows together (one larger runs alone)."""
        chunk: list[_Request] = []
        rows = 0
        for r in group:
            if chunk and self.max_batch and rows + r.rows > self.max_batch:
                yield chunk
                chunk, rows = [], 0
            chunk.append(r)
            rows += r.rows
        if chunk:
            yield chunk

    def _forward(self, key: tuple, chunk: list[_Request]) -> None:
        rows = sum(r.rows for r in chunk)
        padded = bucket_rows(rows, self.buckets)
        if len(chunk) == 1 and padded == rows and not self.pinned:
            inputs = list(chunk[0].arrays)
        else:
            inputs = self._join(key, chunk, rows, padded)
        with self._lock, self._precision():
            outputs = getattr(self.evaluator, chunk[0].method)(*inputs)
        self.stats["forwards"] += 1
        self.stats["requests"] += len(chunk)
        self.stats["rows"] += rows
        self.stats["padded_rows"] += padded - rows
        start = 0
        for r in chunk:
            r.finish(result=tuple(o[start : start + r.rows] for o in outputs))
            start += r.rows

    def _join(self, key: tuple, chunk: list[_Request], rows: int, padded: int) -> list[np.ndarray]:
        """The requests' inputs stacked (and padded with the last row) into one batch:
        into pinned host buffers on CUDA, reused from batch to batch."""
        inputs = []
        for i in range(len(chunk[0].arrays)):
            parts = [r.arrays[i] for r in chunk]
            out = self._buffer(key, i, padded, parts[0])
            np.concatenate(parts, out=out[:rows])
            if padded > rows:
                out[rows:] = parts[-1][-1]
            inputs.append(out)
        return inputs

    def _buffer(self, key: tuple, index: int, rows: int, like: np.ndarray) -> np.ndarray:
        if not self.pinned:
            return np.empty((rows, *like.shape[1:]), like.dtype)
        buffers = self._buffers.setdefault(key, [])
        if len(buffers) <= index:
            buffers.append(np.empty((0, *like.shape[1:]), like.dtype))
        if len(buffers[index]) < rows:  # grow to the next power of two, pinned
            capacity = 1 << max(rows - 1, 1).bit_length()
            host = torch.empty((capacity, *like.shape[1:]), dtype=torch.from_numpy(like[:0]).dtype, pin_memory=True)
            buffers[index] = host.numpy()
        return buffers[index][:rows]

    def _precision(self):
        if self.half is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.half)

    def _fail_queued(self) -> None:
        self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not _STOP:
                item.finish(error=ServiceClosed("the inference service closed before this request ran"))


class EntryPoints:
    """The evaluator's call interface (:data:`ENTRY_POINTS`), each call handed to
    `_call(method, arrays)`: what a client of a service in this process
    (:class:`ServiceClient`) and one over Ray (``polyzero.train.ray_inference``) share.
    The fused MuZero search (a program run inside the tree kernel) is off through one:
    every network call goes to the service."""

    program = None  # polyzero.search.fused: no program, so the search calls `recurrent`
    fuse = "auto"

    def _call(self, method: str, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        raise NotImplementedError

    def __call__(self, obs: np.ndarray):
        return self._call("__call__", (obs,))

    def initial(self, obs: np.ndarray):
        return self._call("initial", (obs,))

    def recurrent(self, hidden: np.ndarray, action: np.ndarray):
        return self._call("recurrent", (hidden, action))


class ServiceClient(EntryPoints):
    """What an actor's search calls instead of its own evaluator: the same entry points,
    each a request to the shared service."""

    def __init__(self, service: InferenceService):
        self.service = service
        self._active = True

    def _call(self, method: str, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        return self.service.call(method, arrays)

    def load_state_dict(self, state: dict) -> None:
        self.service.load_state_dict(state)

    def idle(self) -> None:
        """This client sends nothing until `active`: batches stop waiting for it (an actor
        whose move is done while the others still search)."""
        if self._active:
            self._active = False
            self.service._count_active(-1)

    def active(self) -> None:
        if not self._active:
            self._active = True
            self.service._count_active(+1)

    close = idle

    def __getattr__(self, name: str):
        # the evaluator's other attributes (net, device, layout, cache) read through
        if name == "service":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.service.evaluator, name)
