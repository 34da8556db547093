"""A network's parameters as views into one contiguous buffer, and their gradients as
views into a second, so that the optimizer's step and the L2 term run as a handful of
operators on one tensor instead of a handful per parameter tensor.

Every operator involved is elementwise (Adam's and SGD's foreach steps, the L2 term's
product and its gradient), so each element sees the same arithmetic as when the
tensors were apart: the same numbers bit for bit (tests/test_flat_params.py,
tests/test_learner_exact.py). The
optimizer's state in a checkpoint keeps the per-tensor layout (`split_state`,
`join_state`), so checkpoints written with and without the flat buffer load into either.
"""

from __future__ import annotations

import functools
import operator

import numpy as np
import torch

from . import flat_kernels

# Optimizer slots that are one number for every parameter (Adam's step count); the
# others (moments, momentum) hold one number per element.
SHARED_SLOTS = ("step",)
ALIGN_BYTES = 64


class FlatParameters:
    """`params` (one dtype, one device) moved into `self.data`; `self.grad` holds their
    gradients, which autograd adds into in place (`param.grad` is a view of it before
    the backward pass: `zero_grad` zeroes the buffer instead of dropping the views)."""

    def __init__(self, params: list[torch.nn.Parameter]):
        self.params = list(params)
        self.shapes = [p.shape for p in self.params]
        first = self.params[0]
        # Each piece starts 64 bytes into the buffer's alignment, as a tensor of its own
        # does (the allocator's): MKL's matrix products round differently on operands
        # aligned differently. The padding stays 0 (its gradient is 0, so is its step).
        align = max(1, ALIGN_BYTES // first.element_size())
        self.bounds: list[tuple[int, int]] = []
        start = 0
        for p in self.params:
            self.bounds.append((start, start + p.numel()))
            start += -(-p.numel() // align) * align
        self.data = torch.zeros(start, dtype=first.dtype, device=first.device)
        self.grad = torch.zeros_like(self.data)
        with torch.no_grad():
            for p, view in zip(self.params, self.views(self.data)):
                view.copy_(p)
                p.data = view
        self.grad_views = self.views(self.grad)
        self.data.grad = self.grad  # the one tensor the optimizer steps
        # Scratch for the L2 value's squares and Adam's denominator (used in turn), its
        # views made once: slicing 14 views cost as much as the squares (0.14 ms).
        self.scratch = torch.empty_like(self.data)
        self.scratch_views = self.views(self.scratch)
        self.on_cpu32 = self.data.device.type == "cpu" and self.data.dtype == torch.float32
        self.bounds_array = np.asarray(self.bounds, np.int64).reshape(-1, 2)
        self._kernels: tuple[int, bool] = (0, False)  # (torch threads, `kernels()` at that count)
        self._adam_kernels: tuple = (None, False)  # (`adam_key`, `adam_kernels()` there)
        self._adam_views: tuple | None = None  # (exp_avg, exp_avg_sq, their and the buffers' arrays)

    @staticmethod
    def fits(params: list[torch.Tensor]) -> bool:
        """One dtype and one device (a buffer holds one of each)."""
        return bool(params) and len({(p.dtype, p.device) for p in params}) == 1

    def views(self, flat: torch.Tensor) -> list[torch.Tensor]:
        """`flat`'s pieces shaped like the parameters."""
        return [flat[a:b].view(shape) for (a, b), shape in zip(self.bounds, self.shapes)]

    def zero_grad(self) -> None:
        """Zero gradients, accumulated into the buffer (0 + g is g)."""
        self.grad.zero_()
        self._relink()

    def _relink(self) -> None:
        """A parameter whose gradient was replaced or dropped (`net.zero_grad()`) gets
        its view back; so does the buffer (`optimizer.zero_grad()`)."""
        if self.data.grad is not self.grad:
            self.data.grad = self.grad
        for p, view in zip(self.params, self.grad_views):
            if p.grad is not view:
                p.grad = view

    def preload_l2(self, c: float) -> torch.Tensor:
        """The L2 term c ||theta||^2 outside the graph: its gradient c theta + c theta
        written into the gradient buffer before the backward pass, which adds each
        parameter's loss gradient to it, and its value. The L2 node's numbers where
        every parameter gets one loss gradient (l2 + g, as the node's buffer summed
        them: `one_gradient_each`); with two or more the node summed (l2 + g1) + g2."""
        # theta * 2c is c theta + c theta exactly (float32(2c) = 2 float32(c), and a
        # doubling is exact) wherever c theta is a normal float32: one pass instead of
        # two (tests/test_flat_params.py). Where |c theta| < 2^-126 (weights of ~1e-34
        # at c = 1e-4) c theta rounds coarser and the two may differ in the last bit.
        if self.kernels():  # the gradient and the value in one compiled call
            grad = self.grad.numpy()
            value = flat_kernels.l2_pass(self.data.numpy(), self.bounds_array, flat_kernels.lanes(), grad, 2 * c, c)
            torch.autograd.graph.increment_version(self.grad)  # written through NumPy
            self._relink()
            return torch.tensor(value, dtype=torch.float32)
        torch.mul(self.data, 2 * c, out=self.grad)
        self._relink()
        return self.l2_value(c)

    def kernels(self) -> bool:
        """Whether train/flat_kernels.py's L2 kernels give torch's bits here (a float32
        CPU buffer, checked once per buffer layout and torch thread count; the answer
        kept per thread count: asking the checks' records cost 0.05 ms a step in training)."""
        threads = torch.get_num_threads()
        if self._kernels[0] != threads:
            ok = (
                self.on_cpu32
                and flat_kernels.matches_torch(len(self.data))
                and flat_kernels.sums_match_torch(self.bounds_array, len(self.data))
            )
            self._kernels = (threads, ok)
        return self._kernels[1]

    def adam_kernels(self, lr: float, beta1: float, beta2: float, eps: float) -> bool:
        """Whether flat_kernels' Adam passes give torch's bits here (`matches_torch`, asked
        once per thread count and lerp branch, the answer kept)."""
        key = flat_kernels.adam_key(len(self.data), beta1)
        if self._adam_kernels[0] != key:
            ok = self.on_cpu32 and flat_kernels.matches_torch(len(self.data), lr, beta1, beta2, eps)
            self._adam_kernels = (key, ok)
        return self._adam_kernels[1]

    def adam_views(self, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor) -> tuple:
        """The NumPy views `flat_kernels.adam_arrays` takes, kept while the moments are the
        same tensors (a checkpoint's load replaces them)."""
        held = self._adam_views
        if held is None or held[0] is not exp_avg or held[1] is not exp_avg_sq:
            arrays = tuple(t.numpy() for t in (self.data, self.grad, exp_avg, exp_avg_sq, self.scratch))
            self._adam_views = held = (exp_avg, exp_avg_sq, arrays)
        return held[2]

    def l2_value(self, c: float) -> torch.Tensor:
        """c ||theta||^2 as the L2 node computed it: c times the per-tensor sums of
        squares added in order. On the CPU in float32 the sums are added as NumPy
        float32 scalars (the same IEEE additions, without an operator each); with the
        kernels the squares are summed as they are made (no scratch buffer written and
        read back: torch.mul's squares, torch.sum's order)."""
        if self.kernels():
            no_grad = flat_kernels.NO_GRAD
            value = flat_kernels.l2_pass(self.data.numpy(), self.bounds_array, flat_kernels.lanes(), no_grad, 0.0, c)
            return torch.tensor(value, dtype=torch.float32)
        torch.mul(self.data, self.data, out=self.scratch)
        sums = [square.sum() for square in self.scratch_views]
        if not self.on_cpu32:
            return scaled_sum(c, sums)
        return _scaled_value(c, list(map(np.float32, torch.stack(sums).tolist())))

    def l2_value_to_rounding(self, c: float) -> torch.Tensor:
        """c ||theta||^2 as one dot product over the buffer (its padding is 0): the L2
        node's value to float rounding, for train.fused_step."""
        return c * torch.dot(self.data, self.data)

    def split_state(self, flat_state: dict) -> dict:
        """An optimizer's state_dict over the buffer as the same optimizer's over the
        separate parameters: each buffer-sized slot cut into per-parameter copies."""
        state: dict[int, dict] = {}
        for slots in flat_state["state"].values():
            for i, pieces in enumerate(self._split_slots(slots)):
                state[i] = pieces
        groups = [{**g, "params": list(range(len(self.params)))} for g in flat_state["param_groups"]]
        return {"state": state, "param_groups": groups}

    def _split_slots(self, slots: dict) -> list[dict]:
        out: list[dict] = [{} for _ in self.params]
        for name, value in slots.items():
            elementwise = torch.is_tensor(value) and name not in SHARED_SLOTS
            parts = [v.clone() for v in self.views(value)] if elementwise else None
            for i, piece in enumerate(out):
                piece[name] = parts[i] if parts else value.clone() if torch.is_tensor(value) else value
        return out

    def _join(self, pieces: list[torch.Tensor]) -> torch.Tensor:
        flat = torch.zeros_like(self.data, dtype=pieces[0].dtype, device=pieces[0].device)
        for view, piece in zip(self.views(flat), pieces):
            view.copy_(piece)
        return flat

    def join_state(self, state: dict) -> dict:
        """The inverse of `split_state`: a per-parameter state_dict (a checkpoint's) as the
        buffer's. Elementwise slots are concatenated; the shared ones (Adam's step count,
        the same for every parameter) are taken from the first parameter's."""
        slots: dict = {}
        per_param = [state["state"].get(i) for i in range(len(self.params))]
        if any(s is not None for s in per_param):
            if any(s is None for s in per_param):
                raise ValueError("the optimizer state has some parameters and not others")
            for name, value in per_param[0].items():
                elementwise = torch.is_tensor(value) and name not in SHARED_SLOTS
                slots[name] = self._join([s[name] for s in per_param]) if elementwise else value
        groups = [{**g, "params": [0]} for g in state["param_groups"]]
        return {"state": {0: slots} if slots else {}, "param_groups": groups}


def _scaled_value(c: float, sums) -> torch.Tensor:
    """c times float32 sums added in order, as a float32 tensor (the L2 node's value on
    the CPU: NumPy float32 scalars make the same IEEE additions without an operator each;
    flat_kernels.l2_pass the same in its pass)."""
    total = functools.reduce(operator.add, sums)
    return torch.tensor(float(np.float32(c) * total), dtype=torch.float32)


def scaled_sum(c: float, sums) -> torch.Tensor:
    """c times the per-tensor sums of squares added in order (the L2 term's value; the
    graph it replaced started from 0, and 0 + s is s)."""
    return c * functools.reduce(operator.add, sums)


def one_gradient_each(loss: torch.Tensor, params: list[torch.Tensor]) -> bool:
    """Whether the graph behind `loss` reaches each parameter by one edge at most (a
    network used once per loss, as AlphaZero's and the CVPN's; MuZero's g, unrolled K
    times, is reached K times)."""
    edges: dict[int, int] = {}
    stack, seen = [loss.grad_fn], set[object]()
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for child, _ in node.next_functions:
            leaf = getattr(child, "variable", None)
            if leaf is not None:
                edges[id(leaf)] = edges.get(id(leaf), 0) + 1
            elif child is not None:
                stack.append(child)
    return all(edges.get(id(p), 0) <= 1 for p in params)


# Adam settings under which `adam_step` is torch's foreach step (the learner's default).
LEAN_ADAM = {"amsgrad": False, "maximize": False, "capturable": False, "differentiable": False, "fused": None}


def lean_adam_group(optimizer: torch.optim.Optimizer, fused: bool) -> dict | None:
    """The one parameter group of an Adam whose step `adam_step` (foreach, fused False)
    or `fused_adam_step` (fused True) reproduces, else None."""
    if not isinstance(optimizer, torch.optim.Adam) or len(optimizer.param_groups) > 1:
        return None
    group = optimizer.param_groups[0]
    settings = {**LEAN_ADAM, "fused": True if fused else None}
    if group["weight_decay"] or any(group.get(k, v) != v for k, v in settings.items()):
        return None
    if any(torch.is_tensor(x) for x in (group["lr"], *group["betas"])):
        return None
    return group


def adam_step(optimizer: torch.optim.Optimizer, flat: FlatParameters) -> bool:
    """Adam's step on the buffer with torch's foreach arithmetic, operator for operator
    (torch/optim/adam.py, `_multi_tensor_adam` without capturable or amsgrad: the same
    numbers bit for bit, tests/test_learner_exact.py), without the optimizer's per-call
    bookkeeping, which on one tensor cost as much as the arithmetic (a 94-thousand
    parameter network: 0.48 ms against 0.26 ms); on a float32 CPU buffer in one pass
    (train/flat_kernels.py) where that pass was found to give torch's bits on this machine.
    False, having done nothing, where the settings or the state are not those (the first
    step makes the state: torch's step)."""
    group = lean_adam_group(optimizer, fused=False)
    state = optimizer.state.get(flat.data)
    if group is None or not state:
        return False
    steps = state["step"]
    steps.add_(_ONE, alpha=1.0)  # as torch._foreach_add_(steps, tensor(1.0), alpha=1.0)
    count = steps.item()
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
    data = flat.data
    if flat.adam_kernels(lr, beta1, beta2, eps):
        scalars = flat_kernels.scalars(lr, beta1, beta2, eps, count)
        flat_kernels.adam_arrays(flat.adam_views(exp_avg, exp_avg_sq), exp_avg_sq, flat.scratch, *scalars)
        for t in (data, exp_avg, exp_avg_sq):  # written through NumPy: autograd's version counters as torch's ops
            torch.autograd.graph.increment_version(t)
    else:
        flat_kernels.torch_passes(data, flat.grad, exp_avg, exp_avg_sq, flat.scratch, lr, beta1, beta2, eps, count)
    return True


def fused_adam_step(optimizer: torch.optim.Optimizer, flat: FlatParameters, weight_decay: float) -> None:
    """torch's fused Adam kernel on the buffer (train.fused_step), as `Adam.step` with
    fused=True calls it, without that call's bookkeeping (170 thousand parameters: 0.10
    ms against 0.26 ms), adding the L2 term's gradient `weight_decay * theta` (2c theta)
    inside the kernel instead of in a pass of its own: Adam's weight_decay is that
    gradient (torch/optim/adam.py; Kingma & Ba's Adam on the loss plus c ||theta||^2).
    The caller has checked `lean_adam_group(optimizer, fused=True)`."""
    group = optimizer.param_groups[0]
    state = optimizer.state[flat.data]
    if not state:  # as Adam._init_group makes it for the fused step
        state["step"] = torch.zeros((), dtype=torch.float32, device=flat.data.device)
        state["exp_avg"] = torch.zeros_like(flat.data)
        state["exp_avg_sq"] = torch.zeros_like(flat.data)
    torch._foreach_add_([state["step"]], 1)
    beta1, beta2 = group["betas"]
    torch._fused_adam_(
        [flat.data],
        [flat.grad],
        [state["exp_avg"]],
        [state["exp_avg_sq"]],
        [],
        [state["step"]],
        amsgrad=False,
        lr=group["lr"],
        beta1=beta1,
        beta2=beta2,
        weight_decay=weight_decay,
        eps=group["eps"],
        maximize=False,
        grad_scale=None,
        found_inf=None,
    )


_ONE = torch.tensor(1.0)
