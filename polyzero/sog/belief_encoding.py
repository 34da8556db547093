"""The CVPN's input and information-state slots (Student of Games paper,
"Counterfactual value-and-policy networks", Fig. 6): a public belief state
beta = (s_pub, r) as the public tensor of s_pub and both players' ranges over their
slots.

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
"""

from __future__ import annotations

import itertools

import numpy as np
import pyspiel

from polyzero.errors import UsageError
from polyzero.games.public_states import DECISION, PublicState, PublicTree

from .gtcfr import is_perfect_information
from .values import BATCH_FROM, bincount_parts, counterfactual_reach, info_of, world_reach


def _scotland_yard_slots(game: pyspiel.Game):
    """Mr X (player 0): his station; the detectives (player 1): one slot. Before chance
    deals his start (`mrx` 0, London's dealt starts) Mr X has one information state,
    and the public states there hold no placed worlds: slot 0."""
    stations = game.rules.num_stations
    return [stations, 1], lambda state, player: max(state.mrx - 1, 0) if player == 0 else 0


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
                    "(or a rule in polyzero.sog.belief_encoding.PRIVATE_SLOTS)"
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
        """The public part of the input at `node` (read-only; kept with the node)."""
        out = node.derived.get("public_tensor")
        if out is None:
            out = self.public_tensor_of(node.worlds[0].state)
            out.flags.writeable = False
            node.derived["public_tensor"] = out
        return out

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
        """The slot of each of `player`'s information states at `node` (read-only; kept
        with the node, whose worlds do not change: a search asks for it at every query)."""
        key = ("slot_index", player)
        out = node.derived.get(key)
        if out is None:
            out = np.full(len(node.info_states[player]), -1)
            for world in node.worlds:
                info = world.info_states[player]
                if out[info] < 0:
                    out[info] = self._slot_of(world.state, player)
            if len(out) and not 0 <= out.min() <= out.max() < self.slots[player]:
                # a slot rule's bug: np.bincount refuses a negative slot, and a batch's
                # bincount (values.bincount_parts) would put it in the row before
                raise ValueError(
                    f"{self.game}: player {player}'s slots {sorted(set(out.tolist()))} "
                    f"outside 0..{self.slots[player] - 1}"
                )
            out.flags.writeable = False
            node.derived[key] = out
        return out

    def to_slots(self, node: PublicState, player: int, per_info: np.ndarray) -> np.ndarray:
        """Sum a per-information-state quantity into the player's slots (in the order of
        the information states, as np.add.at does)."""
        return np.bincount(self.slot_index(node, player), weights=per_info, minlength=self.slots[player])

    def legal_mask(self, node: PublicState) -> np.ndarray:
        """[slots, A]: the acting player's legal actions at each of its slots."""
        mask = np.zeros((self.max_slots, self.num_actions), bool)
        if node.kind == DECISION:
            mask[self.slot_index(node, node.player)] = self.legal_rows(node)
        return mask

    def legal_rows(self, node: PublicState) -> np.ndarray:
        """[the acting player's information states, A]: the legal actions at each one's
        slot (read-only; kept with the node)."""
        out = node.derived.get("legal_rows")
        if out is None:
            slots = self.slot_index(node, node.player)
            used, row = np.unique(slots, return_inverse=True)
            mask = np.zeros((len(used), self.num_actions), bool)
            for world in node.worlds:
                mask[row[world.info_states[node.player]], world.state.legal_actions()] = True
            out = mask[row]
            out.flags.writeable = False
            node.derived["legal_rows"] = out
        return out

    def input(self, node: PublicState, ranges: list[np.ndarray]) -> np.ndarray:
        """The network's input for a public belief state: the public tensor, then each
        player's range over its slots, normalised to sum 1."""
        parts = [self.public_tensor(node)]
        for p in range(2):
            r = self.to_slots(node, p, ranges[p]).astype(np.float32)
            total = r.sum()
            parts.append(r / total if total > 0 else r)
        return np.concatenate(parts)

    def inputs(self, nodes: list[PublicState], ranges: list[list[np.ndarray]]) -> np.ndarray:
        """[B, input_size]: `input` of each (node, ranges) pair, built as one array. Each
        player's ranges go into their slots in one `np.bincount` over all rows (every
        row's weights added in its own index order, as `to_slots` adds them), and the
        float32 totals and divisions are `input`'s, row by row: the same numbers bit for
        bit (tests/test_sog_leduc_step.py). Fewer than `BATCH_FROM` rows go row by row
        (`input`), which is cheaper there."""
        if len(nodes) < BATCH_FROM:  # cheaper row by row
            rows = [self.input(node, r) for node, r in zip(nodes, ranges)]
            return np.stack(rows) if rows else np.empty((0, self.input_size), np.float32)
        out = np.empty((len(nodes), self.input_size), np.float32)
        out[:, : self.public_size] = [self.public_tensor(node) for node in nodes]
        start = self.public_size
        for p in range(2):
            s = self.slots[p]
            weights = np.concatenate([np.asarray(r[p], float) for r in ranges])
            r, _ = bincount_parts([self.slot_index(node, p) for node in nodes], weights, [s] * len(nodes))
            r = r.reshape(len(nodes), s).astype(np.float32)
            total = r.sum(axis=1, keepdims=True)
            out[:, start : start + s] = np.divide(r, total, out=r.copy(), where=total > 0)
            start += s
        return out

    def reach_mass(
        self, node: PublicState, ranges: list[np.ndarray], player: int, reach: np.ndarray | None = None
    ) -> np.ndarray:
        """Per information state of `player`: the chance-and-opponent reach of its worlds,
        the factor between a normalised value and a counterfactual value (`reach`: the
        ranges' `world_reach`, when the caller has it)."""
        reach = world_reach(node, ranges) if reach is None else reach
        return np.bincount(
            info_of(node, player),
            weights=counterfactual_reach(node, reach, player),
            minlength=len(node.info_states[player]),
        )
