"""Which text extractor makes a folder of HTML, PDF or Markdown most searchable? Measured by retrieval.

Each extractor of benchmarks/files/file_extractors.py turns every file of a corpus into the JSON lines a user's own
converter writes today (HTML and Markdown: one line per file, id = the file's path relative to the corpus root;
PDF: one line per page, id `file#page`), indexed as `searchengine index pages.jsonl --id-field id --title-field
title --passages` does. The questions of benchmarks/files/file_questions.jsonl (written before anything was measured;
each names the file, and for a PDF the pages, that answers it) are then asked in dense, keyword and hybrid mode,
and scored by recall@5 and MRR@10: a hit counts when its file is the question's and, where the question gives
pages, its page lies in them. A baseline without passages (one vector per line, embedded from its start) is
indexed for the first extractor of each format.

Also recorded per extractor: extraction time per corpus (wall clock, on whatever machine runs it), the files it
failed on and why, pages with no text, and the installed size of the distributions it needs with their
dependencies. `--folder` also indexes a copy of each corpus's files with `searchengine index DIR` (the product's
own folder reading, issue 23), scored through `folder_hit_location`, once with each passage embedded after its
heading and once without (FOLDER_VARIANTS); `--folder-only` does that alone, with no extractor installed.

Extracted pages and indexes are kept under --work, each with its timing record, and reused by a later run (delete
a variant's folder to redo it).

Set-up (Debian packages, extractors, the Markdown corpus): benchmarks/files/file_corpora.sh. Usage:
  .venv/bin/python benchmarks/files/file_search.py --work /tmp/filebench --results benchmarks/files/results/file_extractors.json
  .venv/bin/python benchmarks/files/file_search.py --work /tmp/filebench --results benchmarks/files/results/file_headings.json \
      --folder-only
  .venv/bin/python benchmarks/files/file_search.py --work /tmp/filebench-whole --results benchmarks/files/results/file_whole.json \
      --folder-only --whole --corpora python-docs,r-manuals --folder-variants passage-headings
  .venv/bin/python benchmarks/files/file_search.py --work /tmp/filebench-whole --whole --corpora python-docs,r-manuals \
      --extractors bs4-get-text,pypdf --results benchmarks/files/results/file_whole_converter.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.files.file_extractors import DISTRIBUTIONS, EXTRACTORS
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results

RECALL_AT = 5
MRR_AT = 10
MODES = ("dense", "keyword", "hybrid")
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Subset:
    """A documented part of a corpus too large to encode on a shared machine: the files matching `whole`, the
    files the questions name, and `sampled` more drawn at random (seed `seed`) from those matching `draw`."""

    whole: tuple[str, ...]
    draw: str
    sampled: int
    seed: int = 23


@dataclass(frozen=True)
class Corpus:
    """A folder of one format: the files matching `pattern` under `root`, less those named in `skip`, cut to
    `subset` when one is given."""

    name: str
    format: str
    root: Path
    pattern: str
    skip: tuple[str, ...] = ()
    subset: Subset | None = None

    def files(self, named: Iterable[str] = ()) -> list[Path]:
        """The corpus's files, sorted by path; with a subset, its files (`named`: the ones the questions name)."""
        found = sorted(
            path
            for path in self.root.glob(self.pattern)
            if path.is_file() and not any(path.match(s) for s in self.skip)
        )
        if self.subset is None:
            return found
        relative = {path: path.relative_to(self.root).as_posix() for path in found}
        named = set(named)
        kept = {path for path in found if relative[path] in named or any(path.match(g) for g in self.subset.whole)}
        pool = [path for path in found if path not in kept and fnmatch(relative[path], self.subset.draw)]
        kept.update(random.Random(self.subset.seed).sample(pool, min(self.subset.sampled, len(pool))))
        return sorted(kept)


NAVIGATION_PAGES = ("genindex*.html", "contents.html", "search.html", "py-modindex.html")
"""Sphinx's generated navigation pages (the general index, the table of contents, the search form): lists of links
to the content pages, left out of the Python docs corpus (1.6 of its 11.8 million characters as selectolax
extracts them)."""

