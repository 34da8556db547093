"""Student of Games, part 2: the CVPN, query solving, sound self-play and training."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from conftest import BACKGROUND_RUNS, background_run
from polyzero.config import build_config
from polyzero.games import load_game
from polyzero.games.public_states import PublicTree, public_state_at
from polyzero.sog import selfplay
from polyzero.sog.cvpn import BeliefEncoding, Example, NetworkValueFunction, build_cvpn
from polyzero.sog.gtcfr import SoGSettings
from polyzero.sog.selfplay import QueryBuffer, SlidingWindow, make_example, solve_indexed, solve_query, value_targets
from polyzero.sog.values import ExactValueFunction, Query


def _state(game, actions):
    state = game.new_initial_state()
    for a in actions:
        state.apply_action(a)
    return state


def _random_ranges(node, rng):
    return [rng.uniform(0.1, 1.0, len(node.info_states[p])) for p in range(2)]


@pytest.mark.parametrize("name, slots, actions", [("kuhn_poker", 3, 2), ("leduc_poker", 6, 3)])
def test_cvpn_shapes_and_masks(name, slots, actions):
    game = load_game(name)
    enc = BeliefEncoding(game)
    assert enc.slots == [slots, slots] and enc.num_actions == actions
    net = build_cvpn(enc, width=16, layers=1)
    root = PublicTree(game, max_depth=0).nodes[0]
    ranges = [np.ones(len(root.info_states[p])) for p in range(2)]
    x = enc.input(root, ranges)
    assert x.shape == (enc.input_size,)
    # each player's range over its slots is normalised to sum 1
    assert np.isclose(x[enc.public_size : enc.public_size + slots].sum(), 1.0)
    values, logits = net(torch.from_numpy(x[None]))
    assert values.shape == (1, 2, slots) and logits.shape == (1, 2, slots, actions)
    legal = enc.legal_mask(root)
    slot = enc.slot_index(root, root.player)
    assert sorted(slot.tolist()) == list(range(slots))  # the deal fills every slot
    assert all(legal[s, root.worlds[0].state.legal_actions()].all() for s in slot)
    # a public state where the acting player holds fewer cards than slots: none of them is masked in
    ev = NetworkValueFunction(enc, net).evaluate([Query(root, ranges)])[0]
    assert ev.policy.shape == (len(root.info_states[root.player]), actions)
    assert np.allclose(ev.policy.sum(axis=1), 1.0)
    illegal = ~legal[slot]
    assert (ev.policy[illegal] == 0).all()


def test_search_reads_the_policy_rows_of_the_slots_it_needs():
    """On Scotland Yard's London board (199 x 798 policy outputs per player) the value
    function computes only the acting player's rows at the node's slots: the same
    logits as the whole head, and the policy it gives is softmax over the legal moves."""
    game = load_game("scotland_yard(map=london,mrx_start=35,detective_starts=13;26;29;34;50)")
    enc = BeliefEncoding(game)
    torch.manual_seed(0)
    net = build_cvpn(enc, width=8, layers=1)
    state = _state(game, game.new_initial_state().legal_actions()[:1])  # Mr X moves
    node = public_state_at(game, state)  # the detectives to move, Mr X on one of several stations
    assert node.player == 1 and len(node.info_states[0]) > 1
    rng = np.random.default_rng(0)
    query = Query(node, _random_ranges(node, rng))
    x = torch.from_numpy(enc.input(node, query.ranges)[None])
    values, logits = net(x)
    fn = NetworkValueFunction(enc, net)
    fast_values, rows = fn.predict([query])
    slots = enc.slot_index(node, 1).tolist()  # a list: the node's cached slot array is read-only
    assert np.allclose(fast_values, values.detach().numpy(), atol=1e-6)
    assert np.allclose(rows[0], logits[0, 1, slots].detach().numpy(), atol=1e-5)
    mrx_rows = net.policy_rows(net.features(x)[0], 0, torch.tensor([4, 34, 4]))
    assert torch.allclose(mrx_rows, logits[0, 0, [4, 34, 4]], atol=1e-5)
    (ev,) = fn.evaluate([query])
    legal = enc.legal_mask(node)[slots]
    want = np.where(legal, rows[0], -np.inf)
    want = np.exp(want - want.max(axis=1, keepdims=True))
    assert np.allclose(ev.policy, want / want.sum(axis=1, keepdims=True))
    assert (ev.policy[~legal] == 0).all() and legal.sum() < legal.size


def test_network_values_scale_with_chance_and_opponent_reach():
    """The CVPN predicts normalised values; the value function multiplies them by
    each information state's chance-and-opponent reach (its counterfactual weight)."""
    game = load_game("kuhn_poker")
    enc = BeliefEncoding(game)
    net = build_cvpn(enc, width=8, layers=1)
    with torch.no_grad():
        for head in net.value:
            head.weight.zero_()
            head.bias.fill_(0.5)
    node = public_state_at(game, _state(game, [0, 1, 1]))  # J, Q dealt, player 0 bet
    ranges = [np.array([0.2, 0.3, 0.5]), np.array([1.0, 0.4, 0.1])]
    ev = NetworkValueFunction(enc, net).evaluate([Query(node, ranges)])[0]
    for p in range(2):
        expected = 0.5 * enc.reach_mass(node, ranges, p)
        assert np.allclose(ev.values[p], expected)
    # by hand: each of player 1's cards leaves two deals of chance 1/6, reached by
    # player 0's range of the card it holds in that deal
    for i in range(3):
        worlds = [node.worlds[w] for w in node.worlds_of(1, i)]
        assert len(worlds) == 2
        by_hand = sum(ranges[0][w.info_states[0]] for w in worlds) / 6
        assert np.isclose(ev.values[1][i], 0.5 * by_hand)


