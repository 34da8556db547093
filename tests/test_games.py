"""Tests for polyzero.games: loading, capabilities, encoders, conformance."""

import numpy as np
import pyspiel
import pytest

from polyzero.errors import UsageError
from polyzero.games import (
    GameRequirements,
    ObservationEncoder,
    check_game,
    check_supported,
    describe_game,
    game_spec_string,
    legal_action_mask,
    load_game,
    parse_game_spec,
    register_polyzero_games,
)

# --- spec parsing -----------------------------------------------------------------------


def test_parse_plain_name():
    assert parse_game_spec("tic_tac_toe") == ("tic_tac_toe", {})
    assert parse_game_spec(" connect_four() ") == ("connect_four", {})


def test_parse_value_types():
    name, p = parse_game_spec("x(a=9,b=7.5,c=true,d=False,e=hello,f=-3,g=1e3)")
    assert name == "x"
    assert p == {"a": 9, "b": 7.5, "c": True, "d": False, "e": "hello", "f": -3, "g": 1000.0}
    assert type(p["a"]) is int and type(p["b"]) is float and type(p["c"]) is bool


@pytest.mark.parametrize(
    "spec", ["go(", "go(a)", "go(=3)", "go(a=)", "go(a=1,a=2)", "go(a=(b=1))", "bad name", "", "go)a=1("]
)
def test_parse_malformed(spec):
    with pytest.raises(UsageError):
        parse_game_spec(spec)


# --- loading ----------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["tic_tac_toe", "connect_four", "hex(board_size=5)", "breakthrough", "othello"])
def test_load_and_round_trip(spec):
    game = load_game(spec)
    assert load_game(game_spec_string(game)) == game


def test_turn_based_simultaneous_game_loads_and_round_trips():
    """The one nested spec: a simultaneous-move game made sequential, as OpenSpiel writes it."""
    game = load_game("turn_based_simultaneous_game(game=matrix_rps())")
    assert game.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert game.num_distinct_actions() == 3
    assert load_game(game_spec_string(game)) == game
    with pytest.raises(UsageError, match="not a simultaneous-move game"):
        load_game("turn_based_simultaneous_game(game=kuhn_poker())")
    with pytest.raises(UsageError, match="nested game parameters"):
        load_game("go(board=(b=1))")


def test_load_go_params_take_effect():
    game = load_game("go(board_size=9,komi=7.5)")
    params = game.get_parameters()
    assert params["board_size"] == 9 and params["komi"] == 7.5
    assert game.num_distinct_actions() == 82
    assert game_spec_string(game) == "go(board_size=9,komi=7.5)"


def test_int_value_for_float_parameter():
    # komi is a double; users write komi=7 and expect it to work.
    assert load_game("go(komi=7)").get_parameters()["komi"] == 7.0


def test_unknown_game_suggests_close_names():
    with pytest.raises(UsageError, match=r"unknown game 'conect_four'; did you mean: .*connect_four"):
        load_game("conect_four")


def test_unknown_parameter_is_named():
    with pytest.raises(UsageError) as e:
        load_game("connect_four(size=3)")
    msg = str(e.value)
    assert "'size'" in msg and "rows" in msg and "columns" in msg and "\n" not in msg


def test_bad_parameter_value():
    with pytest.raises(UsageError, match="komi"):
        load_game("go(komi=abc)")


def test_pyspiel_error_is_one_line():
    with pytest.raises(UsageError) as e:
        load_game("kuhn_poker(players=1)")
    assert "\n" not in str(e.value)


def test_register_is_idempotent():
    register_polyzero_games()
    register_polyzero_games()


# --- capabilities -----------------------------------------------------------------------


def _refusal(spec, req=GameRequirements()):  # noqa: B008 - frozen, never changed
    with pytest.raises(UsageError) as e:
        check_supported(load_game(spec), req, "alphazero")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("alphazero does not support")
    return msg


def test_refuse_kuhn_poker():
    msg = _refusal("kuhn_poker")
    assert "imperfect information" in msg and "chance" in msg


def test_refuse_backgammon_chance():
    assert "chance nodes" in _refusal("backgammon")


def test_refuse_goofspiel_simultaneous():
    assert "simultaneous" in _refusal("goofspiel(points_order=descending)")


