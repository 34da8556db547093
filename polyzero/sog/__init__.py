"""polyzero.sog: Student of Games (sound search for imperfect-information games).

Built on `polyzero.games.public_states`: public-tree CFR (`cfr.py`) is the core
that GT-CFR runs on a growing tree.
"""
