"""`python -m evalcore testset generate|report|review`: a test set generated from a corpus, measured and reviewed."""

from __future__ import annotations

import argparse
import getpass
import json
from pathlib import Path
from typing import Any

from evalcore.cli import SUMMARIES, program
from evalcore.cli._common import (
    Commands,
    add_db_option,
    add_judge_model_flags,
    positive_int,
    positive_seconds,
    share,
    store_of,
)


def register(commands: Commands) -> None:
    """Add `testset` and its subcommands."""
    parser = commands.add_parser("testset", help=SUMMARIES["testset"])
    actions = parser.add_subparsers(dest="testset_command", required=True, metavar="ACTION")
    generate = actions.add_parser(
        "generate", help="write questions from a corpus's passages with a model, check them, save a new dataset",
        description="Plan N questions over the corpus's documents in turn (kinds in turn: fact, two-passages, "
                    "paraphrase, unanswerable), have the model write each with its reference answer, have the "
                    "critic reject those not answerable from their passages or not standalone, reject "
                    "near-duplicates (offline sentence embeddings), label other relevant passages, and write a "
                    "dataset (five Parquet files and testset.json, its provenance). Every model call is cached in "
                    "the store: the same settings give the same set. Prints the quality report.")
    generate.add_argument("--dataset", required=True, metavar="CORPUS", help="the corpus: a dataset id or folder")
    generate.add_argument("--out", required=True, metavar="DATASET",
                          help="the new dataset: a folder name under dataset/, or a folder path (must not exist)")
    generate.add_argument("--questions", required=True, type=positive_int, metavar="N", help="questions to plan")
    generate.add_argument("--kinds", default="fact,two-passages,paraphrase,unanswerable", metavar="LIST",
                          help="comma-separated kinds, in turn (default: all four)")
    generate.add_argument("--language", choices=("en", "fr", "zh"),
                          help="write every question in this language (default: each passage's own)")
    generate.add_argument("--seed", type=int, default=0, help="the plan's seed (default 0)")
    generate.add_argument("--model", dest="judge_model", help="the model that writes and checks (judge_model)")
    generate.add_argument("--base-url", dest="judge_base_url", help="its OpenAI-compatible server (judge_base_url)")
    generate.add_argument("--config", type=Path, metavar="TOML",
                          help="take the model from this configuration: its judge keys, else its own model")
    generate.add_argument("--timeout", type=positive_seconds, metavar="SECONDS",
                          help="seconds per attempt of a model call (default 60; with 3 retries)")
    generate.add_argument("--concurrency", type=positive_int, default=4, help="questions in flight (default 4)")
    generate.add_argument("--duplicate-similarity", type=share, default=0.9, metavar="SHARE",
                          help="cosine similarity at which a question is a near-duplicate of an earlier one (0.9)")
    generate.add_argument("--replace", action="store_true", help="replace the dataset if it exists")
    generate.add_argument("--json", action="store_true", help="print the quality report as JSON")
    model = generate.add_argument_group("model keys", "any judge key of a target configuration")
    add_judge_model_flags(model)
    generate.set_defaults(handler=_generate)
    report = actions.add_parser("report", help="the quality report of a generated test set, reviews included")
    report.add_argument("dataset", metavar="DATASET")
    report.add_argument("--json", action="store_true", help="print it as JSON")
    report.set_defaults(handler=_report)
    review = actions.add_parser("review", help="accept, edit or reject one generated question")
    review.add_argument("dataset", metavar="DATASET")
    review.add_argument("qid", type=int, metavar="QID")
    review.add_argument("decision", choices=("accept", "edit", "reject"))
    review.add_argument("--question", help="the new question (edit)")
    review.add_argument("--answer", help="the new reference answer (edit)")
    review.add_argument("--note", default="", help="why, in a few words")
    review.add_argument("--author", default=getpass.getuser(), help="who reviews (default: the user name)")
    review.set_defaults(handler=_review)
    add_db_option(generate)


def model_keys(args: argparse.Namespace) -> dict[str, Any]:
    """The model's keys: a configuration's (its judge keys, else its own model as the judge), then the flags."""
    from evalcore.targets.target_config import KEYS, TargetConfig
    from evalcore.testsets import MODEL_KEYS

    keys: dict[str, Any] = {}
    if args.config:
        config = TargetConfig.from_toml(args.config)
        keys = {key: config.value(key) for key in MODEL_KEYS if config.value(key) != KEYS[key].default}
        judge = config.judge
        named = judge.judge_model or judge.judge_deployment
        if not named and judge.judge_kind != "local" and config.generation.model:
            keys |= {"judge_model": config.generation.model, "judge_base_url": config.generation.base_url,
                     "judge_api_key_env": config.generation.api_key_env}
    flags = {key: getattr(args, key, None) for key in (*MODEL_KEYS, "judge_model", "judge_base_url")}
    keys |= {key: value for key, value in flags.items() if value is not None}
    return keys


def _generate(args: argparse.Namespace) -> int:
    from evalcore.datasets import resolve_dataset
    from evalcore.testsets import GenerationRequest, Kind, generate_testset

    request = GenerationRequest(args.dataset, args.out, args.questions,
                             Kind.parse([k.strip() for k in args.kinds.split(",") if k.strip()]), args.language,
                             args.seed, model_keys(args), args.concurrency, args.duplicate_similarity, args.replace)
    _, report = generate_testset(store_of(args, create=True), request)
    out = resolve_dataset(args.out)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2))
    else:
        print("\n".join([f"test set written to {out}", *report.lines(),
                         (f"next: review it (dashboard: Datasets; or {program()} testset review {out} QID "
                          "accept|edit|reject), then run a campaign on it")]))
    return 0


def _report(args: argparse.Namespace) -> int:
    from evalcore.datasets import resolve_dataset
    from evalcore.testsets import measure_testset

    report = measure_testset(resolve_dataset(args.dataset))
    print(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) if args.json else "\n".join(report.lines()))
    return 0


def _review(args: argparse.Namespace) -> int:
    from evalcore.datasets import resolve_dataset
    from evalcore.testsets import review_question

    review = review_question(resolve_dataset(args.dataset), args.qid, args.decision, author=args.author,
                             question=args.question, answer=args.answer, note=args.note)
    print(f"question {review.qid}: {review.decision.value} by {review.author}")
    return 0
