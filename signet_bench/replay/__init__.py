"""The daemon's loop replayed: the session lifecycle (ranking at the start, comparing and
training at the end), its trainer strategies, the comparison log and the simulator that runs it
in a world; above the daemon's rules, the worlds and training, which it drives."""