@pytest.mark.parametrize(
    "name, history",
    [
        ("kuhn_poker", [0, 1, 0, 1]),  # check, bet: player 0 calls or folds, all children terminal
        ("kuhn_poker", [2, 0, 1]),  # bet: player 1 calls or folds
        ("leduc_poker", [0, 3, 1, 1, 5, 2, 2]),  # round 2, raise, re-raise: call or fold ends the game
    ],
)
def test_query_targets_from_gtcfr_equal_exact_values(name, history):
    """On a subgame whose children are all terminal, the solver's targets are the
    subgame's exact counterfactual values (an exact CFR+ solve for the same beliefs)."""
    game = load_game(name)
    node = public_state_at(game, _state(game, history))
    rng = np.random.default_rng(0)
    query = Query(node, _random_ranges(node, rng))
    enc = BeliefEncoding(game)
    net_values = NetworkValueFunction(enc, build_cvpn(enc, 8, 1))
    settings = SoGSettings(simulations=400, expansions_per_update=1.0)
    cfv = solve_query(game, query, net_values, settings, np.random.default_rng(1))
    exact = ExactValueFunction(game, iterations=2000, warm_start=False).evaluate([query])[0].values
    for p in range(2):
        assert np.allclose(cfv[p], exact[p], atol=2e-3), (p, cfv[p], exact[p])
    assert net_values.queries == 0  # terminal children: the network was never asked
    value, mask = value_targets(enc, query, cfv)
    for p in range(2):
        slots = enc.slot_index(node, p)
        assert np.allclose(value[p, slots] * enc.reach_mass(node, query.ranges, p), cfv[p], atol=1e-6)
        assert (mask[p, slots] == 1).all()


def test_recursive_queries_are_kept_with_their_probability():
    game = load_game("leduc_poker")
    enc = BeliefEncoding(game)
    values = NetworkValueFunction(enc, build_cvpn(enc, 8, 1))
    root = PublicTree(game, max_depth=0).nodes[0]
    query = Query(root, [np.ones(6), np.ones(6)])
    settings = SoGSettings(simulations=40, expansions_per_update=1.0, max_depth=2)
    seen = kept = 0
    for index in range(12):
        solved = solve_indexed(game, enc, query, values, settings, seed=0, index=index, q_recursive=0.1)
        seen += solved.queries_seen
        kept += len(solved.collected)
        assert solved.example.value_mask.sum() > 0
    assert seen > 1500 and values.queries == seen and values.listener is None
    sigma = np.sqrt(0.1 * 0.9 / seen)
    assert abs(kept / seen - 0.1) < 4 * sigma


