"""polyzero: the Zero family of self-play learning and planning in one library.

Layers (arrows point down only): cli -> train / eval -> algos -> search, nets -> games.
See docs/architecture.md.
"""

__version__ = "0.1.0"
