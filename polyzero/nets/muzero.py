"""MuZero's model: representation h, dynamics g and prediction f (MuZero paper, Fig. 1, Eq. 1).

    s^0 = h(o_t),   r^k, s^k = g(s^(k-1), a^k),   p^k, v^k = f(s^k)

Two shapes of model, as the games need:
* ``resnet`` for games whose observations are planes (C, H, W): hidden
  states are ``channels`` planes of the board's size; the action enters g as
  one extra plane (a 1 on the action's cell when the actions map onto the
  cells, else a learned plane per action) stacked with the hidden state
  (Appendix E: "actions are encoded spatially in planes").
* ``mlp`` for flat observations: hidden states are vectors of
  ``hidden_size`` and the action enters g as a one-hot vector.

Hidden states are scaled to [0, 1] per sample after h and after every g,
(s - min s) / (max s - min s + eps) (Appendix G), unless switched off.

Values and rewards are scalars for board games (tanh value, no reward head:
board games have no intermediate rewards and the reward loss is omitted,
Appendix G; with ``terminal_reward`` a tanh reward head for the final move's
outcome, as the published pseudocode keeps), and categorical over -S..S with
the h transform for single-agent environments (Appendix F; ``support`` > 0).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..errors import UsageError
from ..search.fused import FUSED_MAX_BATCH
from .alphazero import NetSpec
from .compiled import CompiledCall
from .fused import ProgramCall, fusable, muzero_programs
from .support import support_to_scalar
from .towers import MLPTower, ResidualBlock
from .value_prefix import ValuePrefixHead, ValuePrefixStep, pack_root

_EPS = 1e-5


@dataclass(frozen=True)
class MuZeroSpec:
    """The towers' sizes (`net`, as AlphaZero's) and MuZero's own settings."""

    net: NetSpec = NetSpec()
    hidden_size: int = 64  # mlp: size of the hidden state
    support: int = 0  # 0: scalar values, no reward head; S > 0: categorical on -S..S
    scale_hidden: bool = True
    downsample: bool = False  # resnet: Appendix F's stack, the board resolution / 16 (96 -> 6)
    zero_init_heads: bool = False  # the value and reward heads' last layers start at 0
    unroll_norm: str = "batch"  # resnet: "layer" normalises g and f's heads at k >= 1 per sample
    consistency: bool = False  # SimSiam projector and predictor for EfficientZero's consistency loss
    terminal_reward: bool = False  # scalar values: a tanh reward head as well (the pseudocode's board games)
    dynamics_blocks: int = -1  # g's residual blocks (resnet) or hidden layers (mlp); -1: as h's
    # EfficientZero's value prefix (nets/value_prefix.py): an LSTM reward head reset every
    # H steps predicts the discounted reward sum since the run's start; 0: per-step rewards.
    value_prefix_horizon: int = 0
    prefix_discount: float = 1.0  # gamma of the value prefix's sum


