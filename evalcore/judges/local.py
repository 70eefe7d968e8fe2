"""What the offline SmolLM2-135M can judge, as `bench/local_judges.py` measured it on the sample (docs/judges.md)."""

from __future__ import annotations

# A grammar holds it to the verdict's shape, so its verdicts are always readable; on the sample's
# first 12 questions its 1-5 scores agreed with hand-made labels no better than chance (weighted
# kappa -0.14), a three-label rubric a little better (0.26, interval -0.31 to 0.76).
LOCAL_JUDGE_NOTE = ("The judges will ask the offline SmolLM2-135M: its verdicts are always readable, but on the "
                    "sample its 1-5 scores agreed with hand-made labels no better than chance (weighted kappa -0.14; "
                    "a three-label rubric 0.26). Use it to try the workflow offline; decide with a larger judge model, "
                    "checked against your own labels ('Can I trust this judge?' in docs/judges.md).")

# The pairwise judge on the same model (bench/local_judges.py --pairwise 6): every verdict readable, and every one
# flipped when the answers were swapped: it names the answer it reads first, so every question is a tie.
LOCAL_PAIRWISE_NOTE = ("The pairwise judge will ask the offline SmolLM2-135M: on the sample it named whichever answer "
                       "it read first, so every verdict flipped when the answers were swapped (6 of 6) and counted "
                       "as a tie. It cannot tell two answers apart: ask a larger judge model (--judge-model, or B's "
                       "judge settings).")
