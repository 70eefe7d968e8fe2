"""What the offline SmolLM2-135M can judge, as `bench/local_judges.py` measured it on the sample (docs/judges.md)."""

from __future__ import annotations

from collections.abc import Sequence

# A grammar holds it to the verdict's shape, so its verdicts are always readable; on the sample's
# first 12 questions its 1-5 scores agreed with hand-made labels no better than chance (weighted
# kappa -0.14), a three-label rubric a little better (0.26, interval -0.31 to 0.76).
LOCAL_JUDGE_NOTE = ("The judges will ask the offline SmolLM2-135M: its verdicts are always readable, but on the "
                    "sample its 1-5 scores agreed with hand-made labels no better than chance (weighted kappa -0.14; "
                    "a three-label rubric 0.26). Use it to try the workflow offline; decide with a larger judge model, "
                    "checked against your own labels ('Can I trust this judge?' in docs/judges.md).")

# Measured by `bench/local_judges.py --questions 2 --judges claims` on extractive answers, whose every claim is
# supported: its replies kept the shape (a grammar sees to it), but none of the 11 claims listed was the answer's.
LOCAL_CLAIMS_NOTE = ("The offline SmolLM2-135M cannot do the claims judge: on the sample its replies keep the shape, "
                     "but none of the 11 claims it listed came from the answers (it repeated the question, wrote its "
                     "verdict words as claims, or copied the example it was shown), so its faithfulness says nothing "
                     "about your answers. Pick claims with a larger judge model.")


def local_notes(judges: Sequence[str]) -> list[str]:
    """What a face says before judges ask the local model: how far it can be trusted, and each judge it cannot do."""
    return [LOCAL_JUDGE_NOTE, *([LOCAL_CLAIMS_NOTE] if "claims" in judges else [])]
