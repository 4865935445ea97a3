"""The phases of a certification, in the order they run (the cheap ones
first); a module of its own so that the command line can offer them
without importing the kit."""

PHASES = ("construction", "walks", "calls", "producers", "blocking", "threads", "lockstep")
