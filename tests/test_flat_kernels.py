"""Adam's step in three passes (polyzero/train/flat_kernels.py: two Numba kernels around
torch's sqrt) gives torch's seven foreach passes' numbers bit for bit, at one and two
torch threads and on both branches of torch's lerp; the L2 value's sums kernel gives
torch.sum's; where a kernel would not, the Learner keeps torch's passes."""

import numpy as np
import pytest
import torch

from polyzero.train import flat_kernels
from polyzero.train.flat import FlatParameters, adam_step


def _state(n: int, seed: int):
    rng = np.random.default_rng(seed)
    theta = (rng.standard_normal(n) * 0.2).astype(np.float32)
    grad = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 1, n)).astype(np.float32)
    grad[rng.random(n) < 0.05] = 0.0
    m = (rng.standard_normal(n) * 1e-2).astype(np.float32)
    v = (rng.random(n) * 1e-4).astype(np.float32)
    v[rng.random(n) < 0.05] = 0.0
    return theta, grad, m, v


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    """torch's thread count for the test (torch splits a pass of 32,768 elements or more
    between threads), restored after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


@pytest.mark.parametrize("n", [16, 4096, 169_232])  # lengths of a padded buffer (multiples of 16)
# beta1 = 0.3: torch's lerp takes its other branch (weight 0.7 >= 0.5), checked apart
@pytest.mark.parametrize("settings", [(1e-3, 0.9, 0.999, 1e-8), (0.02, 0.8, 0.99, 1e-6), (1e-3, 0.3, 0.999, 1e-8)])
def test_the_one_pass_kernel_gives_the_seven_passes_bits(n, settings, threads):
    assert flat_kernels.matches_torch(n, *settings)  # on this machine: the Learner uses the kernel
    for seed in range(3):
        theta, grad, m, v = _state(n, seed)
        want = [torch.from_numpy(a.copy()) for a in (theta, m, v)]
        got = [torch.from_numpy(a.copy()) for a in (theta, m, v)]
        g = torch.from_numpy(grad)
        for count in (1.0, 2.0, 7.0, 5000.0):
            flat_kernels.torch_passes(want[0], g, *want[1:], torch.empty(n), *settings, count)
            flat_kernels.adam_passes(got[0], g, *got[1:], torch.empty(n), *flat_kernels.scalars(*settings, count))
            for w, x in zip(want, got):
                assert torch.equal(w.view(torch.int32), x.view(torch.int32))


@pytest.mark.parametrize("kernel", [True, False])
def test_adam_step_on_the_buffer_is_torchs_foreach_adam_with_the_kernel_or_without(kernel, monkeypatch):
    """The buffer's step against `torch.optim.Adam(foreach=True)` over the same buffer,
    the kernel in use and (as where the check failed) torch's passes."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(13, 40), torch.nn.ReLU(), torch.nn.Linear(40, 5))
    flat = FlatParameters(list(net.parameters()))
    monkeypatch.setitem(flat_kernels._CHECKED, flat_kernels.adam_key(len(flat.data)), kernel)
    calls, original = [], flat_kernels.adam_arrays
    monkeypatch.setattr(flat_kernels, "adam_arrays", lambda *a: calls.append(1) or original(*a))
    _steps_equal_foreach_adam(net, flat, torch.randn(64, 13), 6)
    assert len(calls) == (5 if kernel else 0)


