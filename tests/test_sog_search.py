"""GT-CFR, the re-solving gadget, continual re-solving and the exploitability
command (Student of Games paper: "Search via GT-CFR", Fig. 7; "Modified continual
re-solving"; "Performance guarantees for continual re-solving")."""

import numpy as np
import pytest
from open_spiel.python.algorithms import (
    cfr as openspiel_cfr,
    expected_game_score,
    exploitability as openspiel_exploitability,
)

from polyzero.cli import main
from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.games.public_states import (
    DECISION,
    PublicTree,
    PublicTreeTooLarge,
    public_observation_function,
    public_state_at,
)
from polyzero.sog.exploitability import player_exploitability, tabular_from
from polyzero.sog.gtcfr import GTCFR, Gadget, SoGSettings
from polyzero.sog.players import sog_reference_player
from polyzero.sog.resolve import ResolvingSearcher, SoGPlayer, parse_sog_spec
from polyzero.sog.search_tree import SearchTree
from polyzero.sog.values import ExactValueFunction, Query


def full_search_tree(game):
    """A SearchTree grown to the whole public tree (breadth-first)."""
    root = PublicTree(game, max_depth=0).nodes[0]
    tree = SearchTree(game, root, public_observation_function(game))
    index = 0
    while index < len(tree.nodes):
        if tree.is_leaf(index):
            tree.expand(index)
        index += 1
    return tree


def play(game, actions):
    state = game.new_initial_state()
    for a in actions:
        state.apply_action(a)
    return state


@pytest.mark.parametrize("spec, iterations", [("kuhn_poker", 100), ("leduc_poker", 100)])
def test_gtcfr_on_the_full_tree_equals_openspiel_simultaneous_cfr_plus(spec, iterations):
    """No leaves, no expansion: GT-CFR's regret phases are public-tree CFR with
    simultaneous updates, RM+ and linear averaging, iteration for iteration."""
    game = load_game(spec)
    search = GTCFR(
        full_search_tree(game), ExactValueFunction(game), SoGSettings(simulations=0), np.random.default_rng(0)
    )
    reference = openspiel_cfr._CFRSolver(
        game, alternating_updates=False, linear_averaging=True, regret_matching_plus=True
    )
    for iteration in range(1, iterations + 1):
        search.iterate()
        reference.evaluate_and_update_policy()
        expected, mine = reference.average_policy(), search.average_policy()
        assert mine.keys() == expected.state_lookup.keys()
        worst = max(abs(expected.policy_for_key(i)[a] - p) for i, probs in mine.items() for a, p in probs.items())
        assert worst < 1e-9, f"{spec}: iteration {iteration} differs by {worst}"


def test_depth_limited_gtcfr_on_kuhn_converges_to_the_game_value():
    """d = 1: the root and its children, the children valued by the exact solver
    for the current ranges (CFR-D style). Theorem 1's policy (CFR-D's average: the
    tree's averaged CFR policy plus, below the frontier, the leaf solves averaged
    with weight t x own reach) is then the whole game's policy: the first player's
    value -> -1/18, and it is nearly unexploitable."""
    game = load_game("kuhn_poker")
    root = PublicTree(game, max_depth=0).nodes[0]
    tree = SearchTree(game, root, public_observation_function(game))
    tree.expand(0)
    values = ExactValueFunction(game, iterations=50, average_policies=True)
    search = GTCFR(tree, values, SoGSettings(max_depth=1), np.random.default_rng(0))
    for _ in range(100):
        search.iterate()
    assert len(tree.nodes) == 3 and len(search.cfr.leaves) == 2
    policy = search.full_average_policy()
    assert len(policy) == 12 and all(abs(sum(p.values()) - 1) < 1e-9 for p in policy.values())
    table = tabular_from(game, policy)
    value = expected_game_score.policy_value(game.new_initial_state(), [table, table])[0]
    assert value == pytest.approx(-1 / 18, abs=1e-3)  # measured -0.05546
    # measured 3.3e-3; uniform play 0.46; the leaves solved once for the average ranges 0.08
    assert openspiel_exploitability.exploitability(game, table) < 1e-2
    # Only the regret update phases add to the sums: reading values adds nothing.
    before = {k: dict(v) for k, v in values.policy_sums.items()}
    search.cfr.evaluate_average()
    assert values.policy_sums == before
    # Expansion in depth-limited mode never goes below depth 1.
    search.expansion_phase(5)
    assert len(tree.nodes) == 3
    # A leafless tree's full average is its own average; without policy sums, no full average.
    full = GTCFR(
        full_search_tree(game),
        ExactValueFunction(game, average_policies=True),
        SoGSettings(simulations=0),
        np.random.default_rng(0),
    )
    for _ in range(5):
        full.iterate()
    mine, expected = full.full_average_policy(), full.average_policy()
    assert mine.keys() == expected.keys()
    assert all(mine[k] == pytest.approx(expected[k]) for k in mine)
    with pytest.raises(ValueError, match="policy sums"):
        GTCFR(tree, ExactValueFunction(game), SoGSettings(), np.random.default_rng(0)).full_average_policy()


