"""The counterfactual value-and-policy network (Student of Games paper,
"Counterfactual value-and-policy networks", Fig. 6) and the value function that
puts it at GT-CFR's leaves.

A query is a public belief state beta = (s_pub, r). The network sees an encoding
of s_pub and both players' ranges and answers, for every information state of
both players, a value, and for every information state of each player a policy
(one policy head per player, since their action spaces may differ; the acting
player's is the prior p).

Its input and slots are `polyzero.sog.belief_encoding.BeliefEncoding`'s.

**Values.** The network predicts each information state's *normalised* value
v(s) = cfv(s) / (sum over worlds w in s of chance(w) reach_-i(w)): the player's
expected return given s under the query's beliefs, in the game's utility units
(the quantity GT-CFR's PUCT uses). `NetworkValueFunction` multiplies it back by
the query's chance-and-opponent reach, so the network need not learn the scale
of the ranges; its input ranges are normalised to sum 1 per player for the same
reason (a subgame's equilibrium does not depend on a range's scale).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from polyzero.games.public_states import DECISION, PublicState
from polyzero.nets.towers import DenseResidualTower, ResidualTower

from .belief_encoding import BeliefEncoding
from .values import BATCH_FROM, Evaluation, Query, ValueFunction, bincount_parts, world_reach

# Rows of one batched policy product (`CVPN.policy_rows_of`): about 100 MB of gathered
# head weights on London's network, where 2,000 rows at once raised peak memory by 0.78 GB
# (benchmarks/results/sog_london_memory_gather.json).
ROWS_PER_PRODUCT = 256

__all__ = ["CVPN", "BeliefEncoding", "BoardTrunk", "Example", "NetworkValueFunction", "build_cvpn", "cvpn_loss"]


class BoardTrunk(nn.Module):
    """AlphaZero's residual tower of 3x3 convolutions over a perfect-information game's
    board: the input's first C x H x W entries are the board planes, the rest (side to
    move, ranges) enter as constant planes; a 1x1 convolution to 8 planes, then a
    linear layer to `width` units."""

    def __init__(self, planes: tuple[int, int, int], extra: int, channels: int, blocks: int, width: int):
        super().__init__()
        self.planes = tuple(planes)
        c, h, w = self.planes
        self.tower = ResidualTower(c + extra, channels, blocks)
        self.reduce = nn.Sequential(nn.Conv2d(channels, 8, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.out = nn.Linear(8 * h * w, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c, h, w = self.planes
        n = c * h * w
        board = x[:, :n].reshape(-1, c, h, w)
        extra = x[:, n:, None, None].expand(-1, -1, h, w)
        y = self.reduce(self.tower(torch.cat([board, extra], dim=1)))
        return F.relu(self.out(y.flatten(1)))


class CVPN(nn.Module):
    """A CVPN (Fig. 6): a trunk, a value head per player and a policy head per player.
    The trunk is an MLP of `layers` x `width`, a dense residual tower of `blocks`
    blocks of `width` (`blocks` > 0), or a `BoardTrunk` (`board` given). Outputs
    values [B, 2, S] and policy logits [B, 2, S, A]."""

    def __init__(
        self,
        input_size: int,
        slots: list[int],
        num_actions: int,
        width: int = 128,
        layers: int = 3,
        blocks: int = 0,
        board: BoardTrunk | None = None,
    ):
        super().__init__()
        self.slots = list(slots)
        self.max_slots = max(slots)
        self.num_actions = num_actions
        # The trunk's kind, read once: `hasattr` on a module without the attribute goes
        # through nn.Module.__getattr__'s AttributeError, microseconds per query.
        self.trunk_kind = "board" if board is not None else "residual" if blocks > 0 else "mlp"
        if board is not None:
            self.board = board
        elif blocks > 0:
            self.residual = DenseResidualTower(input_size, width, blocks)
        else:
            dims = [input_size] + [width] * layers
            self.trunk = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.value = nn.ModuleList(nn.Linear(width, s) for s in slots)
        self.policy = nn.ModuleList(nn.Linear(width, s * num_actions) for s in slots)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The trunk's output [B, width]. The MLP's layers are `F.linear` on their
        parameters, what `nn.Linear.forward` computes, without a module call's hooks
        machinery (a tenth of a small search's query)."""
        if self.trunk_kind == "board":
            return self.board(x)
        if self.trunk_kind == "residual":
            return self.residual(x)
        for layer in cast(list[nn.Linear], self.trunk):
            x = F.relu(F.linear(x, layer.weight, layer.bias))
        return x

    def values(self, h: torch.Tensor) -> torch.Tensor:
        """Normalised values [B, 2, S] from the trunk's output (stacked where both
        players have S slots: the same numbers, one tensor built instead of three)."""
        heads = [F.linear(h, head.weight, head.bias) for head in cast(list[nn.Linear], self.value)]
        if all(s == self.max_slots for s in self.slots):
            return torch.stack(heads, dim=1)
        values = h.new_zeros((h.shape[0], 2, self.max_slots))
        for p, s in enumerate(self.slots):
            values[:, p, :s] = heads[p]
        return values

    def policy_rows(self, h: torch.Tensor, player: int, slots) -> torch.Tensor:
        """`player`'s policy logits at `slots` [k, A] from one trunk output h [width]: only
        those rows of the head (it has 199 x 798 outputs on Scotland Yard's London board,
        where a search reads one row for the detectives, a few dozen for Mr X)."""
        head = cast(nn.Linear, self.policy[player])
        weight = head.weight.view(self.slots[player], self.num_actions, -1)[slots]
        return weight @ h + head.bias.view(self.slots[player], self.num_actions)[slots]

    def policy_rows_of(self, h: torch.Tensor, rows: list[int], players: list[int], slots: list) -> torch.Tensor:
        """`policy_rows(h[rows[j]], players[j], slots[j])` for every j, one after the other
        [sum of the slots' lengths, A], in batched products per player of up to
        ROWS_PER_PRODUCT rows (instead of one per query): each output is the same dot
        product, summed by another kernel, so its last bits may differ
        (tests/test_sog_leduc_step.py)."""
        lengths = [len(t) for t in slots]
        out = h.new_empty((sum(lengths), self.num_actions))
        starts = np.cumsum([0, *lengths[:-1]])
        for p in sorted(set(players)):
            mine = [j for j, q in enumerate(players) if q == p]
            index = torch.cat([slots[j] for j in mine])
            owner = torch.as_tensor(np.repeat([rows[j] for j in mine], [lengths[j] for j in mine]), device=h.device)
            at = torch.as_tensor(
                np.concatenate([np.arange(starts[j], starts[j] + lengths[j]) for j in mine]), device=h.device
            )
            head = cast(nn.Linear, self.policy[p])
            weights = head.weight.view(self.slots[p], self.num_actions, -1)
            bias = head.bias.view(self.slots[p], self.num_actions)
            # The gather copies an [A, width] block per row (0.4 MB on London, where a
            # call of Mr X's can have thousands of rows): at most ROWS_PER_PRODUCT at a time.
            for c in range(0, len(index), ROWS_PER_PRODUCT):
                piece = index[c : c + ROWS_PER_PRODUCT]
                part = torch.bmm(weights[piece], h[owner[c : c + ROWS_PER_PRODUCT]].unsqueeze(-1)).squeeze(-1)
                out[at[c : c + ROWS_PER_PRODUCT]] = part + bias[piece]
        return out

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.features(x)
        b = h.shape[0]
        logits = h.new_zeros((b, 2, self.max_slots, self.num_actions))
        for p, s in enumerate(self.slots):
            logits[:, p, :s] = self.policy[p](h).view(b, s, self.num_actions)
        return self.values(h), logits


