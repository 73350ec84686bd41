"""The lockstep core: schedules, the system under test and its abstraction, the runner, verdicts and diffs."""