def test_query_buffer_round_trip():
    game = load_game("leduc_poker")
    enc = BeliefEncoding(game)
    buffer = QueryBuffer(game, capacity=10)
    rng = np.random.default_rng(0)
    for history in ([0, 3], [0, 3, 1], [0, 3, 1, 1, 5]):
        node = public_state_at(game, _state(game, history))
        buffer.add(Query(node, _random_ranges(node, rng)))
    copy = QueryBuffer(game, capacity=10)
    copy.load_arrays(buffer.to_arrays())
    assert len(copy) == 3 and copy.added == 3
    while buffer:
        a, b = buffer.pop(), copy.pop()
        assert a.public_state.key == b.public_state.key
        assert np.allclose(enc.input(a.public_state, a.ranges), enc.input(b.public_state, b.ranges))


def test_sliding_window_uses_each_example_at_most_max_updates_times():
    game = load_game("kuhn_poker")
    enc = BeliefEncoding(game)
    window = SlidingWindow(enc, capacity=8, max_updates=5)
    node = PublicTree(game, max_depth=0).nodes[0]
    for _ in range(10):  # the two oldest fall out of the window
        window.add(make_example(enc, Query(node, [np.ones(3), np.ones(3)])))
    assert len(window) == 8 and window.added == 10
    rng = np.random.default_rng(0)
    batches = 0
    while window.sample(4, rng) is not None:
        batches += 1
        # the usable slots it keeps between minibatches are those a fresh look finds
        assert np.array_equal(window.alive(), np.flatnonzero(window.uses < 5))
    assert (window.uses <= 5).all() and window.uses.sum() == 4 * batches
    assert batches >= 8 and len(window) < 4  # it stops only when a minibatch cannot be filled
    window.add(make_example(enc, Query(node, [np.ones(3), np.ones(3)])))  # a new example is usable at once
    assert (window.next - 1) % 8 in window.alive()
    assert np.array_equal(window.alive(), np.flatnonzero(window.uses < 5))


def test_sliding_window_mirrors_connect_four_examples():
    """`train.symmetries`: a sampled example is the stored one or its mirror image, whose
    input is the mirrored position's own and whose policy and legal moves are mirrored."""
    game = load_game("connect_four")
    enc = BeliefEncoding(game)
    assert BeliefEncoding(load_game("kuhn_poker")).input_symmetries() == []
    (mirror,) = enc.input_symmetries()

    def example(moves, policy):
        state = game.new_initial_state()
        for a in moves:
            state.apply_action(a)
        return make_example(
            enc,
            Query(public_state_at(game, state), [np.ones(1), np.ones(1)]),
            policy=np.asarray([policy], np.float32),
            policy_mask=np.ones(1, np.float32),
        )

    moves = [0, 0, 0, 0, 0, 0, 1, 3]  # column 0 full: its mirror image has column 6 full
    stored = example(moves, [0, 0.5, 0.3, 0.2, 0, 0, 0])
    mirrored = example([6 - a for a in moves], [0, 0, 0, 0.2, 0.3, 0.5, 0])
    assert not np.array_equal(stored.x, mirrored.x)
    window = SlidingWindow(enc, capacity=4, max_updates=10_000, symmetries=[mirror])
    window.add(stored)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(40):
        batch = window.sample(1, rng)
        want = stored if np.array_equal(batch["x"][0], stored.x) else mirrored
        assert np.array_equal(batch["x"][0], want.x)
        assert np.array_equal(batch["policy"][0], want.policy) and np.array_equal(batch["legal"][0], want.legal)
        seen.add(want is stored)
    assert seen == {True, False}
    assert np.array_equal(window.data["x"][0], stored.x)  # the stored example is left as it was


