"""One network entry point (f(h(o)), g then f, ...) called NumPy in, NumPy out through
the fastest exact backend this machine offers (`net.inference`).

Backends (measured by ``benchmarks/inference_paths.py``, docs/benchmarks.md):

* ``eager``: PyTorch eager under ``inference_mode``; reads the live weights.
* ``script``: TorchScript trace, frozen (weights become constants, conv + batch
  norm folded) and ``optimize_for_inference`` (oneDNN layouts for convolutions).
* ``onednn`` (measured, not offered by the config: its fuser fails on every
  network here with torch 2.13): ``script`` with the oneDNN Graph fuser on.
* ``inductor``: ``torch.compile`` (inductor, dynamic batch); reads the live
  weights, so a weight refresh needs no recompile, but compiling takes a minute.
* ``onnx``: the entry point exported to ONNX once and run by ONNX Runtime's CPU
  kernels (MLAS): one ``run`` call per evaluation. Optional dependency
  (``pip install 'polyzero[fast]'``).
* ``auto``: ``onnx`` on the CPU when ONNX Runtime is installed, else ``eager``.
* ``fused`` (MuZero's MLP networks only, :mod:`polyzero.nets.fused`): the network as
  a compiled program the search runs inside its own loop (:mod:`polyzero.search.fused`);
  ``auto`` picks it for those networks at the batches where it was measured faster.

``script``, ``onednn`` and ``onnx`` bake the weights in: after ``refresh()`` (the
evaluator's ``load_state_dict``) they are rebuilt at the next call. ONNX Runtime's
rebuild is a new session over the same exported graph with the new weights written
into it (no re-export); ``script`` re-traces. A module that names its
``constant_buffers`` (the Winograd tower, :mod:`polyzero.nets.winograd`) is exported
with its other weights as inputs bound to their memory: one session, no rebuild.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from ..errors import UsageError
from . import INFERENCE_PATHS

# oneDNN Graph is measured (benchmarks/inference_paths.py) but not offered: with torch
# 2.13 its fuser fails on every network here at the first call (RuntimeError in
# vector::_M_range_check).
_PATHS = INFERENCE_PATHS + ("onednn",)
_CPU_ONLY = ("script", "onednn", "onnx")


def onnxruntime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def resolve_path(name: str, device: torch.device) -> str:
    """The backend `name` ('auto' or one of INFERENCE_PATHS) means on `device`."""
    if name not in _PATHS:
        raise UsageError(f"net.inference must be one of {', '.join(INFERENCE_PATHS)}, not {name!r}")
    if name == "auto":
        return "onnx" if device.type == "cpu" and onnxruntime_available() else "eager"
    if name == "fused":
        raise UsageError(
            "net.inference = 'fused' runs MuZero's MLP networks only (net.kind = 'mlp', on the CPU); "
            "use 'auto', which picks it where it applies"
        )
    if name in _CPU_ONLY and device.type != "cpu":
        raise UsageError(
            f"net.inference = {name!r} runs on the CPU only; this run's device is {device.type} (use 'auto' or 'eager')"
        )
    if name == "onnx" and not onnxruntime_available():
        raise UsageError(
            "net.inference = 'onnx' needs onnxruntime: pip install 'polyzero[fast]' "
            "(or use 'auto', which falls back to eager)"
        )
    return name


class CompiledCall:
    """`module(*tensors) -> tuple of tensors` as a NumPy function through one backend.

    `module` holds the live network (its parameters are the network's own), is in
    eval mode and its inputs all have the batch as their first dimension;
    `dtypes` are the inputs' NumPy dtypes. The backend is built at the first call,
    from that call's inputs.
    """

    def __init__(
        self, module: nn.Module, dtypes: Sequence[type], path: str = "auto", device: torch.device | str = "cpu"
    ):
        self.device = torch.device(device)
        self.module = module.to(self.device).eval()
        self.dtypes = tuple(np.dtype(d) for d in dtypes)
        self.path = resolve_path(path, self.device)
        self._call: Callable | None = None
        self._onnx: _OnnxGraph | None = None
        self.builds = 0  # how many times the backend was (re)built

    def refresh(self) -> None:
        """The module's weights changed: backends that baked them in rebuild at the next call."""
        if self.path in ("script", "onednn", "onnx"):
            self._call = None

    def __call__(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        arrays = tuple(np.ascontiguousarray(a, dtype=d) for a, d in zip(arrays, self.dtypes))
        if self._call is None:
            self._call = self._build(arrays)
            self.builds += 1
        if arrays[0].shape[0] == 0:
            return self._eager(arrays)
        return self._call(arrays)

    # ------------------------------------------------------------ backends
    def _tensors(self, arrays):
        ts = [torch.from_numpy(a) for a in arrays]
        return [t.to(self.device, non_blocking=True) for t in ts] if self.device.type != "cpu" else ts

    def _outputs(self, outs) -> tuple[np.ndarray, ...]:
        return tuple(_numpy(o) for o in outs)

    @torch.inference_mode()
    def _eager(self, arrays):
        return self._outputs(self.module(*self._tensors(arrays)))

    def _build(self, arrays) -> Callable:
        if self.path == "eager":
            return self._eager
        if self.path == "onnx":
            if self._onnx is None:
                self._onnx = _OnnxGraph(self.module, _example(arrays))
            return self._onnx.session()
        if self.path == "inductor":
            compiled = torch.compile(self.module, dynamic=True)

            @torch.inference_mode()
            def run(arrs):
                return self._outputs(compiled(*self._tensors(arrs)))

            return run
        return self._script(arrays)

    def _script(self, arrays) -> Callable:
        onednn = self.path == "onednn"
        example = [torch.from_numpy(a) for a in _example(arrays)]
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(self.module, example, check_trace=False)
            frozen = torch.jit.optimize_for_inference(torch.jit.freeze(traced.eval()))

        @torch.inference_mode()
        def run(arrs):
            # The oneDNN Graph fuser is one process-wide switch, read when a graph runs.
            torch.jit.enable_onednn_fusion(onednn)
            return self._outputs(frozen(*[torch.from_numpy(a) for a in arrs]))

        for _ in range(3):  # the profiling executor optimises the graph over its first calls
            run(arrays)
        return run


def _numpy(tensor: torch.Tensor) -> np.ndarray:
    """A result as NumPy; half-precision results (autocast, the inference service's
    dtype switch on CUDA) come back as float32, which NumPy and the search take."""
    tensor = tensor.detach()
    if tensor.dtype in (torch.bfloat16, torch.float16):
        tensor = tensor.float()
    return tensor.cpu().numpy()


def _example(arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Trace and export on at least two rows, so that nothing specialises to a batch of one."""
    if arrays[0].shape[0] >= 2:
        return arrays
    return tuple(np.concatenate([a, a]) if a.shape[0] else np.zeros((2, *a.shape[1:]), a.dtype) for a in arrays)


class _OnnxGraph:
    """The module exported to ONNX once (batch dimension dynamic); weights travel by name.

    Exported without constant folding, without merging equal initializers and with
    batch norm left as it is (ONNX Runtime folds it into the convolutions itself
    when it builds a session), so every weight is an initializer named as in the
    module's state: a refresh writes the current weights into the graph and builds
    a new session over it.
    """

    def __init__(self, module: nn.Module, example: tuple[np.ndarray, ...]):
        import onnxruntime as ort

        self.ort = ort
        inputs = [f"in{i}" for i in range(len(example))]
        args = tuple(torch.from_numpy(a) for a in example)
        with torch.no_grad():
            n_out = len(module(*args))
        self.outputs = [f"out{i}" for i in range(n_out)]
        self.inputs = inputs
        buf = io.BytesIO()
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                args,
                buf,
                dynamo=False,
                input_names=inputs,
                output_names=self.outputs,
                do_constant_folding=False,
                training=torch.onnx.TrainingMode.PRESERVE,
                keep_initializers_as_inputs=True,  # else equal weights are merged
                dynamic_axes={n: {0: "batch"} for n in inputs + self.outputs},
            )
        import onnx

        graph = onnx.load_from_string(buf.getvalue())
        state = _state(module)
        constants = getattr(module, "constant_buffers", None)
        # A module that names its constant buffers (polyzero.nets.winograd: the weights
        # it uses are transformed already, so there is nothing left for ONNX Runtime to
        # fold) takes every other weight as a graph input bound to the weight's own
        # memory: a refresh then needs no new session.
        self.live = constants is not None
        fed = {n for n in state if n not in constants} if self.live else set()
        if fed:  # (extend copies the messages: the graph's own are read back below)
            kept = [init for init in graph.graph.initializer if init.name not in fed]
            del graph.graph.initializer[:]
            graph.graph.initializer.extend(kept)
        # Weights as graph inputs could be fed per call, which stops ONNX Runtime from
        # folding them: they are initializers only (but the live ones).
        names = {init.name for init in graph.graph.initializer}
        real_inputs = [i for i in graph.graph.input if i.name not in names]
        del graph.graph.input[:]
        graph.graph.input.extend(real_inputs)
        self.graph = graph
        self.fed = {i.name: state[i.name] for i in real_inputs if i.name in fed}
        # The initializers a refresh rewrites (ONNX Runtime folds and fuses initializers
        # before it applies SessionOptions.add_initializer's overrides, so the graph's
        # own copies are rewritten).
        self.weights = [(init, state[init.name]) for init in graph.graph.initializer if init.name in state]
        self.sessions = 0  # ONNX Runtime sessions built
        self._live_call: Callable | None = None

    def session(self) -> Callable:
        """A session over the exported graph with the module's current weights (live
        weights: the one session, which reads them where they are)."""
        if self._live_call is not None:
            return self._live_call
        ort = self.ort
        for init, tensor in self.weights:
            init.raw_data = tensor.detach().cpu().numpy().astype(_NUMPY_OF_ONNX[init.data_type], copy=False).tobytes()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = torch.get_num_threads()
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Idle threads sleep instead of spinning: the cores are shared with the tree kernels.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        sess = ort.InferenceSession(self.graph.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        self.sessions += 1
        run, outputs, inputs = sess.run, self.outputs, self.inputs
        if self.live:
            # OrtValues over the weights' own (CPU, float32, contiguous) memory: no copy,
            # and a load_state_dict, which copies in place, is seen at the next call.
            arrays = {n: t.detach().numpy() for n, t in self.fed.items()}
            if any(not a.flags.c_contiguous or a.dtype != np.float32 for a in arrays.values()):
                raise ValueError("live weights must be contiguous float32 CPU tensors")
            values = {n: ort.OrtValue.ortvalue_from_numpy(a) for n, a in arrays.items()}
            run_values, from_numpy = sess.run_with_ort_values, ort.OrtValue.ortvalue_from_numpy

            def live(arrs):
                # One row runs as two: MLAS multiplies a single row by a weight that is
                # not a constant along another path (another summation order), and the
                # network-output cache needs a row's outputs not to depend on its batch.
                one = arrs[0].shape[0] == 1
                feed = dict(values)
                for name, a in zip(inputs, arrs):
                    feed[name] = from_numpy(np.concatenate([a, a]) if one else a)
                outs = run_values(outputs, feed)
                return tuple(v.numpy()[:1] if one else v.numpy() for v in outs)

            live.keep = arrays  # the memory the OrtValues read
            self._live_call = live
            return live

        def call(arrays):
            return tuple(run(outputs, dict(zip(inputs, arrays))))

        return call


def _state(module: nn.Module) -> dict[str, torch.Tensor]:
    state: dict[str, torch.Tensor] = dict(module.named_parameters())
    state.update(module.named_buffers())
    return state


_NUMPY_OF_ONNX = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64}
