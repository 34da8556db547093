"""`polyzero probe`: a learned model's k-step agreement with the true game."""

import json

import numpy as np

from polyzero.cli import main
from polyzero.train.probe import probe, record_games


def test_terminal_reward_is_the_last_movers_outcome_and_zero_before():
    from polyzero.games import ObservationEncoder, load_game

    game = load_game("tic_tac_toe")
    steps = record_games(game, ObservationEncoder(game).encode, 40, seed=1, terminal_reward=True)
    kind, reward = np.asarray(steps.kind), np.asarray(steps.reward)
    assert (kind == "terminal").sum() == 40 and set(kind) == {"choice", "terminal"}
    assert (reward[kind == "choice"] == 0).all()
    assert set(reward[kind == "terminal"]) <= {0.0, 1.0} and reward[kind == "terminal"].any()  # a win or a draw
    plain = record_games(game, ObservationEncoder(game).encode, 40, seed=1)
    assert not np.any(plain.reward) and plain.action == steps.action  # the same games, rewards off


def test_the_probe_tells_a_trained_model_from_an_untrained_one(trained_muzero, trained, tmp_path, capsys):
    trainer, untrained = trained_muzero
    steps = record_games(trainer.game, trainer.algo.encode, 60, seed=2)
    net = trainer.algo.build_network()
    net.load_state_dict(untrained)
    before = probe(net, steps, 5)["metrics"]
    run_dir = str(trainer.run_dir)
    assert (
        main(
            [
                "probe",
                run_dir,
                "--baseline",
                str(trained[0].run_dir),
                "--games",
                "60",
                "--seed",
                "2",
                "--out",
                str(tmp_path / "p"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "legal_top" in out and "agree_baseline" in out and "k=5" in out
    after = json.loads((tmp_path / "p" / "probe.json").read_text())
    assert (tmp_path / "p" / "probe.png").stat().st_size > 10_000
    # k = 0 is f(h(o)) itself: agreement 1 and no drift, for any network
    assert after["metrics"]["agree_self"][0] == 1.0 and after["metrics"]["value_drift"][0] == 0.0
    # after 150 learning steps the model keeps choosing legal moves several steps ahead,
    # where the untrained one's top moves are legal only as often as chance makes them
    for k in range(1, 4):
        assert after["metrics"]["legal_top"][k] > before["legal_top"][k] + 0.2, (k, after, before)


def test_probe_refuses_a_run_without_a_learned_model(trained, capsys):
    assert main(["probe", str(trained[0].run_dir)]) == 2
    assert "needs a run with a learned model" in capsys.readouterr().err
