"""The learner: minibatch updates of the algorithm's loss plus c ||theta||^2."""

from __future__ import annotations

import math

import numpy as np
import torch


def learning_rate(train_cfg, update: int) -> float:
    """The learning rate of minibatch update `update` (counted from 0) under train.lr_schedule."""
    if train_cfg.lr_schedule == "constant":
        return train_cfg.learning_rate
    total = train_cfg.steps * train_cfg.minibatches_per_step
    return train_cfg.learning_rate * 0.5 * (1.0 + math.cos(math.pi * min(update, total) / total))


def make_optimizer(train_cfg, params) -> torch.optim.Optimizer:
    """Adam or SGD with momentum; with train.fused_step one fused kernel per tensor (the
    optimizer's step 10x cheaper on the Connect Four tower, one CPU thread, under load;
    the same update to float rounding, docs/benchmarks.md). A checkpoint's optimizer
    state keeps the step it was saved with when it is resumed (load_state_dict takes
    the saved settings), so a resumed run stays exact."""
    params = list(params)
    fused = {"fused": True} if train_cfg.fused_step and all(p.device.type in ("cpu", "cuda") for p in params) else {}
    if train_cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=train_cfg.learning_rate, **fused)
    return torch.optim.SGD(params, lr=train_cfg.learning_rate, momentum=train_cfg.momentum, **fused)


class Learner:
    def __init__(self, algo, train_cfg, device: torch.device):
        self.algo = algo
        self.cfg = train_cfg
        self.device = device
        self.net = algo.build_network().to(device)
        self.optimizer = make_optimizer(train_cfg, self.net.parameters())
        self.updates = 0
        # train.compile: the loss's forward and backward through torch.compile (inductor),
        # compiled at the first update (minutes on a small CPU).
        self._loss = torch.compile(algo.loss) if train_cfg.compile else algo.loss

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """One gradient step on a minibatch; returns the loss terms."""
        self.net.train()
        tensors = {k: torch.from_numpy(v).to(self.device) for k, v in batch.items() if k != "index"}
        loss, parts = self._loss(self.net, tensors)
        priority = parts.pop("priority", None)
        self.optimizer.zero_grad(set_to_none=True)
        if self.cfg.fused_step:
            total, l2 = self._backward_l2_as_gradient(loss)
        else:
            l2 = self.cfg.l2 * sum((p * p).sum() for p in self.net.parameters())
            total = loss + l2
            total.backward()
        if self.cfg.lr_schedule != "constant":  # else the optimizer keeps its lr (SoG halves it itself)
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate(self.cfg, self.updates)
        self.optimizer.step()
        self.updates += 1
        out = {k: v.item() for k, v in parts.items()}
        out["loss/l2"] = l2.item()
        out["loss/total"] = total.item()
        if priority is not None:
            out["priority"] = priority.cpu().numpy()
        return out

    def _backward_l2_as_gradient(self, loss: torch.Tensor):
        """train.fused_step: c ||theta||^2 enters as its gradient 2 c theta, added to every
        parameter's gradient in one foreach call, not as a graph of a product and a sum
        per tensor. Returns (total, l2) without graphs."""
        loss.backward()
        with torch.no_grad():
            params = list(self.net.parameters())
            l2 = self.cfg.l2 * torch.stack(torch._foreach_norm(params)).square().sum()
            for p in params:
                if p.grad is None:  # unused by this loss: the L2 term still pulls it to 0
                    p.grad = torch.zeros_like(p)
            torch._foreach_add_([p.grad for p in params], params, alpha=2.0 * self.cfg.l2)
        return loss.detach() + l2, l2

    def weights(self) -> dict[str, torch.Tensor]:
        """A CPU copy of the weights, for actors and checkpoints."""
        return {k: v.detach().to("cpu", copy=True) for k, v in self.net.state_dict().items()}

    def state_dict(self) -> dict:
        return {"net": self.weights(), "optimizer": self.optimizer.state_dict(), "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates = int(state["updates"])
