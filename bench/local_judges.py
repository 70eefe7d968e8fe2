"""What the offline SmolLM2-135M can judge: readable verdicts per judge and agreement with hand-made labels.

    python bench/local_judges.py [--questions 8] [--db PATH]

The sample dataset's first questions (up to 12) are answered by keyword retrieval and extractive
answers (no model: the same answers every run), then judged by the local model with the built-in
`score` judge and the rubric `bench/fixtures/correct.rubric`. The labels
`bench/fixtures/local_judge_labels.csv` were made by hand for those answers, each read against the
question's reference answers (the note says why): `score` on 1-5, the rubric on wrong/partial/right.
The table gives, per judge, the share of readable verdicts and the agreement with the labels.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.campaigns import CampaignManager, campaign_results
from evalcore.campaigns.labels import campaign_agreement, import_labels_csv
from evalcore.campaigns.launching import LaunchRequest
from evalcore.targets import TargetConfig

FIXTURES = Path(__file__).resolve().parent / "fixtures"
JUDGES = ("score",)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--db", type=Path, default=Path(tempfile.mkdtemp()) / "local-judges.db")
    args = parser.parse_args()
    manager = CampaignManager(args.db)
    rubric = (FIXTURES / "correct.rubric").read_text(encoding="utf-8")
    config = TargetConfig.from_dict({"retriever": "bm25", "judge_kind": "local", "rubrics": {"correct": rubric}})
    start = time.perf_counter()
    campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, judges=JUDGES, limit=args.questions,
                                 time_limit=3600, name="local judges"))
    done = manager.wait(campaign_id, timeout=7200)
    seconds = time.perf_counter() - start
    results = campaign_results(manager.store, campaign_id)
    asked = {str(r.question.qid) for r in results}
    lines = (FIXTURES / "local_judge_labels.csv").read_text(encoding="utf-8").splitlines()
    labels = [lines[0], *(line for line in lines[1:] if line.split(",")[0] in asked)]  # the questions asked
    import_labels_csv(manager.store, campaign_id, "\n".join(labels) + "\n", author="bench fixture")
    agreement = campaign_agreement(manager.store, campaign_id)
    print(f"campaign {campaign_id}: {done.status}, {len(results)} questions, {seconds:.0f} s in all")
    print(f"{'judge':<14} {'readable':>9} {'labelled':>8} {'accuracy':>8} {'kappa':>6} {'weighted':>8}  interval")
    for judge in (*JUDGES, "correct"):
        verdicts = [r.outcome.judges[judge] for r in results if judge in r.outcome.judges]
        readable = sum(v.result in ("pass", "fail") for v in verdicts)
        row = agreement.get(judge)
        figures = ("-", "-", "-", "-", "-") if row is None else (
            row.n, fmt(row.accuracy), fmt(row.kappa), fmt(row.weighted_kappa),
            f"{row.interval[0]:.2f} to {row.interval[1]:.2f}" if row.interval else "-")
        print(f"{judge:<14} {f'{readable}/{len(verdicts)}':>9} {figures[0]:>8} {figures[1]:>8} {figures[2]:>6} "
              f"{figures[3]:>8}  {figures[4]}")
    manager.close()


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
