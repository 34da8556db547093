"""Network trunks shared by every algorithm's heads."""

from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F


class MLPTower(nn.Module):
    """Fully connected trunk: `layers` hidden layers of `width` units with ReLU."""

    def __init__(self, in_dim: int, width: int, layers: int):
        super().__init__()
        dims = [in_dim] + [width] * layers
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out_dim = dims[-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        for layer in self.layers:
            x = F.relu(layer(x))
        return x


class ResidualBlock(nn.Module):
    """conv-BN-ReLU-conv-BN, skip, ReLU (AlphaZero's residual block)."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


class ResidualTower(nn.Module):
    """A 3x3 conv stem followed by `blocks` residual blocks of `channels` filters."""

    def __init__(self, in_channels: int, channels: int, blocks: int):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        )
        self.blocks = nn.Sequential(*(ResidualBlock(channels) for _ in range(blocks)))
        self.out_channels = channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.stem(x))
