"""polyzero: the Zero family of self-play learning and planning in one library.

Layers (imports point down only; pyproject.toml's [tool.importlinter] checks it):
cli -> web -> api -> engines | export -> goexploit | sog -> train -> eval -> algos ->
config -> replay | baselines -> nets -> search -> games -> validation -> errors.
See docs/architecture.md. The Python API (docs/api.md) is re-exported here lazily, so
`import polyzero` stays cheap: torch and OpenSpiel load on first use.
"""

__version__ = "0.1.0"

_API = ("Agent", "Run", "load_agent", "reference_player", "arena", "train", "open_run", "list_presets")
__all__ = ["__version__", *_API]


def __getattr__(name):
    if name == "train":  # the package polyzero.train, callable: it hands the call to api.train
        import importlib

        return importlib.import_module(".train", __name__)
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'polyzero' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API))
