"""``isrcheck validate``: trace validation of runs nobody drove (events.py reads and merges a log,
search.py finds a behaviour of the model that explains it, command.py is the sub-command)."""