CORPORA = {
    "python-docs": Corpus(
        "python-docs",
        "html",
        Path("/usr/share/doc/python3.11/html"),
        "**/*.html",
        NAVIGATION_PAGES,
        Subset(
            ("tutorial/*", "faq/*", "howto/*", "reference/*", "extending/*", "using/*", "glossary.html"),
            "library/*.html",
            40,
        ),
    ),  # fmt: skip
    "r-manuals": Corpus("r-manuals", "pdf", Path("/usr/share/R/doc/manual"), "*.pdf", ("refman.pdf", "fullrefman.pdf")),
    "package-readmes": Corpus("package-readmes", "markdown", Path("/tmp/filebench-readmes"), "*/README.md"),
}
"""The corpora of issue 23 (benchmarks/files/file_corpora.sh installs them). R's reference manual (refman.pdf, the same
file as fullrefman.pdf: 6.5 MB, the help page of every base function) is left out: it is larger than the other
seven manuals together and would dominate the encoding time; the seven manuals are the PDF corpus. The Python docs
are cut to a subset, about a third of their text (their 10.2 million characters take 15 to 25 minutes per extractor
to encode with passages on a shared 2-core machine, over an hour for the four): the tutorial, FAQ, HOWTOs, language
reference, extending and using guides and glossary whole, the library pages the questions name, and 40 more library
pages drawn at random as distractors. whatsnew/, c-api/ and distutils/ are left out with the rest of the library."""


WHOLE_SKIP = {"r-manuals": ("fullrefman.pdf",)}
"""What `--whole` still leaves out: fullrefman.pdf, the same file as refman.pdf (the Python docs keep skipping
their navigation pages, which are lists of links)."""


@dataclass(frozen=True)
class Question:
    """A question and where its answer is: a file relative to the corpus root, and for a PDF its pages."""

    corpus: str
    question: str
    file: str
    pages: tuple[int, int] | None = None
    section: str | None = None

    def answered_by(self, file: str, page: int | None) -> bool:
        """Whether a hit on `file` (at `page`, None when the hit is a whole file) holds the answer."""
        if file != self.file:
            return False
        if self.pages is None:
            return True
        return page is not None and self.pages[0] <= page <= self.pages[1]


def read_questions(path: Path) -> list[Question]:
    """The questions of a JSON-lines file (fields corpus, question, file, pages [first, last] or null, section)."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        pages = row.get("pages")
        if pages is not None and (len(pages) != 2 or pages[0] > pages[1]):
            raise ValueError(f"{path} line {number}: pages must be [first, last], not {pages}")
        questions.append(
            Question(row["corpus"], row["question"], row["file"], tuple(pages) if pages else None, row.get("section"))
        )
    return questions


Location = tuple[str, "int | None"]
"""Where a hit points: its file (relative to the corpus root) and its page (None for a whole file)."""


def first_answer(question: Question, ranking: Sequence[Location]) -> int | None:
    """The rank (from 1) of the first hit within 10 that holds the question's answer; None when none does."""
    return next((n for n, (file, page) in enumerate(ranking[:MRR_AT], 1) if question.answered_by(file, page)), None)


def score(questions: Sequence[Question], rankings: Sequence[Sequence[Location]]) -> dict[str, float]:
    """recall@5 (share of questions with an answering hit in the first 5) and MRR@10 (mean of 1/rank of the first
    answering hit within 10, 0 without one) of one ranked list of hits per question."""
    if len(questions) != len(rankings):
        raise ValueError(f"{len(questions)} questions but {len(rankings)} rankings")
    if not questions:
        raise ValueError("no questions to score")
    ranks = [first_answer(question, ranking) for question, ranking in zip(questions, rankings)]
    return {
        f"recall@{RECALL_AT}": sum(rank is not None and rank <= RECALL_AT for rank in ranks) / len(questions),
        f"mrr@{MRR_AT}": sum(1.0 / rank for rank in ranks if rank is not None) / len(questions),
    }


def line_location(external_id: str, paged: bool) -> Location:
    """The file and page of a converter's JSON line from its id (`file#page` for a PDF, the file otherwise)."""
    if not paged:
        return external_id, None
    file, _, page = external_id.rpartition("#")
    return file, int(page)


def folder_hit_location(hit: Any) -> Location:
    """The file and page of a hit from `searchengine index DIR`: its path relative to the folder indexed
    (metadata "path"), and for a PDF the page of the section that holds the match (`Hit.location`, "page N")."""
    where = hit.location or ""
    return hit.metadata["path"], int(where.removeprefix("page ")) if where.startswith("page ") else None


