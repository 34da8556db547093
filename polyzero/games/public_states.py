"""Public states and beliefs: the public tree of a game (Student of Games paper,
"Background and terminology").

A public state s_pub(h) is the sequence of public observations O_pub(w, a, w')
along a history h. For each public state this module gives its world states
(histories) with their chance reach probabilities, and each player's
information states S_i(s_pub), each a set of those worlds. Search over a public
tree (GT-CFR, "Search via GT-CFR") keeps its ranges over these information
states.

Where the public observation comes from (`public_observation_function`):
- a per-game rule where OpenSpiel has no public observer: ``liars_dice`` (the
  bids are public, the dice are not), ``scotland_yard`` (detectives' moves, Mr
  X's ticket types and his revealed positions) and matrix games converted with
  ``pyspiel.convert_to_turn_based`` (a round's actions become public when the
  round is complete, so the second mover does not see the first's action);
- perfect-information games: the action itself, so every public state holds one
  world and beliefs are singletons;
- otherwise OpenSpiel's public observer, ``IIGObservationType(public_info=True,
  perfect_recall=True, private_info=NONE)`` (kuhn_poker, leduc_poker, ...).

Chance events whose outcomes are all observed alike at the start of the game
(the private deals of poker) are folded into the root public state's chance
reach probabilities, so the root is the first public state where a player acts
(as in the paper's poker example). Public chance events (Leduc's board card)
are chance nodes of the public tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyspiel

from polyzero.errors import UsageError

# O_pub(w, a, w'): the public observation of taking action a in world w, reaching w'.
PublicObservationFn = Callable[[pyspiel.State, int, pyspiel.State], str]

DECISION, CHANCE, TERMINAL = "decision", "chance", "terminal"


# -- public observations ---------------------------------------------------------


def _liars_dice_observation(state, action, child) -> str:
    """Liar's Dice: the rolls are private; every bid (and the call of liar) is public."""
    return "roll" if state.is_chance_node() else f"{state.current_player()}:{action}"


def _scotland_yard_observation(state, action, child) -> str:
    """Scotland Yard (docs/scotland_yard.md): the detectives see all
    detective moves, the ticket Mr X uses (and a double-move card), Mr X's
    station after his move in a reveal round, and the end of the game."""
    rules = state.rules
    if state.is_chance_node():  # a start card: the detectives' face up, Mr X's in secret
        return child.public_events[-1]
    # The end of the game is public: a capture, Mr X stuck, or the last round over.
    end = f" end:{child.returns()[0]:+.0f}" if child.is_terminal() else ""
    if state.current_player() != 0:
        return f"{state.turn}:{action}{end}"  # a detective's move or pass
    if action == rules.double_action:
        return "X:double" + end
    ticket = action // rules.num_stations
    revealed = child.log[-1][2]
    return f"X:{ticket}" + (f"@{child.mrx}" if revealed else "") + end


def _turn_based_simultaneous_observation(state, action, child) -> str:
    """A game from `pyspiel.convert_to_turn_based`: the players' actions of a
    simultaneous round are hidden until the round is complete, then all public."""
    if state.is_chance_node():
        return f"chance:{action}"
    next_player = child.current_player()
    if child.is_terminal() or child.is_chance_node() or next_player <= state.current_player():
        return f"round:{child.history()}"  # the round ended: everything so far is public
    return f"{state.current_player()}:acted"


def _scotland_yard_world(state):
    """With ``mrx_recall=station`` Mr X's information state is the public history and
    his station, and the game's future depends on his station only: the histories of
    a public state that leave him on one station are one world (None: no merging)."""
    return state.mrx if state.rules.station_recall else None


def _scotland_yard_public_action(state) -> bool:
    """Scotland Yard: the detectives' moves and start cards are seen by everyone."""
    if state.is_chance_node():
        return len(state.detectives) < state.rules.num_detectives
    return state.current_player() == 1


# Games where some actions are public: every world of a public state takes the same one.
_PUBLIC_ACTIONS = {"scotland_yard": _scotland_yard_public_action}

# Games whose worlds of one public state merge by a key: the merged histories must
# share every player's information state and the whole future of the game.
_WORLD_KEYS = {"scotland_yard": _scotland_yard_world}