def _train(tmp_path, name, steps, extra=()):
    from polyzero.sog.trainer import SoGTrainer

    cfg = build_config(
        "kuhn_poker",
        "sog",
        None,
        [
            f"train.steps={steps}",
            "train.batch_size=16",
            "train.minibatches_per_step=2",
            "train.replay_size=512",
            "train.checkpoint_every=2",
            "eval.every=0",
            "net.width=16",
            "net.layers=1",
            "sog.simulations=4",
            "sog.solve_simulations=4",
            "sog.episodes_per_step=1",
            "sog.solves_per_step=4",
            *extra,
        ],
    )
    trainer = SoGTrainer.create(cfg, tmp_path / name, progress=False)
    trainer.run()
    return trainer


def test_resume_reaches_the_same_weights(tmp_path):
    from polyzero.sog.trainer import SoGTrainer

    straight = _train(tmp_path, "straight", 4)
    _train(tmp_path, "split", 2)
    resumed = SoGTrainer.resume(tmp_path / "split", ["train.steps=4"], progress=False)
    resumed.run()
    assert resumed.counts == straight.counts
    for k, v in straight.learner.weights().items():
        assert torch.equal(v, resumed.learner.weights()[k]), k


def test_cli_trains_sog_and_its_network_plays(tmp_path, capsys):
    from polyzero.cli import main

    run = tmp_path / "run"
    cmd = [
        "train",
        "kuhn_poker",
        "--algo",
        "sog",
        "--run-dir",
        str(run),
        "--no-progress",
        "--set",
        "train.steps=2",
        "--set",
        "train.batch_size=8",
        "--set",
        "sog.eval_simulations=2",
        "--set",
        "eval.every=1",
        "--set",
        "sog.eval_seeds=1",
        "--set",
        "sog.simulations=2",
        "--set",
        "sog.solve_simulations=2",
    ]
    assert main(cmd) == 0
    assert "exploitability of SoG(2,1)" in capsys.readouterr().out
    assert (run / "checkpoints" / "latest").is_file()
    assert "eval/exploitability/mean" in json.loads((run / "final_eval.json").read_text())["results"]
    evals = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert any("eval/value_mae" in r for r in evals if r["kind"] == "eval")
    assert main(["plot", str(run)]) == 0
    assert (run / "plots" / "exploitability.png").is_file() and (run / "plots" / "losses.png").is_file()
    assert main(["arena", f"sog:2,1,net={run}", "random", "--game", "kuhn_poker", "--games", "4", "--no-progress"]) == 0
    capsys.readouterr()
    # The run directory itself plays SoG(SIMS, 1) with its CVPN, and names the game.
    assert main(["arena", f"{run}@2", f"sog:2,1,net={run}", "--games", "2", "--no-progress"]) == 0
    assert f"{run}@2 vs sog:2,1,net={run} on kuhn_poker" in capsys.readouterr().out
    assert main(cmd[:-2] + ["--set", "sog.q_search=1.5", "--run-dir", str(tmp_path / "bad")]) == 2
    assert "sog.q_search" in capsys.readouterr().err
    assert (
        main(["arena", f"sog:2,1,net={run}", "random", "--game", "leduc_poker", "--games", "2", "--no-progress"]) == 2
    )
    assert "trained on kuhn_poker" in capsys.readouterr().err


def test_game_without_public_tensor_is_refused_in_one_line():
    """phantom_ttt has no public observation tensor and polyzero no rule for it: the
    CVPN says so, no traceback."""
    from polyzero.errors import UsageError

    with pytest.raises(UsageError, match="no public observation tensor"):
        BeliefEncoding(load_game("phantom_ttt"))


