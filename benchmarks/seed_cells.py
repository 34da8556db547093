"""A score over training seeds as one results cell -- its mean and 95% t-interval (none
for a single seed) -- and that cell as table text."""

from common import interval


def mean_and_ci95(values: list[float]) -> dict:
    """{"mean", "ci95"} of the seeds' values; "ci95" is None for a single seed."""
    mean, lo, hi = interval(values)
    return {"mean": mean, "ci95": None if len(values) < 2 else [lo, hi]}


def cell_text(cell: dict | None, digits: int, missing: str) -> str:
    """'mean [lo, hi]', the mean alone for a single seed, `missing` for no cell."""
    if cell is None:
        return missing
    if cell["ci95"] is None:
        return f"{cell['mean']:.{digits}f}"
    lo, hi = cell["ci95"]
    return f"{cell['mean']:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
