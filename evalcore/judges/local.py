"""What can be said of the offline SmolLM2-135M as a judge before measuring it (`bench/local_judges.py`)."""

from __future__ import annotations

# A grammar holds it to the verdict's shape, so its verdicts are always readable; that says nothing
# of whether they are right, and a 135M model is far smaller than the judges LLM-as-judge studies trust.
LOCAL_JUDGE_NOTE = ("The judges will ask the offline SmolLM2-135M: its verdicts are always readable (a grammar holds "
                    "it to their shape), which does not make them right. Use it to try the workflow offline; before "
                    "deciding anything on its verdicts, label a few questions and read its agreement with you "
                    "(Campaigns, Labels; 'Can I trust this judge?' in docs/judges.md).")
