"""What CI systems read of the checks: a JUnit XML report and a Markdown step summary."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from evalcore.gates.checks import Check
from evalcore.language.text import counted

SUITES = {"gate": "gates", "regression": "regressions", "question": "questions"}


def junit_xml(title: str, checks: Sequence[Check]) -> str:
    """One <testsuite> per kind of check (gates, regressions, failed questions), one <testcase> per check."""
    root = ET.Element("testsuites", name=title, tests=str(len(checks)),
                      failures=str(sum(not c.passed for c in checks)))
    for kind, suite_name in SUITES.items():
        members = [c for c in checks if c.kind == kind]
        if not members:
            continue
        suite = ET.SubElement(root, "testsuite", name=f"{title}: {suite_name}", tests=str(len(members)),
                              failures=str(sum(not c.passed for c in members)), errors="0", skipped="0")
        for check in members:
            case = ET.SubElement(suite, "testcase", classname=f"evalcore.{suite_name}", name=check.name)
            if check.passed:
                ET.SubElement(case, "system-out").text = check.reason
            else:
                ET.SubElement(case, "failure", message=check.reason, type=kind).text = check.reason
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def step_summary(title: str, verdict: str, checks: Sequence[Check]) -> str:
    """Markdown: a heading, the verdict, a table of the gates and regressions, the failed questions."""
    lines = [f"### {cell(title)}", "", verdict, ""]
    measured = [c for c in checks if c.kind != "question"]
    if measured:
        lines += ["| check | result | detail |", "|---|---|---|"]
        lines += [f"| {cell(c.name)} | {'pass' if c.passed else '**FAIL**'} | {cell(c.reason)} |" for c in measured]
        lines.append("")
    questions = [c for c in checks if c.kind == "question"]
    if questions:
        lines += [f"<details><summary>{counted(len(questions), 'question')} failed</summary>", ""]
        lines += [f"- {cell(c.name)}: {cell(c.reason)}" for c in questions] + ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def cell(text: str) -> str:
    """Text safe in a Markdown table cell (no pipe, no line break)."""
    return " ".join(text.split()).replace("|", "\\|")