@pytest.mark.parametrize("spec, hands", [("liars_dice(numdice=1,dice_sides=3)", 3), ("liars_dice(numdice=2)", 21)])
def test_liars_dice_belief_encoding(spec, hands):
    """Liar's Dice (no OpenSpiel public observer): the public tensor is the bids made and
    the player to move, the same in every world of a public state and different between
    public states; a player's slot is its dice (a multiset of faces)."""
    game = load_game(spec)
    enc = BeliefEncoding(game)
    assert enc.slots == [hands, hands]
    tree = PublicTree(game, max_depth=1 if "numdice=2" in spec else None)
    seen = {}
    for node in tree.nodes:
        if node.kind != "decision":
            continue
        tensors = {enc.public_tensor_of(w.state).tobytes() for w in node.worlds}
        assert len(tensors) == 1
        assert tensors.pop() not in seen
        seen[enc.public_tensor(node).tobytes()] = node.key
        for p in range(2):
            slots = enc.slot_index(node, p)
            for i, name in enumerate(node.info_states[p]):  # the same dice, the same slot
                faces = name.split(" ")[0]
                assert all(
                    slots[j] == slots[i] for j, other in enumerate(node.info_states[p]) if other.split(" ")[0] == faces
                )
            assert len(set(slots.tolist())) == len(node.info_states[p])
    assert len(seen) == len(tree.of_kind("decision"))


def test_liars_dice_trains_end_to_end(tmp_path):
    """SoG trains on Liar's Dice and its network plays in `polyzero exploitability`."""
    from polyzero.cli import main

    run = tmp_path / "ld"
    spec = "liars_dice(numdice=1,dice_sides=3)"
    assert (
        main(
            [
                "train",
                spec,
                "--algo",
                "sog",
                "--run-dir",
                str(run),
                "--no-progress",
                "--set",
                "train.steps=2",
                "--set",
                "train.batch_size=8",
                "--set",
                "sog.simulations=4",
                "--set",
                "sog.solve_simulations=4",
                "--set",
                "sog.solves_per_step=8",
            ]
        )
        == 0
    )
    assert main(["exploitability", f"sog:4,1,net={run}", "--game", spec, "--seeds", "1", "--no-progress"]) == 0


def test_scotland_yard_mr_x_has_a_slot_before_his_start_is_dealt():
    """London deals the starts by chance, Mr X's last: the public states before it hold
    worlds where he has no station (mrx 0). Their inputs are built, one by one and in a
    batch (values.BATCH_FROM or more rows), with his one information state in slot 0:
    the slot -1 of before crashed London self-play at its first search."""
    from polyzero.sog.values import BATCH_FROM

    game = load_game("scotland_yard(mrx_start=0,detective_starts=deal,start_cards=3;6;9;2;5)")
    enc = BeliefEncoding(game)
    tree = PublicTree(game, max_depth=3)
    undealt = [n for n in tree.nodes if any(w.state.mrx == 0 for w in n.worlds)]
    assert undealt and all(w.state.mrx == 0 for n in undealt for w in n.worlds)  # never mixed with placed
    assert all((enc.slot_index(n, 0) == 0).all() for n in undealt)
    rng = np.random.default_rng(0)
    nodes = (undealt * BATCH_FROM)[:BATCH_FROM]
    ranges = [_random_ranges(n, rng) for n in nodes]
    batch = enc.inputs(nodes, ranges)
    assert np.array_equal(batch, np.stack([enc.input(n, r) for n, r in zip(nodes, ranges)]))
    assert (batch[:, enc.public_size] == 1).all()  # Mr X's whole range in slot 0


def test_scotland_yard_slots_share_mr_x_positions():
    """Mr X's information states are his paths; the CVPN's slots are his stations, and
    a slot's range and value target aggregate the paths that end there."""
    game = load_game("scotland_yard")
    enc = BeliefEncoding(game)
    assert enc.slots == [game.rules.num_stations, 1]
    tree = PublicTree(game, max_depth=4)

    def shared(n):
        slots = enc.slot_index(n, 0)
        return len(slots) - len(set(slots.tolist()))

    node = max((n for n in tree.nodes if n.kind == "decision"), key=shared)
    slots = enc.slot_index(node, 0)
    assert shared(node) >= 1 and (slots >= 0).all()  # two of Mr X's paths end on one station
    rng = np.random.default_rng(0)
    query = Query(node, _random_ranges(node, rng))
    x = enc.input(node, query.ranges)
    mrx = x[enc.public_size : enc.public_size + enc.slots[0]]
    expected = np.zeros(enc.slots[0])
    np.add.at(expected, slots, query.ranges[0])
    assert np.allclose(mrx, expected / expected.sum())
    cfv = [rng.normal(size=len(node.info_states[p])) for p in range(2)]
    value, mask = value_targets(enc, query, cfv)
    mass = enc.reach_mass(node, query.ranges, 0)
    for slot in set(slots.tolist()):
        members = slots == slot
        if mass[members].sum() > 0:
            assert np.isclose(value[0, slot], cfv[0][members].sum() / mass[members].sum(), rtol=1e-5)


