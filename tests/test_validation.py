"""Validation at the door (issue 54 item 9): every bad value, path or game parameter is one
line, exit 2 (1 for operating-system errors), before any work starts."""

import json

import pytest

from polyzero.cli import main
from polyzero.config import build_config
from polyzero.errors import UsageError
from polyzero.games import load_game
from polyzero.games.loader import registered_type
from polyzero.presets import list_presets, preset_file, preset_summary
from polyzero.validation import check_fits_machine, machine_memory_bytes


def _run(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own refusals
        return exc.code


def _error(capsys, argv, code=2) -> str:
    assert _run(argv) == code
    err = capsys.readouterr().err.strip()
    assert err.startswith("polyzero") and "\n" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "override, expected",
    [
        ("selfplay.temperature=inf", "selfplay.temperature must be a finite number, not inf"),
        ("train.learning_rate=nan", "train.learning_rate must be a finite number, not nan"),
        ("search.c_puct=-inf", "search.c_puct must be a finite number"),
        ("train.learning_rate=50.0", "train.learning_rate must be at most 10"),
        ("train.lr_steps=-1", "train.lr_steps must be non-negative, not -1"),
        ("selfplay.concurrent_games=100000000000", "out of range"),
        ("seed=-1", "seed must be a whole number in 0..1073741823"),
        ("seed=4294967296", "seed must be a whole number"),
        ("muzero.unroll_steps=3", "algo alphazero does not read ([muzero] is for muzero)"),
        ("sog.simulations=3", "[sog] is for sog"),
        ("game=connect_four", "disagrees with the game given as 'tic_tac_toe'"),
    ],
)
def test_config_values_refused(capsys, tmp_path, override, expected):
    err = _error(capsys, ["train", "tic_tac_toe", "--run-dir", str(tmp_path / "r"), "--set", override])
    assert expected in err
    assert not (tmp_path / "r").exists()


def test_a_section_default_and_set_game_algo_are_applied():
    # A copy of a saved config.toml holds every section at its defaults: accepted.
    assert build_config("tic_tac_toe", None, None, ["muzero.unroll_steps=5"]).algo == "alphazero"
    cfg = build_config(None, None, None, ["game=kuhn_poker", "algo=sog"])
    assert (cfg.game, cfg.algo) == ("kuhn_poker", "sog")
    saved = build_config("tic_tac_toe").to_dict()
    with pytest.raises(UsageError, match="a resumed run keeps its game"):
        build_config(overrides=["game=connect_four"], base=saved)
    assert build_config(overrides=["game=tic_tac_toe"], base=saved).game == "tic_tac_toe"