def extract(corpus: Corpus, files: list[Path], variant: str, target: Path) -> dict:
    """Run one extractor over the corpus's `files` into `target` (JSON lines id, title, text): time, pages,
    failures."""
    extractor = EXTRACTORS[corpus.format][variant]
    failures: Counter[str] = Counter()
    examples: dict[str, str] = {}
    pages = empty = characters = 0
    started = time.perf_counter()
    with target.open("w", encoding="utf-8") as out:
        for path in files:
            relative = path.relative_to(corpus.root).as_posix()
            try:
                extracted = extractor(path)
            except Exception as error:  # noqa: BLE001 (any error of a third-party extractor is its failure, counted)
                reason = f"{type(error).__name__}: {str(error).splitlines()[0][:160] if str(error) else ''}"
                failures[reason] += 1
                examples.setdefault(reason, relative)
                continue
            for page in extracted:
                pages += 1
                if not page.text.strip():  # the index refuses an empty text; a converter would skip it too
                    empty += 1
                    continue
                characters += len(page.text)
                identifier = relative if page.page is None else f"{relative}#{page.page}"
                out.write(json.dumps({"id": identifier, "title": page.title, "text": page.text}) + "\n")
    return {
        "seconds": time.perf_counter() - started,
        "files": len(files),
        "failed_files": sum(failures.values()),
        "failures": [{"reason": reason, "files": n, "example": examples[reason]} for reason, n in failures.items()],
        "pages": pages,
        "empty_pages": empty,
        "characters": characters,
    }


def build_or_open(pages: Path, target: Path, encoder: Any, passages: bool) -> tuple[Any, dict]:
    """The index of `pages` at `target`, built unless a complete one is already there, with its build record
    (seconds, vectors, load average before and after), kept beside it as <target>.json for later runs."""
    from searchengine import SearchEngine
    from searchengine.engine.build_settings import BuildSettings

    record = target.with_suffix(".json")
    if (target / "manifest.json").exists() and record.exists():
        return SearchEngine.open(target, encoder=encoder), json.loads(record.read_text(encoding="utf-8"))
    if target.exists():
        shutil.rmtree(target)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    engine = SearchEngine.build(
        pages,
        target,
        BuildSettings(id_field="id", title_field="title", passages=passages, jsonl=True),
        encoder=encoder,
    )
    built = {
        "index_seconds": time.perf_counter() - started,
        "vectors": engine.info().vectors,
        "load_before": load,
        "load_after": os.getloadavg()[0],
    }
    record.write_text(json.dumps(built), encoding="utf-8")
    return engine, built


def evaluate(engine: Any, questions: Sequence[Question], locate: Any) -> dict[str, dict[str, Any]]:
    """recall@5 and MRR@10 of the engine's top 10 for each question, in each mode the index offers, with the rank
    of each question's first answering hit (None: not in the top 10), for paired comparisons across variants."""
    texts = [question.question for question in questions]
    scores = {}
    for mode in MODES:
        if mode != "dense" and not engine.info().keyword_index:
            continue
        results = engine.search_batch(texts, MRR_AT, mode=mode)
        rankings = [[locate(hit) for hit in hits] for hits in results]
        ranks = [first_answer(question, ranking) for question, ranking in zip(questions, rankings)]
        scores[mode] = {**score(questions, rankings), "ranks": ranks}
    return scores


def run_variant(
    corpus: Corpus, files: list[Path], variant: str, questions: list[Question], work: Path, encoder: Any
) -> dict:
    """Extract (or reuse the extraction), index with passages (or reuse), and score one extractor on one corpus."""
    folder = work / corpus.name / variant
    folder.mkdir(parents=True, exist_ok=True)
    pages, record = folder / "pages.jsonl", folder / "extraction.json"
    if not record.exists():
        record.write_text(json.dumps(extract(corpus, files, variant, pages)), encoding="utf-8")
    result: dict[str, Any] = {"extraction": json.loads(record.read_text(encoding="utf-8"))}
    if result["extraction"]["pages"] == result["extraction"]["empty_pages"]:
        result["passages"] = {"error": "the extractor gave no text for any file", "modes": {}}
        return result
    paged = corpus.format == "pdf"
    for name, passages in (("passages", True), ("no_passages", False)):
        if not passages and variant != next(iter(EXTRACTORS[corpus.format])):
            continue  # one document per line without passages: the baseline extractor only
        engine, built = build_or_open(pages, folder / f"index-{name}", encoder, passages)
        result[name] = {
            **built,
            "documents": len(engine),
            "modes": evaluate(engine, questions, lambda hit: line_location(hit.external_id, paged)),
        }
        engine.close()
    return result


FOLDER_VARIANTS = {"passage-headings": ("--passage-headings",), "no-passage-headings": ("--no-passage-headings",)}
"""The settings `--folder` indexes each corpus's files with: each passage embedded after its heading, or alone."""


