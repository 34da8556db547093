"""Scotland Yard rules (docs/scotland_yard.md) on the glasses map and small custom maps."""

import numpy as np
import pyspiel
import pytest
from open_spiel.python.observation import make_observation

from polyzero.errors import UsageError
from polyzero.games import check_game, load_game
from polyzero.games.scotland_yard import BLACK, parse_map

N = 11  # stations on the glasses map
# The original glasses game (5 rounds, Mr X surfacing after round 3, 5 taxi tickets each),
# the default before the solved variant (docs/scotland_yard.md); these tests play it.
SPEC = "scotland_yard(rounds=5,reveal_rounds=3,mrx_taxi=5,detective_taxi=5)"


def spec(**params):
    """The original game with some parameters changed."""
    base = dict(item.split("=") for item in SPEC[len("scotland_yard(") : -1].split(","))
    return "scotland_yard(" + ",".join(f"{k}={v}" for k, v in {**base, **params}.items()) + ")"


TAXI = 0


def move(ticket, station, n=N):
    return ticket * n + station - 1


def play(game, moves):
    state = game.new_initial_state()
    for a in moves:
        assert a in state.legal_actions(), (state.action_to_string(a), str(state))
        state.apply_action(a)
    return state


@pytest.fixture(scope="module")
def glasses():
    return load_game(SPEC)


def test_default_is_the_solved_variant():
    """The default glasses game: 4 rounds, a taxi ticket per round each, Mr X surfacing after
    his last move (Mr X's value -0.601, benchmark sog_glasses_variants)."""
    r = load_game("scotland_yard").rules
    assert (r.rounds, sorted(r.reveal_rounds), r.mrx_tickets[0], r.detective_tickets[0]) == (4, [4], 4, 4)
    assert (r.mrx_start, r.detective_starts, r.detectives_first) == (6, [1, 11], False)


def test_glasses_map_is_the_spec_graph():
    n, edges = parse_map("glasses")
    assert n == 11 and len(edges) == 12 and all(t == TAXI for *_, t in edges)
    pairs = {frozenset((a, b)) for a, b, _ in edges}
    for a, b in [(1, 2), (2, 3), (2, 4), (3, 5), (4, 5), (5, 6), (6, 7), (7, 8), (7, 9), (8, 10), (9, 10), (10, 11)]:
        assert frozenset((a, b)) in pairs


def test_default_game(glasses):
    assert glasses.num_players() == 2 and glasses.num_distinct_actions() == 4 * N + 2
    assert glasses.get_type().information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    state = glasses.new_initial_state()
    assert state.current_player() == 0  # Mr X moves first
    assert state.legal_actions() == [move(TAXI, 5), move(TAXI, 7)]
    assert (state.mrx, state.detectives) == (6, [1, 11])
    assert state.mrx_tickets[TAXI] == 5 and state.detective_tickets == [[5, 0, 0], [5, 0, 0]]


def test_move_order_tickets_and_round_end(glasses):
    state = play(glasses, [move(TAXI, 7)])
    assert state.current_player() == 1 and state.turn == 1 and state.mrx_tickets[TAXI] == 4
    assert state.legal_actions() == [move(TAXI, 2)]  # detective 1 at pendant station 1
    state.apply_action(move(TAXI, 2))
    assert state.turn == 2 and state.detective_tickets[0][TAXI] == 4
    assert state.legal_actions() == [move(TAXI, 10)]
    state.apply_action(move(TAXI, 10))
    assert state.current_player() == 0 and state.round() == 1


def test_capture_by_detective(glasses):
    # X 6->7, D1 1->2, D2 11->10, X 7->8 (D2 at 10 is next to 8), D1 2->3, D2 10->8 catches him.
    state = play(glasses, [move(TAXI, 7), move(TAXI, 2), move(TAXI, 10), move(TAXI, 8), move(TAXI, 3)])
    assert move(TAXI, 8) in state.legal_actions()
    state.apply_action(move(TAXI, 8))
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]


