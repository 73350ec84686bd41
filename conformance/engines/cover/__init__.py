"""``isrcheck cover``: the model's state graph at a scope (``graph``), a path cover of its edges
and refusals (``paths``), run in lockstep on Spark executors (``executor``, ``driver``)."""