class DownsampleStack(nn.Module):
    """MuZero Appendix F, for large frames: conv stride 2 (channels / 2), 2 residual
    blocks, conv stride 2 (channels), 3 residual blocks, average pooling stride 2,
    3 residual blocks, average pooling stride 2 -- 96 x 96 becomes 6 x 6 (the paper
    uses 128 and 256 planes)."""

    def __init__(self, in_channels: int, channels: int):
        super().__init__()
        half = max(channels // 2, 1)
        self.layers = nn.Sequential(
            nn.Conv2d(in_channels, half, 3, stride=2, padding=1),
            nn.ReLU(),
            *(ResidualBlock(half) for _ in range(2)),
            nn.Conv2d(half, channels, 3, stride=2, padding=1),
            nn.ReLU(),
            *(ResidualBlock(channels) for _ in range(3)),
            nn.AvgPool2d(3, stride=2, padding=1),
            *(ResidualBlock(channels) for _ in range(3)),
            nn.AvgPool2d(3, stride=2, padding=1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def scale_hidden_state(s: torch.Tensor) -> torch.Tensor:
    """(s - min s) / (max s - min s + eps), per sample over all its units (Appendix G)."""
    flat = s.flatten(1)
    lo = flat.min(dim=1, keepdim=True).values
    hi = flat.max(dim=1, keepdim=True).values
    return ((flat - lo) / (hi - lo + _EPS)).view_as(s)


class MuZeroNet(nn.Module):
    def __init__(
        self, obs_shape: tuple[int, ...], num_actions: int, spec: MuZeroSpec, action_planes: np.ndarray | None = None
    ):
        """`action_planes` [num_actions, H * W]: the plane each action gives the resnet
        dynamics (`polyzero.games.symmetry.action_planes`); None: a one at the action's
        flat cell index, or a learned plane when there are more actions than cells."""
        super().__init__()
        self.obs_shape = tuple(obs_shape)
        self.num_actions = num_actions
        self.spec = spec
        out = 2 * spec.support + 1 if spec.support else 1
        net = spec.net
        if net.kind == "resnet":
            prefix_features, prefix_in = self._resnet_modules(obs_shape, num_actions, out, action_planes)
        elif net.kind == "mlp":
            prefix_features, prefix_in = self._mlp_modules(obs_shape, num_actions, out)
        else:
            raise ValueError(f"net.kind must be 'resnet' or 'mlp', not {net.kind!r}")
        # the LSTM has net.value_hidden units (EfficientZero's lstm_hidden_size)
        self.prefix_head = (
            ValuePrefixHead(prefix_features, prefix_in, net.value_hidden, out) if spec.value_prefix_horizon else None
        )
        if net.kind == "resnet" and spec.unroll_norm == "layer":
            self._per_sample_unroll_norms()
        self._consistency_and_head_init(spec)

    def _resnet_modules(
        self, obs_shape: tuple[int, ...], num_actions: int, out: int, action_planes: np.ndarray | None
    ) -> tuple[nn.Module, int]:
        """h, g and f's heads over planes (net.kind 'resnet'); the value prefix head's
        features and their size."""
        net = self.spec.net
        if len(obs_shape) != 3:
            raise ValueError(f"net.kind 'resnet' needs planes (C, H, W); this game's observation is {obs_shape}")
        c, hgt, wid = obs_shape
        ch = net.channels
        if self.spec.downsample:
            stack = DownsampleStack(c, ch)
            with torch.no_grad():
                _, _, hgt, wid = stack(torch.zeros(1, c, hgt, wid)).shape
            self.representation = nn.Sequential(stack, *(ResidualBlock(ch) for _ in range(net.blocks)))
        else:
            self.representation = net.tower(c, hgt * wid)
        self.hidden_shape = (ch, hgt, wid)
        self.dynamics_tower = dataclasses.replace(net, blocks=self._dynamics_size(net.blocks)).tower(ch + 1, hgt * wid)
        cells = hgt * wid
        learned = action_planes is None and num_actions > cells
        self.action_plane = nn.Embedding(num_actions, cells) if learned else None
        # A fixed map, not a parameter: checkpoints stay the same size either way.
        self.register_buffer(
            "action_map",
            None if action_planes is None else torch.as_tensor(action_planes, dtype=torch.float32),
            persistent=False,
        )
        self.policy_head = ConvHead(ch, 2, nn.Linear(2 * cells, num_actions))
        self.value_head = ConvHead(ch, 1, _scalar_tail(cells, net.value_hidden, out))
        self.reward_head = (
            ConvHead(ch, 1, _scalar_tail(cells, net.value_hidden, out), root_norm=False) if self._has_reward else None
        )
        return ConvHead(ch, 1, nn.Identity(), root_norm=False), cells

    def _mlp_modules(self, obs_shape: tuple[int, ...], num_actions: int, out: int) -> tuple[nn.Module, int]:
        """h, g and f's heads over flat observations (net.kind 'mlp'); the value prefix
        head's features and their size."""
        net = self.spec.net
        in_dim = int(np.prod(obs_shape))
        hs = self.spec.hidden_size
        self.hidden_shape = (hs,)
        self.representation = nn.Sequential(MLPTower(in_dim, net.width, net.layers), nn.Linear(net.width, hs))
        tower = MLPTower(hs + num_actions, net.width, self._dynamics_size(net.layers))
        self.dynamics_tower = nn.Sequential(tower, nn.Linear(tower.out_dim, hs))
        self.prediction_trunk = MLPTower(hs, net.width, net.layers)
        self.policy_head = nn.Linear(net.width, num_actions)
        self.value_head = nn.Sequential(
            nn.Linear(net.width, net.value_hidden), nn.ReLU(), nn.Linear(net.value_hidden, out)
        )
        self.reward_head = (
            nn.Sequential(MLPTower(hs, net.width, 1), nn.Linear(net.width, out)) if self._has_reward else None
        )
        return MLPTower(hs, net.width, 1), net.width

    def _per_sample_unroll_norms(self) -> None:
        """Batch norm inside the unroll trains on each depth k's own batch statistics
        but searches with running statistics averaged over k = 1..K, and the depths'
        statistics differ (a review measured eval-vs-train value errors of 0.13-0.22 at
        k = 1-3 against 0.01 at k = 0); a per-sample norm is the same function in both.
        h and f's root norm keep batch norm (one depth)."""
        _per_sample_norms(self.dynamics_tower)
        for head in (
            self.policy_head,
            self.value_head,
            self.reward_head,
            self.prefix_head and self.prefix_head.features,
        ):
            if head is not None:
                head.norm = nn.GroupNorm(1, head.norm.num_features)

    def _consistency_and_head_init(self, spec: MuZeroSpec) -> None:
        """EfficientZero's projection heads (with the consistency loss) and zero-initialised
        value and reward heads."""
        if spec.consistency:
            # SimSiam heads on the flattened state, at the sizes of EfficientZero's network
            # class defaults (256, 256; 64): its released Atari config overrides them with
            # 1024, 1024; 512, and its projector has a third linear layer and batch norm on
            # its output.
            flat = int(np.prod(self.hidden_shape))
            self.projector = nn.Sequential(nn.Linear(flat, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 256))
            self.projection_predictor = nn.Sequential(
                nn.Linear(256, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 256)
            )
        if spec.zero_init_heads:
            # Every value and reward then starts at 0 (a uniform distribution over
            # the symmetric support, or tanh(0)), not at a random offset that n-step
            # bootstraps with gamma^n near 1 carry along for hundreds of steps.
            for head in (self.value_head, self.reward_head, self.prefix_head and self.prefix_head.out):
                if head is not None:
                    nn.init.zeros_(last_layer(head).weight)
                    nn.init.zeros_(last_layer(head).bias)

    def _dynamics_size(self, same: int) -> int:
        return same if self.spec.dynamics_blocks < 0 else self.spec.dynamics_blocks

    # ------------------------------------------------------------ h, g, f
    def represent(self, obs: torch.Tensor) -> torch.Tensor:
        """h: observations [B, *obs_shape] -> hidden states [B, *hidden_shape]."""
        s = self.representation(obs)
        return scale_hidden_state(s) if self.spec.scale_hidden else s

    def dynamics(self, s: torch.Tensor, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """g: (s^(k-1), a^k) -> (s^k, reward output or None for board games)."""
        if self.spec.net.kind == "resnet":
            s2 = self.dynamics_tower(torch.cat([s, self._action_planes(action, s)], dim=1))
        else:
            onehot = torch.nn.functional.one_hot(action.long(), self.num_actions).to(s.dtype)
            s2 = self.dynamics_tower(torch.cat([s, onehot], dim=1))
        s2 = scale_hidden_state(s2) if self.spec.scale_hidden else s2
        if self.reward_head is None:
            return s2, None
        reward = self.reward_head(s2)
        return s2, (reward if self.spec.support else torch.tanh(reward).squeeze(-1))

    def value_prefix(self, s: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None):
        """The value prefix head on g's state s^k and the LSTM state of s^(k-1) (None at a
        run's start): (prefix output, like a reward output; the LSTM state of s^k)."""
        out, state = self.prefix_head(s, state)
        return (out if self.spec.support else out.squeeze(-1)), state

    def predict(self, s: torch.Tensor, root: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """f: s^k -> (policy logits [B, A], value output: tanh scalar [B] or logits [B, 2S+1]);
        `root`: s is h's output (k = 0), not g's (`ConvHead`)."""
        if self.spec.net.kind == "mlp":
            x = self.prediction_trunk(s)
            value, logits = self.value_head(x), self.policy_head(x)
        else:
            value, logits = self.value_head(s, root), self.policy_head(s, root)
        value = torch.tanh(value).squeeze(-1) if not self.spec.support else value
        return logits, value

    def _action_planes(self, action: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
        b, _, hgt, wid = s.shape
        if self.action_map is not None:
            plane = self.action_map.to(s.dtype)[action.long()]
        elif self.action_plane is None:
            plane = torch.zeros(b, hgt * wid, dtype=s.dtype, device=s.device)
            plane[torch.arange(b, device=s.device), action.long()] = 1.0
        else:
            plane = self.action_plane(action.long())
        return plane.view(b, 1, hgt, wid)

    def project(self, s: torch.Tensor, predict: bool) -> torch.Tensor:
        """The consistency loss's view of a hidden state: the projector's output, and
        through the predictor for the online branch (SimSiam)."""
        z = self.projector(s.flatten(1))
        return self.projection_predictor(z) if predict else z

    # ------------------------------------------------------------ scalars
    def value_scalar(self, value_out: torch.Tensor) -> torch.Tensor:
        return support_to_scalar(value_out, self.spec.support) if self.spec.support else value_out

    def reward_scalar(self, reward_out: torch.Tensor | None, batch: int, like: torch.Tensor) -> torch.Tensor:
        if reward_out is None:
            return torch.zeros(batch, dtype=like.dtype, device=like.device)
        return support_to_scalar(reward_out, self.spec.support) if self.spec.support else reward_out

    @property
    def _has_reward(self) -> bool:
        return (bool(self.spec.support) or self.spec.terminal_reward) and not self.spec.value_prefix_horizon

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Initial inference's policy and scalar value (the AlphaZero-shaped view of f(h(o)))."""
        logits, value = self.predict(self.represent(obs), root=True)
        return logits, self.value_scalar(value)


class ConvHead(nn.Module):
    """A head of f: 1x1 convolution, batch norm, ReLU, then `tail` on the flattened planes.

    f reads h's states (k = 0) and g's (k >= 1), whose channels have different
    statistics (h's varied 2-3 times more on MinAtar Breakout). One batch norm's
    running statistics, fed K of g's batches for each of h's, then mis-scale every
    search root in eval mode: the root logits came out 1.1 to 1.6 times the ones
    trained, which a Reanalyze target re-searched at every step compounds. So
    h's states have a batch norm of their own (`root_norm`); the conv and tail are shared.
    """

    def __init__(self, channels: int, planes: int, tail: nn.Module, root_norm: bool = True):
        super().__init__()
        self.conv = nn.Conv2d(channels, planes, 1, bias=False)
        self.norm = nn.BatchNorm2d(planes)
        self.root_norm = nn.BatchNorm2d(planes) if root_norm else None
        self.tail = tail

    def forward(self, s: torch.Tensor, root: bool = False) -> torch.Tensor:
        x = self.conv(s)
        x = self.root_norm(x) if root and self.root_norm is not None else self.norm(x)
        return self.tail(torch.relu(x).flatten(1))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # Checkpoints from before the split: Sequential(conv, bn, relu, flatten, *tail),
        # one batch norm for both kinds of state (the best start for either).
        if prefix + "0.weight" in state_dict:
            for key in [k for k in state_dict if k.startswith(prefix)]:
                index, _, rest = key[len(prefix) :].partition(".")
                value = state_dict.pop(key)
                if index == "0":
                    state_dict[f"{prefix}conv.{rest}"] = value
                elif index == "1":
                    state_dict[f"{prefix}norm.{rest}"] = value
                    if self.root_norm is not None:
                        state_dict[f"{prefix}root_norm.{rest}"] = value.clone()
                else:  # the tail's layers, after conv, bn, relu and flatten
                    inner = f"{int(index) - 4}." if isinstance(self.tail, nn.Sequential) else ""
                    state_dict[f"{prefix}tail.{inner}{rest}"] = value
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def _per_sample_norms(module: nn.Module) -> None:
    """Every BatchNorm2d inside `module` becomes GroupNorm(1, C): each sample's planes
    normalised over (C, H, W), with BatchNorm's per-channel scale and shift."""
    for name, child in module.named_children():
        if isinstance(child, nn.BatchNorm2d):
            setattr(module, name, nn.GroupNorm(1, child.num_features))
        else:
            _per_sample_norms(child)


def last_layer(head: nn.Module) -> nn.Module:
    """A value or reward head's output layer."""
    if isinstance(head, nn.Linear):
        return head
    return (head.tail if isinstance(head, ConvHead) else head)[-1]


def _scalar_tail(cells: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(cells, hidden), nn.ReLU(), nn.Linear(hidden, out))


class _Initial(nn.Module):
    """h then f at the root: (s^0 flattened [M, H], policy logits [M, A], scalar value [M])."""

    def __init__(self, net: MuZeroNet):
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor):
        s = self.net.represent(obs)
        logits, value = self.net.predict(s, root=True)
        row = s.flatten(1)
        if self.net.prefix_head is not None:  # the search's row carries the LSTM state too
            row = pack_root(row, self.net.prefix_head.cell.size)
        return row, logits, self.net.value_scalar(value)


class _Recurrent(nn.Module):
    """g then f: (reward [M], policy logits [M, A], scalar value [M], s^k flattened [M, H])."""

    def __init__(self, net: MuZeroNet):
        super().__init__()
        self.net = net

    def forward(self, hidden: torch.Tensor, action: torch.Tensor):
        s = hidden.view(-1, *self.net.hidden_shape)
        s2, reward = self.net.dynamics(s, action)
        logits, value = self.net.predict(s2)
        r = self.net.reward_scalar(reward, s.shape[0], s2)
        return r, logits, self.net.value_scalar(value), s2.flatten(1)


class MuZeroInference:
    """NumPy in, NumPy out: the initial and recurrent inference the search calls,
    each one compiled entry point (`net.inference`, :mod:`polyzero.nets.compiled`).

    Hidden states travel as flat float32 rows [M, prod(hidden_shape)] (the
    search's node-indexed store is 2-D) and are reshaped here; with a value prefix
    a row also carries the node's LSTM state, prefix and depth (nets/value_prefix.py).
    """

    def __init__(self, net: MuZeroNet, device: torch.device | str = "cpu", inference: str = "auto"):
        self.device = torch.device(device)
        self.net = net.to(self.device).eval()
        # The fused search (net.inference 'fused', or 'auto' where it applies): `program`,
        # the recurrent function as an MLP program, and `fuse`, which LearnedModel takes.
        self.fuse = "always" if inference == "fused" else "auto"
        self.program = None
        self._programs = None
        if inference in ("auto", "fused"):
            why = fusable(self.net) or (None if self.device.type == "cpu" else "the device is not the CPU")
            if inference == "fused" and why:
                raise UsageError(f"net.inference = 'fused' cannot run this network: {why}; use 'auto'")
            if why is None:
                self._load_programs()
        inference = "auto" if inference == "fused" else inference
        self._initial = CompiledCall(_Initial(self.net), (np.float32,), inference, self.device)
        spec = net.spec
        step = (
            ValuePrefixStep(self.net, spec.value_prefix_horizon, spec.prefix_discount)
            if spec.value_prefix_horizon
            else _Recurrent(self.net)
        )
        self._recurrent = CompiledCall(step, (np.float32, np.int64), inference, self.device)

    def _load_programs(self) -> None:
        initial, recurrent = muzero_programs(self.net)
        self.program = recurrent
        self._programs = (ProgramCall(initial), ProgramCall(recurrent))

    def _fused(self, batch: int) -> bool:
        """Whether a batch of this size runs through the programs (as the fused search does)."""
        return self._programs is not None and (self.fuse == "always" or batch <= FUSED_MAX_BATCH)

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state)
        self.net.eval()
        self._initial.refresh()
        self._recurrent.refresh()
        if self._programs is not None:
            self._load_programs()

    def initial(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(hidden [M, H], policy logits [M, A], value [M])."""
        if self._fused(len(obs)):
            return self._programs[0].initial(obs)
        return self._initial(obs)

    def recurrent(self, hidden: np.ndarray, action: np.ndarray):
        """(reward [M], policy logits [M, A], value [M], hidden' [M, H]): the search's recurrent_fn."""
        if self._fused(len(hidden)):
            return self._programs[1].recurrent(hidden, action)
        return self._recurrent(hidden, action)

    def __call__(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(policy logits, value) at the representation: the AlphaZero-shaped evaluator."""
        _, logits, value = self.initial(obs)
        return logits, value
