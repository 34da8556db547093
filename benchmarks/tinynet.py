"""The anchor harness's tiny MuZero-style MLP, reproduced for polyzero's benchmarks.

Same shapes and the same deterministic NumPy weights (seed 0) as the anchor
harness's ``netdef.py`` (copied here because the harness is not part of the
repository), so polyzero's trees and mctx's trees are built from the same
network:

  representation: obs[84]            -> 128 -> 128 -> 64 (tanh)
  dynamics:       [h(64), onehot(a)] -> 128 -> 128 -> 64 (tanh) + reward (1)
  prediction:     h[64]              -> 128 -> 128 -> logits (7) + value (1, tanh)

``TinyMuZeroNet`` is the PyTorch module (eager, lean); ``TinyNetNumpy`` wraps
it NumPy in / NumPy out for :class:`polyzero.search.learned.LearnedModel`.
``check()`` compares every path with the NumPy reference forward below.

Per-call overhead matters more than FLOPs at this size (~59k multiply-adds
per recurrent evaluation), so the recurrent path is written to launch as few
ATen ops as possible:
  * the one-hot half of ``dyn0`` is a 7-row table (weights + bias folded in),
    so ``[h, onehot(a)] @ W + b`` is ``addmm(table[a], h, W_h)``: no one-hot,
    no concat;
  * every layer is one ``addmm`` and an in-place ``relu_``/``tanh_``;
  * outputs come back as zero-copy NumPy views.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from polyzero.search.fused import FUSED_MAX_BATCH

OBS_DIM = 84
HID = 64
WIDTH = 128
A = 7
SEED = 0


# ---------------------------------------------------------------- weights (as netdef.py)
def _dense(rng, fan_in, fan_out, scale=None):
    scale = np.sqrt(2.0 / fan_in) if scale is None else scale
    w = (rng.standard_normal((fan_in, fan_out)) * scale).astype(np.float32)
    b = (rng.standard_normal((fan_out,)) * 0.01).astype(np.float32)
    return w, b


def make_params(seed=SEED):
    """Dict name -> (W[in, out], b[out]) float32 NumPy arrays. Fixed, random
    (bit-identical to the anchor harness's netdef.make_params)."""
    rng = np.random.default_rng(seed)
    p = {}
    p["repr0"] = _dense(rng, OBS_DIM, WIDTH)
    p["repr1"] = _dense(rng, WIDTH, WIDTH)
    p["repr_out"] = _dense(rng, WIDTH, HID, scale=1.0 / np.sqrt(WIDTH))
    p["dyn0"] = _dense(rng, HID + A, WIDTH)
    p["dyn1"] = _dense(rng, WIDTH, WIDTH)
    p["dyn_out"] = _dense(rng, WIDTH, HID + 1, scale=1.0 / np.sqrt(WIDTH))
    p["pred0"] = _dense(rng, HID, WIDTH)
    p["pred1"] = _dense(rng, WIDTH, WIDTH)
    p["pred_out"] = _dense(rng, WIDTH, A + 1, scale=1.0 / np.sqrt(WIDTH))
    return p


def make_obs(batch, seed=1):
    """Random Connect-Four-like binary observations, float32 [batch, 84]."""
    rng = np.random.default_rng(seed)
    return (rng.random((batch, OBS_DIM)) < 0.2).astype(np.float32)


def num_parameters(p=None) -> int:
    p = make_params() if p is None else p
    return int(sum(w.size + b.size for w, b in p.values()))


# ---------------------------------------------------------------- NumPy reference
def _relu(x):
    return np.maximum(x, 0.0)


def np_prediction(p, h):
    x = _relu(h @ p["pred0"][0] + p["pred0"][1])
    x = _relu(x @ p["pred1"][0] + p["pred1"][1])
    out = x @ p["pred_out"][0] + p["pred_out"][1]
    return out[:, :A], np.tanh(out[:, A])


def np_root(p, obs):
    x = _relu(obs @ p["repr0"][0] + p["repr0"][1])
    x = _relu(x @ p["repr1"][0] + p["repr1"][1])
    h = np.tanh(x @ p["repr_out"][0] + p["repr_out"][1])
    logits, value = np_prediction(p, h)
    return logits, value, h


def np_recurrent(p, action, h):
    onehot = np.eye(A, dtype=np.float32)[action]
    x = np.concatenate([h, onehot], axis=-1)
    x = _relu(x @ p["dyn0"][0] + p["dyn0"][1])
    x = _relu(x @ p["dyn1"][0] + p["dyn1"][1])
    out = x @ p["dyn_out"][0] + p["dyn_out"][1]
    h2 = np.tanh(out[:, :HID])
    reward = out[:, HID]
    logits, value = np_prediction(p, h2)
    return reward, logits, value, h2


# ---------------------------------------------------------------- PyTorch
def _t(x):
    return torch.from_numpy(np.ascontiguousarray(x))


class TinyMuZeroNet(nn.Module):
    """The network as a PyTorch module; weights stored [in, out] for addmm."""

    __constants__ = ["hid", "na"]

    def __init__(self, p=None):
        super().__init__()
        self.hid = HID
        self.na = A
        p = make_params() if p is None else p
        for name, (w, b) in p.items():
            self.register_buffer(f"{name}_w", _t(w))
            self.register_buffer(f"{name}_b", _t(b))
        # dyn0 split: [h, onehot(a)] @ W + b == h @ W[:64] + (W[64:] + b)[a]
        w0, b0 = p["dyn0"]
        self.register_buffer("dyn0_wh", _t(w0[:HID]))
        self.register_buffer("dyn0_table", _t(w0[HID:] + b0[None, :]))

    def prediction(self, h):
        x = torch.addmm(self.pred0_b, h, self.pred0_w).relu_()
        x = torch.addmm(self.pred1_b, x, self.pred1_w).relu_()
        out = torch.addmm(self.pred_out_b, x, self.pred_out_w)
        return out[:, : self.na], out[:, self.na].tanh()

    def initial(self, obs):
        x = torch.addmm(self.repr0_b, obs, self.repr0_w).relu_()
        x = torch.addmm(self.repr1_b, x, self.repr1_w).relu_()
        h = torch.addmm(self.repr_out_b, x, self.repr_out_w).tanh_()
        logits, value = self.prediction(h)
        return logits, value, h

    def recurrent(self, h, action):
        """h [M, 64] float32, action [M] int -> reward, logits, value, h'."""
        x = torch.addmm(self.dyn0_table[action], h, self.dyn0_wh).relu_()
        x = torch.addmm(self.dyn1_b, x, self.dyn1_w).relu_()
        out = torch.addmm(self.dyn_out_b, x, self.dyn_out_w)
        h2 = out[:, : self.hid].tanh()
        logits, value = self.prediction(h2)
        return out[:, self.hid], logits, value, h2

    def forward(self, h, action):
        return self.recurrent(h, action)


class EagerReferenceNet(nn.Module):
    """The anchor harness's torch_mlp.py formulation (nn.Linear, one_hot, cat):
    kept only to measure what the lean formulation saves."""

    def __init__(self, p=None):
        super().__init__()
        p = make_params() if p is None else p

        def lin(w, b):
            m = nn.Linear(w.shape[0], w.shape[1])
            with torch.no_grad():
                m.weight.copy_(_t(w.T))
                m.bias.copy_(_t(b))
            return m

        self.layers = nn.ModuleDict({k: lin(*v) for k, v in p.items()})

    def recurrent(self, h, action):
        L = self.layers
        x = torch.cat([h, torch.nn.functional.one_hot(action.long(), A).to(h.dtype)], -1)
        x = torch.relu(L["dyn0"](x))
        x = torch.relu(L["dyn1"](x))
        out = L["dyn_out"](x)
        h2 = torch.tanh(out[:, :HID])
        x = torch.relu(L["pred0"](h2))
        x = torch.relu(L["pred1"](x))
        o = L["pred_out"](x)
        return out[:, HID], o[:, :A], torch.tanh(o[:, A]), h2


class _Initial(nn.Module):
    def __init__(self, net: TinyMuZeroNet):
        super().__init__()
        self.net = net

    def forward(self, obs):
        return self.net.initial(obs)


COMPILED_MODES = ("eager", "script", "onednn", "inductor", "onnx", "auto")


def programs(p=None, kernel=None):
    """(initial, recurrent): the network as the fused search's MLP programs
    (:mod:`polyzero.search.kernels.mlp`, or `kernel`: that module of another revision),
    what ``polyzero.nets.fused`` writes for MuZero's own MLP networks."""
    if kernel is None:
        from polyzero.search.kernels import mlp as kernel
    ACT_RELU, ACT_TANH, ProgramWriter = kernel.ACT_RELU, kernel.ACT_TANH, kernel.ProgramWriter
    p = make_params() if p is None else p

    def predict(w, s, reward):
        x = w.dense(s, *p["pred0"], ACT_RELU)
        x = w.dense(x, *p["pred1"], ACT_RELU)
        out = w.dense(x, *p["pred_out"])
        w.tanh(out, A, 1)
        return w.program(HID, A, (s, 0), (out, 0), (out, A), reward)

    init = ProgramWriter(OBS_DIM)
    x = init.dense(0, *p["repr0"], ACT_RELU)
    x = init.dense(x, *p["repr1"], ACT_RELU)
    h = init.dense(x, *p["repr_out"], ACT_TANH)
    # the action's one-hot as sparse columns; kernels before 2026-11-29's (net_path_ab's
    # --before) have no such argument
    rec = ProgramWriter(HID + A, sparse_from=HID) if hasattr(kernel, "OP_FIELDS") else ProgramWriter(HID + A)
    x = rec.dense(0, *p["dyn0"], ACT_RELU)
    x = rec.dense(x, *p["dyn1"], ACT_RELU)
    w, b = p["dyn_out"]  # the state and reward heads as two layers (a layer reads whole blocks)
    state = rec.dense(x, w[:, :HID], b[:HID], ACT_TANH)
    reward = rec.dense(x, w[:, HID:], b[HID:])
    return predict(init, h, None), predict(rec, state, (reward, 0))


class TinyNetNumpy:
    """NumPy in / NumPy out wrapper, the ``recurrent_fn`` a LearnedModel calls.

    mode: 'lean' (TinyMuZeroNet eager), 'script' (the same, TorchScript),
    'eager_ref' (the anchor's nn.Linear formulation), 'fused' (the MLP programs of the
    fused search, :mod:`polyzero.search.fused`, at every batch), or 'compiled:PATH'
    with PATH one of polyzero's `net.inference` paths (:mod:`polyzero.nets.compiled`:
    the same module through ONNX Runtime, frozen TorchScript, ...), as self-play runs
    it: 'compiled:auto', as MuZero's MLP networks under ``net.inference = auto``, is the
    fused search up to FUSED_MAX_BATCH trees and ONNX Runtime above.

    ``program`` (the recurrent MLP program, or None) and ``fuse`` are what a
    LearnedModel takes to run the search fused.
    """

    def __init__(self, mode: str = "lean", p=None):
        p = make_params() if p is None else p
        self.mode = mode
        self.calls = 0
        self.program, self.fuse, self._programs = None, "auto", None
        if mode in ("fused", "compiled:auto"):
            from polyzero.nets.fused import ProgramCall

            initial, recurrent = programs(p)
            self.program = recurrent
            self.fuse = "always" if mode == "fused" else "auto"
            self._programs = (ProgramCall(initial), ProgramCall(recurrent))
        if mode.startswith("compiled:"):
            from polyzero.nets.compiled import CompiledCall

            path = mode.split(":", 1)[1]
            net = TinyMuZeroNet(p).eval()
            self._init_call = CompiledCall(_Initial(net), (np.float32,), path)
            self._rec_call = CompiledCall(net, (np.float32, np.int64), path)
            return
        if mode == "fused":
            self._init_call = self._rec_call = None
            return
        self._init_call = self._rec_call = None
        if mode == "eager_ref":
            self.net = EagerReferenceNet(p).eval()
            self._rec = self.net.recurrent
        else:
            self.net = TinyMuZeroNet(p).eval()
            if mode == "script":
                self._rec = torch.jit.script(self.net).recurrent
            elif mode == "lean":
                self._rec = self.net.recurrent
            else:
                raise ValueError(f"unknown mode {mode!r}")
        self._init = TinyMuZeroNet(p).eval().initial

    def _fused(self, batch: int) -> bool:
        return self._programs is not None and (self.fuse == "always" or batch <= FUSED_MAX_BATCH)

    def initial(self, obs: np.ndarray):
        if self._fused(len(obs)):
            h, lg, v = self._programs[0].initial(obs)
            return lg, v, h
        if self._init_call is not None:
            return self._init_call(obs)
        with torch.inference_mode():
            lg, v, h = self._init(torch.from_numpy(np.ascontiguousarray(obs, np.float32)))
            return lg.numpy(), v.numpy(), h.numpy()

    def recurrent(self, hidden: np.ndarray, action: np.ndarray):
        """(reward [M], logits [M, A], value [M], hidden' [M, H]), float32 NumPy."""
        self.calls += 1
        if self._fused(len(hidden)):
            return self._programs[1].recurrent(hidden, action)
        if self._rec_call is not None:
            return self._rec_call(hidden, action)
        with torch.inference_mode():
            r, lg, v, h2 = self._rec(torch.from_numpy(hidden), torch.from_numpy(action))
            return r.numpy(), lg.numpy(), v.numpy(), h2.numpy()

    __call__ = recurrent


def check(tol: float = 1e-5, modes: tuple[str, ...] = ()) -> float:
    """Max abs difference of every PyTorch path (and `modes`) against the NumPy
    reference forward (root and recurrent), asserted below `tol`."""
    p = make_params()
    obs = make_obs(16, seed=123)
    a = np.arange(16, dtype=np.int64) % A
    ref_lg, ref_v, ref_h = np_root(p, obs)
    ref = np_recurrent(p, a, ref_h)
    err = 0.0
    for mode in ("lean", "script", "eager_ref", "fused", *modes):
        net = TinyNetNumpy(mode, p)
        lg, v, h = net.initial(obs)
        err = max(err, *(float(np.abs(x - y).max()) for x, y in ((lg, ref_lg), (v, ref_v), (h, ref_h))))
        for act in (a, a.astype(np.int32)):
            out = net.recurrent(ref_h.astype(np.float32), act)
            err = max(err, *(float(np.abs(x - y).max()) for x, y in zip(out, ref)))
    assert err < tol, f"PyTorch tiny net differs from the NumPy reference by {err}"
    return err


# ---------------------------------------------------------------- mctx (JAX): the anchor
def mctx_net():
    """This network in jax.numpy, as mctx calls it: ``(root_fn(params, obs),
    recurrent_fn(params, rng_key, action, embedding))``."""
    import jax
    import jax.numpy as jnp
    import mctx

    def lin(p, name, x):
        w, b = p[name]
        return x @ w + b

    def prediction(p, h):
        x = jax.nn.relu(lin(p, "pred0", h))
        x = jax.nn.relu(lin(p, "pred1", x))
        out = lin(p, "pred_out", x)
        return out[:, :A], jnp.tanh(out[:, A])

    def root_fn(p, obs):
        x = jax.nn.relu(lin(p, "repr0", obs))
        x = jax.nn.relu(lin(p, "repr1", x))
        h = jnp.tanh(lin(p, "repr_out", x))
        logits, value = prediction(p, h)
        return mctx.RootFnOutput(prior_logits=logits, value=value, embedding=h)

    def recurrent_fn(p, rng_key, action, embedding):
        del rng_key
        onehot = jax.nn.one_hot(action, A, dtype=embedding.dtype)
        x = jnp.concatenate([embedding, onehot], axis=-1)
        x = jax.nn.relu(lin(p, "dyn0", x))
        x = jax.nn.relu(lin(p, "dyn1", x))
        out = lin(p, "dyn_out", x)
        h2 = jnp.tanh(out[:, :HID])
        logits, value = prediction(p, h2)
        return mctx.RecurrentFnOutput(
            reward=out[:, HID], discount=-jnp.ones_like(out[:, HID]), prior_logits=logits, value=value
        ), h2

    return root_fn, recurrent_fn


def mctx_policy(num_simulations, gumbel=False, net_loop=False):
    """The anchor: jitted ``mctx.muzero_policy`` (Dirichlet fraction 0, as polyzero's
    evaluation search) or, with `gumbel`, ``mctx.gumbel_muzero_policy`` (mctx's defaults),
    over this network written in jax.numpy; with `net_loop` instead the network work of
    one policy call without a tree: root_fn and num_simulations chained recurrent_fn calls
    inside one jitted fori_loop (the anchor harness's net_loop). Returns ``call(params,
    rng_key, obs, invalid_actions)``, blocking until the result is ready. Needs jax,
    jaxlib and mctx (the ``bench`` extra)."""
    import jax
    import jax.numpy as jnp
    import mctx

    root_fn, recurrent_fn = mctx_net()

    def policy(p, rng_key, obs, invalid_actions):
        root = root_fn(p, obs)
        if gumbel:  # Full Gumbel MuZero, mctx's defaults (m = 16, c_visit 50, c_scale 0.1)
            out = mctx.gumbel_muzero_policy(
                p, rng_key, root, recurrent_fn, num_simulations=num_simulations, invalid_actions=invalid_actions
            )
            tree = out.search_tree
            return out.action, tree.children_visits[:, 0], tree.parents, out.action_weights
        out = mctx.muzero_policy(
            p,
            rng_key,
            root,
            recurrent_fn,
            num_simulations=num_simulations,
            invalid_actions=invalid_actions,
            dirichlet_fraction=0.0,
        )
        tree = out.search_tree
        return out.action, tree.children_visits[:, 0], tree.parents

    def loop(p, rng_key, obs, invalid_actions):
        del rng_key, invalid_actions
        root = root_fn(p, obs)
        b = obs.shape[0]

        def body(i, carry):
            h, acc = carry
            action = (jnp.arange(b, dtype=jnp.int32) + i) % A
            out, h2 = recurrent_fn(p, None, action, h)
            return h2, acc + out.value + out.prior_logits[:, 0] + out.reward

        return jax.lax.fori_loop(0, num_simulations, body, (root.embedding, root.value))

    jitted = jax.jit(loop if net_loop else policy)

    def call(*args):
        return jax.block_until_ready(jitted(*args))

    return call


if __name__ == "__main__":
    print("max abs err vs NumPy reference:", check())
    print("parameters:", num_parameters())