def test_refuse_three_players():
    assert "3 players" in _refusal("chinese_checkers(players=3)")


def test_refuse_no_observation_tensor():
    assert "observation tensor" in _refusal("morpion_solitaire")


def test_refuse_single_player_and_rewards():
    assert "single-player" in _refusal("cliff_walking", GameRequirements(single_player=False))
    assert "intermediate rewards" in _refusal("cliff_walking", GameRequirements(terminal_rewards_only=True))


def test_supported_games_pass():
    for spec in ["tic_tac_toe", "go(board_size=9)", "cliff_walking"]:
        check_supported(load_game(spec), GameRequirements(), "alphazero")
    check_supported(load_game("backgammon"), GameRequirements(chance_nodes=True), "stochastic_muzero")


def test_describe_game():
    d = describe_game(load_game("connect_four"))
    assert d["name"] == "connect_four" and d["players"] == 2
    assert d["num_distinct_actions"] == 7 and d["observation_shape"] == [3, 6, 7]
    assert d["chance"] == "deterministic" and d["utility"] == "zero_sum"


# --- encoders ---------------------------------------------------------------------------


def test_encoder_shapes():
    assert ObservationEncoder(load_game("connect_four")).shape == (3, 6, 7)
    assert ObservationEncoder(load_game("tic_tac_toe")).shape == (3, 3, 3)
    flat = ObservationEncoder(load_game("nim"))
    assert len(flat.shape) == 1 and not flat.is_spatial
    grid = ObservationEncoder(load_game("cliff_walking"))  # 2-D observation -> one plane
    assert grid.shape == (1, 4, 8) and grid.is_spatial


def test_encoder_perspective_is_player_to_move():
    game = load_game("connect_four(egocentric_obs_tensor=true)")
    enc = ObservationEncoder(game)
    s = game.new_initial_state()
    s.apply_action(3)  # player 0 drops in column 3; player 1 to move
    x = enc.encode_one(s)
    assert np.array_equal(x.ravel(), np.asarray(s.observation_tensor(1), np.float32))
    assert not np.array_equal(x.ravel(), np.asarray(s.observation_tensor(0), np.float32))
    mine_then_theirs = np.asarray(s.observation_tensor(0), np.float32).reshape(3, 6, 7)
    assert np.array_equal(x[0], mine_then_theirs[1]) and np.array_equal(x[1], mine_then_theirs[0])
    assert x[:2].sum() == 1  # exactly the one stone
    s.apply_action(3)  # back to player 0: now the perspective is player 0's
    assert np.array_equal(enc.encode_one(s).ravel(), np.asarray(s.observation_tensor(0), np.float32))


@pytest.mark.parametrize("name", ["connect_four", "tic_tac_toe"])
def test_shared_observations_are_shown_from_the_movers_side(name):
    """Both players see the same OpenSpiel tensor; the mover's stones come first once
    the colours are swapped for the second player, as the egocentric option shows them."""
    game = load_game(name)
    enc, raw = ObservationEncoder(game), ObservationEncoder(game, "raw")
    mine, theirs = {"connect_four": (0, 1), "tic_tac_toe": (2, 1)}[name]
    s = game.new_initial_state()
    for ply, action in enumerate([3, 4, 2]):
        s.apply_action(action)  # after ply 0 the second player moves, after ply 1 the first
        x, r = enc.encode_one(s), raw.encode_one(s)
        assert np.array_equal(r.ravel(), np.asarray(s.observation_tensor(0), np.float32))
        assert x[mine].sum() == (ply + 1) // 2 and x[theirs].sum() == ply // 2 + 1
        if ply % 2 == 0:  # the second player to move: colours swapped
            assert np.array_equal(x[mine], r[theirs]) and np.array_equal(x[theirs], r[mine])
        else:
            assert np.array_equal(x, r)


