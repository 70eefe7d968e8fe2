"""Quality gates: marks a campaign must reach, no significant regression against a baseline, and the
reports CI systems read (JUnit XML, a Markdown step summary), with one exit code per outcome."""

from evalcore.gates.checks import (
    BOUNDS,
    Check,
    Exit,
    Gate,
    campaign_checks,
    exit_code,
    gate,
    gates_from_toml,
    parse_gate,
    question_failures,
    worse_checks,
    worst,
)
from evalcore.gates.reports import junit_xml, step_summary

__all__ = ["BOUNDS", "Check", "Exit", "Gate", "campaign_checks", "exit_code", "gate", "gates_from_toml", "junit_xml",
           "parse_gate", "question_failures", "step_summary", "worse_checks", "worst"]
