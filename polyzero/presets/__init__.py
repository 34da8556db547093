"""Shipped presets: {algo}_{game}.toml, each citing the source of its values."""
