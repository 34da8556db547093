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


class Learner:
    def __init__(self, algo, train_cfg, device: torch.device):
        self.algo = algo
        self.cfg = train_cfg
        self.device = device
        self.net = algo.build_network().to(device)
        if train_cfg.optimizer == "adam":
            self.optimizer = torch.optim.Adam(self.net.parameters(), lr=train_cfg.learning_rate)
        else:
            self.optimizer = torch.optim.SGD(self.net.parameters(), lr=train_cfg.learning_rate,
                                             momentum=train_cfg.momentum)
        self.updates = 0

    def update(self, batch: dict[str, np.ndarray]) -> dict[str, float]:
        """One gradient step on a minibatch; returns the loss terms."""
        self.net.train()
        tensors = {k: torch.from_numpy(v).to(self.device) for k, v in batch.items() if k != "index"}
        loss, parts = self.algo.loss(self.net, tensors)
        priority = parts.pop("priority", None)
        l2 = self.cfg.l2 * sum((p * p).sum() for p in self.net.parameters())
        total = loss + l2
        self.optimizer.zero_grad(set_to_none=True)
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

    def weights(self) -> dict[str, torch.Tensor]:
        """A CPU copy of the weights, for actors and checkpoints."""
        return {k: v.detach().to("cpu", copy=True) for k, v in self.net.state_dict().items()}

    def state_dict(self) -> dict:
        return {"net": self.weights(), "optimizer": self.optimizer.state_dict(), "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state["net"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates = int(state["updates"])