def merge_worlds(game: pyspiel.Game, pairs: list, sum_chance: bool = False) -> list:
    """(state, chance reach) pairs of one public state with the worlds that the game's
    `_WORLD_KEYS` rule makes one merged (the first history stands for them all).
    A merged world keeps its histories' chance reach, which must be equal (in
    Scotland Yard chance only deals the starts, uniformly): what differs between
    them is a player's own path, and that player's range at the merged
    information state sums its reach over the paths. With `sum_chance` the merged
    world's chance reach is their sum instead: for worlds whose players' reaches are
    equal (copies under ranges per information state), so that every reach-weighted
    sum over the worlds stays the same. Unchanged for other games."""
    key_of = _WORLD_KEYS.get(game.get_type().short_name)
    if key_of is None or not pairs or key_of(pairs[0][0]) is None:
        return pairs
    merged: dict = {}
    for state, reach in pairs:
        key = key_of(state)
        if key not in merged:
            merged[key] = (state, reach)
        elif sum_chance:
            merged[key] = (merged[key][0], merged[key][1] + reach)
        elif not math.isclose(merged[key][1], reach, rel_tol=1e-9):
            raise AssertionError(f"merged worlds differ in chance reach ({merged[key][1]} and {reach})")
    return list(merged.values())


def merged_copy(game: pyspiel.Game, node: PublicState) -> PublicState:
    """`node` with the worlds `merge_worlds` makes one merged, their chance reach summed
    (`node` itself when none merge): a search tree's public states keep one world per
    history, thousands on Scotland Yard's London board where at most 199 differ."""
    pairs = merge_worlds(game, [(w.state, w.chance_reach) for w in node.worlds], sum_chance=True)
    if len(pairs) == len(node.worlds):
        return node
    tree = PublicTree.__new__(PublicTree)  # the node builder, as in public_state_at
    tree.num_players, tree._type, tree.nodes = game.num_players(), game.get_type(), []
    tree._add_node(node.key, pairs, parent=None, depth=node.depth)
    return tree.nodes[0]


_RULES: dict[str, PublicObservationFn] = {
    "liars_dice": _liars_dice_observation,
    "scotland_yard": _scotland_yard_observation,
    "turn_based_simultaneous_game": _turn_based_simultaneous_observation,
}


def _perfect_information_observation(state, action, child) -> str:
    return f"{state.current_player()}:{action}"


def public_observation_function(game: pyspiel.Game) -> PublicObservationFn:
    """O_pub for a game: a per-game rule, the action (perfect information), or
    OpenSpiel's public observer; a `UsageError` when there is none."""
    game_type = game.get_type()
    rule = _RULES.get(game_type.short_name)
    if rule is not None:
        return rule
    if game_type.information == pyspiel.GameType.Information.PERFECT_INFORMATION:
        return _perfect_information_observation
    public = pyspiel.IIGObservationType(
        public_info=True, perfect_recall=True, private_info=pyspiel.PrivateInfoType.NONE
    )
    try:
        from open_spiel.python.observation import make_observation

        observation = make_observation(game, public)
    except (pyspiel.SpielError, RuntimeError, ValueError):
        observation = None
    if observation is None:
        raise UsageError(
            f"no public observations for game {game_type.short_name!r}: "
            "OpenSpiel has no public observer for it and polyzero no rule"
        )

    def observer_observation(state, action, child) -> str:
        return observation.string_from(child, 0)

    return observer_observation


# -- the public tree ---------------------------------------------------------------


@dataclass
class World:
    """A world state (history) inside a public state."""

    state: pyspiel.State
    chance_reach: float  # product of the chance probabilities along the history
    info_states: tuple[int, ...]  # per player: index into PublicState.info_states[player]


@dataclass
class Transition:
    """Action `action` in world `world` of a node leads to world `child_world` of node `child`."""

    world: int
    action: int
    child: int
    child_world: int
    probability: float  # the chance probability at chance nodes, 1 at decisions


@dataclass
class PublicState:
    """One public state: its worlds and each player's information states over them."""

    key: tuple[str, ...]  # the public observation sequence s_pub
    kind: str  # DECISION, CHANCE or TERMINAL
    player: int  # the acting player (pyspiel ids for chance and terminal)
    worlds: list[World]
    info_states: list[list[str]]  # per player, its information-state strings here
    parent: int | None = None
    depth: int = 0  # public actions from the root
    children: dict[str, int] = field(default_factory=dict)  # public observation -> node
    transitions: list[Transition] = field(default_factory=list)
    # What the users of a public state derive from its worlds and keep (a CVPN's slots
    # and legal rows): a public state's worlds never change once it is built.
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    @cached_property
    def world_info(self) -> np.ndarray:
        """[players, W] (read-only): each world's information state of each player."""
        return _frozen(np.array([w.info_states for w in self.worlds], dtype=int).T.copy())

    @cached_property
    def world_chance(self) -> np.ndarray:
        """[W] (read-only): each world's chance reach."""
        return _frozen(np.array([w.chance_reach for w in self.worlds]))

    @cached_property
    def last_world(self) -> list[np.ndarray]:
        """Per player, [its information states] (read-only): the last world of each."""
        out = []
        for info, count in zip(self.world_info, map(len, self.info_states)):
            last = np.full(count, -1)
            np.maximum.at(last, info, np.arange(len(info)))
            out.append(_frozen(last))
        return out

    def chance_reach_sum(self) -> float:
        return sum(w.chance_reach for w in self.worlds)

    def worlds_of(self, player: int, info_state: int) -> list[int]:
        """Indices of the worlds in one of `player`'s information states."""
        return [i for i, w in enumerate(self.worlds) if w.info_states[player] == info_state]

    def info_state_chance_reach(self, player: int) -> list[float]:
        """Chance reach summed over each of `player`'s information states."""
        out = [0.0] * len(self.info_states[player])
        for w in self.worlds:
            out[w.info_states[player]] += w.chance_reach
        return out


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _info_state_string(game_type, state, player: int) -> str:
    if game_type.provides_information_state_string:
        try:
            return state.information_state_string(player)
        except (pyspiel.SpielError, RuntimeError):
            pass
    return state.history_str()  # perfect information: the history is what a player knows


