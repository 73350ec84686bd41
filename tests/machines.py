"""Running a lockstep Hypothesis machine the way the tests do: derandomized (the same run every
time), no example database, generation only (shrinking a stateful run in lockstep is left to
users' settings)."""
from hypothesis import HealthCheck, Phase, settings

from isrcheck.conformance.generators.strategies import lockstep_machine


def run_machine(protocol: str, faults: str, examples: int, steps: int, **options) -> None:
    """One derandomized run of ``lockstep_machine(protocol, faults, **options)``; its failure, if
    any, raises (an AssertionError naming the verdict)."""
    machine = lockstep_machine(protocol, faults=faults, **options).TestCase
    machine.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                                suppress_health_check=list(HealthCheck), derandomize=True,
                                phases=[Phase.explicit, Phase.generate])
    machine().runTest()