def test_blocked_stations():
    # Mr X may not move onto a detective; a detective may not move onto another one.
    game = load_game(spec(mrx_start=5, detective_starts="4;6"))
    state = game.new_initial_state()
    assert state.legal_actions() == [move(TAXI, 3)]
    state.apply_action(move(TAXI, 3))
    assert state.legal_actions() == [move(TAXI, 2), move(TAXI, 5)]  # detective 1 at 4
    state.apply_action(move(TAXI, 5))
    assert move(TAXI, 5) not in state.legal_actions()  # detective 2 at 6: 5 is taken
    assert state.legal_actions() == [move(TAXI, 7)]


def test_mrx_without_a_move_loses():
    state = load_game(spec(mrx_start=11, detective_starts="10;1")).new_initial_state()
    assert state.is_terminal() and state.returns() == [-1.0, 1.0] and state.legal_actions() == []
    # Out of tickets: one taxi ticket, then stuck on his second turn.
    game = load_game(spec(mrx_taxi=1))
    state = play(game, [move(TAXI, 7), move(TAXI, 2), move(TAXI, 10)])
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]


def test_detective_out_of_tickets_passes():
    game = load_game(spec(detective_taxi=1))
    state = play(game, [move(TAXI, 7), move(TAXI, 2), move(TAXI, 10), move(TAXI, 6)])
    assert state.detective_tickets[0][TAXI] == 0
    assert state.legal_actions() == [game.rules.pass_action]
    state.apply_action(game.rules.pass_action)
    assert state.detectives[0] == 2 and state.turn == 2


def test_mrx_wins_when_the_rounds_run_out():
    game = load_game(spec(rounds=1, reveal_rounds=1))
    state = play(game, [move(TAXI, 5), move(TAXI, 2), move(TAXI, 10)])
    assert state.is_terminal() and state.returns() == [1.0, -1.0]
    # Five rounds of the original game: Mr X shuttles 6-5 while the detectives stay away.
    glasses = load_game(SPEC)
    moves = []
    for x, d1, d2 in [(5, 2, 10), (6, 1, 11), (5, 2, 10), (6, 1, 11), (5, 2, 10)]:
        moves += [move(TAXI, x), move(TAXI, d1), move(TAXI, d2)]
    state = play(glasses, moves)
    assert state.is_terminal() and state.returns() == [1.0, -1.0] and state.mrx_tickets[TAXI] == 0


def test_detectives_first_move_order():
    game = load_game(spec(detectives_first="true", rounds=2, reveal_rounds=2))
    state = game.new_initial_state()
    assert state.current_player() == 1 and state.legal_actions() == [move(TAXI, 2)]
    state = play(game, [move(TAXI, 2), move(TAXI, 10), move(TAXI, 5)])
    assert state.current_player() == 1 and state.round() == 1
    state = play(game, [move(TAXI, 2), move(TAXI, 10), move(TAXI, 5), move(TAXI, 3), move(TAXI, 9), move(TAXI, 6)])
    # Round 2 ends with Mr X's move: he was not caught, he wins.
    assert state.is_terminal() and state.returns() == [1.0, -1.0]
    assert state.information_state_string(1) == "D1:taxi->2 D2:taxi->10 X:taxi D1:taxi->3 D2:taxi->9 X:taxi@6 end:mrx"


def test_reveal_round_and_hidden_positions(glasses):
    # Two histories that differ only in Mr X's first (hidden) move look the same to the detectives.
    a = play(glasses, [move(TAXI, 5), move(TAXI, 2), move(TAXI, 10)])
    b = play(glasses, [move(TAXI, 7), move(TAXI, 2), move(TAXI, 10)])
    assert a.information_state_string(1) == b.information_state_string(1)
    assert a.observation_string(1) == b.observation_string(1)
    assert a.information_state_tensor(1) == b.information_state_tensor(1)
    assert a.observation_tensor(1) == b.observation_tensor(1)
    assert a.information_state_string(0) != b.information_state_string(0)
    assert a.observation_tensor(0) != b.observation_tensor(0)
    assert "X:taxi" in a.information_state_string(1)  # the ticket type is seen
    # Round 2 hidden, round 3 revealed (reveal_rounds = [3]).
    state = play(glasses, [move(TAXI, 5), move(TAXI, 2), move(TAXI, 10), move(TAXI, 6), move(TAXI, 1), move(TAXI, 11)])
    assert "@" not in state.information_state_string(1)
    state.apply_action(move(TAXI, 7))
    assert "X:taxi@7" in state.information_state_string(1)
    observer = make_observation(glasses, pyspiel.IIGObservationType(perfect_recall=False))
    observer.set_from(state, 1)
    assert np.flatnonzero(observer.dict["last_revealed"]).tolist() == [6]
    assert not observer.dict["mrx_position"].any()  # the detectives' copy of the private piece is empty
    assert np.array_equal(observer.tensor, state.observation_tensor(1))