def _kind(state) -> tuple[str, int]:
    if state.is_terminal():
        return TERMINAL, int(pyspiel.PlayerId.TERMINAL)
    if state.is_chance_node():
        return CHANCE, int(pyspiel.PlayerId.CHANCE)
    if state.is_simultaneous_node():
        raise UsageError("simultaneous-move games enter public trees through pyspiel.convert_to_turn_based")
    return DECISION, state.current_player()


def _successors(state) -> list[tuple[int, float]]:
    if state.is_chance_node():
        return state.chance_outcomes()
    return [(a, 1.0) for a in state.legal_actions()]


class PublicTreeTooLarge(ValueError):
    """A public tree grew past its `max_worlds`."""


class PublicTree:
    """The public tree of a game, enumerated breadth-first from its root public state.

    `nodes[0]` is the root. `max_depth` stops below that many public actions
    (nodes at the limit are kept, their children are not built), for games too
    large to enumerate whole. `max_worlds` raises `PublicTreeTooLarge` once the
    tree holds more worlds (histories) than that.
    """

    def __init__(self, game: pyspiel.Game, max_depth: int | None = None, max_worlds: int | None = None):
        self.game = game
        self.observe = public_observation_function(game)
        self.num_players = game.num_players()
        self._type = game.get_type()
        self.nodes: list[PublicState] = []
        key, pairs = root_worlds(game, self.observe)
        self._add_node(key, pairs, parent=None, depth=0)
        self._grow(max_depth, max_worlds)

    def _grow(self, max_depth: int | None, max_worlds: int | None) -> None:
        worlds = sum(len(n.worlds) for n in self.nodes)
        index = 0
        while index < len(self.nodes):  # nodes grow as we go: breadth-first
            node = self.nodes[index]
            if node.kind != TERMINAL and (max_depth is None or node.depth < max_depth):
                before = len(self.nodes)
                self._expand(index)
                worlds += sum(len(n.worlds) for n in self.nodes[before:])
                if max_worlds is not None and worlds > max_worlds:
                    raise PublicTreeTooLarge(
                        f"{self.game} has more than {max_worlds:,} histories below this public state"
                    )
            index += 1

    def _add_node(self, key, pairs, parent, depth) -> int:
        self.nodes.append(self._new_node(key, pairs, parent, depth))
        return len(self.nodes) - 1

    def _new_node(self, key, pairs, parent, depth) -> PublicState:
        """The public state of these (state, chance reach) worlds, not yet in the tree."""
        kinds = {_kind(state) for state, _ in pairs}
        if len(kinds) != 1:
            raise AssertionError(
                f"public state {key} mixes node kinds/players {sorted(kinds)}: "
                "the public observation must show who acts"
            )
        kind, player = kinds.pop()
        info_index: list[dict] = [{} for _ in range(self.num_players)]
        worlds = []
        for state, reach in pairs:
            ids = []
            for p in range(self.num_players):
                s = _info_state_string(self._type, state, p)
                ids.append(info_index[p].setdefault(s, len(info_index[p])))
            worlds.append(World(state, reach, tuple(ids)))
        return PublicState(key, kind, player, worlds, [list(d) for d in info_index], parent, depth)

    def _expand(self, index: int) -> None:
        node = self.nodes[index]
        groups: dict[str, list] = {}
        for w, world in enumerate(node.worlds):
            for action, prob in _successors(world.state):
                child = world.state.child(action)
                groups.setdefault(self.observe(world.state, action, child), []).append((w, action, prob, child))
        for obs, items in groups.items():
            pairs = [(child, node.worlds[w].chance_reach * prob) for w, _, prob, child in items]
            child_index = self._add_node(node.key + (obs,), pairs, index, node.depth + 1)
            node.children[obs] = child_index
            node.transitions += [Transition(w, a, child_index, cw, p) for cw, (w, a, p, _) in enumerate(items)]

    # -- queries -------------------------------------------------------------------

    def of_kind(self, kind: str) -> list[PublicState]:
        return [n for n in self.nodes if n.kind == kind]

    def num_info_states(self, acting_only: bool = True) -> int:
        """Information states summed over decision public states: of the acting
        player only (OpenSpiel's count of a game's information states), or of all."""
        nodes = self.of_kind(DECISION)
        if acting_only:
            return sum(len(n.info_states[n.player]) for n in nodes)
        return sum(len(s) for n in nodes for s in n.info_states)


