"""The scale of the judges that score (Likert) and the pass mark a judge has unless a campaign sets one."""

LOWEST, HIGHEST = 1, 5
PASS_MARK = 3.0


def on_scale(value: float) -> bool:
    """Whether a score or a pass mark lies on the Likert scale."""
    return LOWEST <= value <= HIGHEST
