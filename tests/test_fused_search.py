"""The fused search (polyzero.search.fused) and its MLP programs (polyzero.nets.fused):
the programs compute MuZero's networks as PyTorch does, and the fused loop builds the
trees the per-simulation loop builds from the same network outputs."""

import numpy as np
import pytest
import torch

from polyzero.errors import UsageError
from polyzero.nets.alphazero import NetSpec
from polyzero.nets.fused import ProgramCall, fusable, muzero_programs
from polyzero.nets.inference import Evaluator
from polyzero.nets.muzero import MuZeroInference, MuZeroNet, MuZeroSpec, _Initial, _Recurrent
from polyzero.search.fused import FUSED_MAX_BATCH
from polyzero.search.gumbel import gumbel_search
from polyzero.search.kernels.mlp import BLAS_MIN_ROWS
from polyzero.search.learned import LearnedModel
from polyzero.search.mcts import run_search
from polyzero.search.params import SearchParams

OBS, A = (2, 5), 6


def _net(seed=0, width=24, **spec) -> MuZeroNet:
    torch.manual_seed(seed)
    net_spec = NetSpec(kind="mlp", width=width, layers=2, value_hidden=12)
    return MuZeroNet(OBS, A, MuZeroSpec(net=net_spec, hidden_size=10, **spec)).eval()


@pytest.mark.parametrize(
    "spec",
    [{}, {"support": 4}, {"terminal_reward": True}, {"scale_hidden": False, "dynamics_blocks": 1}],
    ids=["board", "categorical", "terminal_reward", "unscaled"],
)
@pytest.mark.parametrize("batch", [7, BLAS_MIN_ROWS + 3], ids=["tiles", "blas"])
def test_programs_compute_the_networks_as_pytorch(spec, batch):
    net = _net(**spec)
    initial, recurrent = muzero_programs(net)
    obs = np.random.default_rng(1).random((batch, *OBS)).astype(np.float32)
    action = np.arange(batch) % A
    with torch.no_grad():
        want_initial = _Initial(net)(torch.from_numpy(obs))
        hidden = want_initial[0]
        want_recurrent = _Recurrent(net)(hidden, torch.from_numpy(action))
    got_initial = ProgramCall(initial).initial(obs)
    got_recurrent = ProgramCall(recurrent).recurrent(hidden.numpy(), action)
    for got, want in zip(got_initial + got_recurrent, tuple(want_initial) + tuple(want_recurrent)):
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=2e-6)
    if spec.get("support") or spec.get("terminal_reward"):
        assert np.abs(got_recurrent[0]).max() > 1e-3  # a reward head, not zeros


def _models(net, batch, seed, fused):
    """A LearnedModel over the net's programs, fused or through the per-simulation loop
    (the same program called once per simulation)."""
    initial, recurrent = muzero_programs(net)
    rng = np.random.default_rng(seed)
    obs = rng.random((batch, *OBS)).astype(np.float32)
    legal = rng.random((batch, A)) < 0.7
    legal[np.arange(batch), rng.integers(0, A, batch)] = True
    hidden, logits, value = ProgramCall(initial).initial(obs)
    call = ProgramCall(recurrent).recurrent
    kwargs = dict(discount=-1.0, root_legal=legal, num_nodes=None if fused else 9)
    if fused:
        return LearnedModel(logits, value, hidden, call, program=recurrent, fuse="always", **kwargs)
    return LearnedModel(logits, value, hidden, call, **kwargs)


SEARCHES = [
    dict(selection="muzero", q_normalisation="parent_siblings", unvisited_q="min"),
    dict(selection="alphazero", q_normalisation="minmax", unvisited_q="zero"),
    dict(kind="gumbel", gumbel_q_normalisation="completed_minmax", c_scale=0.1),
    dict(kind="full_gumbel"),
]


