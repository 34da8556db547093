"""Nondeterministic MuZero's model (NDMZ paper, Section 3.2 and Section 4.2).

Players N = {0, 1, chance, terminal} (the paper's {1, 2, c, d}): identity
index 0 and 1 are the two choice players, 2 the chance player, 3 the
terminal player.

One action set A is shared by every player, laid out as

    [ choice actions 0..C-1 | chance outcomes C..C+O-1 | no-op C+O | end C+O+1 ]

where C is the game's ``num_distinct_actions`` and O its
``max_chance_outcomes`` (Nannon 6-3-6: C = 8, O = 16, |A| = 26). A chance
outcome o of the game is action C + o here. no-op is what a player does when
it is not its turn (the target of the choice policy at a chance state, of the
chance policy at a choice state, and of both at a terminal state); end is the
terminal player's action, ending the game (the action that steps the model
past a terminal state).

    s^0 = h(o_t)
    p^k, c^k, v^k = f(s^k)             choice policy, chance policy, value
    r^k, s^k, i^k = g(s^(k-1), a^k)    reward, next hidden state, identity policy over N

The policies are logits over all of A (the model is not told which part of
A belongs to whom; it learns it). Towers are MLPs of ``layers`` hidden layers
of ``width`` units with SELU activations and LeCun-normal initialisation
(Section 4.2; Klambauer et al. 2017). Hidden states are not scaled (Section
4.2: "We did not scale the hidden states"). Values and rewards are tanh
scalars.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

# N's codes are the search's (polyzero.search.ndmz), which plans over them.
from ..search.ndmz import (  # noqa: F401
    CHANCE_EDGE as CHANCE,  # noqa: F401
    NUM_IDENTITIES,
    PLAYER_0,
    PLAYER_1,
    TERMINAL_EDGE as TERMINAL,  # noqa: F401
)
from .compiled import CompiledCall


@dataclass(frozen=True)
class ActionLayout:
    """Where each player's actions lie in NDMZ's one action set."""

    choice: int  # C: the game's player actions 0..C-1
    chance: int  # O: the game's chance outcomes, at C..C+O-1

    @property
    def noop(self) -> int:
        return self.choice + self.chance

    @property
    def end(self) -> int:
        return self.choice + self.chance + 1

    @property
    def size(self) -> int:
        return self.choice + self.chance + 2

    def chance_action(self, outcome: int) -> int:
        return self.choice + int(outcome)

    @classmethod
    def of(cls, game) -> ActionLayout:
        return cls(game.num_distinct_actions(), max(game.max_chance_outcomes(), 0))


@dataclass(frozen=True)
class NDMZSpec:
    width: int = 256
    layers: int = 2
    hidden_size: int = 128


def selu_mlp(in_dim: int, width: int, layers: int) -> nn.Sequential:
    mods: list[nn.Module] = []
    for i in range(layers):
        mods += [nn.Linear(in_dim if i == 0 else width, width), nn.SELU()]
    return nn.Sequential(*mods)


def lecun_normal_(module: nn.Module) -> None:
    """LeCun normal: N(0, 1/fan_in) weights (truncated at 2 sd), zero biases."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            std = 1.0 / math.sqrt(m.in_features)
            nn.init.trunc_normal_(
                m.weight, 0.0, std / 0.87962566103423978, -2 * std / 0.87962566103423978, 2 * std / 0.87962566103423978
            )
            nn.init.zeros_(m.bias)


class StateActionLinear(torch.autograd.Function):
    """g's first layer, W [s, onehot(a)] + b, whose backward skips the gradient of the
    one-hot action columns (nothing needs it). Forward and the gradients it does compute
    are the operators autograd runs for ``F.linear(torch.cat([s, onehot], 1), W, b)``
    (addmm; grad_out.t() @ x for W, grad_out summed by autograd for b), so the numbers
    are the same bit for bit (tests/test_ndmz_dynamics_grad.py). Why: W's columns for
    actions that never occur (on Nannon 6-3-6 chance outcomes 6-15 and no-op) decay under the L2 term to
    subnormal floats, and grad_out @ W through them took 18.2 ms instead of 0.40 at the
    preset's shapes (x86 multiplies subnormals in microcode;
    benchmarks/results/ndmz_subnormal_onset.md): about half of the learner's time from
    learning step 100 of the benchmark on (docs/ndmz.md, "Training speed")."""

    @staticmethod
    def forward(ctx, s, onehot, weight, bias):
        x = torch.cat([s, onehot], dim=1)
        ctx.save_for_backward(x, weight)
        ctx.state_size = s.shape[1]
        return torch.addmm(bias, x, weight.t())

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need = ctx.needs_input_grad
        grad_s = grad.mm(weight[:, : ctx.state_size]) if need[0] else None
        grad_weight = grad.t().mm(x) if need[2] else None  # addmm's: its weight.t() is column-major
        return grad_s, None, grad_weight, grad if need[3] else None  # autograd sums grad to b's shape


