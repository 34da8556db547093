"""The counterfactual value-and-policy network (Student of Games paper,
"Counterfactual value-and-policy networks", Fig. 6) and the value function that
puts it at GT-CFR's leaves.

A query is a public belief state beta = (s_pub, r). The network sees an encoding
of s_pub and both players' ranges and answers, for every information state of
both players, a value, and for every information state of each player a policy
(one policy head per player, since their action spaces may differ; the acting
player's is the prior p).

**Slots.** A network needs fixed positions for information states. Within a
public state an information state is fixed by the player's private observation
(OpenSpiel's ``private_info=SINGLE_PLAYER`` observer, without perfect recall):
the card in poker. `BeliefEncoding` numbers the private observations a player
can hold, read off the worlds of the game's root public state (the deal), and
gives each information state of a public state its slot. Perfect-information
games have one slot per player (every public state is one world). Games whose
private observation moves after the deal declare their slots (`PRIVATE_SLOTS`):
Scotland Yard's Mr X has one per station (his current position), the
detectives one. Several information states may then share a slot (Mr X's paths
to the same station): the slot's range is their sum, its normalised value and
policy apply to each of them, and its targets are their reach-weighted
aggregates — exact when, as in Scotland Yard, the future depends on the
position only.

**Values.** The network predicts each information state's *normalised* value
v(s) = cfv(s) / (sum over worlds w in s of chance(w) reach_-i(w)): the player's
expected return given s under the query's beliefs, in the game's utility units
(the quantity GT-CFR's PUCT uses). `NetworkValueFunction` multiplies it back by
the query's chance-and-opponent reach, so the network need not learn the scale
of the ranges; its input ranges are normalised to sum 1 per player for the same
reason (a subgame's equilibrium does not depend on a range's scale).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyspiel
import torch
import torch.nn.functional as F
from torch import nn

from polyzero.errors import UsageError
from polyzero.games.public_states import DECISION, PublicState, PublicTree
from polyzero.nets.towers import DenseResidualTower, ResidualTower

from .gtcfr import is_perfect_information
from .values import Evaluation, Query, ValueFunction, counterfactual_reach, info_of, world_reach


def _scotland_yard_slots(game: pyspiel.Game):
    """Mr X (player 0): his station; the detectives (player 1): one slot."""
    stations = game.rules.num_stations
    return [stations, 1], lambda state, player: state.mrx - 1 if player == 0 else 0


def _liars_dice_slots(game: pyspiel.Game):
    """Liar's Dice: a player's dice, as the sorted faces that begin its information
    state string (OpenSpiel has no private observer for it): one slot per multiset."""
    params = game.get_parameters()
    if params["dice_sides"] > 9:  # the string writes one digit per die
        raise UsageError(f"{game}: the CVPN reads Liar's Dice with at most 9 sides per die")
    faces = "".join(str(f) for f in range(1, params["dice_sides"] + 1))
    hands = {"".join(h): i for i, h in enumerate(itertools.combinations_with_replacement(faces, params["numdice"]))}
    return [len(hands)] * 2, lambda state, player: hands[state.information_state_string(player).split(" ")[0]]


def _liars_dice_public(game: pyspiel.Game):
    """Liar's Dice's public state, which OpenSpiel has no public observer for: the bids
    made so far and the call of liar (the information state tensor without the
    player's id and dice: bids only rise, so the set of bids is the sequence), then
    the player to move."""
    params = game.get_parameters()
    private = 2 + params["numdice"] * params["dice_sides"]
    size = game.information_state_tensor_size() - private + 2

    def tensor(state: pyspiel.State) -> np.ndarray:
        out = np.zeros(size, np.float32)
        if not state.is_chance_node():
            out[:-2] = state.information_state_tensor(0)[private:]
            if not state.is_terminal():
                out[size - 2 + state.current_player()] = 1.0
        return out

    return size, tensor


# Games whose private observation is not fixed at the deal, or that OpenSpiel gives no
# private observer: short name -> game -> ([slots per player], slot(state, player)).
PRIVATE_SLOTS = {"scotland_yard": _scotland_yard_slots, "liars_dice": _liars_dice_slots}

# Games without an OpenSpiel public observation tensor: short name -> game -> (size, tensor(state)).
PUBLIC_TENSORS = {"liars_dice": _liars_dice_public}

# Games whose current public observation, with the ranges, determines the rest of the
# game, so the CVPN needs no public history: Scotland Yard when Mr X's information
# state is his station (the London board: its public history would be ~30,000 numbers).
MARKOV_PUBLIC = {"scotland_yard": lambda game: game.rules.station_recall}


def _observer(game: pyspiel.Game, public: bool, recall: bool = True):
    """OpenSpiel's public observer (with perfect recall unless `recall` is False), or a
    player's private observer."""
    from open_spiel.python.observation import make_observation

    kind = (
        pyspiel.IIGObservationType(public_info=True, perfect_recall=recall, private_info=pyspiel.PrivateInfoType.NONE)
        if public
        else pyspiel.IIGObservationType(
            public_info=False, perfect_recall=False, private_info=pyspiel.PrivateInfoType.SINGLE_PLAYER
        )
    )
    what = "public" if public else "private"
    try:
        observer = make_observation(game, kind)
    except (pyspiel.SpielError, RuntimeError, ValueError) as exc:
        raise UsageError(f"{game} has no {what} observer for the CVPN ({exc})".splitlines()[0]) from None
    if observer is None or observer.tensor is None:  # e.g. liars_dice: no public observation tensor
        raise UsageError(f"{game} has no {what} observation tensor for the CVPN's input")
    return observer


class BeliefEncoding:
    """Public-state tensors and information-state slots of one game."""

    def __init__(self, game: pyspiel.Game):
        if game.num_players() != 2:
            raise UsageError("Student of Games' CVPN is for two-player games")
        self.game = game
        self.num_players = 2
        self.num_actions = game.num_distinct_actions()
        self.perfect_information = is_perfect_information(game)
        self.planes: tuple[int, int, int] | None = None
        if self.perfect_information:
            if not game.get_type().provides_observation_tensor:
                raise UsageError(f"{game} provides no observation tensor for the CVPN's input")
            self.slots = [1, 1]
            self.public_size = game.observation_tensor_size() + self.num_players
            shape = tuple(game.observation_tensor_shape())
            self.planes = shape if len(shape) == 3 else None  # a board: the input starts with its planes
            self._slot_of = lambda state, player: 0
            return
        name = game.get_type().short_name
        self._public_fn = None
        if name in PUBLIC_TENSORS:
            self.public_size, self._public_fn = PUBLIC_TENSORS[name](game)
        else:
            markov = MARKOV_PUBLIC.get(name, lambda _: False)(game)
            self._public = _observer(game, public=True, recall=not markov)
            self.public_size = int(self._public.tensor.size)
        rule = PRIVATE_SLOTS.get(name)
        if rule is not None:
            self.slots, self._slot_of = rule(game)
            return
        self._private = _observer(game, public=False)
        root = PublicTree(game, max_depth=0).nodes[0]
        vocabulary: list[dict[str, int]] = [{}, {}]
        for world in root.worlds:
            for p in range(2):
                vocabulary[p].setdefault(self._private_key(world.state, p), len(vocabulary[p]))
        self.slots = [len(v) for v in vocabulary]

        def slot_of(state, player):
            slot = vocabulary[player].get(self._private_key(state, player))
            if slot is None:
                raise UsageError(
                    f"{game}: a private observation of player {player} was not dealt at the root; "
                    "the CVPN's slots need private observations fixed at the deal "
                    "(or a rule in polyzero.sog.cvpn.PRIVATE_SLOTS)"
                )
            return slot

        self._slot_of = slot_of

    @property
    def max_slots(self) -> int:
        return max(self.slots)

    @property
    def input_size(self) -> int:
        return self.public_size + sum(self.slots)

    def input_symmetries(self) -> list:
        """`train.symmetries` on the CVPN's input: the game's board symmetries
        (`polyzero.games.symmetry`) moving the board planes that begin the input and
        leaving the side to move and the ranges after them. Perfect-information games
        only, whose one slot per player no symmetry moves; empty elsewhere."""
        from polyzero.games.symmetry import Symmetry, board_symmetries

        if not self.perfect_information or self.planes is None:
            return []
        board = int(np.prod(self.planes))
        rest = np.arange(board, self.input_size)
        return [
            Symmetry(np.concatenate([sym.obs_index, rest]), sym.action_index)
            for sym in board_symmetries(self.game, self.planes)
        ]

    def _private_key(self, state: pyspiel.State, player: int) -> str:
        self._private.set_from(state, player)  # the tensor: some games' private strings are empty
        return np.asarray(self._private.tensor, np.float32).tobytes().hex()

    def public_tensor(self, node: PublicState) -> np.ndarray:
        return self.public_tensor_of(node.worlds[0].state)

    def public_tensor_of(self, state: pyspiel.State) -> np.ndarray:
        """The public part of the input, from any world of the public state."""
        if self.perfect_information:
            out = np.zeros(self.public_size, np.float32)
            if not state.is_terminal():
                out[:-2] = state.observation_tensor(0)
                if not state.is_chance_node():
                    out[self.public_size - 2 + state.current_player()] = 1.0
            return out
        if self._public_fn is not None:
            return self._public_fn(state)
        self._public.set_from(state, 0)
        return np.asarray(self._public.tensor, np.float32).copy()

    def slot_index(self, node: PublicState, player: int) -> np.ndarray:
        """The slot of each of `player`'s information states at `node`."""
        out = np.full(len(node.info_states[player]), -1)
        for world in node.worlds:
            info = world.info_states[player]
            if out[info] < 0:
                out[info] = self._slot_of(world.state, player)
        return out

    def to_slots(self, node: PublicState, player: int, per_info: np.ndarray) -> np.ndarray:
        """Sum a per-information-state quantity into the player's slots."""
        out = np.zeros(self.slots[player])
        np.add.at(out, self.slot_index(node, player), per_info)
        return out

    def legal_mask(self, node: PublicState) -> np.ndarray:
        """[slots, A]: the acting player's legal actions at each of its slots."""
        mask = np.zeros((self.max_slots, self.num_actions), bool)
        if node.kind == DECISION:
            mask[self.slot_index(node, node.player)] = self.legal_rows(node)
        return mask

    def legal_rows(self, node: PublicState) -> np.ndarray:
        """[the acting player's information states, A]: the legal actions at each one's slot."""
        slots = self.slot_index(node, node.player)
        used, row = np.unique(slots, return_inverse=True)
        mask = np.zeros((len(used), self.num_actions), bool)
        for world in node.worlds:
            mask[row[world.info_states[node.player]], world.state.legal_actions()] = True
        return mask[row]

    def input(self, node: PublicState, ranges: list[np.ndarray]) -> np.ndarray:
        """The network's input for a public belief state: the public tensor, then each
        player's range over its slots, normalised to sum 1."""
        parts = [self.public_tensor(node)]
        for p in range(2):
            r = self.to_slots(node, p, ranges[p]).astype(np.float32)
            total = r.sum()
            parts.append(r / total if total > 0 else r)
        return np.concatenate(parts)

    def reach_mass(self, node: PublicState, ranges: list[np.ndarray], player: int) -> np.ndarray:
        """Per information state of `player`: the chance-and-opponent reach of its worlds,
        the factor between a normalised value and a counterfactual value."""
        reach = world_reach(node, ranges)
        return np.bincount(
            info_of(node, player),
            weights=counterfactual_reach(node, reach, player),
            minlength=len(node.info_states[player]),
        )


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
        """The trunk's output [B, width]."""
        if hasattr(self, "board"):
            return self.board(x)
        if hasattr(self, "residual"):
            return self.residual(x)
        for layer in self.trunk:
            x = F.relu(layer(x))
        return x

    def values(self, h: torch.Tensor) -> torch.Tensor:
        """Normalised values [B, 2, S] from the trunk's output."""
        values = h.new_zeros((h.shape[0], 2, self.max_slots))
        for p, s in enumerate(self.slots):
            values[:, p, :s] = self.value[p](h)
        return values

    def policy_rows(self, h: torch.Tensor, player: int, slots) -> torch.Tensor:
        """`player`'s policy logits at `slots` [k, A] from one trunk output h [width]: only
        those rows of the head (it has 199 x 798 outputs on Scotland Yard's London board,
        where a search reads one row for the detectives, a few dozen for Mr X)."""
        head = cast(nn.Linear, self.policy[player])
        weight = head.weight.view(self.slots[player], self.num_actions, -1)[slots]
        return weight @ h + head.bias.view(self.slots[player], self.num_actions)[slots]

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

    def load_state_dict(self, weights: dict) -> None:
        self.net.load_state_dict(weights)
        self.net.eval()

    def predict(self, queries: list[Query]) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """Normalised values [B, 2, S] and, per query at a decision, the acting player's
        policy logits at its information states' slots [info states, A] (None elsewhere)."""
        x = np.stack([self.encoding.input(q.public_state, q.ranges) for q in queries])
        rows: list[np.ndarray | None] = []
        with torch.inference_mode():  # no autograd bookkeeping at all: a third off a single query's call
            h = self.net.features(torch.from_numpy(x).to(self.device))
            values = self.net.values(h).cpu().numpy().astype(float)
            for i, q in enumerate(queries):
                node = q.public_state
                if node.kind != DECISION:
                    rows.append(None)
                    continue
                slots = torch.as_tensor(self.encoding.slot_index(node, node.player), device=self.device)
                rows.append(self.net.policy_rows(h[i], node.player, slots).cpu().numpy().astype(float))
        return values, rows

    def evaluate(self, queries: list[Query]) -> list[Evaluation]:
        if self.listener is not None:
            self.listener(queries)
        self.queries += len(queries)
        values, rows = self.predict(queries)
        out = []
        for q, v, logits in zip(queries, values, rows):
            node = q.public_state
            cfv = []
            for p in range(2):
                slots = self.encoding.slot_index(node, p)
                cfv.append(v[p, slots] * self.encoding.reach_mass(node, q.ranges, p))
            policy = None
            if logits is not None:
                own = np.where(self.encoding.legal_rows(node), logits, -np.inf)
                own = np.exp(own - own.max(axis=1, keepdims=True))
                policy = own / own.sum(axis=1, keepdims=True)
            out.append(Evaluation(cfv, policy))
        return out
