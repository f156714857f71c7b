"""BEIR-style retrieval evaluation: read a corpus, queries and graded relevance judgements (qrels) in BEIR's
file format, rank the whole corpus for every query by exact cosine similarity, and report nDCG@10,
Recall@100 and MRR@10.

Files (the layout of every BEIR dataset):

- corpus.jsonl: one JSON object a line, {"_id": str, "title": str (optional), "text": str}. A document is
  embedded as `title + " " + text` (stripped), or `text` alone when the title is missing or empty: the
  join BEIR's and sentence-transformers' evaluators use.
- queries.jsonl: one JSON object a line, {"_id": str, "text": str}.
- qrels.tsv: header `query-id<TAB>corpus-id<TAB>score`, then one judgement a line; the score is a
  non-negative integer relevance grade (0 = judged not relevant).

Metrics (the definitions of trec_eval / pytrec_eval, which BEIR reports), averaged over the queries with at
least one judgement of grade > 0; each is in 0..1:

- nDCG@10: DCG@10 / IDCG@10 with linear gain (the grade) and discount 1 / log2(rank + 1); IDCG@10 is the
  DCG of the query's judged documents sorted by grade.
- Recall@100: relevant (grade > 0) documents in the top 100 / all relevant documents of the query.
- MRR@10: 1 / rank of the first relevant document in the top 10, 0 when none is there.

As BEIR does by default, a document whose id equals the query's id is never retrieved for that query
(`ignore_identical_ids`), so a corpus may contain the query texts themselves (e.g. duplicate-question sets).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from searchengine.errors import SearchEngineError

EmbedFunction = Callable[[Sequence[str]], np.ndarray]
SearchFunction = Callable[[list[str], int], list[list[str]]]
"""Queries and a depth -> for each query, the ids of its best documents, best first (e.g. an index's search)."""

QRELS_HEADER = ("query-id", "corpus-id", "score")
NDCG_AT = 10
RECALL_AT = 100
MRR_AT = 10
SCORE_BUDGET_BYTES = 256 * 1024 * 1024
"""The most memory one block of query-by-document scores may take (float32)."""


@dataclass(frozen=True)
class RetrievalSet:
    """A corpus, its queries and their judgements; `qrels[query id][document id] = grade`."""

    corpus_ids: list[str]
    corpus_texts: list[str]
    query_ids: list[str]
    query_texts: list[str]
    qrels: dict[str, dict[str, int]]


@dataclass(frozen=True)
class RetrievalScores:
    ndcg_at_10: float
    recall_at_100: float
    mrr_at_10: float
    queries: int
    """Queries evaluated: those with at least one relevant (grade > 0) judgement."""
    documents: int
    per_query: dict[str, dict[str, float]] = field(repr=False, default_factory=dict)

    def as_dict(self) -> dict[str, float | int]:
        return {
            "ndcg@10": self.ndcg_at_10,
            "recall@100": self.recall_at_100,
            "mrr@10": self.mrr_at_10,
            "queries": self.queries,
            "documents": self.documents,
        }


def document_text(title: str, text: str) -> str:
    """How a corpus entry is embedded: `title + " " + text`, stripped (BEIR's join)."""
    return f"{title} {text}".strip() if title.strip() else text.strip()


def _jsonl(path: Path, kind: str) -> list[tuple[int, dict]]:
    path = _the_file(Path(path), f"the {kind} .jsonl file")
    rows = []
    try:
        with path.open(encoding="utf-8-sig") as handle:  # a byte-order mark before the first line is no JSON
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SearchEngineError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
                if not isinstance(row, dict):
                    raise SearchEngineError(f"{path}:{number}: expected a JSON object, found {type(row).__name__}")
                rows.append((number, row))
    except UnicodeDecodeError as exc:
        raise SearchEngineError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise SearchEngineError(f"{path}: cannot read it ({exc})") from None
    if not rows:
        raise SearchEngineError(f"{path}: the {kind} file has no lines")
    return rows


def _the_file(path: Path, what: str) -> Path:
    """`path`, refused in one line naming `what` it should be when it is missing or a folder (a BEIR data set's
    folder holds corpus.jsonl, queries.jsonl and qrels/test.tsv)."""
    if path.is_dir():
        raise SearchEngineError(
            f"{path}: a folder, not {what}; give the file in it (a BEIR folder holds corpus.jsonl, queries.jsonl "
            "and qrels/test.tsv)"
        )
    if not path.is_file():
        raise SearchEngineError(f"{path}: no such file ({what})")
    return path


def _string_field(path: Path, number: int, row: dict, name: str, required: bool = True) -> str:
    value = row.get(name)
    if value is None and not required:
        return ""
    if name == "_id" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        what = "missing" if value is None else f"a {type(value).__name__}, not a string"
        raise SearchEngineError(f'{path}:{number}: field "{name}" is {what}')
    if name == "_id" and not value.strip():
        raise SearchEngineError(f'{path}:{number}: field "_id" is empty')
    return value


def _read_texts(path: Path, kind: str, with_title: bool) -> tuple[list[str], list[str]]:
    ids, texts, seen = [], [], {}
    for number, row in _jsonl(path, kind):
        identifier = _string_field(path, number, row, "_id")
        text = _string_field(path, number, row, "text")
        if with_title:
            text = document_text(_string_field(path, number, row, "title", required=False), text)
        if not text.strip():
            raise SearchEngineError(f"{path}:{number}: {kind} {identifier!r} has no text")
        if identifier in seen:
            raise SearchEngineError(f"{path}:{number}: _id {identifier!r} already used on line {seen[identifier]}")
        seen[identifier] = number
        ids.append(identifier)
        texts.append(text.strip())
    return ids, texts


def read_corpus(path: Path) -> tuple[list[str], list[str]]:
    """(ids, texts) of a BEIR corpus.jsonl; each text is `title + " " + text` (see `document_text`)."""
    return _read_texts(path, "corpus", with_title=True)


def read_queries(path: Path) -> tuple[list[str], list[str]]:
    """(ids, texts) of a BEIR queries.jsonl."""
    return _read_texts(path, "queries", with_title=False)


def read_qrels(
    path: Path, query_ids: Sequence[str], corpus_ids: Sequence[str], corpus_name: str = "the corpus file"
) -> dict[str, dict[str, int]]:
    """{query id: {document id: grade}} from a BEIR qrels .tsv; every query id must exist in the queries file.

    A corpus id missing from the corpus (`corpus_name` says where its ids came from, for the error) is kept: it can
    never be retrieved, so it scores 0, as in BEIR and MTEB, whose ArguAna qrels name 5 documents its corpus lacks.
    The file is refused, naming the first such id, only when no relevant (grade > 0) document it names is in the
    corpus: then the ids are of another corpus, or the index was built without its ids."""
    path = _the_file(Path(path), "the qrels .tsv file")
    known_queries, known_documents = set(query_ids), set(corpus_ids)
    expected = "\t".join(QRELS_HEADER)
    qrels: dict[str, dict[str, int]] = {}
    first_unknown: str | None = None
    try:
        with path.open(encoding="utf-8-sig", newline="\n") as handle:  # a byte-order mark is not the header's
            header = handle.readline().rstrip("\n").rstrip("\r")
            if not header:
                raise SearchEngineError(f"{path}: the file is empty; it needs the header line '{expected}' and rows")
            if [name.strip().lower() for name in header.split("\t")] != list(QRELS_HEADER):
                raise SearchEngineError(f"{path}:1: the header is {header!r}; expected the tab-separated '{expected}'")
            for number, line in enumerate(handle, start=2):
                line = line.rstrip("\n").rstrip("\r")
                if not line.strip():
                    continue
                fields = [value.strip() for value in line.split("\t")]
                if len(fields) != 3:
                    raise SearchEngineError(
                        f"{path}:{number}: {len(fields)} tab-separated fields, expected 3 ({expected})"
                    )
                query, document, score = fields
                try:
                    grade = int(score)
                except ValueError:
                    raise SearchEngineError(
                        f"{path}:{number}: score {score!r} is not an integer relevance grade"
                    ) from None
                if grade < 0:
                    raise SearchEngineError(f"{path}:{number}: score {grade} is negative; grades are 0 or more")
                if query not in known_queries:
                    raise SearchEngineError(f"{path}:{number}: query-id {query!r} is not in the queries file")
                if document not in known_documents and first_unknown is None:
                    first_unknown = f"{path}:{number}: corpus-id {document!r} is not in {corpus_name}"
                judged = qrels.setdefault(query, {})
                if document in judged:
                    raise SearchEngineError(f"{path}:{number}: query {query!r} and document {document!r} judged twice")
                judged[document] = grade
    except UnicodeDecodeError as exc:
        raise SearchEngineError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise SearchEngineError(f"{path}: cannot read it ({exc})") from None
    if not any(grade > 0 for judged in qrels.values() for grade in judged.values()):
        raise SearchEngineError(f"{path}: no query has a judgement with score > 0, so there is nothing to evaluate")
    relevant = (document for judged in qrels.values() for document, grade in judged.items() if grade > 0)
    if first_unknown is not None and not any(document in known_documents for document in relevant):
        raise SearchEngineError(first_unknown)
    return qrels


def read_retrieval_set(corpus: Path, queries: Path, qrels: Path) -> RetrievalSet:
    """Read and cross-check the three BEIR files."""
    corpus_ids, corpus_texts = read_corpus(corpus)
    query_ids, query_texts = read_queries(queries)
    return RetrievalSet(corpus_ids, corpus_texts, query_ids, query_texts, read_qrels(qrels, query_ids, corpus_ids))


def _normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def exact_search(
    query_vectors: np.ndarray,
    document_vectors: np.ndarray,
    top_k: int,
    excluded: Sequence[int] | None = None,
    score_budget_bytes: int = SCORE_BUDGET_BYTES,
) -> list[list[int]]:
    """For each query, the row numbers of its `top_k` documents by cosine similarity, best first.

    Scores are computed in blocks of queries so that at most `score_budget_bytes` of scores exist at once.
    `excluded[q]`, when >= 0, is a document row never returned for query q. Equal scores within the returned
    list are in row order."""
    queries, documents = _normalised(query_vectors), _normalised(document_vectors)
    count = documents.shape[0]
    top_k = min(top_k, count)
    block = max(1, score_budget_bytes // (4 * max(count, 1)))
    rankings: list[list[int]] = []
    for start in range(0, queries.shape[0], block):
        scores = queries[start : start + block] @ documents.T
        if excluded is not None:
            for row, document in enumerate(excluded[start : start + block]):
                if document >= 0:
                    scores[row, document] = -np.inf
        if top_k < count:
            candidates = np.argpartition(-scores, top_k - 1, axis=1)[:, :top_k]
        else:
            candidates = np.broadcast_to(np.arange(count), scores.shape)
        for row, rows in enumerate(candidates):
            rows = np.sort(rows)  # a stable sort below then keeps equal scores in row order
            order = rows[np.argsort(-scores[row, rows], kind="stable")]
            rankings.append([int(i) for i in order if np.isfinite(scores[row, i])])
    return rankings


def query_metrics(ranking: Sequence[str], judged: dict[str, int]) -> dict[str, float]:
    """nDCG@10, Recall@100 and MRR@10 of one ranked list of document ids against its graded judgements."""
    relevant = {document for document, grade in judged.items() if grade > 0}
    dcg = sum(judged.get(document, 0) / math.log2(rank + 1) for rank, document in enumerate(ranking[:NDCG_AT], 1))
    ideal = sorted((grade for grade in judged.values() if grade > 0), reverse=True)[:NDCG_AT]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, 1))
    found = sum(1 for document in ranking[:RECALL_AT] if document in relevant)
    first = next((rank for rank, document in enumerate(ranking[:MRR_AT], 1) if document in relevant), None)
    return {
        "ndcg@10": dcg / idcg if idcg else 0.0,
        "recall@100": found / len(relevant) if relevant else 0.0,
        "mrr@10": 1.0 / first if first else 0.0,
    }