def test_games_without_interchangeable_colours_get_a_mover_plane():
    game = load_game("hex(board_size=5)")
    enc = ObservationEncoder(game)
    assert enc.shape == (10, 5, 5)
    s = game.new_initial_state()
    first = enc.encode_one(s)
    s.apply_action(12)
    second = enc.encode_one(s)
    assert (first[-1] == 0).all() and (second[-1] == 1).all()
    assert np.array_equal(second[:-1].ravel(), np.asarray(s.observation_tensor(0), np.float32))
    # Player-relative observations (othello) and go's own to-play plane are left as they are.
    assert ObservationEncoder(load_game("othello")).shape == (3, 8, 8)
    assert ObservationEncoder(load_game("go(board_size=5)")).shape == (4, 5, 5)
    with pytest.raises(ValueError, match="perspective"):
        ObservationEncoder(game, "theirs")


def test_runs_saved_before_the_perspective_setting_keep_the_raw_tensor():
    import dataclasses
    import tomllib

    from polyzero.config import build_config, to_toml

    saved = tomllib.loads(to_toml(dataclasses.asdict(build_config("connect_four", "alphazero"))))
    assert build_config(base=saved).net.perspective == "mover"
    del saved["net"]["perspective"]
    assert build_config(base=saved).net.perspective == "raw"


def test_encoder_batch_out_and_fallback():
    game = load_game("othello")
    enc = ObservationEncoder(game)
    states = [game.new_initial_state()]
    for _ in range(3):
        states.append(states[-1].clone())
        states[-1].apply_action(states[-1].legal_actions()[0])
    out = np.full((8, *enc.shape), -1, np.float32)  # bigger than the batch: first rows used
    got = enc.encode(states, out=out)
    assert got.shape == (4, *enc.shape) and got.dtype == np.float32
    assert np.shares_memory(got, out) and (out[4:] == -1).all()
    for s, x in zip(states, got):
        assert np.array_equal(x.ravel(), np.asarray(s.observation_tensor(s.current_player()), np.float32))
    enc._obs = None  # force the observation_tensor() fallback path
    assert np.array_equal(enc.encode(states), got)
    with pytest.raises(ValueError):
        enc.encode(states, out=np.zeros((2, *enc.shape), np.float32))


def test_legal_action_mask():
    game = load_game("tic_tac_toe")
    s = game.new_initial_state()
    s.apply_action(4)
    t = game.new_initial_state()
    for a in (0, 3, 1, 4, 2):
        t.apply_action(a)
    assert t.is_terminal()
    mask = legal_action_mask([s, t], 9)
    assert mask.dtype == bool and mask.shape == (2, 9)
    assert np.flatnonzero(mask[0]).tolist() == s.legal_actions()
    assert not mask[1].any()
    out = np.ones((3, 9), bool)
    legal_action_mask([t], 9, out=out)
    assert not out[0].any()


# --- conformance ------------------------------------------------------------------------

CONFORMANCE_GAMES = [
    "tic_tac_toe",
    "connect_four",
    "hex(board_size=5)",
    "breakthrough(rows=6,columns=6)",
    "othello",
    "go(board_size=5)",
    "clobber",
    "dots_and_boxes",
    "amazons",
    "checkers",
    "nim",
    "pentago",
    "mancala",
    "ultimate_tic_tac_toe",
    "cliff_walking",  # single-player deterministic
]


@pytest.mark.parametrize("spec", CONFORMANCE_GAMES)
def test_conformance(spec):
    game = load_game(spec)
    check_supported(game, GameRequirements(), "alphazero")
    report = check_game(game, num_games=3, seed=0)
    assert report.games_played == 3
    assert 0 < report.mean_length <= report.max_length <= game.max_game_length()


def test_conformance_handles_chance():
    # Not an AlphaZero game, but the check must work for chance games (Nannon later).
    assert check_game(load_game("backgammon"), num_games=2).games_played == 2


def test_conformance_search_fn_hook():
    calls = []

    def first_legal(states):
        calls.append(len(states))
        return [s.legal_actions()[0] for s in states]

    report = check_game(load_game("tic_tac_toe"), num_games=4, search_fn=first_legal)
    assert calls and calls[0] == 4  # called on the whole live batch
    assert report.max_length == 7  # first-legal play: X takes 0, 2, 4, 6 and wins on the diagonal


def test_conformance_rejects_illegal_search_action():
    game = load_game("tic_tac_toe")
    with pytest.raises(AssertionError, match="illegal"):
        check_game(game, num_games=1, search_fn=lambda states: [s.history()[0] if s.history() else 0 for s in states])