def root_worlds(game: pyspiel.Game, observe: PublicObservationFn) -> tuple[tuple[str, ...], list]:
    """The root public state's key and (state, chance reach) pairs: the initial
    state, with leading chance events that every outcome observes alike folded in."""
    key: tuple[str, ...] = ()
    pairs = [(game.new_initial_state(), 1.0)]
    while all(state.is_chance_node() for state, _ in pairs):
        expanded, observations = [], set()
        for state, reach in pairs:
            for action, prob in state.chance_outcomes():
                child = state.child(action)
                observations.add(observe(state, action, child))
                expanded.append((child, reach * prob))
        if len(observations) != 1:
            break  # a public chance event: the root is a chance node
        key += (observations.pop(),)
        pairs = expanded
    return key, pairs


def public_key(game: pyspiel.Game, state: pyspiel.State, observe: PublicObservationFn | None = None) -> tuple[str, ...]:
    """s_pub(h): the public observation sequence along the state's history."""
    observe = observe or public_observation_function(game)
    current = game.new_initial_state()
    key = []
    for action in state.history():
        child = current.child(action)
        key.append(observe(current, action, child))
        current = child
    return tuple(key)


def public_state_at(game: pyspiel.Game, state: pyspiel.State) -> PublicState:
    """The public state of `state` with all its worlds and information states,
    built by following its public observations from the root (only the worlds
    along that path are expanded, so it works in games too large to enumerate).
    Worlds that the game declares interchangeable are merged on the way
    (`merge_worlds`: Scotland Yard with ``mrx_recall=station``, one world per
    station of Mr X), and where the game says an action is seen by everyone
    (`_PUBLIC_ACTIONS`) only the history's own action is tried in each world."""
    observe = public_observation_function(game)
    public_action = _PUBLIC_ACTIONS.get(game.get_type().short_name)
    key, pairs = root_worlds(game, observe)
    history = state.history()
    if len(history) < len(key):
        raise ValueError("state precedes the root public state (a leading private chance event)")
    target = list(key)
    current = game.new_initial_state()
    for step, action in enumerate(history):
        child = current.child(action)
        if step >= len(key):
            obs = observe(current, action, child)
            target.append(obs)
            only = action if public_action is not None and public_action(current) else None
            pairs = merge_worlds(game, _observed_children(pairs, observe, obs, only))
        current = child
    tree = PublicTree.__new__(PublicTree)  # reuse the node builder without enumerating
    tree.num_players, tree._type, tree.nodes = game.num_players(), game.get_type(), []
    tree._add_node(tuple(target), pairs, parent=None, depth=len(target) - len(key))
    return tree.nodes[0]


def state_after(game: pyspiel.Game, history) -> pyspiel.State:
    """The game's state after the actions of `history` from the start."""
    state = game.new_initial_state()
    for action in history:
        state.apply_action(int(action))
    return state


def public_state_of_worlds(game: pyspiel.Game, key: tuple[str, ...], histories, chance_reach) -> PublicState:
    """The public state `key` rebuilt from its worlds' action histories and chance
    reaches, worlds (and so information states) in the order given: what a public
    state kept as histories (a few bytes an action) instead of states turns back into."""
    pairs = [(state_after(game, history), float(reach)) for history, reach in zip(histories, chance_reach)]
    tree = PublicTree.__new__(PublicTree)  # the node builder, as in public_state_at
    tree.num_players, tree._type, tree.nodes = game.num_players(), game.get_type(), []
    tree._add_node(tuple(key), pairs, parent=None, depth=0)
    return tree.nodes[0]


def _observed_children(pairs: list, observe: PublicObservationFn, obs: str, only: int | None = None) -> list:
    """Every world's children whose public observation is `obs`, with their reach
    (`only`: the one action every world takes, when the game says it is public)."""
    out = []
    for world, reach in pairs:
        for action, prob in _successors(world):
            if only is not None and action != only:
                continue
            child = world.child(action)
            if observe(world, action, child) == obs:
                out.append((child, reach * prob))
    return out
