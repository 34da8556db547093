"""polyzero.sog: Student of Games (sound search for imperfect-information games).

Built on `polyzero.games.public_states`:

- `cfr`: public-tree CFR (RM+, linear averaging, simultaneous updates), the core
  GT-CFR runs on a growing tree ("Search via GT-CFR");
- `gtcfr`: GT-CFR (Fig. 7) and the re-solving gadget ("Modified continual re-solving");
- `values`: the leaf value-function interface and the exact CFR+ solver;
- `resolve`: continual re-solving and the `sog:S,C` player;
- `players`: `cfr:ITERS`, `ismcts:SIMS` and the spec parsing for `reference_player`;
- `exploitability`: a search player's policy composed over the public states,
  OpenSpiel's exact best response, min / mean / max over seeds.

See docs/student_of_games.md.
"""
