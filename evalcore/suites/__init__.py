"""Suites: named question sets (cases with an expected answer and sources), CSV import and export."""

from typing import TYPE_CHECKING

from evalcore.runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from evalcore.suites.csvfile import CsvLine, CsvReport, export_suite_csv, parse_suite_csv, suite_csv_bytes
    from evalcore.suites.jsonlfile import parse_suite_jsonl
    from evalcore.suites.suite import (
        MAX_CASES,
        MAX_SOURCES,
        Case,
        DuplicateName,
        IfExists,
        Suite,
        as_case,
        create_suite,
        delete_suite,
        find_suite,
        get_suite,
        list_suites,
        replace_suite,
        suite_named,
        validate_cases,
    )

__all__ = [
    "MAX_CASES", "MAX_SOURCES", "Case", "CsvLine", "CsvReport", "DuplicateName", "IfExists", "Suite", "as_case",
    "create_suite", "delete_suite", "export_suite_csv", "find_suite", "get_suite", "list_suites", "parse_suite_csv",
    "parse_suite_jsonl", "replace_suite", "suite_csv_bytes", "suite_named", "validate_cases",
]
# Imported on first use (evalcore.runtime.lazy): listing campaigns needs the suites, not their CSV files.
__getattr__ = lazy_exports(__name__, {
    "csvfile": ("CsvLine", "CsvReport", "export_suite_csv", "parse_suite_csv", "suite_csv_bytes"),
    "jsonlfile": ("parse_suite_jsonl",),
    "suite": ("MAX_CASES", "MAX_SOURCES", "Case", "DuplicateName", "IfExists", "Suite", "as_case", "create_suite",
              "delete_suite", "find_suite", "get_suite", "list_suites", "replace_suite", "suite_named",
              "validate_cases"),
})
