"""benchmarks/panel_tiles.py and net_path_ab.py's baseline kernel: every tile shape and
loop order the benchmark times computes the layer (rows left over included), and the
A/B's "before" kernel runs its own revision's panels, not this tree's; a revision git
does not have is refused in one line (exit 2) before anything is timed."""

import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import panel_tiles as bench  # noqa: E402


@pytest.mark.parametrize("rows", [1, 7, 13])
def test_every_variant_gives_the_layer(rows):
    """13 rows: two 6-row tiles and one row left; 7: one 6-row (one 5-row, no 4-row)
    tile and the rest on the smaller tiles; 8-output panels for mr8x8."""
    rng = np.random.default_rng(rows)
    n_in, n_out = 24, 32
    x = rng.standard_normal((rows, n_in)).astype(np.float32)
    wt = rng.standard_normal((n_out, n_in)).astype(np.float32)
    bias = rng.standard_normal(n_out).astype(np.float32)
    expect = np.maximum(x @ wt.T + bias, 0)
    for name, (product, width) in bench.variants().items():
        out = np.full((rows, n_out), np.nan, np.float32)
        product(x, bench.panels.pack_panels(wt, width).ravel(), n_in, bias, out, True, False)
        np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("rev, module", [("HEAD", "panels_HEAD"), ("HEAD~0", "panels_HEAD_0")])
def test_the_ab_baseline_runs_its_own_panels(rev, module):
    import net_path_ab

    with tempfile.TemporaryDirectory() as tmp:
        before = net_path_ab.kernel_at(rev, tmp)
    assert before.panel_product.py_func.__module__ == module
    assert before.panel_product is not bench.panels.panel_product


def test_the_ab_refuses_an_unknown_revision(capsys):
    import net_path_ab

    with pytest.raises(SystemExit) as exit_:
        net_path_ab.main(["--before", "no-such-revision", "--out", "/nonexistent/never-written.json"])
    assert exit_.value.code == 2
    assert "no kernels/mlp.py at git revision 'no-such-revision'" in capsys.readouterr().err
