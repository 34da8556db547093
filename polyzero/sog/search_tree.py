"""The public tree a search grows (Student of Games paper, "Search via GT-CFR",
Fig. 7): node by node from a given root public state, each expansion adding a
node's children (or only those reached by some actions), or one branch down to a
given public state (re-solving below an earlier search's root)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyspiel

from polyzero.games.public_states import TERMINAL, PublicState, PublicTree, Transition, World


@dataclass
class Shared:
    """One public state's worlds as the search trees sharing an `Expansions` hold them:
    its worlds and information states (the same lists), what users derive from them
    (`PublicState.derived`: the CVPN's slots, legal rows, public tensor) and, once
    made, its full expansion."""

    worlds: list[World]
    info_states: list[list[str]]
    kind: str
    player: int
    derived: dict
    children: list | None = None  # SearchTree._children of the whole node
    histories: list | None = field(default=None, repr=False)
    # What users derive from `children` (the moves, every tree's in the same order):
    # the CFR's arrays of the node (`SearchTree.structure`).
    structure: dict = field(default_factory=dict, repr=False)


class Expansions:
    """Public states and their full expansions shared by several search trees (a
    step's query solves, a re-solver's searches): a node's children are made once
    through pyspiel (`child`, the public observation, the information states) and
    attached to every tree that expands the same worlds. A tree's root joins a public
    state seen before when its worlds are the same histories with the same chance
    reach and information states, in the same order; otherwise it starts its own. The
    children of the same worlds are the same states with the same chance reach, so
    every tree holds what it would build alone (a public state's worlds are never
    changed once built). Above `max_worlds` worlds the index is emptied (the trees
    keep theirs)."""

    def __init__(self, observe, max_worlds: int = 100_000):
        self.observe = observe
        self.max_worlds = max_worlds
        self.worlds = 0
        self.reused = 0  # expansions attached without being made again
        self.by_key: dict[tuple[str, ...], Shared] = {}

    def add(self, key: tuple[str, ...], entry: Shared) -> None:
        if key not in self.by_key:
            if self.worlds + len(entry.worlds) > self.max_worlds:
                self.by_key.clear()
                self.worlds = 0
            self.by_key[key] = entry
            self.worlds += len(entry.worlds)

    def root(self, node: PublicState) -> Shared:
        """The shared public state a tree's root joins (a new one when none matches)."""
        entry = self.by_key.get(node.key)
        if entry is not None and (entry.worlds is node.worlds or _same_worlds(entry, node)):
            return entry
        entry = Shared(node.worlds, node.info_states, node.kind, node.player, node.derived)
        self.add(node.key, entry)
        return entry


def _same_worlds(entry: Shared, node: PublicState) -> bool:
    if len(entry.worlds) != len(node.worlds) or entry.info_states != node.info_states:
        return False
    if any(
        a.chance_reach != b.chance_reach or a.info_states != b.info_states for a, b in zip(entry.worlds, node.worlds)
    ):
        return False
    if entry.histories is None:
        entry.histories = [w.state.history() for w in entry.worlds]
    return entry.histories == [w.state.history() for w in node.worlds]


class SearchTree(PublicTree):
    """A public tree grown node by node from a given root public state."""

    def __init__(self, game: pyspiel.Game, root: PublicState, observe, shared: Expansions | None = None):
        if shared is not None and shared.observe is not observe:
            raise ValueError("the shared expansions were made with another public observation function")
        self.game = game
        self.observe = observe
        self.num_players = game.num_players()
        self._type = game.get_type()
        self.shared = shared
        # per node: its worlds as every tree sharing `shared` holds them (None: not shared)
        self._entries: list[Shared | None] = [shared.root(root) if shared is not None else None]
        entry = self._entries[0] or root
        self.nodes = [
            PublicState(
                root.key, root.kind, root.player, entry.worlds, entry.info_states, None, 0, derived=entry.derived
            )
        ]
        self.index_of = {root.key: 0}
        self.moves: list[dict] = [{}]  # per node: (world, action) -> (child, child world)
        self.revision = 0  # expansions so far: a CFR over the tree syncs only after one
        self._structures: dict[int, dict] = {}  # node -> its shared expansion's `structure`

    def is_leaf(self, index: int) -> bool:
        node = self.nodes[index]
        return node.kind != TERMINAL and not node.transitions

    def expand(self, index: int, actions: set[int] | None = None) -> list[int]:
        """Add the node's children (those reached by `actions` only, when given);
        returns the indices of the public states added. A node's full expansion is
        made once per `shared` and then attached (the same worlds, in the same order)."""
        self.revision += 1
        node, entry = self.nodes[index], self._entries[index]
        if self.shared is not None and entry is not None and actions is None and not self.moves[index]:
            if entry.children is None:
                entry.children = self._children(node, index, None)
            else:
                self.shared.reused += 1
            self._structures[index] = entry.structure
            return self._attach(index, entry.children)
        return self._attach(index, self._children(node, index, actions))

    def structure(self, index: int) -> dict | None:
        """A dict for what is derived from the node's moves, shared by every tree that
        attached the same full expansion of it (None: the moves are this tree's own)."""
        return self._structures.get(index)

    def _children(self, node: PublicState, index: int, actions: set[int] | None) -> list:
        """[(public observation, [(world, action, probability)], the child's Shared)] of
        the moves not in the tree yet (those by `actions` only, when given)."""
        groups: dict[str, list] = {}
        for w, world in enumerate(node.worlds):
            outcomes = (
                world.state.chance_outcomes()
                if world.state.is_chance_node()
                else [(a, 1.0) for a in world.state.legal_actions()]
            )
            for action, prob in outcomes:
                if actions is not None and action not in actions:
                    continue
                if (w, action) in self.moves[index]:
                    continue
                child = world.state.child(action)
                groups.setdefault(self.observe(world.state, action, child), []).append((w, action, prob, child))
        out = []
        for obs, items in groups.items():
            pairs = [(child, node.worlds[w].chance_reach * prob) for w, _, prob, child in items]
            made = self._new_node(node.key + (obs,), pairs, index, node.depth + 1)
            entry = Shared(made.worlds, made.info_states, made.kind, made.player, made.derived)
            if self.shared is not None:
                self.shared.add(made.key, entry)
            out.append((obs, [(w, a, p) for w, a, p, _ in items], entry))
        return out

    def _attach(self, index: int, children: list) -> list[int]:
        """Add `_children`'s public states below node `index`; their indices."""
        node = self.nodes[index]
        added = []
        for obs, moves, entry in children:
            if obs in node.children:  # a partially expanded node gains more worlds' moves: not expected
                raise AssertionError(f"public state {node.key + (obs,)} is already in the tree")
            key = node.key + (obs,)
            child_index = len(self.nodes)
            self.nodes.append(
                PublicState(
                    key,
                    entry.kind,
                    entry.player,
                    entry.worlds,
                    entry.info_states,
                    index,
                    node.depth + 1,
                    derived=entry.derived,
                )
            )
            self._entries.append(entry if self.shared is not None else None)
            self.index_of[key] = child_index
            self.moves.append({})
            node.children[obs] = child_index
            node.transitions += [Transition(w, a, child_index, cw, p) for cw, (w, a, p) in enumerate(moves)]
            self.moves[index].update({(w, a): (child_index, cw) for cw, (w, a, _) in enumerate(moves)})
            added.append(child_index)
        return added

    def expand_path(self, key: tuple[str, ...]) -> int:
        """Grow a single branch from the root to the public state `key`, every node
        on it with all its children (the off-branch ones are leaves); its index."""
        index = 0
        root_len = len(self.nodes[0].key)
        if key[:root_len] != self.nodes[0].key:
            raise ValueError("the public state is not below the tree's root")
        for obs in key[root_len:]:
            if not self.nodes[index].transitions:
                self.expand(index)
            if obs not in self.nodes[index].children:
                raise ValueError(f"no public state {obs!r} below {self.nodes[index].key}")
            index = self.nodes[index].children[obs]
        return index
