"""The learner's default step on the parameters' buffer in fewer passes (Numba), torch's
numbers bit for bit: Adam's seven passes as three, the L2 term's two as one, and the
L2 value's per-tensor sums in one call instead of an operator each.

torch's foreach Adam (torch/optim/adam.py, `_multi_tensor_adam`; Kingma & Ba 2015,
Algorithm 1 with the bias corrections folded into the step size and the denominator)
updates each element by seven elementwise operators, each rounding to float32:

    m  <- lerp(m, g, 1 - beta1)           torch's vector lerp: fma(w, g - m, m) for w < 0.5
    v  <- v * beta2
    v  <- v + (1 - beta2) * g * g         torch's addcmul: fma((1 - beta2) g, g, v)
    d  <- sqrt(v)                         MKL's root (within an ulp of the correctly rounded one)
    d  <- d / sqrt(1 - beta2^t)
    d  <- d + eps
    theta <- theta + ((-lr / (1 - beta1^t)) m) / d     torch's addcdiv

Each pass streams the buffer's arrays through the cache; on the small networks (94-182
thousand parameters) the seven were a sixth of an update. `adam_moments` does the first
three on each element in one pass, torch's own sqrt the fourth (its rounding is MKL's,
not reproduced), `adam_apply` the last three: the same roundings in the same order (+,
-, *, / correctly rounded; the fmas as LLVM's `llvm.fma`, one rounding), so the same
bits. Which operations torch's kernels compute (an FMA or not, a division by a scalar
as a division) was found by comparing candidates element by element (the addcmul's
FMA and a plain product-and-add differ on a few random elements), so it is
checked, not assumed: `matches_torch(n)` runs both on random buffers of the length at
hand, several steps, and the Learner uses the kernels only where every element agreed
(else torch's passes). The L2 term's gradient 2c theta is one product per element
(`l2_grad`).

The L2 value is c times the per-tensor sums of squares added in order, each sum as
torch.sum computes it: ATen's cascade sum (SumKernel.cpp: 4 interleaved accumulators
of vectors, a cascade of 4 levels, the scalar tail, the lanes in order), reproduced by
`torch_sums` for all pieces in one call, squaring each element as it is read (torch.mul's
product: no scratch buffer written and read back), where `sums_match_torch` found it equal on this
machine at this thread count (torch splits a sum of 32,768 elements or more between
threads, in another order: there the Learner keeps torch's sums).
tests/test_flat_kernels.py, tests/test_flat_params.py and tests/test_learner_exact.py
compare kernels, L2 values and whole updates bit for bit.
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
    """The moments' three passes in one: m = lerp(m, g, w1) (torch's vector lerp, ATen's
    `lerp_vec`: one fma, fma(w1, g - m, m) for |w1| < 0.5, else fma(w1 - 1, g - m, g)),
    v = v * beta2, then v + (s2 g) g (torch's addcmul: the add fused with the last
    product). The scalars are float32, as torch's kernels take them."""
    small = abs(w1) < 0.5
    coeff = w1 if small else w1 - np.float32(1.0)
    for i in range(grad.shape[0]):
        g = grad[i]
        m[i] = _fma(coeff, g - m[i], m[i] if small else g)
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
    arrays = tuple(t.numpy() for t in (theta, grad, m, v, scratch))
    adam_arrays(arrays, v, scratch, w1, beta2, s2, bias2_sqrt, eps, step_size)


def adam_arrays(arrays: tuple, v: torch.Tensor, scratch: torch.Tensor, w1, beta2, s2, bias2_sqrt, eps, step_size):
    """`adam_passes` on the tensors' NumPy views (theta, grad, m, v, scratch), made once
    by a caller that steps the same tensors again (each `numpy()` is a call)."""
    theta, grad, m, v_array, root = arrays
    adam_moments(grad, m, v_array, w1, beta2, s2)
    torch.sqrt(v, out=scratch)
    adam_apply(theta, m, root, bias2_sqrt, eps, step_size)