def run_folder(
    corpus: Corpus,
    files: list[Path],
    questions: list[Question],
    work: Path,
    model: str | None,
    settings: Sequence[str] = tuple(FOLDER_VARIANTS),
) -> dict:
    """Copy the corpus's `files` (its subset, if it has one) into a folder (unless a copy is there), index that
    folder with `searchengine index DIR` once per setting of `settings` (FOLDER_VARIANTS), one after the other,
    and score each; the CLI's error where it cannot."""
    folder = work / corpus.name / "folder-files"
    copies = {folder / path.relative_to(corpus.root): path for path in files}
    if sorted(p for p in folder.rglob("*") if p.is_file()) != sorted(copies):
        shutil.rmtree(folder, ignore_errors=True)
        for copy, path in copies.items():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, copy)
    return {
        name: run_folder_variant(folder, work / corpus.name / f"folder-index-{name}", options, questions, model)
        for name, options in FOLDER_VARIANTS.items()
        if name in settings
    }


def run_folder_variant(
    folder: Path, target: Path, options: Sequence[str], questions: list[Question], model: str | None
) -> dict:
    """Index `folder` with `searchengine index DIR` and `options` into `target` and score it. A complete index
    already at `target` (a run stopped after building it) is scored as it is, its build time unknown (None)."""
    from searchengine import SearchEngine

    if (target / "manifest.json").is_file():
        engine = SearchEngine.open(target)
        scores = {"options": list(options), "index_seconds": None, "reused": True}
        scores.update(documents=len(engine), vectors=engine.info().vectors)
        scores["modes"] = evaluate(engine, questions, folder_hit_location)
        engine.close()
        return scores
    shutil.rmtree(target, ignore_errors=True)
    command = [sys.executable, "-m", "searchengine", "index", str(folder), "-d", str(target), "-q", *options]
    if model:
        command += ["-m", model]
    load = os.getloadavg()[0]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        return {"error": (completed.stderr or completed.stdout).strip().splitlines()[-1:]}
    engine = SearchEngine.open(target)
    scores = {
        "options": list(options),
        "index_seconds": seconds,
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "documents": len(engine),
        "vectors": engine.info().vectors,
        "modes": evaluate(engine, questions, folder_hit_location),
    }
    engine.close()
    return scores


def installed_size(requirements: Iterable[str]) -> dict[str, Any]:
    """Bytes on disk of the installed distributions `requirements` pull in (their dependency closure), in total and
    beyond what the core searchengine install already holds, with the distributions that add the most."""
    closure = dependency_closure(requirements)
    core = dependency_closure(["searchengine"])
    sizes = {name: distribution_bytes(name) for name in closure}
    extra = {name: size for name, size in sizes.items() if name not in core}
    return {
        "bytes": sum(sizes.values()),
        "bytes_beyond_core": sum(extra.values()),
        "distributions_beyond_core": dict(sorted(extra.items(), key=lambda item: -item[1])),
    }


def dependency_closure(requirements: Iterable[str]) -> set[str]:
    """The canonical names of the installed distributions `requirements` need, recursively (markers evaluated,
    extras followed)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    pending = [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue  # not installed: an optional dependency this environment does without
        key = name + "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        for text in dist.requires or ():
            needed = Requirement(text)
            environments = [{"extra": extra} for extra in requirement.extras] or [{"extra": ""}]
            if needed.marker is None or any(needed.marker.evaluate(env) for env in environments):
                pending.append(needed)
    return {key.split("[")[0] for key in seen}


def distribution_bytes(name: str) -> int:
    """The bytes of the files an installed distribution's RECORD lists (that still exist)."""
    from importlib.metadata import distribution

    total = 0
    for file in distribution(name).files or ():
        located = Path(file.locate())
        if located.is_file():
            total += located.stat().st_size
    return total