def test_other_transports_black_tickets_and_ferry():
    spec = (
        "scotland_yard(map=1-2:taxi;2-3:bus;3-4:underground;4-1:ferry;2-4:bus,mrx_start=2,"
        "detective_starts=3,num_detectives=1,mrx_bus=1,black_tickets=1,detective_underground=2)"
    )
    game = load_game(spec)
    n = game.rules.num_stations
    state = game.new_initial_state()
    # taxi to 1, bus to 4 (3 is the detective's), black to 1 or 4.
    assert state.legal_actions() == [move(TAXI, 1, n), move(1, 4, n), move(BLACK, 1, n), move(BLACK, 4, n)]
    state.apply_action(move(BLACK, 4, n))
    assert state.mrx_tickets[BLACK] == 0
    assert "X:black" in state.information_state_string(1)
    assert state.legal_actions() == [move(2, 4, n)]  # the detective's underground ride catches him
    # Detectives never ride the ferry: from 1 the only edges are taxi and ferry, no taxi tickets.
    ferry = load_game(spec.replace("mrx_start=2,detective_starts=3", "mrx_start=3,detective_starts=1"))
    s = ferry.new_initial_state()
    s.apply_action(s.legal_actions()[0])
    assert s.legal_actions() == [move(TAXI, 2, n)]


def test_double_move():
    game = load_game(spec(double_moves=1))
    state = game.new_initial_state()
    assert game.rules.double_action in state.legal_actions()
    state.apply_action(game.rules.double_action)
    state.apply_action(move(TAXI, 7))
    assert state.current_player() == 0 and game.rules.double_action not in state.legal_actions()
    state.apply_action(move(TAXI, 8))
    assert state.round() == 2 and state.current_player() == 1 and state.mrx_tickets[4] == 0
    assert "X2:taxi X:taxi" in state.information_state_string(1)


def test_no_reveal_rounds():
    game = load_game("scotland_yard(reveal_rounds=none)")
    assert game.rules.reveal_rounds == frozenset()
    assert pyspiel.load_game("scotland_yard", {"reveal_rounds": "none"}).rules.reveal_rounds == frozenset()
    # An empty value (like -1 for numbers) means the map's own.
    assert (
        pyspiel.load_game("scotland_yard", {"reveal_rounds": ""}).rules.reveal_rounds
        == load_game("scotland_yard").rules.reveal_rounds
    )


def test_bad_parameters_are_usage_errors():
    for spec in [
        "scotland_yard(detective_starts=1)",
        "scotland_yard(map=1-2:boat)",
        "scotland_yard(mrx_start=1)",
        "scotland_yard(reveal_rounds=9)",
    ]:
        with pytest.raises(UsageError):
            load_game(spec)


def test_pyspiel_loads_and_plays_it(glasses):
    assert "scotland_yard" in pyspiel.registered_names()
    report = check_game(glasses, num_games=5, seed=1)
    assert report.games_played == 5 and report.max_length <= glasses.max_game_length()
    game = pyspiel.load_game("scotland_yard(rounds=4,reveal_rounds=2;4)")  # pyspiel's own parser
    rng = np.random.default_rng(0)
    for _ in range(20):
        state = game.new_initial_state()
        while not state.is_terminal():
            for p in range(2):
                assert len(state.information_state_tensor(p)) == game.information_state_tensor_size()
                assert len(state.observation_tensor(p)) == game.observation_tensor_size()
            state.apply_action(int(rng.choice(state.legal_actions())))
        assert sum(state.returns()) == 0 and abs(state.returns()[0]) == 1


def test_board_string(glasses):
    text = str(play(glasses, [move(TAXI, 7)]))
    assert "7:X" in text and "1:D1" in text and "detective 1" in text and "log: 1:taxi@7" in text
