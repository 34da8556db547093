"""AlphaZero's residual tower through Winograd's minimal filtering (Lavin & Gray 2016,
"Fast Algorithms for Convolutional Neural Networks", Section 4): each 3x3 convolution
as F(m x m, 3 x 3) -- tiles of (m + 2)^2 inputs transformed once (B^T d B), one
elementwise product per transformed point summed over the input channels (the
(m + 2)^2 GEMMs of Section 4.1, here one batched MatMul) and m x m outputs transformed
back (A^T M A) -- so that a tile's m^2 outputs take (m + 2)^2 multiplications per
channel pair instead of 9 m^2 (4x fewer at m = 4 before the padding of the board to
whole tiles).

Layout. Activations stay [H, W, N, C] (rows of the board outermost, then the batch
and the channels) through the tower: then both transforms are GEMMs over the board's
rows or columns with the batch and the channels as their columns (the transforms are
separable: B^T d B is B^T along the rows then along the columns), and the transformed
tiles come out as [a, tiles_h, a, tiles_w * N, C], the elementwise GEMMs' batch of
(a x a) [tiles * N, C] x [C, K] products, without a transpose anywhere in the tower.
The zero padding of the convolution and the board's padding to whole tiles are folded
into the transforms' matrices (their out-of-board columns dropped).

The filters' transform U = G g G^T (with the batch norm that follows the convolution
folded in: scale into U, shift as a bias) is computed in float64 from the network's
weights by :meth:`WinogradNet.refresh`, once per weight publication; the exported
graph holds U as an initializer. Outputs differ from the direct convolution by
rounding (tests/test_winograd.py bounds it against PyTorch eager); a row's outputs do
not depend on its batch (each GEMM sums over channels or tile points in one order
whatever the batch), which the network-output cache needs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from .towers import ResidualBlock, ResidualTower

# Interpolation points of the Cook-Toom construction, the first (m + 1) used for F(m, 3)
# (plus the point at infinity): the small integers and halves of Lavin & Gray's F(4x4)
# and wincnn's larger tiles.
_POINTS = (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0)


def transforms(m: int, r: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T [m, a], G [a, r], B^T [a, a]) of the 1-D minimal filtering F(m, r), a = m + r - 1,
    in float64: y = A^T ((G g) * (B^T d)) is the correlation y_i = sum_u d_{i+u} g_u.
    A^T and G evaluate at the points (and at infinity: the leading coefficient); B^T
    solves the identity for every d and g (exact up to float64 rounding, checked)."""
    a = m + r - 1
    if not 1 <= a - 1 <= len(_POINTS):
        raise ValueError(f"no interpolation points for F({m}, {r})")
    pts = np.array(_POINTS[: a - 1])
    at = np.zeros((m, a))
    at[:, : a - 1] = pts[None, :] ** np.arange(m)[:, None]
    at[m - 1, a - 1] = 1.0
    g = np.zeros((a, r))
    g[: a - 1] = pts[:, None] ** np.arange(r)[None, :]
    g[a - 1, r - 1] = 1.0
    # sum_j AT[i, j] G[j, u] BT[j, p] = [p == i + u] for all i, u, p: one solve per p
    lhs = np.einsum("ij,ju->iuj", at, g).reshape(m * r, a)
    rhs = np.zeros((m * r, a))
    for i in range(m):
        for u in range(r):
            rhs[i * r + u, i + u] = 1.0
    bt, *_ = np.linalg.lstsq(lhs, rhs, rcond=None)
    if not np.allclose(lhs @ bt, rhs, atol=1e-9):
        raise ArithmeticError(f"F({m}, {r}) has no exact B^T at these points")
    return at, g, bt


