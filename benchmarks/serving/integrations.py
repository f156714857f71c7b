"""The integrations measured: do they return what the engine returns, what does each add per query, and what does
each extra add to an install.

On an index of --corpus (examples/corpus.txt: 330 lines) built with the bundled all-MiniLM-L6-v2, every query of
--queries (examples/queries.txt) is answered in dense mode, k=10, by:
  - the engine itself (SearchEngine.search), the reference;
  - the LangChain store (similarity_search_with_score) and a LlamaIndex VectorStoreIndex retriever over its store;
  - the MCP server (`searchengine mcp` in a subprocess), through the MCP SDK's stdio client (search tool);
and /v1/embeddings (a real uvicorn, the official openai client) embeds every corpus text, compared with the vectors
the index stores. Agreement: the same documents in the same order, and the largest score or vector difference.
Time: the median milliseconds per query over --rounds rounds, and its ratio to the engine's in the same run (on a
shared machine only the ratios mean much). Footprint: the distributions each extra adds to the core install, and
their size on disk, read from the installed packages' metadata (RECORD), not downloaded.

    python benchmarks/serving/integrations.py --out benchmarks/serving/results/integrations.json
    python benchmarks/serving/integrations.py --quick         # a smoke run: 60 texts, 3 queries, one round
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]
K = 10
EXTRAS = {"mcp": ["mcp"], "langchain": ["langchain-core"], "llamaindex": ["llama-index-core"]}
TEST_ONLY = ["openai", "langchain-tests"]
"""What the dev extra adds beside the three extras: the clients the integrations are tested with."""


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def footprint() -> dict:
    """Distributions (and MiB on disk) each extra adds to the core install, and what the dev extra gains."""
    from packaging.requirements import Requirement

    installed = {_name(d.metadata["Name"]): d for d in importlib.metadata.distributions()}

    def closure(requirements: list[str]) -> set[str]:
        seen: set[str] = set()
        pending = [(Requirement(text), ("",)) for text in requirements]
        while pending:
            requirement, extras = pending.pop()
            if requirement.marker and not any(requirement.marker.evaluate({"extra": e}) for e in extras):
                continue
            name = _name(requirement.name)
            if name in seen or name not in installed:
                continue
            seen.add(name)
            for text in installed[name].requires or []:
                pending.append((Requirement(text), ("", *requirement.extras)))
        return seen

    def mib(names: set[str]) -> float:
        return round(sum(f.size or 0 for n in names for f in installed[n].files or []) / 2**20, 1)

    own = installed["searchengine"].requires or []
    core = closure([text for text in own if "extra ==" not in text])
    dev_before = closure([text.split(";")[0] for text in own if 'extra == "dev"' in text]) - closure(
        [name for names in EXTRAS.values() for name in names] + TEST_ONLY
    )
    added = {extra: sorted(closure(names) - core) for extra, names in EXTRAS.items()}
    dev_added = closure([n for names in EXTRAS.values() for n in names] + TEST_ONLY) - core - dev_before
    return {
        "core": {"distributions": len(core), "mib": mib(core)},
        "extras": {extra: {"distributions": len(n), "mib": mib(set(n)), "names": n} for extra, n in added.items()},
        "dev_adds": {"distributions": len(dev_added), "mib": mib(dev_added)},
    }


def _timed(function, queries: list[str], rounds: int) -> tuple[list, list[float]]:
    answers, times = [], []
    for _ in range(rounds):
        answers = []
        for query in queries:
            started = time.perf_counter()
            answers.append(function(query))
            times.append((time.perf_counter() - started) * 1000)
    return answers, times


def _compare(reference: list[list[tuple[str, float]]], other: list[list[tuple[str, float]]]) -> dict:
    same = all([t for t, _ in a] == [t for t, _ in b] for a, b in zip(reference, other))
    gap = max((abs(x - y) for a, b in zip(reference, other) for (_, x), (_, y) in zip(a, b)), default=0.0)
    return {"same_ranking": same, "max_score_difference": gap}


async def _mcp_answers(index: Path, queries: list[str], rounds: int) -> tuple[list, list[float]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = StdioServerParameters(
        command=sys.executable, args=["-m", "searchengine", "mcp", "-d", str(index)], env=dict(os.environ)
    )
    answers, times = [], []
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for _ in range(rounds):
            answers = []
            for query in queries:
                started = time.perf_counter()
                result = await session.call_tool("search", {"query": query, "k": K, "mode": "dense"})
                times.append((time.perf_counter() - started) * 1000)
                answers.append([(h["text"], h["score"]) for h in result.structured_content["hits"]])
    return answers, times


def measure(corpus: list[str], queries: list[str], rounds: int, work: Path) -> dict:
    import numpy as np
    import openai
    from llama_index.core import VectorStoreIndex

    from searchengine import SearchEngine
    from searchengine.integrations.langchain import SearchEngineVectorStore as LangChainStore
    from searchengine.integrations.llamaindex import SearchEngineVectorStore as LlamaIndexStore
    from searchengine.server.app import ServerSettings, create_app
    from searchengine.server.served_index import ServedIndex

    index = work / "index"
    engine = SearchEngine.build(corpus, index)
    direct, direct_ms = _timed(
        lambda q: [(h.text, h.score) for h in engine.search(q, k=K, mode="dense")], queries, rounds
    )
    results: dict = {"engine": {"median_ms": statistics.median(direct_ms)}}

    def record(name: str, answers: list, times: list[float]) -> None:
        median = statistics.median(times)
        ratio = round(median / results["engine"]["median_ms"], 2)
        results[name] = {**_compare(direct, answers), "median_ms": median, "ratio_to_engine": ratio}

    with LangChainStore(index, encoder=engine.encoder) as store:
        record(
            "langchain",
            *_timed(
                lambda q: [(d.page_content, s) for d, s in store.similarity_search_with_score(q, k=K)], queries, rounds
            ),
        )
    store = LlamaIndexStore(index, encoder=engine.encoder)
    try:
        retriever = VectorStoreIndex.from_vector_store(store, embed_model=store.embed_model).as_retriever(
            similarity_top_k=K
        )
        record(
            "llamaindex",
            *_timed(lambda q: [(n.node.get_content(), n.score) for n in retriever.retrieve(q)], queries, rounds),
        )
    finally:
        store.close()
    record("mcp", *asyncio.run(_mcp_answers(index, queries, rounds)))

    import threading

    import uvicorn

    from searchengine.server.listener import listening_socket

    served = ServedIndex(index, encoder=engine.encoder)
    listener = listening_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(served, ServerSettings()), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1", api_key="unused")
        got = np.array(
            [
                item.embedding
                for start in range(0, len(corpus), 256)
                for item in client.embeddings.create(input=corpus[start : start + 256], model=engine.info().model).data
            ],
            dtype=np.float32,
        )
        stored = dict((int(i), v) for ids, vectors in engine.stored_vectors() for i, v in zip(ids, vectors))
        expected = np.array([stored[i] for i in range(len(corpus))])
        results["embeddings"] = {
            "texts": len(corpus),
            "max_abs_difference_to_stored": float(np.abs(got - expected).max()),
            "min_cosine_to_stored": float((got * expected).sum(axis=1).min()),
        }
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()
        served.close()
        engine.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=ROOT / "examples" / "corpus.txt")
    parser.add_argument("--queries", type=Path, default=ROOT / "examples" / "queries.txt")
    parser.add_argument("--rounds", type=int, default=5, help="Times every query is asked of each integration.")
    parser.add_argument("--quick", action="store_true", help="60 texts, 3 queries, one round: a smoke run.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "serving" / "results" / "integrations.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    corpus = [line.strip() for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = [line.strip() for line in args.queries.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.quick:
        corpus, queries, args.rounds = corpus[:60], queries[:3], 1
    with tempfile.TemporaryDirectory() as work:
        results = measure(corpus, queries, args.rounds, Path(work))
    report = {
        "settings": {"texts": len(corpus), "queries": len(queries), "rounds": args.rounds, "k": K, "mode": "dense"},
        "results": results,
        "footprint": footprint(),
        "run": run_record(load_before),
    }
    write_results(args.out, report)
    print("| integration | same ranking | max score difference | median ms/query | x engine |")
    print("|---|---|---|---|---|")
    for name in ("langchain", "llamaindex", "mcp"):
        row = results[name]
        print(
            f"| {name} | {row['same_ranking']} | {row['max_score_difference']:.2g} | {row['median_ms']:.1f} | "
            f"{row['ratio_to_engine']} |"
        )
    print(f"engine: {results['engine']['median_ms']:.1f} ms/query; embeddings: {results['embeddings']}")
    print(json.dumps(report["footprint"], indent=1))


if __name__ == "__main__":
    main()
