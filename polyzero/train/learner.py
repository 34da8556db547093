"""The learner: minibatch updates of the algorithm's loss plus c ||theta||^2."""

from __future__ import annotations

import math

import numpy as np
import torch

from .flat import FlatParameters, adam_step, fused_adam_step, lean_adam_group, one_gradient_each, scaled_sum


def learning_rate(train_cfg, update: int) -> float:
    """The learning rate of minibatch update `update` (counted from 0) under train.lr_schedule
    (cosine: over train.lr_steps learning steps, or train.steps where that is 0)."""
    if train_cfg.lr_schedule == "constant":
        return train_cfg.learning_rate
    total = (train_cfg.lr_steps or train_cfg.steps) * train_cfg.minibatches_per_step
    return train_cfg.learning_rate * 0.5 * (1.0 + math.cos(math.pi * min(update, total) / total))


def make_optimizer(train_cfg, params) -> torch.optim.Optimizer:
    """Adam or SGD with momentum, the step as foreach operators (each dispatched once per
    list of tensors: bit for bit the single-tensor loop's numbers, tests/test_learner_exact.py,
    a little cheaper); with train.fused_step one fused kernel per tensor (a fifth of the
    cost on small networks; the same update to float rounding, docs/benchmarks.md). A
    resumed checkpoint keeps the kind of step it was saved with, fused or not
    (load_state_dict takes the saved settings; `Learner.load_state_dict` moves one of the
    single-tensor loop to the foreach step, the same numbers), so a resumed run stays exact."""
    params = list(params)
    native = all(p.device.type in ("cpu", "cuda") for p in params)
    kind = {"fused": True} if train_cfg.fused_step and native else {"foreach": True} if native else {}
    if train_cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=train_cfg.learning_rate, **kind)
    return torch.optim.SGD(params, lr=train_cfg.learning_rate, momentum=train_cfg.momentum, **kind)


class L2Penalty(torch.autograd.Function):
    """c ||theta||^2 as one node of the graph instead of a product, a sum and an add per
    parameter tensor (fewer operators and graph nodes: with the foreach step, 1.05-1.11x
    faster updates of the small networks at batch 32, benchmarks/results/
    learner_speed_small_nets_b32.md). Bit for bit the graph it replaces, `c * sum((p * p)
    .sum() for p in params)`: the value sums the per-tensor sums in the same order, and
    the gradient c p + c p (the product's two factors) reaches each parameter first, as
    the replaced branch's did (autograd runs the nodes made last first), so the loss's
    gradients are added to it in the same order. With `flat` (the parameters' buffer)
    the products are one operator each over the buffer, the same numbers per element."""

    @staticmethod
    def forward(ctx, c: float, flat: FlatParameters | None, *params: torch.Tensor) -> torch.Tensor:
        ctx.c = c
        ctx.save_for_backward(*params)
        if flat is not None:
            return flat.l2_value(c)
        return scaled_sum(c, [square.sum() for square in torch._foreach_mul(params, params)])

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        # One tensor per parameter even with the buffer: autograd adds the loss's
        # gradient into each in place only where it holds the tensor's storage alone
        # (else it allocates a sum, slowly where the other is a transposed view).
        halves = torch._foreach_mul(ctx.saved_tensors, grad * ctx.c)
        torch._foreach_add_(halves, halves)
        return (None, None, *halves)