def axis_tile(n: int, m: int) -> int:
    """The tile for a board axis of `n` cells given the largest tile `m`: the smallest
    that covers the axis in as many tiles as `m` does (fewer points to transform and
    multiply for the same tiles: 7 cells take two tiles of 4 as well as two of 6)."""
    tiles = -(-n // m)
    return min(t for t in range(2, m + 1) if -(-n // t) == tiles)


def _axis_matrices(n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """For one board axis of `n` cells in tiles of `m` outputs: the input transform
    [a * tiles, n] (rows ordered transform point first, then tile; the convolution's
    zero padding and the tiles past the board dropped as zero columns), the output
    transform [n, a * tiles] (outputs past the board cropped), G [a, 3], and tiles."""
    at, g, bt = transforms(m)
    a = m + 2
    tiles = -(-n // m)
    inp = np.zeros((a * tiles, n))
    out = np.zeros((n, a * tiles))
    for t in range(tiles):
        for p in range(a):
            cell = t * m - 1 + p  # the padded window starts one cell before the tile
            if 0 <= cell < n:
                inp[np.arange(a) * tiles + t, cell] = bt[:, p]
        for o in range(m):
            cell = t * m + o
            if cell < n:
                out[cell, np.arange(a) * tiles + t] = at[o, :]
    return inp, out, g, tiles


def supports(net: nn.Module) -> bool:
    """Whether `net` has the trunk this path computes: a ResidualTower of basic blocks."""
    trunk = getattr(net, "trunk", None)
    return (
        isinstance(trunk, ResidualTower)
        and all(isinstance(b, ResidualBlock) for b in trunk.blocks.children())
        and hasattr(net, "policy_head")
        and hasattr(net, "value_head")
        and len(getattr(net, "obs_shape", ())) == 3
    )


#: What `net.winograd = "auto"` runs in self-play: F(6 x 6, 3 x 3) (each axis the
#: smallest tile covering it in as many tiles: F(6 x 4) on Connect Four's 6 x 7 board,
#: F(5 x 5) on 5 x 5 and 9 x 9, F(4 x 4) on 7 x 7), where the board's shorter side has at
#: least AUTO_MIN_SIDE cells and an actor searches at least AUTO_MIN_GAMES games at once;
#: the direct convolution elsewhere. Measured, the network alone by board and batch
#: (benchmarks/results/selfplay_winograd_boards.md, CPU time, one thread): F(6) breaks
#: even at about 24 rows on the 5 x 5, 6 x 7, 7 x 7 and 9 x 9 boards (0.85-1.07x at 16,
#: 1.07-1.19x at 32, 1.25-1.45x at 64), at 48 rows on tic-tac-toe's 3 x 3 (1.13x at 64
#: only), and loses 3-4x at one row. Self-play's calls carry one row per game less the
#: cache's hits (30% with the learner's reloads every 8 moves, 45% with fixed weights):
#: 48 games are about 34 rows (1.07-1.19x at 32); 32 games about 22 (0.85-1.17x at 16-24).
#: Self-play end to end on Connect Four, reloads every 8 moves: 0.85x at 16 games, 1.02x
#: at 32, 1.09x at 48, 1.19x at 64 (benchmarks/results/selfplay_throughput_c4_winograd_games.md).
AUTO_TILE = 6
AUTO_MIN_SIDE = 5
AUTO_MIN_GAMES = 48


def chosen_tile(setting: int | str, net: nn.Module, selfplay_games: int = 0) -> int:
    """The tile m an evaluator of `net` runs for `net.winograd = setting` (0: the direct
    convolution). An explicit m is itself everywhere. "auto" is a default per use:
    self-play's evaluators (`selfplay_games` > 0: the games an actor searches at once,
    each network call's rows before the cache answers some) take AUTO_TILE on a tower
    this path computes over a board large enough, with games enough to batch, where the
    network alone gains; every other evaluator (evaluation, play, engines, one-row
    searches: 0.24x at one row) the direct convolution. One evaluator keeps one tile
    whatever its batch, so a row's outputs never depend on the batch it came in (the
    cache, polyzero.nets.eval_cache, relies on it)."""
    if setting != "auto":
        return int(setting)
    if selfplay_games < AUTO_MIN_GAMES or not supports(net):
        return 0
    _, h, w = tuple(getattr(net, "obs_shape"))  # noqa: B009 (a module attribute mypy cannot see)
    return AUTO_TILE if min(h, w) >= AUTO_MIN_SIDE else 0


def _folded(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> tuple[torch.Tensor, torch.Tensor]:
    """The convolution's weights [K, C, 3, 3] scaled by the batch norm's per-channel scale,
    and its shift (the network in eval mode), in float64."""
    mean, var = bn.running_mean, bn.running_var
    assert mean is not None and var is not None, "batch norm without running statistics"
    w = conv.weight.detach().cpu().double()
    scale = bn.weight.detach().cpu().double() / torch.sqrt(var.detach().cpu().double() + bn.eps)
    shift = bn.bias.detach().cpu().double() - mean.detach().cpu().double() * scale
    return w * scale[:, None, None, None], shift


class WinogradNet(nn.Module):
    """`net` (a PolicyValueNet over a ResidualTower of basic blocks, in eval mode) with its
    tower's 3x3 convolutions as F(m_h x m_w, 3 x 3), each axis's tile `m` or the smaller
    one that covers the axis in as many tiles (:func:`axis_tile`: on Connect Four's 6 x 7
    board m = 6 runs F(6 x 4, 3 x 3) in 1 x 2 tiles); the heads are the network's own.
    Its buffers (transform matrices, transformed filters, shifts) are computed from
    `net`'s weights by :meth:`refresh`, in place, so an exported graph's initializers
    can be rewritten from them after every weight change."""

    # What never changes: the rest (transformed filters, shifts, the heads' weights) is
    # read live by the ONNX Runtime session (polyzero.nets.compiled), which a weight
    # publication then leaves as it is.
    constant_buffers = ("in_h", "in_w", "out_h", "out_w")
    in_h: torch.Tensor
    in_w: torch.Tensor
    out_h: torch.Tensor
    out_w: torch.Tensor
    net: Any  # a PolicyValueNet (trunk, policy_head, value_head)

    def __init__(self, net: nn.Module, m: int = 4):
        super().__init__()
        if not supports(net):
            raise ValueError("the Winograd path computes a residual tower of basic blocks only")
        self.net = net
        self.m = m
        _, h, w = tuple(getattr(net, "obs_shape"))  # noqa: B009 (a module attribute mypy cannot see)
        self.h, self.w = h, w
        self.m_h, self.m_w = axis_tile(h, m), axis_tile(w, m)
        inp_h, out_h, g_h, self.tiles_h = _axis_matrices(h, self.m_h)
        inp_w, out_w, g_w, self.tiles_w = _axis_matrices(w, self.m_w)
        self._g_h, self._g_w = torch.from_numpy(g_h), torch.from_numpy(g_w)  # float64
        f32 = lambda x: torch.tensor(x, dtype=torch.float32)  # noqa: E731
        self.register_buffer("in_h", f32(inp_h))
        self.register_buffer("in_w", f32(inp_w))
        self.register_buffer("out_h", f32(out_h))
        self.register_buffer("out_w", f32(out_w))
        for i, (conv, _) in enumerate(self._convs()):
            u = torch.zeros(self.m_h + 2, 1, self.m_w + 2, conv.in_channels, conv.out_channels)
            self.register_buffer(f"u{i}", u)
            self.register_buffer(f"b{i}", torch.zeros(conv.out_channels))
        self.refresh()

    def _convs(self) -> list[tuple[nn.Conv2d, nn.BatchNorm2d]]:
        trunk = self.net.trunk
        pairs = [(trunk.stem[0], trunk.stem[1])]
        for block in trunk.blocks:
            pairs += [(block.conv1, block.bn1), (block.conv2, block.bn2)]
        return pairs

    @torch.no_grad()
    def refresh(self) -> None:
        """Recompute the transformed filters and shifts from the network's current weights."""
        for i, (conv, bn) in enumerate(self._convs()):
            w, shift = _folded(conv, bn)
            # torch's products (on the threads set_threads chose), not NumPy's BLAS, whose
            # own thread pool would spin on every core
            k, c = w.shape[:2]
            # G g G^T as two 2-D products (many 3 x 3 ones cost ~30x more)
            t = (w.reshape(-1, 3) @ self._g_w.T).reshape(k * c, 3, -1)  # [K * C, u, a_w]
            u = self._g_h @ t.permute(1, 0, 2).reshape(3, -1)  # [a_h, K * C * a_w]
            u = u.reshape(-1, k, c, self._g_w.shape[0]).permute(0, 3, 2, 1)  # [a_h, a_w, C, K]
            getattr(self, f"u{i}").copy_(u[:, None])
            getattr(self, f"b{i}").copy_(shift)

    def _conv(self, x: torch.Tensor, i: int) -> torch.Tensor:
        """Convolution i (with its batch norm) of x [H, W, N, C] -> [H, W, N, K]."""
        u, bias = getattr(self, f"u{i}"), getattr(self, f"b{i}")
        h, w, th, tw = self.h, self.w, self.tiles_h, self.tiles_w
        a_h, a_w, c, k = u.shape[0], u.shape[2], u.shape[3], u.shape[4]
        y = torch.matmul(self.in_w, x.reshape(h, w, -1))  # [H, a_w * tw, N * C]
        y = torch.matmul(self.in_h, y.reshape(h, -1))  # [a_h * th, a_w * tw * N * C]
        y = torch.matmul(y.reshape(a_h, th, a_w, -1, c), u)  # [a_h, th, a_w, tw * N, K]
        y = torch.matmul(self.out_w, y.reshape(a_h * th, a_w * tw, -1))  # [a_h * th, W, N * K]
        y = torch.matmul(self.out_h, y.reshape(a_h * th, -1))  # [H, W * N * K]
        return y.reshape(h, w, -1, k) + bias

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = obs.permute(2, 3, 0, 1)  # [H, W, N, C]
        x = torch.relu(self._conv(x, 0))
        for j in range(len(self.net.trunk.blocks)):
            y = torch.relu(self._conv(x, 1 + 2 * j))
            x = torch.relu(x + self._conv(y, 2 + 2 * j))
        x = x.permute(2, 3, 0, 1)  # [N, C, H, W]
        net = self.net
        return net.policy_head(x), torch.tanh(net.value_head(x)).squeeze(-1)
