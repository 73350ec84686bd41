"""The command line on top: the sub-command registry and the commands that are no engine (check, shrink, report,
gate)."""
