"""What the offline SmolLM2-135M can judge: readable verdicts per judge and agreement with hand-made labels.

    python bench/local_judges.py [--questions 8] [--judges score claims correct] [--pairwise 6] [--db PATH]

The sample dataset's first questions (up to 12) are answered by keyword retrieval and extractive
answers (no model: the same answers every run), then judged by the local model with the built-in
`score` judge, the rubric `bench/fixtures/correct.rubric` (`correct`) and the claims judge. The labels
`bench/fixtures/local_judge_labels.csv` were made by hand for those answers, each read against the
question's reference answers (the note says why): `score` on 1-5, the rubric on wrong/partial/right.
The table gives, per judge, the share of readable verdicts and the agreement with the labels.

Claims need no label: an extractive answer is made of sentences copied from the passages it was
built from, so every claim it makes is supported, and a faithful judge passes every answer (a
refusal, the fallback answer when nothing was retrieved, makes no claim). The claims table gives
the answers passed, the claims found supported, and the answers it found no claim in.

The pairwise judge is measured on two campaigns over the first `--pairwise` questions (same
retrieval, extractive answers built from the top passage only, A, or from the top five, B): the share
of questions with a readable verdict in both orders, the flip rate (verdicts that change when the
answers are swapped: position bias) and the win rate of B. `--questions 0` or `--pairwise 0` skips a part.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.campaigns import CampaignManager, QuestionResult, campaign_results
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.question_labels import campaign_agreement, import_labels_csv
from evalcore.compare.pairwise_job import judge_comparison
from evalcore.judges import JudgeResult
from evalcore.language.text import tokenize
from evalcore.targets import TargetConfig

FIXTURES = Path(__file__).resolve().parent / "fixtures"
JUDGES = ("score", "claims", "correct")  # correct: the rubric


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--judges", nargs="+", choices=JUDGES, default=list(JUDGES))
    parser.add_argument("--db", type=Path, default=Path(tempfile.mkdtemp()) / "local-judges.db")
    parser.add_argument("--pairwise", type=int, default=6, help="questions for the pairwise judge (0: none)")
    args = parser.parse_args()
    manager = CampaignManager(args.db)
    if args.questions:
        labelled_judges(manager, args)
    if args.pairwise:
        pairwise_row(manager, args.pairwise)
    manager.close()


def pairwise_row(manager: CampaignManager, questions: int) -> None:
    """Two campaigns (the top passage against the top five as context), then the local pairwise judge on them."""
    ids = []
    for name, top in (("A top 1", 1), ("B top 5", 5)):
        config = TargetConfig.from_dict({"retriever": "bm25", "context_top_k": top})
        ids.append(manager.launch(LaunchRequest(dataset="default", config=config, limit=questions, name=name)))
        manager.wait(ids[-1], timeout=600)
    start = time.perf_counter()
    preference = judge_comparison(manager.store, ids[0], ids[1], judge={"judge_kind": "local"})
    seconds = time.perf_counter() - start
    changed = sum(a.outcome.answer != b.outcome.answer for a, b in zip(
        campaign_results(manager.store, ids[0]), campaign_results(manager.store, ids[1]), strict=True))
    print(f"pairwise judge, {len(preference.verdicts)} questions ({changed} with different answers), {seconds:.0f} s")
    print(f"{'judge':<14} {'readable':>9} {'flips':>7} {'win rate of B':>14}  interval  wins B/tie/A")
    counts = preference.counts
    interval = f"{preference.interval[0]:.2f} to {preference.interval[1]:.2f}" if preference.interval else "-"
    print(f"{'pairwise':<14} {f'{preference.readable}/{len(preference.verdicts)}':>9} "
          f"{f'{preference.flips}/{preference.readable}':>7} {fmt(preference.win_rate):>14}  {interval}  "
          f"{counts['B']}/{counts['tie']}/{counts['A']}")
    for verdict in preference.verdicts:
        print(f"  q{verdict.qid} {verdict.winner:<7} A first: {verdict.a_first.winner}, B first: "
              f"{verdict.b_first.winner}  {verdict.reason[:100]}")


def labelled_judges(manager: CampaignManager, args: argparse.Namespace) -> None:
    """The judges picked (built-in score and claims, the rubric) on the first questions, against the fixture's
    labels."""
    rubric = (FIXTURES / "correct.rubric").read_text(encoding="utf-8")
    rubrics = {"correct": rubric} if "correct" in args.judges else {}
    config = TargetConfig.from_dict({"retriever": "bm25", "judge_kind": "local", "rubrics": rubrics})
    start = time.perf_counter()
    built_in = tuple(judge for judge in args.judges if judge not in rubrics)
    campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, judges=built_in,
                                 limit=args.questions, time_limit=3600, name="local judges"))
    done = manager.wait(campaign_id, timeout=7200)
    seconds = time.perf_counter() - start
    results = campaign_results(manager.store, campaign_id)
    asked = {str(r.question.qid) for r in results}
    lines = (FIXTURES / "local_judge_labels.csv").read_text(encoding="utf-8").splitlines()
    labels = [line for line in lines[1:] if line.split(",")[0] in asked  # the questions asked, the judges run
              and line.split(",")[1] in args.judges]
    if labels:
        import_labels_csv(manager.store, campaign_id, "\n".join([lines[0], *labels]) + "\n", author="bench fixture")
    agreement = campaign_agreement(manager.store, campaign_id)
    print(f"campaign {campaign_id}: {done.status}, {len(results)} questions, {seconds:.0f} s in all")
    print(f"{'judge':<14} {'readable':>9} {'labelled':>8} {'accuracy':>8} {'kappa':>6} {'weighted':>8}  interval")
    for judge in args.judges:
        verdicts = [r.outcome.judges[judge] for r in results if judge in r.outcome.judges]
        readable = sum(v.result in (JudgeResult.PASS, JudgeResult.FAIL, JudgeResult.NO_CLAIM) for v in verdicts)
        row = agreement.get(judge)
        figures = ("-", "-", "-", "-", "-") if row is None else (
            row.n, fmt(row.accuracy), fmt(row.kappa), fmt(row.weighted_kappa),
            f"{row.interval[0]:.2f} to {row.interval[1]:.2f}" if row.interval else "-")
        print(f"{judge:<14} {f'{readable}/{len(verdicts)}':>9} {figures[0]:>8} {figures[1]:>8} {figures[2]:>6} "
              f"{figures[3]:>8}  {figures[4]}")
    if "claims" in args.judges:
        print(claims_line(results))


def claims_line(results: list[QuestionResult]) -> str:
    """The claims judge on extractive answers, whose every claim is supported: how much of that it saw.

    A claim counts as the answer's when most of its words are the answer's (an extractive answer's claims
    repeat its words): a small model may list the question, or copy the example of the retry message.
    """
    judged = [(r.outcome.answer or "", r.outcome.judges["claims"]) for r in results if "claims" in r.outcome.judges]
    claims = [(answer, claim) for answer, verdict in judged for claim in verdict.claims or ()]
    supported = sum(claim.verdict == "supported" for _, claim in claims)
    own = sum(from_answer(claim.claim, answer) for answer, claim in claims)
    count = {result: sum(v.result == result for _, v in judged) for result in JudgeResult}
    passed, none, unread = count[JudgeResult.PASS], count[JudgeResult.NO_CLAIM], count[JudgeResult.UNKNOWN]
    return (f"claims on extractive answers (every claim supported by construction): {passed}/{len(judged)} "
            f"answers passed, {supported}/{len(claims)} claims found supported, {own}/{len(claims)} claims taken "
            f"from the answer, {none} answer(s) with no claim, {unread} unreadable")


def from_answer(claim: str, answer: str) -> bool:
    """Whether most of a claim's words are words of the answer."""
    words, said = tokenize(claim), set(tokenize(answer))
    return bool(words) and sum(word in said for word in words) / len(words) > 0.5


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
