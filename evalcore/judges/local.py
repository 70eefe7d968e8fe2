"""What the offline SmolLM2-135M can judge, as `bench/local_judges.py` measured it on the sample (docs/judges.md)."""

from __future__ import annotations

# A grammar holds it to the verdict's shape, so its verdicts are always readable; on the sample's
# first 12 questions its 1-5 scores agreed with hand-made labels no better than chance (weighted
# kappa -0.14), a three-label rubric a little better (0.26, interval -0.31 to 0.76).
LOCAL_JUDGE_NOTE = ("The judges will ask the offline SmolLM2-135M: its verdicts are always readable, but on the "
                    "sample its 1-5 scores agreed with hand-made labels no better than chance (weighted kappa -0.14; "
                    "a three-label rubric 0.26). Use it to try the workflow offline; decide with a larger judge model, "
                    "checked against your own labels ('Can I trust this judge?' in docs/judges.md).")
