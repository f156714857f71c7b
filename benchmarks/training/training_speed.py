"""Training throughput of `searchengine train` against sentence-transformers' own training loop, on the same data,
model (the bundled all-MiniLM-L6-v2), batch size, maximum length, learning-rate schedule and number of steps: the
"Training speed" table of docs/benchmarks.md.

Objectives:
  sts          `searchengine train sbert-sts` vs sentence-transformers' CosineSimilarityLoss: STS-B train pairs,
               batch 16, max length 64
  contrastive  `searchengine train simcse` vs MultipleNegativesRankingLoss(scale 20 = 1 / 0.05) on (s, s) pairs, the
               sentence-transformers SimCSE recipe: the first 20,000 Wikipedia sentences, batch 32, max length 32

The reference is SentenceTransformer.old_fit, the plain loop of sentence-transformers 6 (its Trainer needs the
`datasets` and `accelerate` packages, which this project does not install). Both sides count texts the same way:
2 x batch texts through the encoder per step.

Every trial is a fresh process (so OpenMP settings can differ) that trains --warmup + --steps steps; a global
optimizer-step hook timestamps every step, and texts/s covers the --steps steps after the warm-up (model loading,
the first steps and the final save are not timed). The variants run one after another in each round, rounds
repeat, and the table gives medians and each variant's median ratio to the first one, so load from other jobs
falls on every variant alike.

Variants: an engine, `ours` or `st`, plus options joined with "+":
  fp32       ours: --precision fp32 (default: auto, i.e. bf16 autocast on a CPU with native bf16)
  amp        st: old_fit(use_amp=True), bf16 autocast on a CPU
  passive    OMP_WAIT_POLICY=PASSIVE (what `searchengine train` sets unless the user set a policy)
  spin       OMP_WAIT_POLICY=ACTIVE GOMP_SPINCOUNT=300000: libgomp's own default (spin about 3 ms, then sleep)
  threadsN   N torch threads (default: ours every core this process may use, st torch's default)

    python benchmarks/training/training_speed.py                                    # the docs table, both objectives
    python benchmarks/training/training_speed.py --variants ours+threads1,ours+threads2,ours+spin+threads1,ours+spin+threads2
    python benchmarks/training/training_speed.py --quality                          # STS-B dev after a short run, bf16 vs fp32
    python benchmarks/training/training_speed.py --profile --steps 4                # where a step of our loop spends its time
    python benchmarks/training/training_speed.py --markdown                         # the saved tables
    python benchmarks/training/training_speed.py --quick                            # a smoke run (about a minute idle)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.datasets.data_folder import DATA  # noqa: E402
from benchmarks.harness.machine import cpu_name  # noqa: E402
from benchmarks.harness.results import write_results  # noqa: E402

STS_TRAIN, STS_DEV = DATA / "stsb/train.tsv", DATA / "stsb/dev.tsv"
WIKI = DATA / "unsup/wiki_sentences.txt.gz"
WIKI_LIMIT = 20_000
OBJECTIVES = {
    # name: (searchengine train arguments, batch size, max length)
    "sts": (["sbert-sts", "--data", str(STS_TRAIN)], 16, 64),
    "contrastive": (["simcse", "--data", str(WIKI), "--limit", str(WIKI_LIMIT)], 32, 32),
}
DEFAULT_VARIANTS = "ours,ours+fp32,st,st+amp,st+passive,st+amp+passive"
SPIN = {"OMP_WAIT_POLICY": "ACTIVE", "GOMP_SPINCOUNT": "300000"}
RESULTS = ROOT / "benchmarks/training/results/training_speed.json"


@dataclass
class Variant:
    name: str
    engine: str
    fp32: bool = False
    amp: bool = False
    threads: int | None = None
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, name: str) -> Variant:
        engine, *options = name.split("+")
        if engine not in ("ours", "st"):
            raise SystemExit(f"unknown engine in variant {name!r}: ours or st")
        variant = cls(name, engine)
        for option in options:
            if option == "fp32" and engine == "ours":
                variant.fp32 = True
            elif option == "amp" and engine == "st":
                variant.amp = True
            elif option == "passive":
                variant.env["OMP_WAIT_POLICY"] = "PASSIVE"
            elif option == "spin":
                variant.env.update(SPIN)
            elif option.startswith("threads") and option[7:].isdigit():
                variant.threads = int(option[7:])
            else:
                raise SystemExit(f"unknown option {option!r} in variant {name!r}")
        return variant


# --- one trial, in its own process -----------------------------------------------------------------------------


def step_timer() -> list[float]:
    """Timestamps of every optimizer step of this process, appended by a global post-step hook."""
    from torch.optim.optimizer import register_optimizer_step_post_hook

    stamps: list[float] = []
    register_optimizer_step_post_hook(lambda *_: stamps.append(time.perf_counter()))
    return stamps


def train_ours(variant: Variant, objective: str, steps: int, seed: int) -> None:
    """`searchengine train` in this process, exactly as the command line runs it."""
    from searchengine.cli import app

    arguments, batch_size, max_length = OBJECTIVES[objective]
    with tempfile.TemporaryDirectory() as out:
        command = [
            "train", *arguments, "--batch-size", str(batch_size), "--max-seq-length", str(max_length),
            "--steps", str(steps), "--eval-every", str(steps), "--seed", str(seed), "--out", out, "--quiet",
        ]  # fmt: skip
        if variant.fp32:
            command += ["--precision", "fp32"]
        if variant.threads:
            command += ["--threads", str(variant.threads)]
        app(command, standalone_mode=False)


def train_sentence_transformers(variant: Variant, objective: str, steps: int, seed: int) -> None:
    """The same run with sentence-transformers' own loop and losses."""
    import torch
    from searchengine.training.sentences import read_sentences
    from sentence_transformers import InputExample, SentenceTransformer, losses
    from torch.utils.data import DataLoader

    from searchengine.encoding.model_source import locate_model
    from searchengine.evaluation.labelled_data import read_scored_pairs

    if variant.threads:
        torch.set_num_threads(variant.threads)
    _, batch_size, max_length = OBJECTIVES[objective]
    torch.manual_seed(seed)
    model = SentenceTransformer(str(locate_model("default").path), device="cpu")
    model.max_seq_length = max_length
    if objective == "sts":
        examples = [InputExample(texts=[p.first, p.second], label=p.score) for p in read_scored_pairs(STS_TRAIN)]
        loss = losses.CosineSimilarityLoss(model)
    else:
        examples = [InputExample(texts=[s, s]) for s in read_sentences(WIKI, WIKI_LIMIT)]
        loss = losses.MultipleNegativesRankingLoss(model, scale=20.0)
    loader = DataLoader(examples, batch_size=batch_size, shuffle=True, drop_last=True)
    model.old_fit(
        [(loader, loss)],
        epochs=1,
        steps_per_epoch=steps,
        warmup_steps=max(1, steps // 10),
        optimizer_params={"lr": 2e-5},
        use_amp=variant.amp,
        show_progress_bar=False,
    )


def worker(variant: Variant, objective: str, warmup: int, steps: int, seed: int) -> dict:
    """Train warmup + steps steps; texts/s over the last `steps`."""
    if variant.engine == "ours":  # what the command does first, done here before torch loads for the step timer
        from searchengine.training.threads import use_passive_openmp_waits

        use_passive_openmp_waits()
    load_before = os.getloadavg()[0]
    stamps = step_timer()
    train = train_ours if variant.engine == "ours" else train_sentence_transformers
    train(variant, objective, warmup + steps, seed)
    import torch

    _, batch_size, _ = OBJECTIVES[objective]
    seconds = stamps[warmup + steps - 1] - stamps[warmup - 1]
    return {
        "variant": variant.name,
        "objective": objective,
        "texts_per_s": round(2 * batch_size * steps / seconds, 2),
        "seconds": round(seconds, 2),
        "steps_timed": steps,
        "torch_threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


# --- the driver ----------------------------------------------------------------------------------------------


def run_trial(variant: Variant, objective: str, args: argparse.Namespace, seed: int) -> dict:
    environment = {key: value for key, value in os.environ.items() if key not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    environment.update(variant.env)
    command = [
        sys.executable, __file__, "--worker", variant.name, "--objectives", objective,
        "--warmup", str(args.warmup), "--steps", str(args.steps), "--seed", str(seed),
    ]  # fmt: skip
    for attempt in (1, 2):  # once more if something outside stopped it (a trial killed by a signal)
        completed = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True)
        if completed.returncode == 0:
            return json.loads(completed.stdout.strip().splitlines()[-1])
        print(f"{variant.name} / {objective}: exit status {completed.returncode} (attempt {attempt})", flush=True)
        if completed.returncode > 0:
            break
    raise SystemExit(f"{variant.name} / {objective} failed:\n{completed.stderr[-3000:]}")


def summarise(trials: list[dict], variants: list[Variant], objectives: list[str]) -> list[dict]:
    """Per objective and variant: median texts/s, and the median over rounds of its ratio to the first variant."""
    rows = []
    for objective in objectives:
        mine = [t for t in trials if t["objective"] == objective]
        first = {t["round"]: t["texts_per_s"] for t in mine if t["variant"] == variants[0].name}
        for variant in variants:
            runs = [t for t in mine if t["variant"] == variant.name]
            if not runs:
                continue
            rates = [t["texts_per_s"] for t in runs]
            ratios = [t["texts_per_s"] / first[t["round"]] for t in runs if t["round"] in first]
            rows.append({
                "objective": objective,
                "variant": variant.name,
                "texts_per_s_median": round(statistics.median(rates), 1),
                "texts_per_s_runs": rates,
                f"ratio_to_{variants[0].name}": round(statistics.median(ratios), 2),
                "torch_threads": runs[0]["torch_threads"],
                "load_range": [min(loads := [t[k] for t in runs for k in ("load_before", "load_after")]), max(loads)],
            })  # fmt: skip
    return rows


def markdown(rows: list[dict], reference: str) -> str:
    lines = [
        f"| objective | variant | texts/s (median) | runs | × {reference} (median of rounds) | threads | load |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    for row in rows:
        runs = ", ".join(f"{rate:.1f}" for rate in row["texts_per_s_runs"])
        lines.append(
            f"| {row['objective']} | {row['variant']} | {row['texts_per_s_median']:.1f} | {runs} | "
            f"{row[f'ratio_to_{reference}']:.2f} | {row['torch_threads']} | {row['load_range'][0]:.1f}–{row['load_range'][1]:.1f} |"
        )
    return "\n".join(lines)


def quality(args: argparse.Namespace, machine: dict) -> None:
    """STS-B dev Spearman after --quality-steps of sbert-sts, bf16 autocast then fp32 for each seed. Runs are added
    to those already in the results file (same steps), which is rewritten after each run."""
    for seed in range(args.seed, args.seed + args.seeds):
        for precision in ("bf16", "fp32"):
            with tempfile.TemporaryDirectory() as out:
                command = [
                    sys.executable, "-m", "searchengine", "train", "sbert-sts", "--data", str(STS_TRAIN),
                    "--eval", str(STS_DEV), "--eval-every", str(args.quality_steps), "--steps", str(args.quality_steps),
                    "--seed", str(seed), "--precision", precision, "--out", out, "--quiet",
                ]  # fmt: skip
                completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
                if completed.returncode != 0:
                    raise SystemExit(f"exit status {completed.returncode}: {completed.stderr[-3000:]}")
                log = json.loads((Path(out) / "training_log.json").read_text())
            run = {"precision": precision, "seed": seed, "dev": round(log["evaluations"][-1]["score"], 2)}
            run.update(base=round(log["base_score"], 2), seconds=round(log["seconds"], 1))
            run.update(load=round(os.getloadavg()[0], 2), machine=machine)
            print(json.dumps(run), flush=True)
            saved = json.loads(args.results.read_text()) if args.results.exists() else {}
            entry = saved.get("quality", {})
            if entry.get("steps") != args.quality_steps:
                entry = {"steps": args.quality_steps, "runs": []}
            runs = [r for r in entry["runs"] if (r["precision"], r["seed"]) != (precision, seed)] + [run]
            by_precision = {p: [r["dev"] for r in runs if r["precision"] == p] for p in ("bf16", "fp32")}
            entry.update(
                command="searchengine train sbert-sts --data ../shared/data/stsb/train.tsv --eval "
                f"../shared/data/stsb/dev.tsv --steps {args.quality_steps} --seed SEED --precision bf16|fp32",
                runs=runs,
                mean_dev={p: round(statistics.mean(values), 2) for p, values in by_precision.items() if values},
            )
            saved["quality"] = entry
            write(args.results, saved)


def profile(args: argparse.Namespace, machine: dict) -> None:
    """Where a step of sbert-sts's loop spends its time: tokenising, forward (fp32 and bf16 autocast), backward,
    clipping, and the optimizer step of torch's plain, foreach and fused AdamW; medians over --steps steps of each
    kind, interleaved, at --profile-threads threads, with passive OpenMP waits as `searchengine train` runs."""
    from searchengine.training.threads import use_passive_openmp_waits

    use_passive_openmp_waits()
    import torch
    from searchengine.training.loop import cycle
    from searchengine.training.objectives.cosine_regression import cosine_regression_loss
    from searchengine.training.precision import autocast
    from searchengine.training.sentence_model import SentenceModel

    from searchengine.evaluation.labelled_data import read_scored_pairs

    torch.set_num_threads(args.profile_threads)
    torch.manual_seed(args.seed)
    model = SentenceModel("default", max_seq_length=64)
    model.train()
    optimizers = {
        name: torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01, **options)
        for name, options in {
            "plain": {"foreach": False},
            "foreach": {"foreach": True},
            "fused": {"fused": True},
        }.items()
    }
    batches = cycle(read_scored_pairs(STS_TRAIN), 16, args.seed)
    times: dict[str, list[float]] = {}

    def lap(part: str, started: float) -> float:
        now = time.perf_counter()
        times.setdefault(part, []).append(1000 * (now - started))
        return now

    for step in range(args.warmup + args.steps):
        for precision in ("fp32", "bf16"):
            for name, optimizer in optimizers.items():
                batch = next(batches)
                started = time.perf_counter()
                first = model.tokenize([pair.first for pair in batch])
                second = model.tokenize([pair.second for pair in batch])
                started = lap("tokenise", started)
                with autocast(precision):
                    loss = cosine_regression_loss(model(first), model(second), torch.tensor([p.score for p in batch]))
                started = lap(f"forward {precision}", started)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                started = lap(f"backward {precision}", started)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                started = lap("clip", started)
                optimizer.step()
                lap(f"AdamW {name}", started)
        if step < args.warmup:
            times.clear()
    result = {
        "command": "python benchmarks/training/training_speed.py " + " ".join(sys.argv[1:]),
        "machine": machine,
        "threads": args.profile_threads,
        "load": round(os.getloadavg()[0], 2),
        "median_ms": {part: round(statistics.median(values), 1) for part, values in times.items()},
    }
    print(json.dumps(result, indent=2))
    saved = json.loads(args.results.read_text()) if args.results.exists() else {}
    saved.setdefault("profile", {})[f"{args.profile_threads} threads"] = result
    write(args.results, saved)


def write(path: Path, results: dict) -> None:
    write_results(path, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=DEFAULT_VARIANTS, help="Comma-separated; ratios are to the first.")
    parser.add_argument("--objectives", default="sts,contrastive")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3, help="Untimed steps first.")
    parser.add_argument("--steps", type=int, default=12, help="Timed steps.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the first round (or --quality run).")
    parser.add_argument("--quality", action="store_true", help="STS-B dev after a short run, bf16 vs fp32.")
    parser.add_argument("--quality-steps", type=int, default=120)
    parser.add_argument("--seeds", type=int, default=2, help="Seeds of the --quality runs.")
    parser.add_argument("--profile", action="store_true", help="Time the parts of a step, and AdamW's kernels.")
    parser.add_argument("--profile-threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="1 round, 1 + 2 steps, nothing written.")
    parser.add_argument("--note", default="", help="Recorded with the results (e.g. what else ran).")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--markdown", action="store_true", help="Print the saved speed tables and stop.")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    objectives = args.objectives.split(",")
    if args.worker:
        print(json.dumps(worker(Variant.parse(args.worker), objectives[0], args.warmup, args.steps, args.seed)))
        return
    machine = {"cpu": cpu_name(), "cores": len(os.sched_getaffinity(0)), "note": args.note}
    if args.markdown:
        for key, entry in json.loads(args.results.read_text()).get("speed", {}).items():
            print(f"{key}\n`{entry['command']}`\n\n{markdown(entry['rows'], key.split(' / ')[0].split(',')[0])}\n")
        return
    if args.quality:
        quality(args, machine)
        return
    if args.profile:
        profile(args, machine)
        return
    if args.quick:
        args.rounds, args.warmup, args.steps = 1, 1, 2
    variants = [Variant.parse(name) for name in args.variants.split(",")]
    trials = []
    key = ",".join(v.name for v in variants) + " / " + ",".join(objectives)
    for round_ in range(args.rounds):
        for objective in objectives:
            for variant in variants:
                trial = {**run_trial(variant, objective, args, args.seed + round_), "round": round_}
                print(json.dumps(trial), flush=True)
                trials.append(trial)
                if not args.quick:  # after every trial, so a stopped run keeps what it measured
                    saved = json.loads(args.results.read_text()) if args.results.exists() else {}
                    saved.setdefault("speed", {})[key] = {
                        "machine": machine,
                        "command": "python benchmarks/training/training_speed.py " + " ".join(sys.argv[1:]),
                        "rounds": args.rounds,
                        "warmup_steps": args.warmup,
                        "timed_steps": args.steps,
                        "rows": summarise(trials, variants, objectives),
                        "trials": trials,
                    }
                    write(args.results, saved)
    print(markdown(summarise(trials, variants, objectives), variants[0].name))


if __name__ == "__main__":
    main()
