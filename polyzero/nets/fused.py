"""MuZero's MLP networks written as programs for the fused search (`net.inference = fused`).

:func:`muzero_programs` turns a ``net.kind = 'mlp'`` :class:`~polyzero.nets.muzero.MuZeroNet`
into two :class:`~polyzero.search.kernels.mlp.MLPProgram`: initial inference (h then
f) and recurrent inference (g then f), the same functions as ``_Initial`` and
``_Recurrent`` in :mod:`polyzero.nets.muzero` (ReLU towers, the hidden-state scaling of
Appendix G, tanh or categorical values and rewards of Appendix F). The search then runs
every simulation, network included, in one compiled call (:mod:`polyzero.search.fused`).
Other networks (residual towers, the value prefix's LSTM) have no program: None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from ..search.kernels.mlp import (
    ACT_RELU,
    HIDDEN_OUT,
    LOGITS_OUT,
    NO_OUTPUT,
    REWARD_OUT,
    VALUE_OUT,
    MLPProgram,
    ProgramWriter,
    initial_rows,
    recurrent_rows,
)
from .towers import MLPTower

if TYPE_CHECKING:
    from .muzero import MuZeroNet


def fusable(net: nn.Module) -> str | None:
    """None when `net` has programs, else why not (one line)."""
    spec = getattr(net, "spec", None)
    if spec is None or not hasattr(net, "dynamics_tower"):
        return f"{type(net).__name__} is not a MuZero network"
    if spec.net.kind != "mlp":
        return f"net.kind is {spec.net.kind!r}, not 'mlp'"
    if net.prefix_head is not None:
        return "the value prefix's LSTM (muzero.value_prefix_horizon) has no program"
    return None


def muzero_programs(net: MuZeroNet) -> tuple[MLPProgram, MLPProgram] | None:
    """(initial, recurrent) programs of a MuZero MLP network, with its current weights;
    None when :func:`fusable` says no."""
    if fusable(net) is not None:
        return None
    in_dim = int(np.prod(net.obs_shape))
    hs, na = net.spec.hidden_size, net.num_actions
    with torch.no_grad():
        init = ProgramWriter(in_dim)
        s = _hidden(init, net, net.representation, 0)
        initial = _predict(init, net, s, None)
        rec = ProgramWriter(hs + na, sparse_from=hs)  # the action's one-hot
        s2 = _hidden(rec, net, net.dynamics_tower, 0)
        reward = _head(rec, net, net.reward_head, s2) if net.reward_head is not None else None
        recurrent = _predict(rec, net, s2, reward)
    return initial, recurrent


def _linear(w: ProgramWriter, layer: nn.Linear, src: int, act: int) -> int:
    bias = None if layer.bias is None else layer.bias.detach().cpu().numpy()
    return w.dense(src, layer.weight.detach().cpu().numpy().T, bias, act)


def _layers(w: ProgramWriter, modules, src: int) -> int:
    """An MLPTower (ReLU after every layer) or Linear/ReLU in sequence."""
    for m in modules:
        if isinstance(m, MLPTower):
            for layer in m.layers:
                assert isinstance(layer, nn.Linear)
                src = _linear(w, layer, src, ACT_RELU)
        elif isinstance(m, nn.Linear):
            src = _linear(w, m, src, 0)
        elif isinstance(m, nn.ReLU):
            w.relu_last()
        else:
            raise TypeError(f"no program for {type(m).__name__}")
    return src


def _hidden(w: ProgramWriter, net: MuZeroNet, tower: nn.Module, src: int) -> int:
    """h or g's tower (MLPTower then Linear), scaled to [0, 1] unless switched off."""
    s = _layers(w, tower, src)
    if net.spec.scale_hidden:
        w.minmax(s, 0, net.spec.hidden_size)
    return s


def _head(w: ProgramWriter, net, head: nn.Module, src: int) -> tuple[int, int]:
    """A value or reward head's scalar (block, column): tanh, or the categorical decode
    (support > 0)."""
    out = _layers(w, head, src)
    if net.spec.support:
        return w.support(out, 0, 2 * net.spec.support + 1), 0
    w.tanh(out, 0, 1)
    return out, 0


def _predict(w: ProgramWriter, net, s: int, reward: tuple[int, int] | None) -> MLPProgram:
    """f on the state in block s, and the program's outputs."""
    x = _layers(w, [net.prediction_trunk], s)
    logits = _linear(w, net.policy_head, x, 0)
    value = _head(w, net, net.value_head, x)
    return w.program(net.spec.hidden_size, net.num_actions, (s, 0), (logits, 0), value, reward)


class ProgramCall:
    """A program's inference NumPy in, NumPy out, shaped as ``MuZeroInference``'s:
    initial(obs) -> (hidden, logits, value); recurrent(hidden, action) ->
    (reward, logits, value, hidden')."""

    def __init__(self, program: MLPProgram):
        self.program = program
        self._scratch = program.scratch(1)

    def _rows(self, m: int) -> np.ndarray:
        if len(self._scratch) < m * self.program.width:
            self._scratch = self.program.scratch(m)
        return self._scratch

    def _outputs(self, m: int):
        p, scratch = self.program, self._scratch

        def out(which: int, n: int) -> np.ndarray:  # kernels.mlp.output, in NumPy: no dispatch
            start, width, col = p.outs[which]
            return scratch[start * m : (start + width) * m].reshape(m, width)[:, col : col + n].copy()

        has_reward = p.outs[REWARD_OUT, 0] != NO_OUTPUT
        return (
            out(HIDDEN_OUT, p.hidden),
            out(LOGITS_OUT, p.num_actions),
            out(VALUE_OUT, 1)[:, 0],
            out(REWARD_OUT, 1)[:, 0] if has_reward else np.zeros(m, np.float32),
        )

    def initial(self, obs: np.ndarray):
        obs = np.ascontiguousarray(obs, np.float32).reshape(len(obs), int(np.prod(obs.shape[1:])))
        initial_rows(self.program.ops, self.program.weights, self._rows(len(obs)), obs, len(obs))
        hidden, logits, value, _ = self._outputs(len(obs))
        return hidden, logits, value

    def recurrent(self, hidden: np.ndarray, action: np.ndarray):
        p, m = self.program, len(hidden)
        hidden = np.ascontiguousarray(hidden, np.float32)
        action = np.ascontiguousarray(action, np.int64)
        if m and not (0 <= action.min() and action.max() < p.num_actions):  # the kernel checks no bounds
            raise ValueError(f"actions must lie in [0, {p.num_actions}), got {action.min()}..{action.max()}")
        recurrent_rows(p.ops, p.weights, self._rows(m), hidden, action, m, p.num_actions)
        h2, logits, value, reward = self._outputs(m)
        return reward, logits, value, h2
