"""`python -m evalcore config show|check|diff|keys|save|list` and `python -m evalcore ask`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evalcore.access.api_keys import check_tenant
from evalcore.cli import SUMMARIES, program
from evalcore.cli._common import Commands, add_db_option, store_of
from evalcore.targets import TargetConfig, build_target
from evalcore.targets.saved_targets import list_targets, save_target
from evalcore.targets.target_config import EXECUTION_KEYS, key_reference, under_test


def register(commands: Commands) -> None:
    """Add the `config` command group and the `ask` command."""
    parser = commands.add_parser("config", help=SUMMARIES["config"])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="print every key of a configuration with its hash")
    show.add_argument("file", nargs="?", help="TOML file (omit for the defaults)")
    show.add_argument("--json", action="store_true", help="print JSON instead of TOML")
    show.set_defaults(handler=_show)
    check = actions.add_parser("check", help="validate a configuration and reach its models and files")
    check.add_argument("file", help="TOML file")
    check.set_defaults(handler=_check)
    diff = actions.add_parser("diff", help="keys whose values differ between two configurations")
    diff.add_argument("a")
    diff.add_argument("b")
    diff.set_defaults(handler=_diff)
    save = actions.add_parser("save",
                              help="save a configuration in the database; prints its id: a suite's --target, "
                                   "the API's agent_id, knowledge_base_id, chat_id or rerank_id")
    save.add_argument("file", help="TOML file")
    save.add_argument("--name", default="", help="a name shown in lists")
    save.add_argument("--tenant", default="default", help="owner tenant (default: default)")
    add_db_option(save)
    save.set_defaults(handler=_save)
    keys = actions.add_parser("keys", help="every configuration key with its type, range, default and help (Markdown)")
    keys.set_defaults(handler=lambda _args: print(key_reference(), end="") or 0)
    listing = actions.add_parser("list", help="saved configurations")
    listing.add_argument("--tenant", help="only this tenant's")
    add_db_option(listing)
    listing.set_defaults(handler=_list)
    ask = commands.add_parser("ask", help=SUMMARIES["ask"])
    ask.add_argument("question")
    ask.add_argument("--config", help="TOML file (default configuration when omitted)")
    ask.add_argument("--dataset", help="dataset whose corpus is ingested (default: the config's knowledge_base)")
    ask.add_argument("--top", type=int, default=10, help="passages to print (default 10)")
    ask.add_argument("--index-dir", type=Path, help="index cache folder (default: the host's, EVALCORE_INDEX_DIR)")
    ask.set_defaults(handler=_ask)


def _load(file: str | None) -> TargetConfig:
    return TargetConfig.from_toml(file) if file else TargetConfig()


def _show(args: argparse.Namespace) -> int:
    config = _load(args.file)
    if args.json:
        print(json.dumps({"config_hash": config.config_hash(), **config.to_dict()}, ensure_ascii=False, indent=2))
    else:
        print(f"# config_hash = {config.config_hash()}")
        print(config.to_toml(all_keys=True), end="")
    return 0


def _check(args: argparse.Namespace) -> int:
    config = _load(args.file)
    build_target(config).check()
    print(f"ok {args.file}: kind={config.kind} config_hash={config.config_hash()[:12]}")
    return 0


def _save(args: argparse.Namespace) -> int:
    config = _load(args.file)
    target_id = save_target(store_of(args, create=True), config, tenant=check_tenant(args.tenant), name=args.name)
    print(target_id)
    print(f"saved {args.file} as {target_id} (tenant {args.tenant})", file=sys.stderr)
    return 0


def _list(args: argparse.Namespace) -> int:
    targets = list_targets(store_of(args), args.tenant)
    for target in targets:
        config = target.config
        print(f"{target.id}  {target.tenant:10} {config.get('kind', 'rag'):12} {config.get('retriever', ''):8} "
              f"{config.get('generator', ''):10} {target.name}")
    if not targets:
        print(f"no saved configuration: `{program()} config save FILE.toml`", file=sys.stderr)
    return 0


def _diff(args: argparse.Namespace) -> int:
    """Every differing key; exit 1 only when the system under test differs (not merely where it runs)."""
    differences = _load(args.a).diff(_load(args.b))
    for key, (a, b) in differences.items():
        note = "  (where it runs, not the system under test)" if key in EXECUTION_KEYS else ""
        print(f"{key}: {a!r} -> {b!r}{note}")
    return 1 if under_test(differences) else 0


def _ask(args: argparse.Namespace) -> int:
    from evalcore.datasets import load_dataset

    config = _load(args.config)
    target = build_target(config, cache_dir=args.index_dir)
    target.check()
    dataset = load_dataset(args.dataset or config.knowledge_base)
    target.prepare(dataset.passages, progress=_progress)
    result = target.answer(args.question)
    for rank, item in enumerate(result.retrieved[: args.top], 1):
        stages = " ".join(f"{name}={value:.3f}" for name, value in item.stages.items())
        print(f"{rank:>3}. pid={item.shown_id} score={item.score:.4f} [{item.title}] {stages}")
        print(f"     {item.text[:160]}")
    for note in result.notes:
        print(f"note: {note}")
    answer = "(none)" if result.answer is None else result.answer
    print(f"\nanswer ({config.generation.generator if config.kind == 'rag' else config.kind}): {answer}")
    if result.llm_calls:
        print(f"tokens: {result.prompt_tokens} prompt + {result.completion_tokens} completion, "
              f"{result.llm_calls} calls ({result.cache_hits} cached)")
    return 0


def _progress(done: int, total: int, step: str = "indexing the corpus") -> None:
    print(f"\r{step} {done}/{total}", end="\n" if done == total else "", file=sys.stderr, flush=True)