def _steps_equal_foreach_adam(net, flat: FlatParameters, x: torch.Tensor, steps: int) -> None:
    """`steps` updates of `net` (its parameters in `flat`) by `adam_step` (torch's step
    first: it makes the state), each equal, weights and state, to
    `torch.optim.Adam(foreach=True)`'s over a copy of the buffer."""
    mine = torch.optim.Adam([flat.data], lr=3e-3, foreach=True)
    data, grad = flat.data.clone(), flat.grad.clone()
    reference = torch.optim.Adam([data], lr=3e-3, foreach=True)
    data.grad = grad
    for step in range(steps):
        flat.zero_grad()
        net(x).square().sum().backward()
        grad.copy_(flat.grad)
        if step == 0 or not adam_step(mine, flat):
            mine.step()
        reference.step()
        assert torch.equal(flat.data, data)
        for name, value in reference.state[data].items():
            assert torch.equal(mine.state[flat.data][name], value), name


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_the_sums_kernel_gives_torch_sums_bits_at_one_thread(one_thread):
    """ATen's cascade sum, piece by piece: short pieces (scalar row sums), the vector
    width and either side of it, the cascade's level step (16 rows of 4 vectors) and
    past it, the CVPN's 65,536-element layers."""
    sizes = [1, 3, 7, 8, 9, 31, 32, 33, 255, 256, 257, 511, 512, 513, 1792, 4097, 33_280, 65_536, 70_001]
    bounds, start = [], 0
    for n in sizes:
        bounds.append((start, start + n))
        start += -(-n // 16) * 16
    bounds = np.asarray(bounds, np.int64)
    rng = np.random.default_rng(5)
    assert flat_kernels.sums_match_torch(bounds, start)
    for scale in (1e-6, 1.0, 1e4):
        x = torch.from_numpy((rng.standard_normal(start) * scale).astype(np.float32))
        for square in (False, True):
            want = torch.stack([(x[a:b] * x[a:b] if square else x[a:b]).sum() for a, b in bounds])
            got = flat_kernels.torch_sums(x.numpy(), bounds, flat_kernels.lanes(), square)
            assert torch.equal(want.view(torch.int32), torch.from_numpy(got).view(torch.int32))
        # l2_pass: the gradient as l2_grad writes it and c times the squares' sums added in order
        grad, expected = np.full(start, np.nan, np.float32), np.empty(start, np.float32)
        value = flat_kernels.l2_pass(x.numpy(), bounds, flat_kernels.lanes(), grad, 2e-4, 1e-4)
        flat_kernels.l2_grad(x.numpy(), expected, np.float32(2e-4))
        assert np.array_equal(grad.view(np.int32), expected.view(np.int32))
        sums = flat_kernels.torch_sums(x.numpy(), bounds, flat_kernels.lanes(), True)
        total = sums[0]
        for piece in sums[1:]:
            total = total + piece  # NumPy float32 scalars
        assert np.float32(value) == np.float32(1e-4) * total


def test_the_l2_value_with_the_sums_kernel_is_the_l2_nodes_bit_for_bit(threads):
    """At one thread with the sums kernel; at two, where torch splits the 65,536-element
    layer's sum between threads, with whichever sums the check chose."""
    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(130, 256), torch.nn.Linear(256, 256), torch.nn.Linear(256, 7))
    want = 1e-4 * sum((p.detach() * p.detach()).sum() for p in net.parameters())  # the L2 node's value
    flat = FlatParameters(list(net.parameters()))
    assert flat.kernels() or threads > 1
    assert flat.l2_value(1e-4).item() == want.item()
    assert flat.preload_l2(1e-4).item() == want.item()


@pytest.mark.parametrize("beta1", [0.9, 0.5, 0.5000000001, 0.4999999999, 0.3])
def test_the_adam_record_is_keyed_by_the_lerp_branch_torch_takes(beta1):
    """torch takes lerp's weight as float32 and its small-weight formula where |w| < 0.5:
    0.5000000001 gives w = 0.4999999999 in double but 0.5 in float32, the other branch."""
    small = abs(np.float32(1 - beta1)) < np.float32(0.5)
    assert flat_kernels.adam_key(16, beta1)[2] == small
    assert flat_kernels.adam_key(16, beta1) != flat_kernels.adam_key(16, 0.3 if small else 0.9)


def test_a_float64_buffer_keeps_torchs_passes_and_torchs_numbers(monkeypatch):
    """The kernels are float32-only: a float64 buffer steps with torch's passes (the
    kernels never called) and still equals `torch.optim.Adam(foreach=True)`; its L2 value
    is the L2 node's."""
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(9, 24), torch.nn.Tanh(), torch.nn.Linear(24, 3)).double()
    want_l2 = 1e-4 * sum((p.detach() * p.detach()).sum() for p in net.parameters())
    flat = FlatParameters(list(net.parameters()))
    assert not flat.on_cpu32 and not flat.kernels()
    assert flat.l2_value(1e-4).item() == want_l2.item()
    monkeypatch.setattr(flat_kernels, "adam_passes", lambda *a: pytest.fail("a float32 kernel on a float64 buffer"))
    _steps_equal_foreach_adam(net, flat, torch.randn(32, 9, dtype=torch.float64), 4)
