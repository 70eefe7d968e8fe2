"""Targets that are not ours: an HTTP agent, or a file of answers produced elsewhere."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evalcore.errors import EvalError
from evalcore.models import ChatModel, check_reachable, new_client, post_json
from evalcore.targets.base import Chat, Retrieved, TargetAnswer, history_messages, history_text
from evalcore.targets.generators import own_chat_model
from evalcore.targets.knowledge import Progress
from evalcore.targets.target_config import TargetConfig, header_problem

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Where an agent's source usually names its file, in the order they are tried (agent_source_file overrides).
FILE_FIELDS = ("file_name", "filename", "source", "path", "url")


def json_path(data: Any, path: str) -> Any:
    """Follow a dotted path (`choices.0.message.content`); list items by index. KeyError if absent."""
    for part in filter(None, path.split(".")):
        if isinstance(data, list) and part.lstrip("-").isdigit():
            data = data[int(part)]
        elif isinstance(data, dict):
            data = data[part]
        else:
            raise KeyError(part)
    return data


def fill_template(template: Any, values: dict[str, str], whole: Mapping[str, Any] | None = None) -> Any:
    """Replace {name} inside every string of a parsed JSON template (other braces stay); a string that is only
    "{name}" of a name in `whole` becomes that JSON value (a list, a number) instead of its text."""
    if isinstance(template, str):
        name = template[1:-1] if template.startswith("{") and template.endswith("}") else ""
        if whole is not None and name in whole:
            return whole[name]
        return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)
    if isinstance(template, list):
        return [fill_template(item, values, whole) for item in template]
    if isinstance(template, dict):
        return {key: fill_template(value, values, whole) for key, value in template.items()}
    return template


def agent_values(question: str, qid: int | None, chat: Chat | None) -> tuple[dict[str, str], dict[str, Any]]:
    """What an agent body's placeholders are filled with: as text inside strings, and as JSON values where a string
    is only the placeholder ({history}: the earlier messages; {turn}: a number). A question asked alone has an
    empty conversation, turn and history."""
    history = chat.history if chat is not None else ()
    text = {"question": question, "qid": "" if qid is None else str(qid),
            "conversation": chat.conversation if chat is not None else "",
            "turn": str(chat.turn) if chat is not None else "", "history": history_text(history).strip()}
    return text, {"history": history_messages(history), "turn": chat.turn if chat is not None else None}


def expand_env(text: str, where: str) -> str:
    """Replace ${VAR} with the environment's value; EvalError naming an unset variable."""
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise EvalError(f"environment variable {name} is not set", where=where, fix=f"export {name}=...")
        return os.environ[name]
    return _ENV_REF.sub(value, text)


def as_pid(value: Any) -> int | None:
    """An integer passage id when the source id is one, else None (matched by title/id text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():  # pandas stores a column with gaps as floats
        return int(value)
    return int(value) if isinstance(value, str) and value.strip().isdigit() else None


class HttpAgentTarget:
    """POSTs each question to an agent and reads the answer and sources by JSON path."""

    def __init__(self, config: TargetConfig, cache: Any = None) -> None:
        self.config = config
        self._client = new_client()
        self._model = own_chat_model(config, cache)

    def check(self) -> None:
        """Fail fast: header secrets are set and the agent's server answers."""
        check_reachable(self._client, self.config.agent.agent_url, self._headers(), self.config.generation.timeout,
                        "agent_url")

    def prepare(self, passages: Sequence[Any], progress: Progress | None = None) -> None:
        """Nothing to ingest: the agent has its own knowledge."""

    def answer(self, question: str, qid: int | None = None, chat: Chat | None = None) -> TargetAnswer:
        """One POST with retries; sources keep their order as the ranking. A turn of a conversation sends its id,
        turn and history where the body template asks for them (or the agent keeps its own session by the id)."""
        body = fill_template(json.loads(self.config.agent.agent_body), *agent_values(question, qid, chat))
        answer, sources = post_json(self._client, self.config.agent.agent_url, body, headers=self._headers(),
                                    timeout=self.config.generation.timeout, retries=self.config.generation.retries,
                                    backoff=self.config.generation.retry_backoff, parse=self._parse,
                                    max_reply_chars=self.config.generation.max_reply_chars)
        return TargetAnswer(answer=answer, retrieved=sources)

    def _parse(self, data: Any) -> tuple[str, list[Retrieved]]:
        answer = json_path(data, self.config.agent.agent_answer_path)
        if not isinstance(answer, str):
            raise TypeError(f"{self.config.agent.agent_answer_path} is not text")
        try:
            sources = json_path(data, self.config.agent.agent_sources_path) or []
        except (KeyError, IndexError):
            sources = []
        if isinstance(sources, dict):  # one source object instead of a list of them
            sources = [sources]
        if not isinstance(sources, list):  # iterating a text would make each character a source
            raise TypeError(f"{self.config.agent.agent_sources_path} is not a list of sources")
        return answer, [self._source(item) for item in sources]

    def _source(self, item: Any) -> Retrieved:
        if not isinstance(item, dict):
            return Retrieved(as_pid(item), "", "", 0.0, {}, str(item))
        source = item.get(self.config.agent.agent_source_id, "")
        score = item.get("score")
        return Retrieved(as_pid(source), str(item.get(self.config.agent.agent_source_title) or ""),
                         str(item.get(self.config.agent.agent_source_text) or ""),
                         float(score) if isinstance(score, (int, float)) else 0.0, {}, str(source),
                         self._file_name(item))

    def _file_name(self, item: dict[str, Any]) -> str:
        """The source's file name: agent_source_file's field, else the first of FILE_FIELDS that is text."""
        fields = (self.config.agent.agent_source_file,) if self.config.agent.agent_source_file else FILE_FIELDS
        return next((value for name in fields if isinstance(value := item.get(name), str) and value.strip()), "")

    def _headers(self) -> dict[str, str]:
        """The agent headers with their ${VAR} parts expanded, checked again (EvalError naming the header)."""
        headers = {name: expand_env(value, f"agent_headers.{name}") for name, value in self.config.agent.agent_headers}
        for name, value in headers.items():
            if problem := header_problem(name, value):
                raise EvalError(f"{problem} (after its ${{VAR}} parts were expanded)", where=f"agent_headers.{name}")
        return headers

    def chat_model(self) -> ChatModel | None:
        """The chat model the agent's configuration names (its judges ask it), else None."""
        return self._model


