"""Scotland Yard on the London board (`scotland_yard(map=london)`): the box's data and
rules, dealt starts, public states over its 199 stations, and the board drawn."""

import numpy as np
import pyspiel
import pytest

from polyzero.games import check_game, load_game
from polyzero.games.public_states import public_state_at
from polyzero.games.scotland_yard_maps import LONDON_START_CARDS, london_map
from polyzero.games.scotland_yard_render import possible_mrx_stations

N = 199
TAXI, BUS, UNDERGROUND, BLACK = range(4)
FIXED = "mrx_start=35,detective_starts=13;26;29;34;50"  # London with chosen starts, no deal


def move(ticket, station):
    return ticket * N + station - 1


@pytest.fixture(scope="module")
def london():
    return load_game("scotland_yard(map=london)")


def random_state(game, seed, plies):
    """A state `plies` decisions into a uniformly random game (deals by chance)."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    done = 0
    while not state.is_terminal() and done < plies:
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(actions, p=probs)))
        else:
            state.apply_action(int(rng.choice(state.legal_actions())))
            done += 1
    return state


def test_the_board_is_the_box_data():
    n, edges = london_map()
    assert n == N and len(edges) == 468
    counts = np.bincount([t for *_, t in edges], minlength=4).tolist()
    assert counts == [346, 99, 20, 3]  # taxi, bus, underground, the river ferry
    assert {frozenset((a, b)) for a, b, t in edges if t == 3} == {
        frozenset((108, 115)),
        frozenset((115, 157)),
        frozenset((157, 194)),
    }


def test_the_box_rules_are_the_defaults(london):
    r = london.rules
    assert (r.num_detectives, r.rounds, sorted(r.reveal_rounds)) == (5, 24, [3, 8, 13, 18, 24])
    assert r.mrx_tickets == (4, 3, 3, 5, 2) and r.detective_tickets == (10, 8, 4)
    assert r.box_rules and r.station_recall and r.start_cards == list(LONDON_START_CARDS)
    assert london.num_distinct_actions() == 4 * N + 2
    # The game's string spells the resolved values out and loads the same game again.
    again = load_game(str(london))
    assert str(again) == str(london) and again.rules.mrx_tickets == r.mrx_tickets
    # A parameter given wins over the map's value.
    assert load_game("scotland_yard(map=london,num_detectives=3,detective_starts=deal)").rules.num_detectives == 3


def test_starts_are_dealt_face_up_and_mr_x_in_secret(london):
    state = london.new_initial_state()
    assert state.is_chance_node()
    outcomes = state.chance_outcomes()
    assert sorted(a + 1 for a, _ in outcomes) == list(LONDON_START_CARDS)
    assert np.isclose(sum(p for _, p in outcomes), 1.0)
    for card in (13, 26, 29, 34, 50):
        state.apply_action(card - 1)
    assert state.detectives == [13, 26, 29, 34, 50] and state.is_chance_node()
    assert len(state.chance_outcomes()) == 13  # Mr X draws from the other cards
    a, b = state.child(34), state.child(196)  # Mr X at 35 or at 197
    assert a.current_player() == 0 and a.mrx == 35 and b.mrx == 197
    assert a.information_state_string(1) == b.information_state_string(1)
    assert a.observation_tensor(1) == b.observation_tensor(1)
    assert a.information_state_string(0) != b.information_state_string(0)
    assert "X@35" in a.information_state_string(0)  # mrx_recall=station: his station, not his path


def test_box_rules_tickets_go_to_mr_x_and_detectives_out_of_tickets_lose():
    game = load_game(f"scotland_yard(map=london,{FIXED})")
    state = game.new_initial_state()
    assert not state.is_chance_node() and state.current_player() == 0
    state.apply_action(state.legal_actions()[0])
    before = list(state.mrx_tickets)
    detective_move = next(a for a in state.legal_actions() if a // N == BUS)
    state.apply_action(detective_move)
    assert state.mrx_tickets[BUS] == before[BUS] + 1 and state.detective_tickets[0][BUS] == 7
    # One taxi ticket each: after one round nobody can move and Mr X wins at once.
    short = load_game(f"scotland_yard(map=london,{FIXED},detective_taxi=1,detective_bus=0,detective_underground=0)")
    state = short.new_initial_state()
    while not state.is_terminal():
        state.apply_action(state.legal_actions()[0])
    assert state.returns() == [1.0, -1.0] and state.round() == 1
    # Without the box's rules (the glasses default) the detectives pass and Mr X plays on.
    spec = load_game(
        f"scotland_yard(map=london,{FIXED},detective_taxi=1,detective_bus=0,detective_underground=0,box_rules=0)"
    )
    state = spec.new_initial_state()
    for _ in range(1 + 5 + 1):
        state.apply_action(state.legal_actions()[0])
    assert not state.is_terminal() and state.round() == 2


def test_black_tickets_ride_the_ferry_detectives_do_not():
    game = load_game("scotland_yard(map=london,mrx_start=115,detective_starts=108;1;2;3;4)")
    state = game.new_initial_state()
    legal = state.legal_actions()
    assert move(BLACK, 157) in legal and move(BLACK, 108) not in legal  # a detective stands on 108
    assert move(TAXI, 157) not in legal  # the river is the ferry's alone
    state.apply_action(move(BLACK, 157))
    assert all(a // N != BLACK and a % N != 114 for a in state.legal_actions())  # D1 at 108: no ferry to 115


def test_double_move_covering_a_surfacing_round_reveals_that_move():
    game = load_game(f"scotland_yard(map=london,{FIXED})")
    state = game.new_initial_state()
    for _ in range(2):  # rounds 1 and 2
        state.apply_action(state.legal_actions()[0])
        for _ in range(5):
            state.apply_action(state.legal_actions()[0])
    assert state.current_player() == 0 and state.round() == 2
    state.apply_action(game.rules.double_action)
    state.apply_action([a for a in state.legal_actions() if a != game.rules.double_action][0])
    third = state.mrx
    state.apply_action(state.legal_actions()[0])
    assert state.round() == 4 and state.mrx_tickets[4] == 1 and state.current_player() == 1
    assert f"X:double X2:taxi@{third} " in state.information_state_string(1)
    assert possible_mrx_stations(state) <= {s for s, t in game.rules.neighbours[third] if t == TAXI}


@pytest.mark.parametrize("seed", [0, 1])
def test_public_states_hold_one_world_per_station(london, seed):
    """mrx_recall=station: the worlds of a public state are Mr X's possible stations,
    exactly those the public history leaves him, whatever the paths there."""
    for plies in (4, 20, 45):
        state = random_state(london, seed, plies)
        if state.is_terminal():
            break
        node = public_state_at(london, state)
        stations = [w.state.mrx for w in node.worlds]
        assert len(stations) == len(set(stations)) <= N
        assert set(stations) == possible_mrx_stations(state) and state.mrx in stations
        assert len(node.info_states[1]) == 1 and len(node.info_states[0]) == len(stations)
        # A uniform deal: every world (station) has the chance of one deal of the six cards.
        assert all(np.isclose(w.chance_reach, 1 / (18 * 17 * 16 * 15 * 14 * 13)) for w in node.worlds)


def test_london_plays_through_pyspiel(london):
    report = check_game(london, num_games=2, seed=3)
    assert report.games_played == 2 and report.max_length <= london.max_game_length()
    for p in range(2):
        state = random_state(london, 5, 12)
        assert len(state.information_state_tensor(p)) == london.information_state_tensor_size()
        assert len(state.observation_tensor(p)) == london.observation_tensor_size()
    assert pyspiel.load_game(str(london)).num_distinct_actions() == 4 * N + 2


def test_the_board_drawn_in_the_terminal(london):
    state = random_state(london, 2, 13)
    mine, theirs = state.observation_string(0), state.observation_string(1)
    grid = [line for line in theirs.splitlines() if line.startswith("|")]
    assert len(grid) == 38 and all(len(line) == 102 for line in grid)
    assert "X" not in "".join(grid) and "?" in "".join(grid) and "Mr X may be at" in theirs
    assert f"Mr X at {state.mrx}" in mine and "X" in "".join(row for row in mine.splitlines() if row.startswith("|"))
    for k, station in enumerate(state.detectives):
        assert f"D{k + 1} at {station}" in theirs and str(k + 1) in "".join(grid)
    assert f"Mr X at {state.mrx}" in str(state)  # str(state): the full (debugging) view
