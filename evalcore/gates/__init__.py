"""Quality gates: marks a campaign must reach, no significant regression against a baseline, and the
reports CI systems read (JUnit XML, a Markdown step summary), with one exit code per outcome."""

from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.gates.checks import (
        BOUNDS,
        Check,
        Gate,
        campaign_checks,
        cost_checks,
        exit_code,
        gate,
        gates_from_toml,
        parse_gate,
        question_failures,
        unknown_checks,
        worse_checks,
        worst,
    )
    from evalcore.gates.exits import Exit
    from evalcore.gates.reports import junit_xml, step_summary

__all__ = ["BOUNDS", "Check", "Exit", "Gate", "campaign_checks", "cost_checks", "exit_code", "gate", "gates_from_toml",
           "junit_xml", "parse_gate", "question_failures", "step_summary", "unknown_checks", "worse_checks", "worst"]
# Imported on first use (evalcore.runtime.lazy): `compare` on a kept pair needs the checks' exit codes, not the reports.
__getattr__ = lazy_exports(__name__, {
    "checks": ("BOUNDS", "Check", "Gate", "campaign_checks", "cost_checks", "exit_code", "gate",
               "gates_from_toml", "parse_gate", "question_failures", "unknown_checks", "worse_checks", "worst"),
    "exits": ("Exit",),
    "reports": ("junit_xml", "step_summary"),
})