@pytest.mark.parametrize("batch", [1, 3, 16])
@pytest.mark.parametrize("settings", SEARCHES, ids=["muzero", "alphazero", "gumbel", "full_gumbel"])
def test_fused_search_builds_the_loops_trees(batch, settings):
    params = SearchParams(num_simulations=12, dirichlet_fraction=0.0, **settings)
    for seed in range(3):
        net = _net(seed, support=3 if seed == 2 else 0)
        results = []
        for fused in (True, False):
            model = _models(net, batch, seed, fused)
            assert model.fused == fused
            rng = np.random.default_rng(seed)
            if params.kind == "puct":
                res = run_search(model, params, rng)
            else:
                res = gumbel_search(model, params, rng, add_noise=True)
            assert model.recurrent_calls == 12 and res.model_calls == 13
            results.append((res, model))
        # The same program in both; its sums are reassociated (kernels.mlp._dense), which
        # allows another rounding per call site: the same trees, values within rounding
        # (bit-identical on the machine this was written on).
        (a, ma), (b, mb) = results
        np.testing.assert_array_equal(a.root_visits, b.root_visits)
        np.testing.assert_array_equal(a.tree.children, b.tree.children)
        np.testing.assert_allclose(a.tree.value, b.tree.value, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ma.hidden[:13], mb.hidden[:13], rtol=1e-5, atol=1e-6)
        if a.action is not None:
            np.testing.assert_array_equal(a.action, b.action)
            np.testing.assert_allclose(a.policy_target, b.policy_target, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch", [1, 3, 16])
def test_fused_search_visits_as_the_pytorch_loop(batch):
    """Against today's path (the loop over PyTorch eager, its own rounding): the same
    root visit counts on these seeds."""
    params = SearchParams(num_simulations=16, dirichlet_fraction=0.0, **SEARCHES[0])
    for seed in range(3):
        net = _net(seed, support=3 if seed == 2 else 0)
        rng = np.random.default_rng(seed)
        obs = rng.random((batch, *OBS)).astype(np.float32)
        eager = MuZeroInference(net, inference="eager")
        hidden, logits, value = eager.initial(obs)
        _, recurrent = muzero_programs(net)
        visits = []
        for program in (recurrent, None):
            model = LearnedModel(logits, value, hidden, eager.recurrent, discount=-1.0, program=program)
            assert model.fused == (program is not None)
            visits.append(run_search(model, params, np.random.default_rng(seed)).root_visits)
        np.testing.assert_array_equal(*visits)


def test_auto_fuses_small_batches_of_mlp_networks_only():
    net = _net()
    ev = MuZeroInference(net, inference="auto")
    assert ev.program is not None and ev.fuse == "auto"
    rng = np.random.default_rng(0)
    for batch, fused in ((2, True), (FUSED_MAX_BATCH + 1, False)):
        hidden = rng.random((batch, 10)).astype(np.float32)
        model = LearnedModel(
            np.zeros((batch, A), np.float32), np.zeros(batch), hidden, ev.recurrent, program=ev.program
        )
        assert model.fused == fused
    # The fused and compiled paths of one evaluator agree (either may serve a batch).
    obs = rng.random((FUSED_MAX_BATCH + 1, *OBS)).astype(np.float32)
    big, small = ev.initial(obs), ev.initial(obs[:3])
    for x, y in zip(big, small):
        np.testing.assert_allclose(x[:3], y, rtol=1e-5, atol=2e-6)
    # Empty batches, and actions out of range refused (the compiled kernel checks no bounds).
    assert [x.shape for x in ev.initial(obs[:0])] == [(0, 10), (0, A), (0,)]
    with pytest.raises(ValueError, match="actions must lie in"):
        ev.recurrent(np.zeros((2, 10), np.float32), np.array([0, A]))
    # A weight refresh reaches the programs.
    other = _net(seed=5)
    ev.load_state_dict(other.state_dict())
    np.testing.assert_allclose(ev.initial(obs[:3])[1], MuZeroInference(other, inference="fused").initial(obs[:3])[1])


def test_networks_without_a_program_keep_todays_path():
    resnet = MuZeroNet((2, 3, 3), 9, MuZeroSpec(net=NetSpec(kind="resnet", channels=4, blocks=1))).eval()
    assert "resnet" in fusable(resnet)
    assert muzero_programs(resnet) is None
    ev = MuZeroInference(resnet, inference="auto")
    assert ev.program is None
    with pytest.raises(UsageError, match="'fused' cannot run this network"):
        MuZeroInference(resnet, inference="fused")
    prefix = _net(value_prefix_horizon=3, support=3)
    assert MuZeroInference(prefix, inference="auto").program is None
    with pytest.raises(UsageError, match="MuZero's MLP networks only"):
        Evaluator(torch.nn.Linear(3, 2), inference="fused")


def test_the_programs_tanh_is_float32_tanh_within_a_few_ulp():
    import numba as nb

    from polyzero.search.kernels.mlp import tanh32

    @nb.njit
    def apply(x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = tanh32(x[i])
        return out

    x = np.concatenate([np.linspace(-20, 20, 200001), np.linspace(-1e-3, 1e-3, 2001), [np.inf, -np.inf]])
    x = x.astype(np.float32)
    got = apply(x)
    assert np.abs(got - np.tanh(x.astype(np.float64))).max() < 5e-7
    assert np.isnan(apply(np.array([np.nan], np.float32))[0])


@pytest.mark.parametrize("rows", [5, BLAS_MIN_ROWS + 1], ids=["tiles", "blas"])
def test_block_zero_is_padded_and_its_writers_zero_the_padding(rows):
    """An input of 11 columns takes a block of 16 with zero weights past the 11th; the
    writers zero the padding, whatever a scratch used before holds there (NaN here)."""
    from polyzero.search.kernels.mlp import INPUT_ALIGN, LOGITS_OUT, ProgramWriter, initial_rows, output, recurrent_rows

    rng = np.random.default_rng(5)
    weight, bias = rng.standard_normal((11, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    writer = ProgramWriter(11)
    out = writer.dense(0, weight, bias)
    program = writer.program(8, 3, (out, 0), (out, 0), (out, 0), None)
    assert program.ops[0, 2] == 16 == -(-11 // INPUT_ALIGN) * INPUT_ALIGN
    assert not program.weights[: 4 * 16].reshape(4, 16)[:, 11:].any()
    assert program.weights.ctypes.data % 64 == 0 == program.scratch(rows).ctypes.data % 64
    assert (program.ops[:, 5:7] % 16 == 0).all()  # each layer's weights and bias on a cache line
    hidden, action = rng.standard_normal((rows, 8)).astype(np.float32), rng.integers(0, 3, rows)
    x = np.concatenate([hidden, np.eye(3, dtype=np.float32)[action]], axis=1)
    scratch = np.full(rows * program.width, np.nan, np.float32)
    recurrent_rows(program.ops, program.weights, scratch, hidden, action, rows, 3)
    np.testing.assert_allclose(output(scratch, rows, program.outs, LOGITS_OUT), x @ weight + bias, rtol=1e-5, atol=1e-5)
    scratch[:] = np.nan
    initial_rows(program.ops, program.weights, scratch, x, rows)
    np.testing.assert_allclose(output(scratch, rows, program.outs, LOGITS_OUT), x @ weight + bias, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [1, 8, BLAS_MIN_ROWS + 3])
def test_packed_panels_give_each_layers_product_bias_and_activation(rows):
    """Layers of 32 and 16 outputs (ReLU, tanh) carry packed panels and run on them at
    any row count (rows past the 4-row tiles included), the 8-output one on the
    tiles or BLAS: the outputs equal NumPy's layer by layer."""
    from polyzero.search.kernels.mlp import ACT_RELU, ACT_TANH, LOGITS_OUT, ProgramWriter, initial_rows, output

    rng = np.random.default_rng(7)
    shapes = [(20, 32, ACT_RELU), (32, 16, ACT_TANH), (16, 8, None)]
    params = [
        (rng.standard_normal((i, o)).astype(np.float32), rng.standard_normal(o).astype(np.float32))
        for i, o, _ in shapes
    ]
    writer, block = ProgramWriter(20), 0
    for (weight, bias), (_, _, act) in zip(params, shapes):
        block = writer.dense(block, weight, bias, act or 0)
    program = writer.program(8, 8, (block, 0), (block, 0), (block, 0), None)
    assert (program.ops[:2, 10] % 16 == 0).all() and program.ops[2, 10] == -1
    x = rng.standard_normal((rows, 20)).astype(np.float32)
    scratch = program.scratch(rows)
    initial_rows(program.ops, program.weights, scratch, x, rows)
    expect = np.maximum(x @ params[0][0] + params[0][1], 0)
    expect = np.tanh(expect @ params[1][0] + params[1][1])
    expect = expect @ params[2][0] + params[2][1]
    np.testing.assert_allclose(output(scratch, rows, program.outs, LOGITS_OUT), expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [1, 5])
def test_the_panels_relu_keeps_a_nan(rows):
    """A NaN input (a diverged network) stays NaN through the tile's ReLU, as through
    np.maximum and torch.relu, in the 4-row tiles and the single-row one."""
    from polyzero.search.kernels.panels import pack_panels, panel_product

    rng = np.random.default_rng(8)
    x, weight = rng.standard_normal((rows, 8)).astype(np.float32), rng.standard_normal((8, 16)).astype(np.float32)
    x[-1, 0] = np.nan
    out, bias = np.zeros((rows, 16), np.float32), np.zeros(16, np.float32)
    panel_product(x, pack_panels(np.ascontiguousarray(weight.T)).ravel(), 8, bias, out, 1, 0)
    expect = np.maximum(x @ weight + bias, 0)
    assert np.isnan(out[-1]).all() and np.isnan(expect[-1]).all()
    np.testing.assert_allclose(out[:-1], expect[:-1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows", [5, BLAS_MIN_ROWS + 1])
def test_sparse_input_columns_give_the_dense_product(rows):
    """Columns 8.. of an 11-column input declared sparse (the action's one-hot): on the
    panels the layer multiplies columns 0..7 and adds W's rows for the nonzeros; the output is
    x @ W + b for a one-hot (recurrent_rows) and for any values there, zeros included."""
    from polyzero.search.kernels.mlp import LOGITS_OUT, ProgramWriter, initial_rows, output, recurrent_rows

    rng = np.random.default_rng(6)
    weight, bias = rng.standard_normal((11, 32)).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    writer = ProgramWriter(11, sparse_from=8)
    out = writer.dense(0, weight, bias)
    program = writer.program(8, 3, (out, 0), (out, 0), (out, 0), None)
    assert program.ops[0, 8] == 8 and program.ops[0, 9] % 16 == 0  # the tail's rows stored on a cache line
    np.testing.assert_array_equal(program.weights[program.ops[0, 9] :][: 3 * 32].reshape(3, 32), weight[8:])
    hidden, action = rng.standard_normal((rows, 8)).astype(np.float32), rng.integers(0, 3, rows)
    scratch = np.full(rows * program.width, np.nan, np.float32)
    recurrent_rows(program.ops, program.weights, scratch, hidden, action, rows, 3)
    x = np.concatenate([hidden, np.eye(3, dtype=np.float32)[action]], axis=1)
    np.testing.assert_allclose(output(scratch, rows, program.outs, LOGITS_OUT), x @ weight + bias, rtol=1e-5, atol=1e-5)
    x[:, 8:] = rng.standard_normal((rows, 3)) * (rng.random((rows, 3)) < 0.5)  # several nonzeros a row, or none
    initial_rows(program.ops, program.weights, scratch, x, rows)
    np.testing.assert_allclose(output(scratch, rows, program.outs, LOGITS_OUT), x @ weight + bias, rtol=1e-5, atol=1e-5)


def test_blocks_share_the_columns_of_dead_blocks_only():
    """The anchor-shaped program reuses dead blocks' columns (a smaller scratch) and no
    block overlaps one alive beside it: a layer's input, the outputs."""
    from polyzero.search.kernels.mlp import DENSE, NO_OUTPUT

    for program in muzero_programs(_net(support=4)):
        ops, outs = program.ops, program.outs
        dense = ops[ops[:, 0] == DENSE]
        assert program.width < ops[0, 2] + dense[:, 4].sum() + 2  # + the two support scalars
        for op in dense:  # a layer's output never shares its input's columns
            assert op[3] + op[4] <= op[1] or op[1] + op[2] <= op[3]
        placed = sorted((s, s + w) for s, w, _ in outs if s != NO_OUTPUT and w > 0)
        distinct = sorted(set(placed))  # the logits and the value may share a block
        assert all(a[1] <= b[0] for a, b in zip(distinct, distinct[1:]))
