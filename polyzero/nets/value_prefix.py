"""EfficientZero's value prefix (Ye et al. 2021, Section 4.2): one definition shared by
the training targets, the network's head and the search's edge rewards.

Instead of each step's reward, the dynamics predicts the value prefix: the discounted
sum of the rewards since the start of the current run of an LSTM over the unrolled
hidden states,

    P_k = sum_{j=b+1}^{k} gamma^(j-b-1) u_{t+j},   b = H * floor((k - 1) / H),

the LSTM's state (and the sum) reset every H steps (`muzero.value_prefix_horizon`,
5 in the paper). Predicting a sum rather than each step's reward spares the model
from saying exactly when a reward arrives, which it can seldom tell from aliased
states. The search takes the edge reward of step k as the prefix's increment,

    r_k = (P_k - P_{k-1}) / gamma^(k-b-1)     (P_{k-1} = 0 at a run's first step),

which is u_{t+k} when the predictions are exact. The search carries each node's LSTM
state (h, c), its prefix and its depth in the node's stored state (`pack_root`,
`ValuePrefixStep`), so the search core stores them like any hidden state.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def value_prefix_targets(rewards: np.ndarray, horizon: int, discount: float) -> np.ndarray:
    """P_1..P_K from the rewards u_{t+1}..u_{t+K} [B, K] (0 past an episode's end,
    so the prefix stays where it was), the sum restarting every `horizon` steps."""
    offset = np.arange(rewards.shape[1]) % horizon  # k - b - 1: step k's place in its run
    discounted = rewards * discount**offset
    out = np.empty_like(discounted)
    running = np.zeros(rewards.shape[0], discounted.dtype)
    for i, o in enumerate(offset):
        running = discounted[:, i] + (running if o else 0.0)
        out[:, i] = running
    return out


class PlainLSTMCell(nn.Module):
    """An LSTM cell written in linear layers and pointwise ops (torch.nn.LSTMCell's
    equations), so that every inference backend (TorchScript, ONNX) takes it as is."""

    def __init__(self, in_dim: int, size: int):
        super().__init__()
        self.size = size
        self.gates = nn.Linear(in_dim + size, 4 * size)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor):
        i, f, g, o = self.gates(torch.cat([x, h], dim=1)).chunk(4, dim=1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c2), c2


class ValuePrefixHead(nn.Module):
    """g's reward head made recurrent: features of s^k -> LSTM -> ReLU -> the prefix's
    output (categorical logits or a scalar), as EfficientZero's dynamics network."""

    def __init__(self, features: nn.Module, in_dim: int, size: int, out: int):
        super().__init__()
        self.features = features
        self.cell = PlainLSTMCell(in_dim, size)
        self.out = nn.Linear(size, out)

    def forward(self, s: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None):
        x = self.features(s)
        if state is None:  # the start of a run: zero LSTM state
            zeros = x.new_zeros(x.shape[0], self.cell.size)
            state = (zeros, zeros)
        h, c = self.cell(x, *state)
        return self.out(torch.relu(h)), (h, c)


def pack_root(hidden: torch.Tensor, lstm_size: int) -> torch.Tensor:
    """A root's stored row: the flat hidden state, then zero (h, c), prefix 0, depth 0."""
    return torch.cat([hidden, hidden.new_zeros(hidden.shape[0], 2 * lstm_size + 2)], dim=1)


class ValuePrefixStep(nn.Module):
    """The search's recurrent step on stored rows [M, H + 2L + 2] (module docstring):
    (edge reward [M], policy logits, value [M], the child's row)."""

    def __init__(self, net, horizon: int, discount: float):
        super().__init__()
        self.net = net
        self.horizon = float(horizon)
        self.discount = float(discount)

    def forward(self, row: torch.Tensor, action: torch.Tensor):
        net, size = self.net, self.net.prefix_head.cell.size
        flat = row.shape[1] - 2 * size - 2
        s = row[:, :flat].reshape(-1, *net.hidden_shape)
        h, c = row[:, flat : flat + size], row[:, flat + size : flat + 2 * size]
        parent_prefix, depth = row[:, -2], row[:, -1] + 1.0
        s2, _ = net.dynamics(s, action)
        out, (h2, c2) = net.value_prefix(s2, (h, c))
        prefix = net.reward_scalar(out, s.shape[0], s2)
        offset = (depth - 1.0) - torch.floor((depth - 1.0) / self.horizon) * self.horizon
        reward = (prefix - parent_prefix) / torch.pow(torch.full_like(offset, self.discount), offset)
        # the last step of a run: its children start a new one from zero state and sum
        keep = (offset < self.horizon - 1.0).to(row.dtype)[:, None]
        logits, value = net.predict(s2)
        child = torch.cat([s2.flatten(1), h2 * keep, c2 * keep, prefix[:, None] * keep, depth[:, None]], dim=1)
        return reward, logits, net.value_scalar(value), child