def run(
    corpora: list[Corpus],
    questions: list[Question],
    work: Path,
    folder: bool,
    model: str | None,
    extractors: Collection[str],
    settings: Sequence[str] = tuple(FOLDER_VARIANTS),
) -> dict:
    """The named extractors on every corpus of their format, each scored on that corpus's questions."""
    from searchengine.encoding.encoder import Encoder

    encoder = Encoder(model) if extractors else None
    results: dict[str, Any] = {}
    for corpus in corpora:
        asked = [question for question in questions if question.corpus == corpus.name]
        if not asked:
            raise SystemExit(f"no questions for corpus {corpus.name}")
        files = corpus.files(question.file for question in asked)
        variants = {}
        for variant in (name for name in EXTRACTORS[corpus.format] if name in extractors):
            print(f"{corpus.name}: {variant}", file=sys.stderr, flush=True)
            variants[variant] = run_variant(corpus, files, variant, asked, work, encoder)
        results[corpus.name] = {
            "format": corpus.format,
            "root": str(corpus.root),
            "files": len(files),
            "skipped_by_design": list(corpus.skip),
            "subset": None if corpus.subset is None else asdict(corpus.subset),
            "questions": len(asked),
            "variants": variants,
        }
        if folder:
            results[corpus.name]["folder"] = run_folder(corpus, files, asked, work, model, settings)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="where extracted pages and indexes are kept")
    parser.add_argument("--results", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--questions", type=Path, default=HERE / "file_questions.jsonl")
    parser.add_argument("--corpora", default=",".join(CORPORA), help="comma-separated corpus names")
    parser.add_argument(
        "--root", action="append", default=[], metavar="NAME=FORMAT:DIR",
        help="a corpus at DIR (format html, pdf or markdown), instead of or beside the built-in ones",
    )  # fmt: skip
    parser.add_argument(
        "--whole", action="store_true",
        help="each corpus whole: no subset of the Python docs, and R's reference manual too (WHOLE_SKIP)",
    )  # fmt: skip
    parser.add_argument("--model", default=None, help="model (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--folder", action="store_true", help="also index the files with `searchengine index DIR`")
    parser.add_argument(
        "--folder-only", action="store_true",
        help="only `searchengine index DIR` (with and without passage headings): no extractor, none installed",
    )  # fmt: skip
    parser.add_argument(
        "--extractors", default=",".join(sorted({name for names in EXTRACTORS.values() for name in names})),
        help="comma-separated extractors to run (default: all of them; the baseline without passages runs with the "
        "first of each format)",
    )  # fmt: skip
    parser.add_argument(
        "--folder-variants", default=",".join(FOLDER_VARIANTS),
        help="comma-separated settings `--folder` indexes with (default: all of them)",
    )  # fmt: skip
    args = parser.parse_args()
    corpora = dict(CORPORA)
    for spec in args.root:
        name, _, rest = spec.partition("=")
        form, _, directory = rest.partition(":")
        if form not in EXTRACTORS or not directory:
            parser.error(f"--root {spec}: give NAME=FORMAT:DIR with FORMAT one of {', '.join(EXTRACTORS)}")
        pattern = {"html": "**/*.html", "pdf": "**/*.pdf", "markdown": "**/*.md"}[form]
        corpora[name] = Corpus(name, form, Path(directory), pattern)
    chosen = [corpora[name] for name in args.corpora.split(",")]
    if args.whole:
        chosen = [
            dataclasses.replace(corpus, subset=None, skip=WHOLE_SKIP.get(corpus.name, corpus.skip)) for corpus in chosen
        ]
    for corpus in chosen:
        if not corpus.files():
            parser.error(f"corpus {corpus.name} has no files under {corpus.root}; run benchmarks/files/file_corpora.sh")
    unknown = set(args.folder_variants.split(",")) - set(FOLDER_VARIANTS)
    if unknown:
        parser.error(
            f"--folder-variants: {', '.join(sorted(unknown))} unknown; give some of {', '.join(FOLDER_VARIANTS)}"
        )
    extractors = set() if args.folder_only else {name for name in args.extractors.split(",") if name.strip()}
    unknown = extractors - {name for names in EXTRACTORS.values() for name in names}
    if not args.folder_only and not extractors:
        parser.error("--extractors: name at least one, e.g. bs4-get-text,pypdf (or use --folder-only)")
    if unknown:
        parser.error(f"--extractors: {', '.join(sorted(unknown))} unknown; see benchmarks/files/file_extractors.py")
    load = os.getloadavg()
    results = run(
        chosen, read_questions(args.questions), args.work, args.folder or args.folder_only, args.model,
        extractors=extractors, settings=args.folder_variants.split(","),
    )  # fmt: skip
    sizes = {
        variant: installed_size(DISTRIBUTIONS[variant])
        for corpus in chosen
        for variant in EXTRACTORS[corpus.format]
        if variant in extractors
    }  # fmt: skip
    core = sum(distribution_bytes(name) for name in dependency_closure(["searchengine"]))
    record = {**run_record(load), "corpora": results, "extractor_install_size": sizes, "core_install_bytes": core}
    write_results(args.results, record)
    print(f"wrote {args.results}", file=sys.stderr)


if __name__ == "__main__":
    main()
