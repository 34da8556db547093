"""AlphaZero's policy-value network f_theta(s) = (p, v) (Go-Exploit paper, Section 2)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from .towers import MLPTower, ResidualTower


@dataclass(frozen=True)
class NetSpec:
    """Network size. `kind` "resnet" needs planes (C, H, W); "mlp" takes any shape."""

    kind: str = "resnet"
    channels: int = 64
    blocks: int = 3
    width: int = 128
    layers: int = 2
    value_hidden: int = 64
    block: str = "basic"  # "bottleneck": the Gumbel paper's tower (Appendix F.1)
    bottleneck_channels: int = 0
    broadcast_every: int = 8

    @classmethod
    def from_config(cls, net_cfg, obs_shape: tuple[int, ...]) -> NetSpec:
        """The config's `net` section for these observations: a resnet needs planes
        (C, H, W), so flat observations get the MLP."""
        fields = {f.name: getattr(net_cfg, f.name) for f in dataclasses.fields(cls)}
        if len(obs_shape) != 3:
            fields["kind"] = "mlp"
        return cls(**fields)

    def tower(self, in_channels: int, cells: int, channels: int | None = None) -> ResidualTower:
        """The residual tower these settings describe, over boards of `cells` points."""
        return ResidualTower(
            in_channels,
            channels or self.channels,
            self.blocks,
            block=self.block,
            bottleneck_channels=self.bottleneck_channels,
            broadcast_every=self.broadcast_every,
            cells=cells,
        )


class PolicyValueNet(nn.Module):
    """Trunk plus a policy head (logits over all actions) and a tanh value head."""

    def __init__(self, obs_shape: tuple[int, ...], num_actions: int, spec: NetSpec):
        super().__init__()
        self.obs_shape = tuple(obs_shape)
        self.num_actions = num_actions
        self.spec = spec
        if spec.kind == "resnet":
            if len(obs_shape) != 3:
                raise ValueError(f"net.kind 'resnet' needs planes (C, H, W); this game's observation is {obs_shape}")
            c, h, w = obs_shape
            self.trunk = spec.tower(c, h * w)
            self.policy_head = nn.Sequential(
                nn.Conv2d(spec.channels, 2, 1, bias=False),
                nn.BatchNorm2d(2),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(2 * h * w, num_actions),
            )
            self.value_head = nn.Sequential(
                nn.Conv2d(spec.channels, 1, 1, bias=False),
                nn.BatchNorm2d(1),
                nn.ReLU(),
                nn.Flatten(),
                nn.Linear(h * w, spec.value_hidden),
                nn.ReLU(),
                nn.Linear(spec.value_hidden, 1),
            )
        elif spec.kind == "mlp":
            in_dim = 1
            for d in obs_shape:
                in_dim *= d
            self.trunk = MLPTower(in_dim, spec.width, spec.layers)
            self.policy_head = nn.Linear(spec.width, num_actions)
            self.value_head = nn.Sequential(
                nn.Linear(spec.width, spec.value_hidden), nn.ReLU(), nn.Linear(spec.value_hidden, 1)
            )
        else:
            raise ValueError(f"net.kind must be 'resnet' or 'mlp', not {spec.kind!r}")

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.trunk(obs)
        return self.policy_head(x), torch.tanh(self.value_head(x)).squeeze(-1)


def count_parameters(net: nn.Module) -> int:
    return sum(p.numel() for p in net.parameters())