class ResultsFileTarget:
    """Answers read from a JSONL or Parquet file: qid, ranked_ids, answer; question and contexts optional.

    `contexts` are the texts the answer was written from (for judges); without them, the ranked
    passages are.
    """

    def __init__(self, config: TargetConfig) -> None:
        self.config = config
        self._by_qid: dict[int, dict[str, Any]] = {}
        self._by_question: dict[str, dict[str, Any]] = {}
        self._passages: dict[int, Any] = {}

    def check(self) -> None:
        """Fail fast: the file exists and every row has the columns."""
        rows = read_results(Path(self.config.results.results_path))
        self._by_qid = {row["qid"]: row for row in rows if row["qid"] is not None}
        self._by_question = {row["question"].strip(): row for row in rows if row.get("question")}

    def prepare(self, passages: Sequence[Any], progress: Progress | None = None) -> None:
        """Read the file; passages give the ranked ids their titles and texts."""
        self.check()
        self._passages = {p.pid: p for p in passages}

    def answer(self, question: str, qid: int | None = None, chat: Chat | None = None) -> TargetAnswer:
        """The row for this qid (or, for suites, this exact question); a file's answers were written with their own
        history."""
        row = self._by_qid.get(qid) if qid is not None else None
        row = row or self._by_question.get(question.strip())
        if row is None:
            raise EvalError(f"no row for question {qid if qid is not None else question!r}",
                            where=self.config.results.results_path, fix="add a row with this qid to the results file")
        ranked = list(row["ranked_ids"])
        retrieved = [self._retrieved(source, rank, len(ranked)) for rank, source in enumerate(ranked)]
        # A row without an answer (a retrieval-only run) gets no generation measures, not zeros.
        contexts = row.get("contexts")
        context = None if contexts is None else [Retrieved(None, "", str(text), 0.0, {}) for text in contexts]
        return TargetAnswer(answer=row.get("answer"), retrieved=retrieved, context=context)

    def _retrieved(self, source: Any, rank: int, count: int) -> Retrieved:
        pid = as_pid(source)
        passage = self._passages.get(pid) if pid is not None else None
        title, text, file_name = (passage.title, passage.text, passage.file_name) if passage else ("", "", "")
        return Retrieved(pid if passage or not self._passages else None, title, text, float(count - rank), {},
                         str(source), file_name)

    def chat_model(self) -> ChatModel | None:
        """A file has no chat model."""
        return None


def read_results(path: Path) -> list[dict[str, Any]]:
    """Rows of a results file, validated: qid (int or null), ranked_ids (list), answer (text)."""
    if not path.exists():
        raise EvalError("results file not found", where=str(path), fix="check results_path")
    rows = _read_rows(path)
    problems = [problem for number, row in enumerate(rows, 1) for problem in _row_problems(row, path, number)]
    if problems:
        raise EvalError("invalid results file", problems=problems)
    for row in rows:
        row["qid"] = as_pid(row.get("qid"))
    return rows


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """The raw rows; a file that cannot be read as its suffix says is a user error."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if path.suffix == ".parquet":
            rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
            return rows
        return [_json_line(line, path, number) for number, line in
                enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1) if line.strip()]
    except (OSError, pa.ArrowException, UnicodeDecodeError) as error:
        raise EvalError(f"cannot read the results file ({str(error)[:200]})", where=str(path),
                        fix="give a UTF-8 JSONL file or a Parquet file with columns qid, ranked_ids, answer") from None


def _json_line(line: str, path: Path, number: int) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise EvalError(f"not valid JSON ({error.msg})", where=f"{path}:{number}") from None
    if not isinstance(row, dict):
        raise EvalError("each line must be a JSON object", where=f"{path}:{number}")
    return row


def _row_problems(row: dict[str, Any], path: Path, number: int) -> list[str]:
    where = f"{path} row {number}"
    problems = []
    if row.get("qid") is None and not row.get("question"):
        problems.append(f"{where}: needs a qid (or a question)")
    elif row.get("qid") is not None and as_pid(row["qid"]) is None:
        problems.append(f"{where}: qid must be an integer, found {row['qid']!r}")
    if not isinstance(row.get("ranked_ids"), (list, tuple)):
        problems.append(f"{where}: ranked_ids must be a list of ids, found {row.get('ranked_ids')!r}")
    if row.get("answer") is not None and not isinstance(row["answer"], str):
        problems.append(f"{where}: answer must be text, found {row['answer']!r}")
    contexts = row.get("contexts")
    if contexts is not None and not (isinstance(contexts, (list, tuple)) and all(isinstance(c, str) for c in contexts)):
        problems.append(f"{where}: contexts must be a list of texts (the passages the answer was written from), "
                        f"found {contexts!r}")
    return problems