@pytest.mark.parametrize("inherit", [True, False])
def test_a_node_joining_the_tree_starts_from_its_leaf_solvers_regrets(inherit):
    game = load_game("kuhn_poker")
    root = PublicTree(game, max_depth=0).nodes[0]
    tree = SearchTree(game, root, public_observation_function(game))
    tree.expand(0)
    values = ExactValueFunction(game, iterations=20)
    search = GTCFR(tree, values, SoGSettings(inherit_regrets=inherit), np.random.default_rng(0))
    for _ in range(3):
        search.iterate()
    leaf = search.cfr.leaves[0]
    solver = values.solver_for(tree.nodes[leaf])
    infos = len(tree.nodes[leaf].info_states[tree.nodes[leaf].player])
    expected = solver.cumulative_regret[:infos, :2].copy() if inherit else np.zeros((infos, 2))
    assert inherit is False or expected.any()
    tree.expand(leaf)
    search.cfr.sync()
    d = search.cfr.decisions[leaf]
    assert d.actions == [0, 1]
    assert np.array_equal(d.cumulative_regret, expected)
    assert np.allclose(d.policy.sum(axis=1), 1.0)


def test_exact_leaf_values_are_best_response_values():
    """Each player's values are those of its best response to the other's solved
    policy: never below the average policies' values, and above them where the
    opponent's range gives a state no weight (the solve there is arbitrary)."""
    game = load_game("kuhn_poker")
    node = public_state_at(game, play(game, [0, 1]))  # cards dealt, before the first bet
    ranges = [np.ones(len(node.info_states[0])), np.ones(len(node.info_states[1]))]
    ranges[1][:] = [1.0, 0.0, 0.0]  # the second player only ever holds its first card
    query = [Query(node, ranges)]
    br = ExactValueFunction(game, iterations=200, warm_start=False).evaluate(query)[0].values
    avg = (
        ExactValueFunction(game, iterations=200, warm_start=False, best_response_values=False).evaluate(query)[0].values
    )
    for p in range(2):
        assert (br[p] >= avg[p] - 1e-9).all()
    assert (br[1][1:] > avg[1][1:] + 1e-3).any()  # zero-range holdings could do better


def test_expansion_grows_the_tree_below_the_root_to_the_whole_kuhn_tree():
    game = load_game("kuhn_poker")
    root = PublicTree(game, max_depth=0).nodes[0]
    tree = SearchTree(game, root, public_observation_function(game))
    tree.expand(0)
    search = GTCFR(tree, ExactValueFunction(game, iterations=10), SoGSettings(), np.random.default_rng(1))
    search.run(simulations=20, expansions_per_update=2)  # 10 iterations, 18 expansions
    assert search.cfr.iteration == 10 and search.expansions == 18
    assert {n.key for n in tree.nodes} == {n.key for n in PublicTree(game).nodes}  # 9 public states
    assert not search.cfr.leaves
    # Fractional c: SoG(2, 0.25) is 8 iterations, an expansion every 4 (after the
    # 4th; the one due after the 8th would change nothing and is not run).
    tree = SearchTree(game, root, public_observation_function(game))
    tree.expand(0)
    search = GTCFR(tree, ExactValueFunction(game, iterations=10), SoGSettings(), np.random.default_rng(1))
    search.run(simulations=2, expansions_per_update=0.25)
    assert search.cfr.iteration == 8 and search.expansions == 1


