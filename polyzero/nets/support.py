"""Categorical value and reward representation (MuZero paper, Appendix F).

Scalars x are squashed by the invertible transform
h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x, eps = 0.001
(Pohlen et al. 2018, the form the MuZero text cites; the MuZero text misplaces
the eps x term inside the root), then projected onto the integer support
-S..S by the two-hot phi: 3.7 is 0.3 on support 3 and 0.7 on support 4. A
network's categorical output is decoded by its expectation followed by h^-1.
"""

from __future__ import annotations

import torch

EPS = 0.001


def h(x: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x."""
    return torch.sign(x) * (torch.sqrt(torch.abs(x) + 1.0) - 1.0) + eps * x


def h_inverse(y: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """The exact inverse of h: solve eps t^2 + t - (|y| + 1 + eps) = 0 for t = sqrt(|x| + 1).
    In float64: the root's "- 1" cancels, so float32's last bit of the square root became
    ~1e-4 in x, and backends (eager, ONNX Runtime) whose roots differ in that bit disagreed."""
    y64 = y.double()
    t = (torch.sqrt(1.0 + 4.0 * eps * (torch.abs(y64) + 1.0 + eps)) - 1.0) / (2.0 * eps)
    return (torch.sign(y64) * (t * t - 1.0)).to(y.dtype)


def scalar_to_support(x: torch.Tensor, support: int) -> torch.Tensor:
    """phi(h(x)): [...] -> [..., 2 support + 1] two-hot weights on -S..S (clipped to the ends)."""
    return two_hot(h(x), support)


def two_hot(y: torch.Tensor, support: int) -> torch.Tensor:
    """phi: y as the linear combination of its two adjacent integer supports (3.7 -> 0.3 on 3,
    0.7 on 4), [...] -> [..., 2 support + 1]; values beyond +-S are clipped to the ends."""
    y = y.clamp(-support, support)
    low = torch.floor(y)
    p_high = y - low
    idx = (low + support).long()
    out = torch.zeros(*y.shape, 2 * support + 1, dtype=y.dtype, device=y.device)
    out.scatter_(-1, idx.unsqueeze(-1), (1.0 - p_high).unsqueeze(-1))
    out.scatter_add_(-1, (idx + 1).clamp(max=2 * support).unsqueeze(-1), p_high.unsqueeze(-1))
    return out


def support_to_scalar(logits: torch.Tensor, support: int) -> torch.Tensor:
    """h^-1(E[softmax(logits)]) over the support -S..S: [..., 2S + 1] -> [...]."""
    values = torch.arange(-support, support + 1, dtype=logits.dtype, device=logits.device)
    return h_inverse((torch.softmax(logits, dim=-1) * values).sum(-1))