class Learner:
    def __init__(self, algo, train_cfg, device: torch.device, flat: bool = True):
        self.algo = algo
        self.cfg = train_cfg
        self.device = device
        self.net = algo.build_network().to(device)
        self._net_modules = list(self.net.modules())
        params = list(self.net.parameters())
        # One buffer for the parameters and one for their gradients: the optimizer steps
        # one tensor (train/flat.py; the same numbers, checkpoints in the per-tensor
        # layout). flat=False keeps the tensors apart (the benchmark's and tests' A/B).
        self.flat = FlatParameters(params) if flat and FlatParameters.fits(params) else None
        self.optimizer = make_optimizer(train_cfg, [self.flat.data] if self.flat else params)
        self.updates = 0
        self._l2_preload = None  # train/flat.py's preload_l2, decided at the first update
        # train.compile: the loss's forward and backward through torch.compile (inductor),
        # compiled at the first update (minutes on a small CPU).
        self._loss = torch.compile(algo.loss) if train_cfg.compile else algo.loss

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """One gradient step on a minibatch; returns the loss terms."""
        if not all(m.training for m in self._net_modules):  # Module.train walks them all (0.06 ms)
            self.net.train()
        tensors = {k: torch.from_numpy(v) for k, v in batch.items() if k != "index"}
        if self.device.type != "cpu":  # on the CPU `to` returns the tensor itself: a call saved per key
            tensors = {k: v.to(self.device) for k, v in tensors.items()}
        loss, parts = self._loss(self.net, tensors)
        priority = parts.pop("priority", None)
        # train.fused_step with Adam on the buffer: the L2 gradient is added inside the
        # fused kernel (its weight_decay) and the value is one dot product.
        fold_l2 = bool(self.flat and self.cfg.fused_step and lean_adam_group(self.optimizer, fused=True))
        l2 = self._l2_term(loss, fold_l2)
        if l2.requires_grad:  # the L2 node: its gradient through the graph
            total = loss + l2
            total.backward()
        else:  # a constant (its gradient preloaded, or the fused step's): d total / d loss is 1
            loss.backward()
            with torch.no_grad():
                total = loss + l2  # the same sum, without an AddBackward node to run
        if self.cfg.lr_schedule != "constant":  # else the optimizer keeps its lr (SoG halves it itself)
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate(self.cfg, self.updates)
        if fold_l2:
            fused_adam_step(self.optimizer, self.flat, 2 * self.cfg.l2)
        elif not (self.flat and adam_step(self.optimizer, self.flat)):
            self.optimizer.step()
        self.updates += 1
        out = dict(zip([*parts, "loss/l2", "loss/total"], self._read_back([*parts.values(), l2, total])))
        if priority is not None:
            out["priority"] = priority.cpu().numpy()
        return out

    def _read_back(self, terms: list[torch.Tensor]) -> list[float]:
        """The loss terms as floats: on a GPU one stacked read-back (one device sync, not
        one per term); on the CPU each term's `item` (the same floats; 4 us for five
        terms where stacking them cost 23)."""
        if self.device.type == "cpu":
            return [v.item() for v in terms]
        with torch.no_grad():
            return torch.stack([v if v.dim() == 0 else v.reshape(()) for v in terms]).tolist()

    def _l2_term(self, loss: torch.Tensor, fold_l2: bool) -> torch.Tensor:
        """The L2 term, its gradient in the parameters' gradients before the backward
        pass: written into the buffer where each parameter gets one loss gradient (the
        same sums as the node, cheaper: one operator on the buffer instead of a graph
        node with an edge per tensor), else through the L2 node; with `fold_l2` only its
        value (the fused step adds the gradient)."""
        if fold_l2:
            self.flat.zero_grad()
            with torch.no_grad():
                return self.flat.l2_value_to_rounding(self.cfg.l2)
        if self.flat and self._l2_preload is None:
            self._l2_preload = one_gradient_each(loss, self.flat.params)
        if self._l2_preload:
            with torch.no_grad():
                return self.flat.preload_l2(self.cfg.l2)
        if self.flat:
            self.flat.zero_grad()
        else:
            self.optimizer.zero_grad(set_to_none=True)
        return L2Penalty.apply(self.cfg.l2, self.flat, *self.net.parameters())

    def weights(self) -> dict[str, torch.Tensor]:
        """A CPU copy of the weights, for actors and checkpoints."""
        return {k: v.detach().to("cpu", copy=True) for k, v in self.net.state_dict().items()}

    def state_dict(self) -> dict:
        """Weights, the optimizer's state in the per-tensor layout, the update count."""
        optimizer = self.optimizer.state_dict()
        if self.flat:
            optimizer = self.flat.split_state(optimizer)
        return {"net": self.weights(), "optimizer": optimizer, "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state["net"])
        optimizer = state["optimizer"]
        self.optimizer.load_state_dict(self.flat.join_state(optimizer) if self.flat else optimizer)
        for group in self.optimizer.param_groups:  # saved before the foreach step: the same numbers
            if not group.get("fused") and group.get("foreach") is None and self.optimizer.defaults.get("foreach"):
                group["foreach"] = True
        self.updates = int(state["updates"])