def test_memory_sized_values_are_bounded_by_this_machine(capsys, tmp_path):
    game = load_game("tic_tac_toe")
    budget = 0.8 * machine_memory_bytes()
    positions = int(budget // 100) + 1  # a tic-tac-toe position takes more than 100 bytes
    cfg = build_config("tic_tac_toe", None, None, [f"train.replay_size={positions}"])
    with pytest.raises(UsageError, match="train.replay_size .* more than the .* GiB a run may take"):
        check_fits_machine(cfg, game)
    check_fits_machine(build_config("tic_tac_toe"), game)  # the preset fits
    err = _error(
        capsys,
        ["train", "tic_tac_toe", "--run-dir", str(tmp_path / "r"), "--set", "selfplay.concurrent_games=1000000000"],
    )
    assert "selfplay.concurrent_games = 1,000,000,000 search trees" in err and "GiB" in err


@pytest.mark.parametrize(
    "game, algo, overrides, expected",
    [
        ("tic_tac_toe", "alphazero", ["search.c1=2"], "search.selection = 'alphazero' takes search.c_puct"),
        ("tic_tac_toe", "alphazero", ["search.selection=muzero", "search.c_puct=2"], "takes search.c1 and search.c2"),
        ("tic_tac_toe", "alphazero", ["search.kind=full_gumbel", "search.c_puct=2"], "below a full_gumbel root"),
        ("tic_tac_toe", "muzero", ["muzero.reanalyse_network=target"], "muzero.reanalyse_fraction > 0 only"),
        ("connect_four", "muzero", ["muzero.td_steps=3"], "connect_four is a board game"),
        ("connect_four", "muzero", ["muzero.priority_alpha=0.6"], "replay is uniform"),
        ("cartpole", "muzero", ["muzero.prioritized=off", "muzero.priority_beta=0.4"], "replay is uniform"),
        ("cartpole", "muzero", ["muzero.terminal_reward=true"], "cartpole is a game of one player"),
        ("tic_tac_toe", "alphazero", ["start.initial_probability=0.3"], "start.archive = 'none' keeps no archive"),
        (
            "tic_tac_toe",
            "alphazero",
            ["start.archive=visited", "start.archive_workers=2"],
            "only start.archive = 'search'",
        ),
        ("tic_tac_toe", "alphazero", ["katago.forced_k=3"], "katago.forced_playouts is off"),
        ("tic_tac_toe", "alphazero", ["katago.cheap_simulations=3"], "every search is full"),
        ("kuhn_poker", "sog", ["train.positions_per_step=8"], "plays sog.episodes_per_step games"),
        ("kuhn_poker", "sog", ["net.inference=eager"], "the CVPN runs in eager PyTorch"),
        ("kuhn_poker", "sog", ["train.lr_schedule=cosine", "sog.lr_halve_every=5"], "sets the rate at every update"),
        ("nannon", "ndmz", ["train.symmetries=true"], "NDMZ's replay stores no board symmetries"),
        ("leduc_poker", "sog", ["eval.games=5"], "evaluated by exploitability"),
        ("tic_tac_toe", "sog", ["eval.sample_moves=2"], "plays its re-solved policy"),
    ],
)
def test_keys_the_run_would_not_read_are_refused(game, algo, overrides, expected):
    key = overrides[-1].split("=")[0]
    with pytest.raises(
        UsageError, match=f"--set {overrides[-1]} sets {key}, which this run does not read: .*{expected}"
    ):
        build_config(game, algo, None, overrides)
    # Holding the value the preset gives it (as a copy of a saved config.toml does): accepted.
    section, name = key.split(".")
    value = getattr(getattr(build_config(game, algo, None, overrides[:-1]), section), name)
    assert build_config(game, algo, None, overrides[:-1] + [f"{key}={json.dumps(value)}"])


@pytest.mark.parametrize(
    "overrides",
    [
        ["search.kind=full_gumbel"],
        ["search.selection=muzero", "search.c1=2"],
        ["start.archive=search", "start.archive_workers=2", "start.initial_probability=0.3"],
        ["katago.forced_playouts=true", "katago.forced_k=3"],
        ["katago.playout_cap_probability=0.5", "katago.cheap_simulations=3"],
    ],
)
def test_keys_the_run_reads_are_accepted(overrides):
    assert build_config("tic_tac_toe", "alphazero", None, overrides)


@pytest.mark.parametrize(
    "game, overrides",
    [
        ("connect_four", ["muzero.prioritized=on", "muzero.priority_alpha=0.6"]),
        ("cartpole", ["muzero.td_steps=3", "muzero.prioritized=on", "muzero.priority_beta=0.4"]),
        ("connect_four", ["muzero.terminal_reward=true"]),
        ("pathfinding", ["muzero.td_steps=3"]),  # players a parameter (1 to 10): nothing refused
    ],
)
def test_muzero_keys_the_game_reads_are_accepted(game, overrides):
    assert build_config(game, "muzero", None, overrides)


def test_a_game_type_is_read_without_loading_the_game():
    assert registered_type("cartpole").max_num_players == 1
    assert registered_type("turn_based_simultaneous_game(game=matrix_rps())").short_name == "matrix_rps"
    assert registered_type("leduc_poker(players=2)").short_name == "leduc_poker"
    assert registered_type("no_such_game") is None


@pytest.mark.parametrize("name", list_presets())
def test_every_shipped_preset_loads_by_name(name):
    """`polyzero train --preset NAME` gives the preset as the config file: it sets no key
    its run would not read."""
    info = preset_summary(name)
    assert build_config(info["game"], info["algo"], str(preset_file(name))).algo == info["algo"]


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("connect_four(rows=0)", "'rows' must be in 1..64, not 0"),  # segfaulted (exit 139)
        ("go(board_size=1)", "'board_size' must be in 2..19"),
        ("hex(board_size=0)", "'board_size' must be in 1..26"),
        ("hex(board_size=100000)", "'board_size' must be in 1..26"),  # hung
        ("pig(players=0)", "'players' must be in 2..10"),  # segfaulted
        ("pig(winscore=-1)", "'winscore' must be in 0..400"),  # segfaulted
        ("breakthrough(rows=1)", "cannot play game 'breakthrough(rows=1)'"),
    ],
)
def test_degenerate_game_parameters(spec, expected):
    with pytest.raises(UsageError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        load_game(spec)


def test_a_game_over_before_anyone_moves_loads_but_commands_refuse_it(capsys):
    """Mr X without a ticket has lost at the start: the library loads such a game (its
    rules are tested), training and matches refuse it in one line."""
    assert load_game("scotland_yard(mrx_taxi=0)").new_initial_state().is_terminal()
    for argv in (
        ["arena", "random", "random", "--game", "scotland_yard(mrx_taxi=0)", "--games", "1"],
        ["train", "scotland_yard(mrx_taxi=0)", "--algo", "sog"],
    ):
        assert "the game is over before anyone moves" in _error(capsys, argv)


def test_seeds_counts_and_output_paths_on_every_command(capsys, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for argv, expected in [
        (["arena", "random", "random", "--game", "tic_tac_toe", "--seed", "-1"], "--seed must be a whole number"),
        (["arena", "random", "random", "--game", "tic_tac_toe", "--games", "100000000000"], "1..10000000"),
        (["arena", "random", "random", "--game", "tic_tac_toe", "--record", "/dev/null"], "special file"),
        (["arena", "random", "random", "--game", "tic_tac_toe", "--record", str(afile / "x")], "is a file"),
        (["tournament", str(tmp_path), "--out", str(afile)], "is a file"),
        (["play", "tic_tac_toe", "--agent", "random", "--seed", "99999999999"], "--seed must be"),
        (["export", str(tmp_path), "--out", str(tmp_path)], "is a directory, not a file"),
        (["train", "tic_tac_toe", "--run-dir", "/dev/null"], "special file"),
        (["train", "tic_tac_toe", "--run-dir", str(afile)], "is a file"),
        (["train", "--resume", str(afile)], "is a file"),
    ]:
        assert expected in _error(capsys, argv), argv


def test_files_that_do_not_decode_name_their_path(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'steps = "\xff\xfe"\n')
    assert f"config file {bad} is not UTF-8 text" in _error(capsys, ["train", "tic_tac_toe", "--config", str(bad)])
    run = tmp_path / "run"
    (run / "checkpoints" / "step_000001").mkdir(parents=True)
    (run / "checkpoints" / "latest").write_bytes(b"\xff\xfe")
    err = _error(capsys, ["arena", str(run), "random", "--games", "1"])
    assert f"{run / 'checkpoints' / 'latest'} is not UTF-8 text" in err
