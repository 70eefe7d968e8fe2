"""The one error type for mistakes a user can fix."""

from __future__ import annotations


class EvalError(Exception):
    """A user-fixable problem: what was wrong, where, what was expected, how to fix it.

    `problems` holds one line per problem when several were found at once (a dataset
    check reports every problem, not just the first).
    """

    def __init__(
        self,
        message: str,
        *,
        where: str | None = None,
        expected: str | None = None,
        found: str | None = None,
        fix: str | None = None,
        problems: list[str] | None = None,
    ) -> None:
        self.message = message
        self.where = where
        self.expected = expected
        self.found = found
        self.fix = fix
        self.problems = list(problems) if problems else [self.line()]
        super().__init__(self.line() if not problems else "; ".join(self.problems))

    def line(self) -> str:
        """One readable line: `where: message (found X, expected Y). fix`."""
        text = f"{self.where}: {self.message}" if self.where else self.message
        details = []
        if self.found is not None:
            details.append(f"found {self.found}")
        if self.expected is not None:
            details.append(f"expected {self.expected}")
        if details:
            text += f" ({', '.join(details)})"
        if self.fix:
            text += f". {self.fix}"
        return text

    def to_dict(self) -> dict[str, object]:
        """The JSON shape shared by the API and the CLI's --json output."""
        return {
            "message": self.message,
            "where": self.where,
            "expected": self.expected,
            "found": self.found,
            "fix": self.fix,
            "problems": self.problems,
        }
