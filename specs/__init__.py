"""Properties of Kafka-style replication, shared by the explorer, the conformance runner and z3.

Public API: ``PROPERTIES`` (list of ``Property`` with ``id``, ``statement``, ``source``, ``kind``,
``check(state) -> bool`` and its fault ``budget``), ``BY_ID`` (id -> Property), ``Budget`` (the
faults within which Kafka promises a property, ``specs.budgets``), ``FAULT_BUDGET`` (the budget of
acknowledged writes, in words). See ``specs.properties`` for the state attributes the predicates read.
"""

from .budgets import Budget
from .properties import BY_ID, FAULT_BUDGET, PROPERTIES, Property

__all__ = ["BY_ID", "Budget", "FAULT_BUDGET", "PROPERTIES", "Property"]