def kuhn_equilibrium_summary():
    """The whole Kuhn tree solved by 1,000 iterations: ranges and best-response
    counterfactual values at every public state."""
    game = load_game("kuhn_poker")
    search = GTCFR(
        full_search_tree(game), ExactValueFunction(game), SoGSettings(simulations=0), np.random.default_rng(0)
    )
    for _ in range(1000):
        search.iterate()
    return game, search.summary()


def test_resolving_gadget_keeps_the_opponent_below_its_counterfactual_values():
    """Re-solve the second player's strategy below the first player's check from
    nothing but its range and the first player's counterfactual values there: the
    first player's best response in the re-solved subgame earns at most those
    values at each of its information states (the gadget's guarantee), while an
    arbitrary second-player strategy (uniform) lets it exceed them."""
    game, summary = kuhn_equilibrium_summary()
    check, _ = summary.tree.moves[0][(0, 0)]  # world 0, action 0 (pass): the check
    node = summary.tree.nodes[check]
    assert node.kind == DECISION and node.player == 1
    terminate = summary.cfv[check][0]
    assert np.all(terminate > -10)  # the first player's values for J, Q, K (x 1/6 chance)
    sub = SearchTree(game, node, public_observation_function(game))
    index = 0
    while index < len(sub.nodes):
        if sub.is_leaf(index):
            sub.expand(index)
        index += 1
    ranges = [np.ones(3), summary.ranges[check][1].copy()]
    gadget = Gadget(0, terminate.copy(), summary.ranges[check][0].copy(), alpha=0.5)
    resolve = GTCFR(
        sub,
        ExactValueFunction(game),
        SoGSettings(simulations=0),
        np.random.default_rng(0),
        root_ranges=ranges,
        gadget=gadget,
    )
    for _ in range(1000):
        resolve.iterate()

    def best_response_cfv(cfr):
        cfr.root_reach = np.array([[1.0, ranges[1][w.info_states[1]]] for w in node.worlds])
        cfr.evaluate_average(best_response=0)
        return cfr.counterfactual_values(0, 0)

    gained = best_response_cfv(resolve.cfr) - terminate
    assert gained.max() < 2e-3, gained  # measured max 4e-4 (chips x chance 1/6 x range)
    for d in resolve.cfr.decisions.values():  # the second player plays uniformly instead
        if d.player == 1:
            d.cumulative_policy = np.ones_like(d.cumulative_policy)
    assert (best_response_cfv(resolve.cfr) - terminate).max() > 0.05


def test_first_decision_after_only_opponent_moves_is_an_initial_solve_from_the_game_root():
    game = load_game("kuhn_poker")
    settings = SoGSettings(simulations=4, expansions_per_update=1, solve_iterations=20)
    searcher = ResolvingSearcher(game, ExactValueFunction(game, iterations=20), settings, seed=0)
    state = play(game, [0, 1, 0])  # J, Q dealt; the first player checks: the second player's first decision
    result = searcher.search_at(state)
    assert result.player == 1 and not result.gadget
    root_key = PublicTree(game, max_depth=0).nodes[0].key
    assert result.root_key == root_key  # the opponent's earlier decision was solved jointly
    assert searcher.searches == 1
    assert set(result.policy) == set(public_state_at(game, state).info_states[1])
    assert all(abs(sum(p.values()) - 1) < 1e-9 for p in result.policy.values())