def build_cvpn(encoding: BeliefEncoding, width: int, layers: int, blocks: int = 0, channels: int = 0) -> CVPN:
    """An MLP CVPN; with `blocks` > 0 (`net.kind = "resnet"`) a residual one: AlphaZero's
    convolutional tower of `channels` where the game has a board (`encoding.planes`) and
    `channels` > 0, a dense residual tower of `width` otherwise."""
    board = None
    if blocks > 0 and channels > 0 and encoding.planes is not None:
        c, h, w = encoding.planes
        board = BoardTrunk(encoding.planes, encoding.input_size - c * h * w, channels, blocks, width)
    return CVPN(encoding.input_size, encoding.slots, encoding.num_actions, width, layers, blocks, board)


@dataclass
class Example:
    """One training example of the CVPN (numpy, fixed shapes per game)."""

    x: np.ndarray  # [input]
    value: np.ndarray  # [2, S] normalised value targets
    value_mask: np.ndarray  # [2, S]
    policy: np.ndarray  # [S, A] the acting player's policy targets
    policy_mask: np.ndarray  # [S]
    legal: np.ndarray  # [S, A]
    player: int  # the acting player (0 where there is none)


EXAMPLE_FIELDS = ("x", "value", "value_mask", "policy", "policy_mask", "legal", "player")


