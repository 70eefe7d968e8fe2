"""What the offline SmolLM2-135M can judge, as `bench/local_judges.py` measured it on the sample (docs/judges.md)."""

from __future__ import annotations

# Its verdicts are always readable (a grammar holds it to the verdict's shape), which is not the
# same as right: on the sample it agreed with hand-made labels little better than chance.
LOCAL_JUDGE_NOTE = ("The judges will ask the offline SmolLM2-135M: its verdicts are always readable, but on the "
                    "sample they agreed with hand-made labels little better than chance (see 'Can I trust this "
                    "judge?' in docs/judges.md). Use it to try the workflow offline; decide with a larger judge "
                    "model, checked against your own labels.")
