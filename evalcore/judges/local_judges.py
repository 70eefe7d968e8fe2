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

# The pairwise judge on the same model (bench/local_judges.py --pairwise 6): every verdict readable, and every one
# flipped when the answers were swapped: it names the answer it reads first, so every question is a tie.
LOCAL_PAIRWISE_NOTE = ("The pairwise judge will ask the offline SmolLM2-135M: on the sample it named whichever answer "
                       "it read first, so every verdict flipped when the answers were swapped (6 of 6) and counted "
                       "as a tie. It cannot tell two answers apart: ask a larger judge model (--judge-model, or B's "
                       "judge settings).")


# Measured by `bench/local_judges.py --questions 4 --judges claims` on extractive answers, whose every claim is
# supported: every reply kept the shape (a grammar sees to it), but 4 of its 31 claims were found supported and
# only 10 of the 31 were the answer's.
LOCAL_CLAIMS_NOTE = ("The offline SmolLM2-135M cannot do the claims judge: on the sample's extractive answers, whose "
                     "every claim is supported, its replies kept the shape but found 4 of 31 claims supported, and "
                     "only 10 of the 31 came from the answers (it repeated the question or one sentence, wrote its "
                     "verdict words as claims, or copied the example it was shown). Its faithfulness says nothing "
                     "about your answers: pick claims with a larger judge model.")


def local_notes(judges: Sequence[str]) -> list[str]:
    """What a face says before judges ask the local model: how far it can be trusted, and each judge it cannot do."""
    return [LOCAL_JUDGE_NOTE, *([LOCAL_CLAIMS_NOTE] if "claims" in judges else [])]
