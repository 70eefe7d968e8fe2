"""Suites: named question sets (cases with an expected answer and sources), CSV import and export."""

from evalcore.suites.csvfile import CsvLine, CsvReport, export_suite_csv, parse_suite_csv
from evalcore.suites.suite import (
    MAX_CASES,
    MAX_SOURCES,
    Case,
    Suite,
    as_case,
    create_suite,
    delete_suite,
    get_suite,
    list_suites,
    replace_suite,
    validate_cases,
)

__all__ = [
    "MAX_CASES", "MAX_SOURCES", "Case", "CsvLine", "CsvReport", "Suite", "as_case", "create_suite", "delete_suite",
    "export_suite_csv", "get_suite", "list_suites", "parse_suite_csv", "replace_suite", "validate_cases",
]
