"""kernels.prefetch: a cache hint that compiles to a prefetch instruction and changes no value."""

import numba as nb
import numpy as np
import pytest

from polyzero.search.kernels.prefetch import prefetch


@nb.njit
def _sum_with_prefetch(a):
    total = 0.0
    for i in range(a.shape[0]):
        prefetch(a, (min(i + 4, a.shape[0] - 1), 0))
        total += a[i, 0]
    return total


def test_prefetch_compiles_to_an_instruction_and_changes_nothing():
    a = np.arange(40.0).reshape(20, 2)
    assert _sum_with_prefetch(a) == a[:, 0].sum()
    asm = _sum_with_prefetch.inspect_asm(_sum_with_prefetch.signatures[0])
    assert "prefetch" in asm


def test_prefetch_needs_one_index_a_dimension():
    @nb.njit
    def wrong(a):
        prefetch(a, (0,))

    with pytest.raises(nb.core.errors.TypingError):
        wrong(np.zeros((2, 2)))
