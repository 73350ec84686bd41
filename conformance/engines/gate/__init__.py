"""``isrcheck gate``: the regression corpus and the engines within a budget, for CI.

``config`` reads ``[tool.isrcheck.gate]``, ``corpus`` replays and saves schedules, ``engines``
lists the engines (one entry each), ``run`` does a gate run, ``junit`` writes its JUnit XML.
"""