@nb.njit(cache=True, nogil=True)
def l2_grad(theta, grad, c2):
    """grad = theta * c2 (c2 = float32(2c)), as torch.mul(theta, 2c, out=grad)."""
    for i in range(theta.shape[0]):
        grad[i] = theta[i] * c2


@nb.njit(cache=True, nogil=True)
def _bits(x):
    n = 0
    while x > 0:
        x >>= 1
        n += 1
    return n


@nb.njit(cache=True, nogil=True)
def _row_sum(x, start, width, count, square):
    """ATen's `row_sum` (SumKernel.cpp) over `count` blocks of `width` lanes from
    x[start]: the blocks read as rows of 4 (ilp), each of the 4 accumulated in a cascade
    of 4 levels of `level_step` rows (`multi_row_sum`), the blocks left over added to
    the first, then the 4 added in order; lane by lane (a vector's lanes never mix).
    A row is 4 * width contiguous floats, so accumulator j of a row (block j // width,
    lane j % width) takes x[start + row * 4 * width + j]: one short contiguous loop."""
    size = count // 4
    level_power = max(4, (1 if size <= 2 else _bits(size - 1)) // 4)
    level_step = 1 << level_power
    level_mask = level_step - 1
    row = 4 * width
    acc = np.zeros((4, row), np.float32)
    i = 0
    first = acc[0]
    while i + level_step <= size:
        for _ in range(level_step):
            xs = x[start + i * row : start + (i + 1) * row]  # a slice: the loop vectorises
            for j in range(row):
                first[j] += xs[j] * xs[j] if square else xs[j]
            i += 1
        for level in range(1, 4):
            for j in range(row):
                acc[level, j] += acc[level - 1, j]
                acc[level - 1, j] = 0
            if i & (level_mask << (level * level_power)):
                break
    while i < size:
        xs = x[start + i * row : start + (i + 1) * row]
        for j in range(row):
            first[j] += xs[j] * xs[j] if square else xs[j]
        i += 1
    for level in range(1, 4):
        for j in range(row):
            acc[0, j] += acc[level, j]
    for block in range(4 * size, count):
        for lane in range(width):
            v = x[start + block * width + lane]
            acc[0, lane] += v * v if square else v
    for k in range(1, 4):
        for lane in range(width):
            acc[0, lane] += acc[0, k * width + lane]
    return acc[0, :width]


@nb.njit(cache=True, nogil=True)
def torch_sums(x, bounds, lanes, square):
    """torch.sum of each piece x[a:b] (bounds [k, 2]), of its squares with `square` (each
    rounded to float32 as torch.mul's, then summed), as ATen's serial `cascade_sum`
    computes a contiguous float32 reduction: pieces of at least `lanes` elements (the
    vector width) as `vectorized_inner_sum` (vectors summed lane-wise by `row_sum`, the
    scalar tail first, then the lanes in order), shorter ones by `row_sum` on scalars;
    the output, zero-filled, plus the sum."""
    out = np.zeros(bounds.shape[0], np.float32)
    for p in range(bounds.shape[0]):
        a, b = bounds[p, 0], bounds[p, 1]
        n = b - a
        if n >= lanes:
            vectors = n // lanes
            acc = _row_sum(x, a, lanes, vectors, square)
            total = np.float32(0)
            for k in range(a + vectors * lanes, b):
                total += x[k] * x[k] if square else x[k]
            for lane in range(lanes):
                total += acc[lane]
        else:
            total = _row_sum(x, a, 1, n, square)[0]
        out[p] = np.float32(0) + total
    return out


NO_GRAD = np.zeros(0, np.float32)  # `l2_pass`' grad where none is written


@nb.njit(cache=True, nogil=True)
def l2_pass(x, bounds, lanes, grad, c2, c):
    """The L2 node's value c ||theta||^2 (float32(c) times the pieces' sums of squares
    added in order, each step a float32 addition as NumPy's float32 scalars make it),
    after grad = x * float32(c2) (`l2_grad`) where `grad` is not empty: one call. (The
    gradient written inside the sums' loop, one pass instead of two, kept the loop from
    vectorising: 0.19 against 0.07 ms on the CVPN's buffer.)"""
    if grad.shape[0] > 0:
        l2_grad(x, grad, np.float32(c2))
    sums = torch_sums(x, bounds, lanes, True)
    total = sums[0]
    for p in range(1, sums.shape[0]):
        total += sums[p]
    return np.float32(c) * total


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


_CHECKED: dict = {}


def lanes() -> int:
    """ATen's vector width for float32 sums as torch dispatches them on this machine
    (Vectorized<float>::size() of the kernel that runs): the one of 16 and 8 whose
    `torch_sums` gives torch.sum's bits on a probe, else 8. Not read off the CPU
    capability: on an AVX-512 Intel Xeon, where torch reports "AVX512", torch 2.13's sum
    ran the 8-lane kernel. Probed once, at one thread."""
    if "lanes" not in _CHECKED:
        x = np.random.default_rng(0).standard_normal(2_000).astype(np.float32)
        bounds = np.asarray([(0, 17), (32, 65), (96, 353), (368, 2_000)], np.int64)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            want = torch.stack([torch.from_numpy(x[a:b]).sum() for a, b in bounds]).numpy()
        finally:
            torch.set_num_threads(threads)
        matching = [
            n for n in (16, 8) if np.array_equal(want.view(np.int32), torch_sums(x, bounds, n, False).view(np.int32))
        ]
        _CHECKED["lanes"] = matching[0] if matching else 8
    return _CHECKED["lanes"]


def sums_match_torch(bounds: np.ndarray, size: int) -> bool:
    """Whether `torch_sums` gives torch.sum's bits for pieces `bounds` of a float32
    buffer of `size` elements at this torch thread count (torch splits a reduction of
    32,768 elements or more between threads, in another order): random squares of
    several scales, their sums and their squares' sums, every piece compared. Checked
    once per (pieces, threads)."""
    key = ("sums", bounds.tobytes(), size, torch.get_num_threads())
    if key not in _CHECKED:
        rng = np.random.default_rng(size)
        ok = True
        for scale in (1e-4, 1.0, 3e3):
            x = torch.from_numpy((rng.standard_normal(size) * scale).astype(np.float32))
            for square in (False, True):
                want = torch.stack([(x[a:b] * x[a:b] if square else x[a:b]).sum() for a, b in bounds]).numpy()
                got = torch_sums(x.numpy(), bounds, lanes(), square)
                ok &= np.array_equal(want.view(np.int32), got.view(np.int32))
        _CHECKED[key] = bool(ok)
    return _CHECKED[key]


def adam_key(n: int, beta1: float = 0.9) -> tuple[int, int, bool]:
    """`matches_torch`'s record for a buffer of n: per torch thread count (torch splits a
    long elementwise pass between threads) and per branch of torch's lerp (its weight
    1 - beta1 below 0.5 or not: two formulas, scalar and vector paths differing)."""
    return n, torch.get_num_threads(), bool(abs(np.float32(1 - beta1)) < 0.5)  # the weight as torch takes it


def matches_torch(n: int, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> bool:
    """Whether the kernels give torch's bits for a float32 buffer of n elements on this
    machine: random parameters, gradients (some 0) and moments, Adam's steps 1, 2, 3 and
    1000 and the L2 pass, every element compared. Checked once per `adam_key` (with the
    first settings asked about: apart from the lerp's branch, which the key holds, the
    operations checked do not depend on the scalars' values) and remembered."""
    key = adam_key(n, beta1)
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
            g32 = torch.from_numpy(grad)
            adam_passes(got[0], g32, got[1], got[2], torch.empty(n), *scalars(lr, beta1, beta2, eps, count))
            ok &= all(torch.equal(w.view(torch.int32), g.view(torch.int32)) for w, g in zip(want, got))
            theta, m, v = (a.numpy() for a in got)
        c = 1e-4
        expected, written = torch.mul(torch.from_numpy(theta), 2 * c), np.empty_like(theta)
        l2_grad(theta, written, np.float32(2 * c))
        ok &= np.array_equal(expected.numpy().view(np.int32), written.view(np.int32))
        _CHECKED[key] = ok
    return _CHECKED[key]