def test_kuhn_depth_one_learning_cuts_value_error_and_exploitability(tmp_path):
    """Depth-limited searches (d = 1) on Kuhn: every non-terminal leaf is the network's,
    so what the search player knows beyond one public action is what the CVPN learned.
    A short run must cut the network's error against Kuhn's equilibrium counterfactual
    values by half and bring SoG(300, 1)'s exploitability below 20 mbb/h (the issue's
    target), where the untrained network's is about 400."""
    from polyzero.sog.exploitability import player_exploitability
    from polyzero.sog.trainer import SoGTrainer
    from polyzero.sog.value_error import equilibrium_beliefs, value_error

    # The run trains from the session's start (conftest.BACKGROUND_RUNS: these settings);
    # its untrained network is the one a new run of the same settings starts from.
    game, algo, overrides = BACKGROUND_RUNS["test_kuhn_depth_one_learning_cuts_value_error_and_exploitability"]
    start = SoGTrainer.create(build_config(game, algo, None, list(overrides)), tmp_path / "run", progress=False)
    beliefs = equilibrium_beliefs(start.game, 1000)
    before = value_error(start.value_function(), beliefs)
    untrained = player_exploitability(start.game, lambda s: start.agent_player(300, seed=s), 1).mean
    trainer = background_run("test_kuhn_depth_one_learning_cuts_value_error_and_exploitability")
    assert trainer.step == trainer.cfg.train.steps == 150 and trainer.cfg.to_dict() == start.cfg.to_dict()
    after = value_error(trainer.value_function(), beliefs)
    trained = player_exploitability(trainer.game, lambda s: trainer.agent_player(300, seed=s), 3)
    print(f"value MAE {before:.4f} -> {after:.4f}; exploitability {untrained:.1f} -> {trained.values} mbb/h")
    assert after <= 0.5 * before
    # Seed 0 measured 8.6 here and 9.5 on another machine's CPUs; training seeds 1-5
    # give 3.0, 22.0, 5.1, 13.9 and 15.3 (docs/student_of_games_training.md).
    assert trained.max < 20.0 < 0.1 * untrained


def test_board_game_resnet_cvpn_convolves_the_board(tmp_path):
    """On a board game net.kind = "resnet" runs AlphaZero's conv tower over the board
    planes (the input's first C x H x W entries, the side to move as constant planes):
    it trains and loads as a leaf value function, and a run saved before the option
    (no net.board_tower in its config) still builds its dense residual trunk."""
    from polyzero.config import read_toml
    from polyzero.sog.cvpn import BoardTrunk
    from polyzero.sog.trainer import CVPNModel, SoGTrainer, load_cvpn
    from polyzero.train.checkpoint import resolve_checkpoint

    game = load_game("connect_four")
    enc = BeliefEncoding(game)
    assert enc.planes == (3, 6, 7) and enc.input_size == 3 * 6 * 7 + 2 + 2
    sets = [
        "net.kind=resnet",
        "net.blocks=1",
        "net.channels=8",
        "net.width=16",
        "train.steps=2",
        "train.batch_size=8",
        "eval.every=0",
        "eval.final_games=0",
        "sog.simulations=3",
        "sog.solve_simulations=3",
    ]
    trainer = SoGTrainer.create(build_config("connect_four", "sog", None, sets), tmp_path / "run", progress=False)
    net = trainer.model.build_network().eval()
    assert isinstance(net.board, BoardTrunk)
    root, moved = PublicTree(game, max_depth=0).nodes[0], public_state_at(game, _state(game, [3]))
    x = torch.from_numpy(np.stack([enc.input(n, [np.ones(1), np.ones(1)]) for n in (root, moved)]))
    planes = net.board.tower.stem[0].in_channels
    assert planes == 3 + 4  # the board's planes, then side to move (2) and ranges (2) as planes
    assert not torch.allclose(net(x)[0][0], net(x)[0][1])
    trainer.run()
    value_fn, _ = load_cvpn(tmp_path / "run")
    assert isinstance(value_fn.net.board, BoardTrunk)
    saved = read_toml(resolve_checkpoint(tmp_path / "run") / "config.toml")
    del saved["net"]["board_tower"]
    before = CVPNModel(enc, build_config(base=saved)).build_network()
    assert not hasattr(before, "board") and hasattr(before, "residual")


