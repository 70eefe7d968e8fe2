"""The scale of the judges that score (Likert), the pass mark a judge has unless a campaign sets one, its bounds."""

LOWEST, HIGHEST = 1, 5
PASS_MARK = 3.0


def pass_mark_problem(judge: str, value: float) -> str | None:
    """Why a pass mark is off its judge's scale (claims: a share of supported claims; else 1-5), or None."""
    low, high = (0.0, 1.0) if judge == "claims" else (LOWEST, HIGHEST)
    return None if low <= value <= high else f"expected a pass mark in [{low:g}, {high:g}], found {value!r}"
