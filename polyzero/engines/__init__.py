"""Engines: polyzero's agents behind the GTP (Go, Hex) and UCI (chess) protocols, and
external engines (GNU Go, Pachi, Stockfish, any GTP or UCI program) as players."""