def test_residual_cvpn_trains_saves_and_loads(tmp_path):
    """net.kind = "resnet" gives the CVPN a dense residual trunk (its skip is exact:
    with a block's second layer zeroed the block passes its input through), and a
    run with it trains, checkpoints and loads as a leaf value function."""
    from polyzero.nets.towers import DenseResidualTower
    from polyzero.sog.trainer import SoGTrainer, load_cvpn

    tower = DenseResidualTower(5, 8, blocks=2)
    for _, second in tower.blocks:
        torch.nn.init.zeros_(second.weight)
        torch.nn.init.zeros_(second.bias)
    x = torch.randn(4, 5)
    assert torch.allclose(tower(x), torch.relu(tower.stem(x)))

    sets = [
        "net.kind=resnet",
        "net.blocks=2",
        "net.width=16",
        "train.steps=2",
        "train.batch_size=8",
        "eval.every=0",
        "sog.simulations=2",
        "sog.solve_simulations=2",
    ]
    trainer = SoGTrainer.create(build_config("kuhn_poker", "sog", None, sets), tmp_path / "run", progress=False)
    assert isinstance(trainer.model.build_network().residual, DenseResidualTower)
    trainer.run()
    value_fn, _ = load_cvpn(tmp_path / "run")
    root = PublicTree(trainer.game, max_depth=0).nodes[0]
    ranges = [np.ones(len(root.info_states[p])) for p in range(2)]
    assert np.isfinite(value_fn.evaluate([Query(root, ranges)])[0].values[0]).all()


