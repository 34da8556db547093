"""Network trunks shared by every algorithm's heads."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


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


class DenseResidualTower(nn.Module):
    """Fully connected residual trunk: a linear stem to `width` units, then `blocks`
    blocks relu(x + W2 relu(W1 x)) -- AlphaZero's residual block with the
    convolutions made dense, for inputs that are vectors (a CVPN's beliefs)."""

    def __init__(self, in_dim: int, width: int, blocks: int):
        super().__init__()
        self.stem = nn.Linear(in_dim, width)
        self.blocks = nn.ModuleList(
            nn.ModuleList([nn.Linear(width, width), nn.Linear(width, width)]) for _ in range(blocks)
        )
        self.out_dim = width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(x.flatten(1)))
        for first, second in self.blocks:
            x = F.relu(x + second(F.relu(first(x))))
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


class BottleneckBlock(nn.Module):
    """1x1 conv down to `bottleneck` planes, two 3x3 convs, 1x1 conv back up, each
    followed by BN (ReLU but after the last), skip, ReLU (Gumbel paper, Appendix F.1,
    Fig. 11 and 13: ResBlock with stack_size 4)."""

    def __init__(self, channels: int, bottleneck: int):
        super().__init__()
        shapes = [
            (channels, bottleneck, 1),
            (bottleneck, bottleneck, 3),
            (bottleneck, bottleneck, 3),
            (bottleneck, channels, 1),
        ]
        self.convs = nn.ModuleList(nn.Conv2d(i, o, k, padding=k // 2, bias=False) for i, o, k in shapes)
        self.norms = nn.ModuleList(nn.BatchNorm2d(o) for _, o, _ in shapes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        last = len(self.convs) - 1
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            y = norm(conv(y))
            if i < last:
                y = F.relu(y)
        return F.relu(x + y)


class BroadcastBlock(nn.Module):
    """Global broadcasting residual block (Gumbel paper, Appendix F.1, Fig. 11): a 1x1
    conv mixes channels, one dense layer over the H*W cells (the same weights for
    every plane) mixes each plane globally, a 1x1 conv mixes channels again; BN
    after each, ReLU but after the last, skip, ReLU."""

    def __init__(self, channels: int, cells: int):
        super().__init__()
        self.mix_in = nn.Conv2d(channels, channels, 1, bias=False)
        self.bn_in = nn.BatchNorm2d(channels)
        self.broadcast = nn.Linear(cells, cells)
        self.bn_mid = nn.BatchNorm2d(channels)
        self.mix_out = nn.Conv2d(channels, channels, 1, bias=False)
        self.bn_out = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn_in(self.mix_in(x)))
        n, c, h, w = y.shape
        y = F.relu(self.broadcast(y.reshape(n, c, h * w))).reshape(n, c, h, w)
        y = F.relu(self.bn_mid(y))
        y = self.bn_out(self.mix_out(y))
        return F.relu(x + y)


class ResidualTower(nn.Module):
    """A 3x3 conv stem followed by `blocks` residual blocks of `channels` filters.

    block "basic": AlphaZero's blocks. block "bottleneck": the Gumbel paper's tower
    (Appendix F.1, Fig. 13): bottleneck blocks of `bottleneck_channels` planes
    (0: channels // 2), and every `broadcast_every`-th block (0: none) a broadcast
    block, which needs the board's `cells` (H * W).
    """

    def __init__(
        self,
        in_channels: int,
        channels: int,
        blocks: int,
        block: str = "basic",
        bottleneck_channels: int = 0,
        broadcast_every: int = 0,
        cells: int | None = None,
    ):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        )
        if block == "basic":
            layers = [ResidualBlock(channels) for _ in range(blocks)]
        elif block == "bottleneck":
            bottleneck = bottleneck_channels or max(1, channels // 2)
            layers = []
            for i in range(blocks):
                if broadcast_every > 0 and i % broadcast_every == broadcast_every - 1:
                    if cells is None:
                        raise ValueError("a broadcast block needs the board's cells (H * W)")
                    layers.append(BroadcastBlock(channels, cells))
                else:
                    layers.append(BottleneckBlock(channels, bottleneck))
        else:
            raise ValueError(f"block must be 'basic' or 'bottleneck', not {block!r}")
        self.blocks = nn.Sequential(*layers)
        self.out_channels = channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.device.type == "cpu":
            # oneDNN's convolutions are 10-15% faster on channels-last activations
            # (3 x 64 tower on 6x7 and 7x7 boards, one thread, training and inference;
            # docs/architecture.md). Not measured on GPUs, so left as it is there.
            x = x.contiguous(memory_format=torch.channels_last)
        return self.blocks(self.stem(x))
