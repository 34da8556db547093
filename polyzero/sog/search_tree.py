"""The public tree a search grows (Student of Games paper, "Search via GT-CFR",
Fig. 7): node by node from a given root public state, each expansion adding a
node's children (or only those reached by some actions), or one branch down to a
given public state (re-solving below an earlier search's root)."""

from __future__ import annotations

import pyspiel

from polyzero.games.public_states import TERMINAL, PublicState, PublicTree, Transition


class SearchTree(PublicTree):
    """A public tree grown node by node from a given root public state."""

    def __init__(self, game: pyspiel.Game, root: PublicState, observe):
        self.game = game
        self.observe = observe
        self.num_players = game.num_players()
        self._type = game.get_type()
        self.nodes = [PublicState(root.key, root.kind, root.player, root.worlds, root.info_states, None, 0)]
        self.index_of = {root.key: 0}
        self.moves: list[dict] = [{}]  # per node: (world, action) -> (child, child world)
        self.revision = 0  # expansions so far: a CFR over the tree syncs only after one

    def is_leaf(self, index: int) -> bool:
        node = self.nodes[index]
        return node.kind != TERMINAL and not node.transitions

    def expand(self, index: int, actions: set[int] | None = None) -> list[int]:
        """Add the node's children (those reached by `actions` only, when given);
        returns the indices of the public states added."""
        self.revision += 1
        node = self.nodes[index]
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
        added = []
        for obs, items in groups.items():
            if obs in node.children:  # a partially expanded node gains more worlds' moves: not expected
                raise AssertionError(f"public state {node.key + (obs,)} is already in the tree")
            pairs = [(child, node.worlds[w].chance_reach * prob) for w, _, prob, child in items]
            child_index = self._add_node(node.key + (obs,), pairs, index, node.depth + 1)
            self.index_of[self.nodes[child_index].key] = child_index
            self.moves.append({})
            node.children[obs] = child_index
            for cw, (w, a, p, _) in enumerate(items):
                node.transitions.append(Transition(w, a, child_index, cw, p))
                self.moves[index][(w, a)] = (child_index, cw)
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
