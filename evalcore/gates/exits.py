"""The exit codes of `run` and `compare`, apart from the checks that decide them: a command's help lists them, and
`compare` on a kept pair prints without loading the checks (the comparison's statistics, the measure registry)."""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    """The exit codes of `run` and `compare` (SEVERITY orders them when several apply)."""

    PASSED = 0
    CAMPAIGN_FAILED = 1  # the campaign did not end (failed, cancelled, interrupted)
    ERROR = 2  # bad input: an option, a file, an id (one line per problem on stderr)
    QUESTIONS_FAILED = 3  # the campaign ended, but some questions failed
    GATE_FAILED = 4  # a measure is under its mark (--fail-under, [gates])
    WORSE = 5  # the candidate is significantly worse than its baseline (--fail-if-worse)

    @property
    def label(self) -> str:
        """`gate failed`, as the reports say it."""
        return self.name.lower().replace("_", " ")


# From the least to the most serious: several campaigns (a sweep) exit with the most serious code.
SEVERITY = (Exit.PASSED, Exit.QUESTIONS_FAILED, Exit.GATE_FAILED, Exit.WORSE, Exit.CAMPAIGN_FAILED)