class NDMZNet(nn.Module):
    def __init__(self, obs_dim: int, layout: ActionLayout, spec: NDMZSpec = NDMZSpec()):
        super().__init__()
        self.layout = layout
        self.spec = spec
        self.num_actions = layout.size
        hs, w = spec.hidden_size, spec.width
        self.hidden_shape = (hs,)
        self.representation = nn.Sequential(selu_mlp(obs_dim, w, spec.layers), nn.Linear(w, hs))
        self.dynamics_trunk = selu_mlp(hs + layout.size, w, spec.layers)
        self._dynamics_rest = tuple(self.dynamics_trunk)[1:]  # after its first Linear (StateActionLinear)
        self.next_state = nn.Linear(w, hs)
        self.identity_head = nn.Linear(w, NUM_IDENTITIES)
        self.reward_head = nn.Linear(w, 1)
        self.prediction_trunk = selu_mlp(hs, w, spec.layers)
        self.choice_head = nn.Linear(w, layout.size)
        self.chance_head = nn.Linear(w, layout.size)
        self.value_head = nn.Linear(w, 1)
        lecun_normal_(self)

    def represent(self, obs: torch.Tensor) -> torch.Tensor:
        """h: observations [B, ...] -> s^0 [B, H]."""
        return self.representation(obs.flatten(1))

    def dynamics(self, s: torch.Tensor, action: torch.Tensor):
        """g: (s^(k-1), a^k) -> (reward [B], s^k [B, H], identity logits [B, 4])."""
        onehot = nn.functional.one_hot(action.long(), self.num_actions).to(s.dtype)
        if self.training and torch.is_grad_enabled() and s.requires_grad:  # the learner's unroll
            first = self.dynamics_trunk[0]
            x = StateActionLinear.apply(s, onehot, first.weight, first.bias)
            for module in self._dynamics_rest:
                x = module(x)
        else:
            x = self.dynamics_trunk(torch.cat([s, onehot], dim=1))
        return torch.tanh(self.reward_head(x)).squeeze(-1), self.next_state(x), self.identity_head(x)

    def predict(self, s: torch.Tensor):
        """f: s^k -> (choice logits [B, |A|], chance logits [B, |A|], value [B])."""
        x = self.prediction_trunk(s)
        return self.choice_head(x), self.chance_head(x), torch.tanh(self.value_head(x)).squeeze(-1)

    def forward(self, obs: torch.Tensor):
        """The choice policy's logits over the game's actions and the value at f(h(o))."""
        p, _, v = self.predict(self.represent(obs))
        return p[:, : self.layout.choice], v


class _Initial(nn.Module):
    def __init__(self, net: NDMZNet):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor):
        s = self.net.represent(obs)
        return (s, *self.net.predict(s))


class _Recurrent(nn.Module):
    def __init__(self, net: NDMZNet):
        super().__init__()
        self.net = net

    def forward(self, hidden: torch.Tensor, action: torch.Tensor):
        r, s2, ident = self.net.dynamics(hidden, action)
        p, c, v = self.net.predict(s2)
        return s2, ident, p, c, v, r


class NDMZInference:
    """NumPy in, NumPy out: the calls the NDMZ search makes, each one compiled entry
    point (`net.inference`, :mod:`polyzero.nets.compiled`)."""

    def __init__(self, net: NDMZNet, device: torch.device | str = "cpu", inference: str = "auto"):
        self.device = torch.device(device)
        self.net = net.to(self.device).eval()
        self.layout = net.layout
        self._initial = CompiledCall(_Initial(self.net), (np.float32,), inference, self.device)
        self._recurrent = CompiledCall(_Recurrent(self.net), (np.float32, np.int64), inference, self.device)

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state)
        self.net.eval()
        self._initial.refresh()
        self._recurrent.refresh()

    def initial(self, obs: np.ndarray):
        """(s^0 [M, H], choice logits [M, |A|], chance logits [M, |A|], value [M])."""
        return self._initial(obs)

    def recurrent(self, hidden: np.ndarray, action: np.ndarray):
        """g then f: (s^k, identity logits [M, 4], choice logits, chance logits, value, reward)."""
        return self._recurrent(hidden, action)

    def __call__(self, obs: np.ndarray):
        _, p, _, v = self.initial(obs)
        return p[:, : self.layout.choice], v
