"""Adam's default step on the parameters' buffer in one pass (Numba), the numbers of
torch's seven foreach passes bit for bit; and the L2 term's gradient and squares in
one pass instead of two.

torch's foreach Adam (torch/optim/adam.py, `_multi_tensor_adam`; Kingma & Ba 2015,
Algorithm 1 with the bias corrections folded into the step size and the denominator)
updates each element by seven elementwise operators, each rounding to float32:

    m  <- lerp(m, g, 1 - beta1)           lerp_vec: fma(w, g - m, m) where w < 0.5
    v  <- v * beta2
    v  <- v + (1 - beta2) * g * g         addcmul: ((s g) g) + v
    d  <- sqrt(v)
    d  <- d / sqrt(1 - beta2^t)
    d  <- d + eps
    theta <- theta + (-lr / (1 - beta1^t)) * m / d     addcdiv: ((a m) / d) + theta

Each pass streams the buffer's 4-5 arrays through the cache; on the small networks
(94-182 thousand parameters) the seven passes were a sixth of an update. The kernel
below does the same operations on each element in one pass: the same IEEE-754
roundings in the same order (sqrt, +, -, *, / are correctly rounded; the lerp's fma
is LLVM's `llvm.fma`, one rounding as the vector kernel's), so the same bits.

Whether torch's kernels on this machine compute exactly these operations (an FMA
contracted or not, a division by a scalar as a division) is checked, not assumed:
`matches_torch(n)` runs both on random buffers of the length at hand, several steps,
and the Learner uses the kernel only where every element agreed (else torch's passes:
`flat.adam_step` falls back). tests/test_flat_params.py and tests/test_learner_exact.py
compare whole updates bit for bit.

The L2 term (`FlatParameters.preload_l2`) writes 2c theta into the gradient buffer and
theta * theta into a scratch buffer for its value's per-tensor sums: two products per
element, each one rounding, read from one pass over theta (`l2_pass`), checked with
the Adam kernel.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import torch
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding (float32)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        f32 = ir.FloatType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f32, [f32] * 3), "llvm.fma.f32")
        return builder.call(fn, args)

    return sig, codegen


@nb.njit(cache=True, nogil=True)
def adam_moments(grad, m, v, w1, beta2, s2):
    """The moments' three passes in one: m = lerp(m, g, w1) (torch's vector lerp: one
    fma), v = v * beta2, then v + (s2 g) g (torch's addcmul: the add fused with the
    last product). The scalars are float32, as torch's kernels take them."""
    for i in range(grad.shape[0]):
        g = grad[i]
        m[i] = _fma(w1, g - m[i], m[i])
        v[i] = _fma(s2 * g, g, v[i] * beta2)


@nb.njit(cache=True, nogil=True, error_model="numpy")
def adam_apply(theta, m, root_v, bias2_sqrt, eps, step_size):
    """The step's three passes after the square root in one: d = root_v / bias2_sqrt +
    eps, theta = theta + (step_size m) / d (torch's div, add and addcdiv)."""
    for i in range(theta.shape[0]):
        d = root_v[i] / bias2_sqrt + eps
        theta[i] = theta[i] + step_size * m[i] / d


def adam_passes(theta: torch.Tensor, grad, m, v, scratch, w1, beta2, s2, bias2_sqrt, eps, step_size) -> None:
    """Adam's step in three passes: the moments (Numba), torch's square root (its own
    kernel: MKL's on this build, within an ulp of the correctly rounded root and not
    always equal to it, so it is not reproduced), the rest (Numba)."""
    adam_moments(grad.numpy(), m.numpy(), v.numpy(), w1, beta2, s2)
    torch.sqrt(v, out=scratch)
    adam_apply(theta.numpy(), m.numpy(), scratch.numpy(), bias2_sqrt, eps, step_size)


@nb.njit(cache=True, nogil=True)
def l2_pass(theta, grad, squares, c2):
    """grad = theta * c2 (c2 = float32(2c)) and squares = theta * theta, in one pass."""
    for i in range(theta.shape[0]):
        t = theta[i]
        grad[i] = t * c2
        squares[i] = t * t


def scalars(lr: float, beta1: float, beta2: float, eps: float, count: float) -> tuple:
    """The float32 scalars the seven passes take at step `count` (computed in double as
    torch's `_multi_tensor_adam` does, then cast to float32 as its kernels do)."""
    bias_correction1 = 1 - beta1**count
    bias_correction2 = 1 - beta2**count
    step_size = (lr / bias_correction1) * -1
    f = np.float32
    return f(1 - beta1), f(beta2), f(1 - beta2), f(bias_correction2**0.5), f(eps), f(step_size)


def torch_passes(theta, grad, m, v, scratch, lr, beta1, beta2, eps, count) -> None:
    """torch's foreach arithmetic, operator for operator, on single tensors (the
    reference the kernel must equal, and the fallback)."""
    bias_correction1 = 1 - beta1**count
    bias_correction2 = 1 - beta2**count
    step_size = (lr / bias_correction1) * -1
    m.lerp_(grad, 1 - beta1)
    v.mul_(beta2)
    v.addcmul_(grad, grad, value=1 - beta2)
    denom = torch.sqrt(v, out=scratch)  # the same kernel, no allocation
    denom.div_(bias_correction2**0.5)
    denom.add_(eps)
    theta.addcdiv_(m, denom, value=step_size)


_CHECKED: dict[tuple, bool] = {}


def matches_torch(n: int, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> bool:
    """Whether the kernels give torch's bits for a float32 buffer of n elements on this
    machine: random parameters, gradients (some 0) and moments, Adam's steps 1, 2, 3 and
    1000 and the L2 pass, every element compared. Checked once per length (with the first settings asked
    about: the operations checked do not depend on the scalars' values) and remembered."""
    key = n
    betas = (beta1, beta2)
    if key not in _CHECKED:
        rng = np.random.default_rng(n)
        theta = (rng.standard_normal(n) * 0.1).astype(np.float32)
        grad = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 0, n)).astype(np.float32) * (rng.random(n) > 0.05)
        m = (rng.standard_normal(n) * 1e-3).astype(np.float32)
        v = (rng.random(n) * 1e-5).astype(np.float32) * (rng.random(n) > 0.05)
        ok = True
        for count in (1.0, 2.0, 3.0, 1000.0):
            want = [torch.from_numpy(a.copy()) for a in (theta, m, v)]
            torch_passes(want[0], torch.from_numpy(grad), want[1], want[2], torch.empty(n), lr, *betas, eps, count)
            got = [torch.from_numpy(a.copy()) for a in (theta, m, v)]
            adam_passes(got[0], torch.from_numpy(grad), *got[1:], torch.empty(n), *scalars(lr, *betas, eps, count))
            ok &= all(torch.equal(w.view(torch.int32), g.view(torch.int32)) for w, g in zip(want, got))
            theta, m, v = (a.numpy() for a in got)
        c = 1e-4
        want = [torch.mul(torch.from_numpy(theta), 2 * c), torch.mul(torch.from_numpy(theta), torch.from_numpy(theta))]
        got = [np.empty_like(theta), np.empty_like(theta)]
        l2_pass(theta, *got, np.float32(2 * c))
        ok &= all(np.array_equal(w.numpy().view(np.int32), g.view(np.int32)) for w, g in zip(want, got))
        _CHECKED[key] = ok
    return _CHECKED[key]
