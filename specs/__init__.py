"""Properties of Kafka-style replication, shared by the explorer, the conformance runner and z3.

Public API: ``PROPERTIES`` (list of ``Property`` with ``id``, ``statement``, ``source``, ``kind``
and ``check(state) -> bool``), ``BY_ID`` (id -> Property), ``FAULT_BUDGET``. See
``specs.properties`` for the state attributes the predicates read.
"""
from .properties import BY_ID, FAULT_BUDGET, PROPERTIES, Property

__all__ = ["BY_ID", "FAULT_BUDGET", "PROPERTIES", "Property"]