def score_rankings(
    rankings: dict[str, Sequence[str]], qrels: dict[str, dict[str, int]], documents: int
) -> RetrievalScores:
    """Average the per-query metrics over the queries with a relevant judgement."""
    evaluated = [query for query, judged in qrels.items() if any(grade > 0 for grade in judged.values())]
    if not evaluated:
        raise SearchEngineError("no query has a judgement with score > 0, so there is nothing to evaluate")
    per_query = {query: query_metrics(rankings.get(query, []), qrels[query]) for query in evaluated}

    def mean(name: str) -> float:
        return sum(metrics[name] for metrics in per_query.values()) / len(per_query)

    return RetrievalScores(mean("ndcg@10"), mean("recall@100"), mean("mrr@10"), len(per_query), documents, per_query)


def evaluate_retrieval(
    embed: EmbedFunction, dataset: RetrievalSet, ignore_identical_ids: bool = True
) -> RetrievalScores:
    """Embed the corpus and the judged queries, rank the corpus exactly, and score the rankings."""
    judged = [i for i, query in enumerate(dataset.query_ids) if query in dataset.qrels]
    query_ids = [dataset.query_ids[i] for i in judged]
    document_vectors = embed(dataset.corpus_texts)
    query_vectors = embed([dataset.query_texts[i] for i in judged])
    row_of = {document: row for row, document in enumerate(dataset.corpus_ids)}
    excluded = [row_of.get(query, -1) for query in query_ids] if ignore_identical_ids else None
    rows = exact_search(query_vectors, document_vectors, max(NDCG_AT, RECALL_AT, MRR_AT), excluded)
    rankings = {query: [dataset.corpus_ids[row] for row in ranked] for query, ranked in zip(query_ids, rows)}
    return score_rankings(rankings, dataset.qrels, len(dataset.corpus_ids))


def evaluate_search(
    search: SearchFunction,
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    qrels: dict[str, dict[str, int]],
    documents: int,
    ignore_identical_ids: bool = True,
    batch_size: int = 64,
) -> RetrievalScores:
    """Score what `search` returns for the judged queries (an index searched as users search it, rather than
    the exact search of `evaluate_retrieval`). It is asked for one hit more than the metrics read when a query's
    own id is dropped from its ranking."""
    judged = [(query, text) for query, text in zip(query_ids, query_texts) if query in qrels]
    depth = max(NDCG_AT, RECALL_AT, MRR_AT)
    rankings: dict[str, list[str]] = {}
    for start in range(0, len(judged), batch_size):
        chunk = judged[start : start + batch_size]
        found = search([text for _, text in chunk], depth + int(ignore_identical_ids))
        for (query, _), ranked in zip(chunk, found):
            kept = [document for document in ranked if not (ignore_identical_ids and document == query)]
            rankings[query] = kept[:depth]
    return score_rankings(rankings, qrels, documents)