def test_sog_probe_measures_network_and_targets_against_exact_values(tmp_path, capsys):
    """`polyzero sog-probe`: the network's error by depth at each checkpoint, and on
    Kuhn, whose subgames GT-CFR(50, 1) solves down to the terminals, the query
    solver's targets agree with exact re-solves where the barely trained network does not."""
    from polyzero.cli import main

    run = tmp_path / "kuhn"
    assert (
        main(
            [
                "train",
                "kuhn_poker",
                "--algo",
                "sog",
                "--run-dir",
                str(run),
                "--no-progress",
                "--set",
                "train.steps=2",
                "--set",
                "train.checkpoint_every=1",
                "--set",
                "eval.every=0",
                "--set",
                "train.batch_size=8",
            ]
        )
        == 0
    )
    out = tmp_path / "probe.json"
    assert (
        main(
            [
                "sog-probe",
                str(run),
                "--points",
                "2",
                "--iterations",
                "200",
                "--queries",
                "3",
                "--exact-iterations",
                "200",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    result = json.loads(out.read_text())
    # The first checkpoint is step 0, written when the run is accepted: the untrained baseline.
    assert [c["step"] for c in result["checkpoints"]] == [0, 1, 2]
    assert all(set(c["by_depth"]) == {"1", "2"} for c in result["checkpoints"])
    targets = result["targets"]
    assert targets["target"]["all"] < 0.02 < targets["network"]["all"]
    assert "network vs exact" in capsys.readouterr().out
    assert main(["sog-probe", str(tmp_path), "--points", "1"]) == 2  # not a run directory


@pytest.mark.parametrize("dense", [True, False])
def test_sliding_window_minibatch_rows_are_the_stored_examples_rows(dense, monkeypatch):
    """The policy and legal rows written into a minibatch all at once (from the rows, or
    from the dense arrays a small game's window keeps) land at their own examples'
    slots: each sampled example's dense rows equal the stored example's where it has a
    policy target, and are empty elsewhere (examples with none, some, all)."""
    monkeypatch.setattr(selfplay, "DENSE_ROWS_BYTES", selfplay.DENSE_ROWS_BYTES if dense else 0)
    enc = BeliefEncoding(load_game("leduc_poker"))
    s, a = enc.max_slots, enc.num_actions
    rng = np.random.default_rng(0)
    window = SlidingWindow(enc, capacity=64, max_updates=1000)
    assert (window.dense is not None) == dense
    stored = []
    for n in range(64):
        legal = rng.random((s, a)) < 0.6
        policy = rng.random((s, a)) * legal
        mask = (rng.random(s) < [0.0, 0.5, 1.0][n % 3]).astype(np.float32)
        example = Example(
            x=rng.random(enc.input_size, dtype=np.float32),
            value=np.full((2, s), n, np.float32),  # names the example in the minibatch
            value_mask=np.ones((2, s), np.float32),
            policy=policy.astype(np.float32),
            policy_mask=mask,
            legal=legal,
            player=n % 2,
        )
        window.add(example)
        stored.append(example)
    for _ in range(20):
        batch = window.sample(16, rng)
        for b in range(16):
            example = stored[int(batch["value"][b, 0, 0])]
            kept = example.policy_mask[:, None] > 0
            assert np.array_equal(batch["policy"][b], np.where(kept, example.policy, 0))
            assert np.array_equal(batch["legal"][b], np.where(kept, example.legal, False))


def test_sliding_window_dense_rows_give_the_rows_minibatches_and_checkpoints(monkeypatch):
    """A window keeping dense policy and legal arrays samples the same minibatches as one
    keeping rows only (same draws, symmetries included), writes the same checkpoint
    arrays, and rebuilds its dense arrays from them (a resumed run samples alike)."""
    game = load_game("connect_four")
    enc = BeliefEncoding(game)
    s, a = enc.max_slots, enc.num_actions
    windows, default = {}, selfplay.DENSE_ROWS_BYTES
    for dense in (False, True):  # the default threshold left in place for `resumed` below
        monkeypatch.setattr(selfplay, "DENSE_ROWS_BYTES", default if dense else 0)
        windows[dense] = SlidingWindow(enc, capacity=48, max_updates=3, symmetries=enc.input_symmetries())
    assert windows[True].dense is not None and windows[False].dense is None
    rng = np.random.default_rng(1)
    for n in range(60):  # the first 12 overwritten: their slots' dense rows rewritten
        legal = rng.random((s, a)) < 0.6
        example = Example(
            x=rng.random(enc.input_size, dtype=np.float32),
            value=rng.random((2, s), dtype=np.float32),
            value_mask=np.ones((2, s), np.float32),
            policy=(rng.random((s, a)) * legal).astype(np.float32),
            policy_mask=(rng.random(s) < 0.7).astype(np.float32),
            legal=legal,
            player=n % 2,
        )
        for window in windows.values():
            window.add(example)
    draws = {dense: np.random.default_rng(2) for dense in windows}
    for _ in range(10):
        got = {dense: w.sample(8, draws[dense]) for dense, w in windows.items()}
        assert list(got[True]) == list(got[False])
        for key in got[True]:
            assert np.array_equal(got[True][key], got[False][key]) and got[True][key].dtype == got[False][key].dtype
    saved = {dense: w.to_arrays() for dense, w in windows.items()}
    assert saved[True].keys() == saved[False].keys()
    assert all(np.array_equal(saved[True][k], saved[False][k]) for k in saved[True])
    resumed = SlidingWindow(enc, capacity=48, max_updates=3, symmetries=enc.input_symmetries())
    resumed.load_arrays(saved[True])
    assert all(np.array_equal(resumed.dense[k], windows[True].dense[k]) for k in ("policy", "legal"))
    draws = np.random.default_rng(3), np.random.default_rng(3)
    after, rows_only = resumed.sample(8, draws[0]), windows[False].sample(8, draws[1])
    assert all(np.array_equal(after[k], rows_only[k]) for k in after)