def test_later_decision_resolves_from_the_closest_public_state_of_the_previous_tree():
    """Kuhn, first player: check, bet -> its second decision. With depth 1 its first
    search holds only the root and its children, so the re-solve is rooted at
    'check' (the closest state) with the gadget, a single branch down to the
    current state."""
    game = load_game("kuhn_poker")
    settings = SoGSettings(simulations=0, min_iterations=5, max_depth=1)
    searcher = ResolvingSearcher(game, ExactValueFunction(game, iterations=10), settings, seed=0)
    state = play(game, [2, 0, 0, 1])  # K, J; check, bet
    first = searcher.search_at(play(game, [2, 0]))
    current = public_state_at(game, state).key
    assert current not in first.summary.tree.index_of
    result = searcher.search_at(state)
    assert searcher.searches == 2 and result.gadget
    assert result.root_key == current[:-1]  # 'check', the previous tree's deepest state on the way


def test_leduc_board_card_resolves_above_the_public_chance_event():
    """Leduc: the board card is a public chance event. The first player's first
    search (depth 1) ends at the second player's decisions, so after check, check
    and the board card the re-solve is rooted at 'check' and its single branch
    runs through the chance node to the current public state."""
    game = load_game("leduc_poker")
    settings = SoGSettings(simulations=0, min_iterations=2, max_depth=1)
    searcher = ResolvingSearcher(game, ExactValueFunction(game, iterations=2), settings, seed=0)
    state = play(game, [0, 2, 1, 1])  # cards J, Q; check, check (round 1 over)
    assert state.is_chance_node()
    state.apply_action(4)  # the board card
    assert state.current_player() == 0
    current = public_state_at(game, state).key
    first = searcher.search_at(play(game, [0, 2]))
    assert all(current[:n] not in first.summary.tree.index_of for n in range(len(current) - 1, len(current) + 1))
    result = searcher.search_at(state)
    assert result.gadget and result.root_key == current[:-2]  # 'check', then the chance node, the card
    assert set(result.policy) == set(public_state_at(game, state).info_states[0])


def test_policy_is_a_function_of_seed_and_public_state():
    game = load_game("kuhn_poker")
    a, b = (SoGPlayer(game, parse_sog_spec("sog:6,2,solve=20"), seed=3) for _ in range(2))
    state = play(game, [1, 2, 1])  # Q, K; bet
    assert a.policy(state) == b.policy(state)
    assert a.act([state, state.clone()])[0] in (0, 1)


def test_final_argmax_plays_the_most_probable_move():
    game = load_game("kuhn_poker")
    player = SoGPlayer(game, parse_sog_spec("sog:6,2,solve=20,final=argmax"), seed=3)
    state = play(game, [1, 2, 1])  # Q, K; bet
    probs = player.policy(state)
    assert max(probs.values()) < 1.0  # a mixed policy, so argmax and sampling differ
    assert player.act([state.clone() for _ in range(20)]) == [max(probs, key=probs.get)] * 20
    with pytest.raises(UsageError):
        parse_sog_spec("sog:6,2,final=best")


def test_resolving_player_exploitability_on_kuhn():
    """SoG(20, 1) with exact leaf values (20 CFR+ iterations per leaf query), two
    seeds: the composed policy is within 50 mbb/h of equilibrium (measured
    ~30); the same budget without the gadget's guarantee is not needed to show
    it: the initial-state-only solve with one CFR iteration is far worse."""
    game = load_game("kuhn_poker")
    report = player_exploitability(
        game, lambda s: SoGPlayer(game, parse_sog_spec("sog:20,1,solve=20"), seed=s), seeds=2
    )
    assert report.searches_per_seed == 4 and report.unit == "mbb/h"
    assert report.max < 50, report.values
    weak = player_exploitability(game, lambda s: SoGPlayer(game, parse_sog_spec("sog:0,1,solve=20"), seed=s), seeds=1)
    assert weak.max > 100, weak.values