def cvpn_loss(
    net: CVPN, batch: dict[str, torch.Tensor], value_weight: float = 1.0, policy_weight: float = 0.05
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Huber loss on the value targets present, cross-entropy on the policy targets
    present ("Query collection": Huber for values, cross entropy for policies).

    Each operator here costs 4-23 us on a CPU (these terms are an eighth of an update at
    batch 32), so the acting player's logits are one gather (backward: a scatter_add,
    where an advanced index's is an index_put with accumulation), the illegal mask is
    made once, and a weight of 1 multiplies nothing: the same numbers and gradients bit
    for bit (tests/test_cvpn_loss_exact.py)."""
    values, logits = net(batch["x"])
    vmask, target = batch["value_mask"], batch["value"]
    # F.huber_loss's own kernel without the wrapper's broadcast_tensors (two views and
    # their backward nodes) where the shapes already agree; reduction 0 is "none" (the
    # enum F passes: the stub's str is wrong)
    huber = (
        torch._C._nn.huber_loss(values, target, 0, 1.0)  # type: ignore[arg-type]
        if values.shape == target.shape
        else F.huber_loss(values, target, reduction="none", delta=1.0)
    )
    value_loss = (huber * vmask).sum() / vmask.sum().clamp(min=1.0)
    b, _, s, a = logits.shape
    player = batch["player"]
    acting = (player if player.dtype == torch.int64 else player.long()).view(b, 1, 1, 1).expand(b, 1, s, a)
    own = logits.gather(1, acting).view(b, s, a)
    illegal = ~batch["legal"]
    log_p = torch.log_softmax(own.masked_fill(illegal, -1e9), dim=-1)
    ce = -(batch["policy"] * log_p.masked_fill(illegal, 0.0)).sum(-1)
    pmask = batch["policy_mask"]
    policy_loss = (ce * pmask).sum() / pmask.sum().clamp(min=1.0)
    total = _weighted(value_weight, value_loss) + _weighted(policy_weight, policy_loss)
    return total, {
        "loss/value": value_loss.detach(),
        "loss/policy": policy_loss.detach(),
        "loss/total_unregularised": total.detach(),
    }


def _weighted(weight: float, loss: torch.Tensor) -> torch.Tensor:
    """weight * loss; with a weight of 1 the loss itself (1 x is x, its gradient g x 1 is g)."""
    return loss if weight == 1.0 else weight * loss


class NetworkValueFunction(ValueFunction):
    """GT-CFR's leaf values from a CVPN: one forward pass per batch of queries.

    `listener`, when set, sees every batch of queries (the actors' and solvers'
    query collection, "Query collection" and "Recursive queries")."""

    def __init__(self, encoding: BeliefEncoding, net: CVPN, device: torch.device | str = "cpu"):
        self.encoding = encoding
        self.net = net.to(device).eval()
        self.device = torch.device(device)
        self.listener = None
        self.queries = 0
        # All queries' policy rows in one gather and product per player where a batch
        # has `BATCH_FROM` decisions or more (False: always one per query, the reference
        # `CVPN.policy_rows_of` is measured against).
        self.batched_rows = True

    def load_state_dict(self, weights: dict) -> None:
        self.net.load_state_dict(weights)
        self.net.eval()

    def predict(self, queries: list[Query]) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """Normalised values [B, 2, S] and, per query at a decision, the acting player's
        policy logits at its information states' slots [info states, A] (None elsewhere)."""
        values, decisions, logits, ends = self._forward(queries)
        rows: list[np.ndarray | None] = [None] * len(queries)
        if decisions:
            for i, row in zip(decisions, np.split(logits, ends)):
                rows[i] = row
        return values, rows

    def _forward(self, queries: list[Query]) -> tuple[np.ndarray, list[int], np.ndarray, np.ndarray]:
        """`predict`'s numbers with the decisions' logit rows in one array: values
        [B, 2, S], the indices of the queries at decisions, their rows one after the
        other (float64) and where each but the first starts. One copy out of torch for
        the batch, not one per query: the same numbers."""
        x = self.encoding.inputs([q.public_state for q in queries], [q.ranges for q in queries])
        decisions = [i for i, q in enumerate(queries) if q.public_state.kind == DECISION]
        slots = [self._slot_tensor(queries[i].public_state) for i in decisions]
        with torch.inference_mode():  # no autograd bookkeeping at all: a third off a single query's call
            h = self.net.features(torch.from_numpy(x).to(self.device))
            values = self.net.values(h).cpu().numpy().astype(float)
            if not decisions:
                logits = np.zeros((0, self.net.num_actions))
            elif self.batched_rows and len(decisions) >= BATCH_FROM:  # fewer: cheaper one by one
                players = [queries[i].public_state.player for i in decisions]
                logits = self.net.policy_rows_of(h, decisions, players, slots).cpu().numpy().astype(float)
            else:  # the reference: one product per query
                parts = [
                    self.net.policy_rows(h[i], queries[i].public_state.player, t) for i, t in zip(decisions, slots)
                ]
                logits = torch.cat(parts).cpu().numpy().astype(float)
        return values, decisions, logits, np.cumsum([len(t) for t in slots])[:-1]

    def _slot_tensor(self, node: PublicState) -> torch.Tensor:
        """The acting player's `slot_index` at `node` on the network's device, kept with the node."""
        key = ("slot_tensor", node.player, str(self.device))
        out = node.derived.get(key)
        if out is None:
            out = torch.tensor(self.encoding.slot_index(node, node.player), device=self.device)
            node.derived[key] = out
        return out

    def evaluate(self, queries: list[Query]) -> list[Evaluation]:
        if self.listener is not None:
            self.listener(queries)
        self.queries += len(queries)
        values, decisions, logits, ends = self._forward(queries)
        policies: list[np.ndarray | None] = [None] * len(queries)
        if decisions:  # the priors: a softmax over each row's legal actions, all rows at once
            legal = np.concatenate([self.encoding.legal_rows(queries[i].public_state) for i in decisions])
            own = np.where(legal, logits, -np.inf)
            own = np.exp(own - own.max(axis=1, keepdims=True))
            for i, prior in zip(decisions, np.split(own / own.sum(axis=1, keepdims=True), ends)):
                policies[i] = prior
        cfv = self._counterfactual_values(queries, values)
        return [Evaluation(c, policy) for c, policy in zip(cfv, policies)]

    def _counterfactual_values_of(self, query: Query, values: np.ndarray) -> list[np.ndarray]:
        node, reach = query.public_state, world_reach(query.public_state, query.ranges)
        return [
            values[p, self.encoding.slot_index(node, p)] * self.encoding.reach_mass(node, query.ranges, p, reach)
            for p in range(2)
        ]

    def _counterfactual_values(self, queries: list[Query], values: np.ndarray) -> list[list[np.ndarray]]:
        """Per query and player: the normalised values at the information states' slots
        times their chance-and-opponent reach (`BeliefEncoding.reach_mass`), for all
        queries at once: one `np.bincount` per player whose bins are the queries'
        information states one after the other (each adds its own worlds in their
        order), then elementwise products: `reach_mass`'s numbers bit for bit. Fewer
        than `BATCH_FROM` queries go one by one (`reach_mass`), which is cheaper there."""
        if len(queries) < BATCH_FROM:
            return [self._counterfactual_values_of(q, v) for q, v in zip(queries, values)]
        nodes = [q.public_state for q in queries]
        chance = np.concatenate([n.world_chance for n in nodes])
        reach = [
            np.concatenate([np.asarray(q.ranges[p], float)[n.world_info[p]] for q, n in zip(queries, nodes)])
            for p in range(2)
        ]
        out: list[list[np.ndarray]] = [[] for _ in queries]
        for p in range(2):
            counts = [len(n.info_states[p]) for n in nodes]
            mass, starts = bincount_parts([n.world_info[p] for n in nodes], chance * reach[1 - p], counts)
            slots = np.concatenate([self.encoding.slot_index(n, p) for n in nodes])
            cfv = values[np.repeat(np.arange(len(nodes)), counts), p, slots] * mass
            for row, part in zip(out, np.split(cfv, starts[1:])):
                row.append(part)
        return out
