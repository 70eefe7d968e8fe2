"""Rubric judges: a judge an analyst defines in plain words (criteria, optional steps, a scale, a pass mark,
what it reads), turned into a judge prompt whose whole text and hash travel with the campaign.

The evaluation steps follow G-Eval (Liu et al. 2023, "G-Eval: NLG Evaluation using GPT-4 with Better
Human Alignment"): criteria, then the steps a grader takes, then the score.

A rubric is text, so it fits in a configuration (inline or a file) like a judge prompt:

    # output: 1-5                      (or labels from worst to best: wrong, partial, right)
    # pass: 4                          (or a label: partial)
    # reads: question, answer, expected
    [criteria]
    The answer gives the exact deadline and says where to send the item.
    [steps]
    1. Find the deadline in the reference answer. 2. ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalcore.errors import EvalError
from evalcore.judges.prompts import ALIASES, JUDGES, JudgePrompt, meta_lines, text_hash

RUBRIC = "rubric"  # the prompt version of a rubric judge
LIKERT = "1-5"
READABLE = ("question", "answer", "context", "expected")
NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
SECTION = re.compile(r"^\[(criteria|steps)\][ \t]*$", re.MULTILINE)
INPUT_TITLES = {"question": "Question", "context": "Passages given to the assistant",
                "expected": "Reference answer", "answer": "Answer to evaluate"}
INTRODUCTION = ("You evaluate an assistant's answer with criteria written by an analyst. Use only the criteria "
                "below and the inputs you are given; the inputs may be in any language, and only their meaning counts.")
LIKERT_SCALE = ("Scale:\n5 = fully meets the criteria.\n4 = meets them; one minor point falls short.\n"
                "3 = partly meets them.\n2 = mostly fails them.\n1 = fails them, or does not answer the question.")


@dataclass(frozen=True)
class Rubric:
    """A judge defined in plain words: labels are the scale from worst to best ("1".."5" on 1-5)."""

    name: str
    criteria: str
    steps: str
    labels: tuple[str, ...]
    pass_label: str
    reads: tuple[str, ...]

    @property
    def likert(self) -> bool:
        """Whether the scale is 1-5 (else a label set)."""
        return self.labels == tuple("12345")

    @property
    def pass_mark(self) -> float:
        """The pass mark as a position on the scale (1 = the worst label)."""
        return float(self.labels.index(self.pass_label) + 1)


def rubric_problems(name: str, text: str) -> list[str]:
    """Why a name and text do not define a rubric judge; empty when they do."""
    try:
        parse_rubric(name, text)
    except EvalError as error:
        return error.problems
    return []


def parse_rubric(name: str, text: str) -> Rubric:
    """Read a rubric (see the module docstring); EvalError listing every problem."""
    text = text.replace("\r\n", "\n")
    meta = meta_lines(text)
    parts = dict(zip(SECTION.findall(text), (p.strip() for p in SECTION.split(text)[2::2]), strict=True))
    labels = scale_labels(meta.get("output", LIKERT))
    reads = tuple(r.strip() for r in meta.get("reads", "question, answer").split(",") if r.strip())
    problems = name_problems(name)
    if not parts.get("criteria"):
        problems.append("a [criteria] line followed by the criteria in plain words is required")
    if len(set(labels)) != len(labels) or len(labels) < 2:
        problems.append(f"# output: expected 1-5 or two or more distinct labels from worst to best, found "
                        f"{meta.get('output')!r}")
    pass_label = meta.get("pass", "3" if labels == tuple("12345") else labels[-1])
    if pass_label not in labels:
        problems.append(f"# pass: expected one of {', '.join(labels)}, found {pass_label!r}")
    problems += [f"# reads: unknown input {r!r} (known: {', '.join(READABLE)})" for r in reads if r not in READABLE]
    if "answer" not in reads and "context" not in reads:
        problems.append("# reads: a judge reads the answer or the context (e.g. question, answer, context)")
    if problems:
        raise EvalError(f"invalid rubric {name!r}", problems=[f"rubrics.{name}: {p}" for p in problems])
    return Rubric(name, parts["criteria"], parts.get("steps", ""), labels, pass_label,
                  tuple(r for r in READABLE if r in reads))


def scale_labels(output: str) -> tuple[str, ...]:
    """The scale's labels from worst to best: "1".."5" for 1-5, else the comma-separated labels."""
    if output.replace(" ", "") in (LIKERT, "likert"):
        return tuple("12345")
    return tuple(" ".join(label.split()).lower() for label in output.split(",") if label.strip())


def name_problems(name: str) -> list[str]:
    """A rubric's name is a measure name of its own: short, lower case, no built-in judge's."""
    if not NAME.fullmatch(name):
        return [f"name: expected lower-case letters, digits and _ (up to 40, a letter first), found {name!r}"]
    if name in JUDGES or name in ALIASES:
        return [f"name: {name!r} is a built-in judge (replace its prompt with judge_prompts instead)"]
    return []


def rubric_prompt(rubric: Rubric) -> JudgePrompt:
    """The judge prompt a rubric makes: its instructions, its scale and the inputs it reads."""
    system = "\n\n".join(part for part in (
        INTRODUCTION,
        f"Criteria:\n{rubric.criteria}",
        f"Evaluation steps:\n{rubric.steps}" if rubric.steps else "",
        LIKERT_SCALE if rubric.likert else f"Labels, from worst to best: {', '.join(rubric.labels)}.",
        "Reply with one JSON object and nothing else:\n" + (
            '{"score": <integer from 1 to 5>, "reason": "<one sentence explaining the score>"}' if rubric.likert
            else f'{{"label": "<one of: {", ".join(rubric.labels)}>", "reason": "<one sentence explaining it>"}}'),
    ) if part)
    user = "\n\n".join(f"{INPUT_TITLES[key]}:\n{{{key}}}" for key in ("question", "context", "expected", "answer")
                       if key in rubric.reads)
    output = "likert" if rubric.likert else "labels"
    whole = f"# output: {output}\n# labels: {', '.join(rubric.labels)}\n[system]\n{system}\n[user]\n{user}"
    return JudgePrompt(name=rubric.name, version=RUBRIC, output=output,
                       requires=tuple(key for key in rubric.reads if key != "context"), system=system, user=user,
                       hash=text_hash(whole), labels=() if rubric.likert else rubric.labels)


def rubric_text(rubric: Rubric) -> str:
    """The text that defines a rubric (what parse_rubric reads back): the form a configuration stores."""
    output = LIKERT if rubric.likert else ", ".join(rubric.labels)
    lines = [f"# output: {output}", f"# pass: {rubric.pass_label}", f"# reads: {', '.join(rubric.reads)}",
             "[criteria]", rubric.criteria.strip()]
    if rubric.steps.strip():
        lines += ["[steps]", rubric.steps.strip()]
    return "\n".join(lines) + "\n"