def test_reference_players_and_the_exploitability_command(capsys):
    game = load_game("kuhn_poker")
    assert sog_reference_player("cfr:10", game).name == "cfr:10"
    report = player_exploitability(game, lambda s: sog_reference_player("cfr:200", game, s), seeds=1)
    assert report.max < 5  # OpenSpiel's CFR+ after 200 iterations: ~1 mbb/h
    assert main(["exploitability", "sog:4,1,solve=10", "--game", "kuhn_poker", "--seeds", "2", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "4 searches (one per decision public state) per seed, 2 seeds" in out
    assert "exploitability (mbb/h) over 2 seeds: min" in out
    assert main(["exploitability", "ismcts:20", "--game", "kuhn_poker", "--seeds", "1", "--no-progress"]) == 0
    assert "12 policy queries" in capsys.readouterr().out
    assert main(["exploitability", "sog:x", "--game", "kuhn_poker"]) == 2


def test_perfect_information_top_1_expansion_and_the_shortcut():
    """tic_tac_toe, O to move and forced to block at 7: the root's children all
    enter the tree, below them one child per expansion (k = 1); each leaf is
    evaluated once at range 1 (the perfect-information shortcut)."""
    game = load_game("tic_tac_toe")
    state = play(game, [4, 0, 8, 2, 1])
    tree = SearchTree(game, public_state_at(game, state), public_observation_function(game))
    tree.expand(0)
    values = ExactValueFunction(game, iterations=30)
    search = GTCFR(tree, values, SoGSettings(), np.random.default_rng(0))
    search.run(simulations=30, expansions_per_update=1)
    root_info = tree.nodes[0].info_states[1][0]
    assert search.average_policy()[root_info][7] > 0.95
    assert len(tree.nodes) <= 1 + 4 + search.expansions
    partial = [n for n in tree.nodes[1:] if n.children and len(n.children) < len(n.worlds[0].state.legal_actions())]
    assert partial  # top-1 expansion left some actions out
    assert search.value_calls == values.queries == len(search._shortcut)  # once per leaf ever seen
    assert search.cfr.iteration == 30


def test_public_tree_stops_at_max_worlds():
    game = load_game("leduc_poker")
    assert sum(len(n.worlds) for n in PublicTree(game, max_worlds=10_000).nodes) == 9450
    with pytest.raises(PublicTreeTooLarge):
        PublicTree(game, max_worlds=9449)


def test_sog_without_network_refuses_games_too_large_to_solve(monkeypatch, capsys):
    from polyzero.sog import players

    monkeypatch.setattr(players, "EXACT_LEAF_WORLDS", 1000)
    players._solvable.cache_clear()
    try:
        assert sog_reference_player("sog:2,1", load_game("kuhn_poker")) is not None
        assert main(["arena", "sog:2,1", "random", "--game", "leduc_poker", "--games", "1"]) == 2
    finally:
        players._solvable.cache_clear()
    err = capsys.readouterr().err.strip()
    assert "net=RUN" in err and "more than 1,000 histories" in err and len(err.splitlines()) == 1


def test_ismcts_on_a_python_game_builds_each_roots_worlds_once_and_searches_as_before(monkeypatch):
    """OpenSpiel's Python IS-MCTS resamples a world at the root of every simulation;
    the worlds of that root are built once per search, with the same draws as
    rebuilding them each time (the same policy for the same seed)."""
    import polyzero.games.public_states as public_states
    from polyzero.sog.exploitability import decision_public_states
    from polyzero.sog.players import ISMCTSPlayer

    class Rebuilding(ISMCTSPlayer):  # the resampler before the cache: a public state per simulation
        def _resample(self, state, player):
            self._root_key = None
            return super()._resample(state, player)

    game = load_game("scotland_yard")
    nodes = decision_public_states(game)
    states = [node.worlds[node.worlds_of(node.player, 0)[0]].state for node in nodes[100:400:100]]
    built = []
    real = public_states.public_state_at
    monkeypatch.setattr(public_states, "public_state_at", lambda *a: built.append(1) or real(*a))
    cached, rebuilding = ISMCTSPlayer(game, 30, seed=3), Rebuilding(game, 30, seed=3)
    for state in states:
        built.clear()
        policy = cached.policy(state)
        assert len(built) <= 1  # one public state per search (none where a single action skips it)
        assert policy == rebuilding.policy(state)
        assert len(policy) > 1
