"""Trace validation of runs nobody drove (events.py reads and merges a log,
search.py finds a behaviour of the model that explains it, validation.py gives the verdict on a
log; conformance/cli/validate.py is the sub-command)."""
