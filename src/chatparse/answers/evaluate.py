"""Evaluate prompt versions on a labelled dataset with the model, documents and settings held fixed.

Scores the first attempt of every question, per category (answerable / ambiguous / unanswerable),
flags regressions against the previous prompt (confident answers on unanswerable questions count
even when the total improves) and writes a JSONL run log stamped with all four versions.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final, Literal, TextIO

from chatparse.answers.check import VALIDATOR_VERSION
from chatparse.answers.generators import (
    Generation,
    Generator,
    Pricing,
    RecordingError,
    ReplayGenerator,
    generation_from_record,
)
from chatparse.answers.model import SCHEMA_VERSION, STATUSES
from chatparse.answers.pipeline import NO_RETRY, Block, RetryPolicy, answer_question, approximate_counter
from chatparse.answers.prompts import Turn, get_prompt
from chatparse.answers.result import AnswerResult, TokenUsage
from chatparse.errors import ChatparseError

Category = Literal["answerable", "ambiguous", "unanswerable"]
CATEGORIES: Final[tuple[Category, ...]] = ("answerable", "ambiguous", "unanswerable")
BUILTIN: Final = "builtin"


class DatasetError(ChatparseError, ValueError):
    """The dataset or its recordings are malformed or do not match each other."""

    code = "invalid_dataset"


@dataclass(frozen=True)
class Question:
    """One labelled question; ``expected_facts`` are substrings a correct answer must contain."""

    id: str
    category: Category
    question: str
    expected_status: str
    expected_facts: tuple[str, ...] = ()
    history: tuple[Turn, ...] = ()
    user_scope: frozenset[str] | None = None


@dataclass(frozen=True)
class EvalSettings:
    """Held fixed across prompt versions; recordings must have been made with the same ones."""

    model: str
    budget: int
    max_output_tokens: int
    temperature: float = 0.0
    pricing: Pricing = field(default_factory=Pricing)


@dataclass(frozen=True)
class Dataset:
    """Documents as blocks, questions, settings, and where the recordings live."""

    name: str
    version: str
    synthetic: bool
    settings: EvalSettings
    default_user_scope: frozenset[str]
    blocks: tuple[Block, ...]
    questions: tuple[Question, ...]
    root: Traversable

    def recordings_file(self, prompt: str) -> Traversable:
        return self.root / "recordings" / f"{prompt}.jsonl"


@dataclass(frozen=True)
class ItemScore:
    """How the first attempt on one question scored."""

    question: Question
    result: AnswerResult
    contract_pass: bool
    claimed_status: str | None
    status_correct: bool
    fact_match: bool | None

    @property
    def outcome_codes(self) -> tuple[str, ...]:
        first = self.result.first_attempt
        if first.kind == "refused":
            return ("refused",)
        if first.kind == "failed":
            return (f"failed:{first.failure or 'unknown'}",)
        return first.error_codes


@dataclass(frozen=True)
class CategoryStats:
    """Counts for one category (or the total) of one prompt version."""

    n: int
    status_correct: int
    contract_pass: int
    confident_answers: int
    fact_checked: int
    fact_matched: int
    error_codes: dict[str, int]
    tokens: TokenUsage
    cost: float

    @property
    def status_accuracy(self) -> float:
        return self.status_correct / self.n if self.n else 0.0

    @property
    def contract_pass_rate(self) -> float:
        return self.contract_pass / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "status_accuracy": round(self.status_accuracy, 4),
            "contract_pass_rate": round(self.contract_pass_rate, 4),
            "confident_answers": self.confident_answers,
            "fact_checked": self.fact_checked,
            "fact_matched": self.fact_matched,
            "error_codes": dict(self.error_codes),
            "tokens": self.tokens.to_dict(),
            "cost": round(self.cost, 8),
        }


@dataclass(frozen=True)
class PromptReport:
    """Per-category and total statistics for one prompt version."""

    prompt: str
    change: str
    categories: dict[Category, CategoryStats]
    total: CategoryStats
    items: tuple[ItemScore, ...]

    @property
    def confident_on_unanswerable(self) -> int:
        return self.categories["unanswerable"].confident_answers


@dataclass(frozen=True)
class Regression:
    """A metric that got worse against the previous prompt version."""

    prompt: str
    baseline: str
    metric: str
    before: float
    after: float
    note: str = ""
    unit: Literal["count", "rate"] = "rate"

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "baseline": self.baseline,
            "metric": self.metric,
            "before": self.before,
            "after": self.after,
            "note": self.note,
            "unit": self.unit,
        }


@dataclass(frozen=True)
class EvaluationReport:
    """Everything ``format_report`` prints and the run log summarises."""

    dataset: str
    dataset_version: str
    synthetic: bool
    model: str
    settings: EvalSettings
    prompts: tuple[PromptReport, ...]
    regressions: tuple[Regression, ...]
    schema_version: str = SCHEMA_VERSION
    validator_version: str = VALIDATOR_VERSION
    live: bool = False  # a model was called (not the dataset's recordings replayed)

    @property
    def all_failed(self) -> bool:
        """Every attempt of every prompt failed to get an output (no server, bad key): nothing was measured."""
        attempts = [a for p in self.prompts for item in p.items for a in item.result.attempts]
        return bool(attempts) and all(attempt.kind == "failed" for attempt in attempts)


# Loading ----------------------------------------------------------------------------------------


def load_dataset(source: str | Path) -> Dataset:
    """``"builtin"`` for the shipped Korean policy dataset, or a directory with the same layout."""
    root: Traversable = resources.files("chatparse.answers") / "data" if source == BUILTIN else Path(source)
    meta_bytes = _read_bytes(root / "dataset.json")
    questions_bytes = _read_bytes(root / "questions.jsonl")
    meta = _json(meta_bytes, "dataset.json")
    digest = hashlib.sha256(meta_bytes + b"\n" + questions_bytes).hexdigest()[:10]
    return Dataset(
        name=str(meta["name"]),
        version=f"{meta['version']}+{digest}",
        synthetic=bool(meta.get("synthetic", False)),
        settings=_settings(meta["settings"]),
        default_user_scope=frozenset(meta.get("default_user_scope", ())),
        blocks=tuple(_blocks(meta["documents"])),
        questions=tuple(_questions(questions_bytes.decode("utf-8"))),
        root=root,
    )


def _read_bytes(path: Traversable) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"expected a readable file, found none at {path}", path=str(path)) from exc


def _json(raw: bytes | str, where: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise DatasetError(f"expected JSON, found invalid text in {where}", path=where) from exc


def _settings(raw: dict[str, Any]) -> EvalSettings:
    pricing = raw.get("pricing") or {}
    return EvalSettings(
        model=str(raw["model"]),
        budget=int(raw["budget"]),
        max_output_tokens=int(raw["max_output_tokens"]),
        temperature=float(raw.get("temperature", 0.0)),
        pricing=Pricing(
            float(pricing.get("input_per_million", 0.0)), float(pricing.get("output_per_million", 0.0))
        ),
    )


def _blocks(documents: list[dict[str, Any]]) -> Iterator[Block]:
    for document in documents:
        readers = frozenset(document.get("readers", ()))
        for block in document["blocks"]:
            yield Block(block["source_id"], block["text"], document.get("title", ""), readers)


def _questions(text: str) -> Iterator[Question]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        raw = _json(line, f"questions.jsonl line {number}")
        if raw.get("category") not in CATEGORIES or raw.get("expected_status") not in STATUSES:
            raise DatasetError(
                f"expected a known category and status, found neither on questions.jsonl line {number}"
            )
        scope = raw.get("user_scope")
        yield Question(
            id=raw["id"],
            category=raw["category"],
            question=raw["question"],
            expected_status=raw["expected_status"],
            expected_facts=tuple(raw.get("expected_facts", ())),
            history=tuple(Turn(turn["role"], turn["content"]) for turn in raw.get("history", ())),
            user_scope=frozenset(scope) if scope is not None else None,
        )


def replay_generator_for(dataset: Dataset) -> Callable[[str], Generator]:
    """Generators that replay ``recordings/<prompt>.jsonl``, refusing stale or mismatched files."""

    def make(prompt: str) -> Generator:
        lines = _read_bytes(dataset.recordings_file(prompt)).decode("utf-8").splitlines()
        header = _json(lines[0], f"recordings/{prompt}.jsonl header") if lines else {}
        _check_recording_header(dataset, prompt, header)
        recordings: dict[str, list[Generation]] = {}
        for number, line in enumerate(lines[1:], start=2):
            if line.strip():
                record = _json(line, f"recordings/{prompt}.jsonl line {number}")
                generation = generation_from_record(record, number)
                cost = dataset.settings.pricing.cost(generation.usage)
                recordings.setdefault(record["key"], []).append(_with_cost(generation, cost))
        return ReplayGenerator(recordings, model=str(header["model"]))

    return make


def _with_cost(generation: Generation, cost: float) -> Generation:
    return Generation(
        kind=generation.kind,
        text=generation.text,
        refusal=generation.refusal,
        failure=generation.failure,
        finish_reason=generation.finish_reason,
        usage=generation.usage,
        cost=cost,
    )


def _check_recording_header(dataset: Dataset, prompt: str, header: dict[str, Any]) -> None:
    expected = {
        "prompt_version": prompt,
        "prompt_sha256": get_prompt(prompt).sha256,
        "dataset_version": dataset.version,
        "model": dataset.settings.model,
    }
    for key, value in expected.items():
        if header.get(key) != value:
            raise RecordingError(
                f"expected recordings/{prompt}.jsonl to be made with {key}={value!r}, found {header.get(key)!r}."
                " Re-record: a stale recording would compare different conditions.",
                key=key,
            )


# Running and scoring ----------------------------------------------------------------------------


def evaluate(
    dataset: Dataset,
    prompts: Sequence[str],
    *,
    generator_for: Callable[[str], Generator] | None = None,
    retry: RetryPolicy = NO_RETRY,
    log: TextIO | None = None,
) -> EvaluationReport:
    """Run every prompt over every question; scores use each question's first attempt. With
    ``generator_for`` the run is live: the report and the run log say so, with the model called."""
    live = generator_for is not None
    make = generator_for or replay_generator_for(dataset)
    generators = [make(prompt) for prompt in prompts]
    model = generators[0].model if live and generators else dataset.settings.model
    run_log = _RunLog(log, dataset, live=live, model=model)
    run_log.header(prompts)
    reports: list[PromptReport] = []
    for prompt, generator in zip(prompts, generators, strict=True):
        model = generator.model
        items = tuple(
            _score(question, _ask(dataset, question, prompt, generator, retry))
            for question in dataset.questions
        )
        report = _summarise(prompt, items)
        run_log.prompt(report)
        reports.append(report)
    regressions = tuple(find_regressions(reports))
    run_log.regressions(regressions)
    return EvaluationReport(
        dataset=dataset.name,
        dataset_version=dataset.version,
        synthetic=dataset.synthetic and not live,
        model=model,
        settings=dataset.settings,
        prompts=tuple(reports),
        regressions=regressions,
        live=live,
    )


def _ask(
    dataset: Dataset, question: Question, prompt: str, generator: Generator, retry: RetryPolicy
) -> AnswerResult:
    return answer_question(
        question.question,
        dataset.blocks,
        user_scope=question.user_scope if question.user_scope is not None else dataset.default_user_scope,
        generator=generator,
        counter=approximate_counter,
        budget=dataset.settings.budget,
        prompt=prompt,
        history=question.history,
        max_output_tokens=dataset.settings.max_output_tokens,
        retry=retry,
        dataset_version=dataset.version,
        request_id=question.id,
    )


def _score(question: Question, result: AnswerResult) -> ItemScore:
    first = result.first_attempt
    passed = first.kind == "ok"
    claimed = first.claimed_status
    return ItemScore(
        question=question,
        result=result,
        contract_pass=passed,
        claimed_status=claimed,
        status_correct=passed and claimed == question.expected_status,
        fact_match=_fact_match(question, result),
    )


def _fact_match(question: Question, result: AnswerResult) -> bool | None:
    """Only for a first-attempt answer that passed and says 'answered'; a substring rule, not a proof."""
    answer = result.answer
    if not question.expected_facts or len(result.attempts) != 1 or answer is None or answer.answer is None:
        return None
    return all(fact in answer.answer for fact in question.expected_facts)


def _summarise(prompt: str, items: tuple[ItemScore, ...]) -> PromptReport:
    categories = {
        category: _stats([item for item in items if item.question.category == category])
        for category in CATEGORIES
    }
    return PromptReport(
        prompt=prompt,
        change=get_prompt(prompt).change,
        categories=categories,
        total=_stats(list(items)),
        items=items,
    )


def _stats(items: list[ItemScore]) -> CategoryStats:
    # A code counts once per question: the column reads "questions whose first attempt had it".
    codes: Counter[str] = Counter(code for item in items for code in set(item.outcome_codes))
    tokens = TokenUsage()
    for item in items:
        tokens = tokens + item.result.tokens
    return CategoryStats(
        n=len(items),
        status_correct=sum(item.status_correct for item in items),
        contract_pass=sum(item.contract_pass for item in items),
        confident_answers=sum(
            item.question.category == "unanswerable" and item.claimed_status == "answered" for item in items
        ),
        fact_checked=sum(item.fact_match is not None for item in items),
        fact_matched=sum(item.fact_match is True for item in items),
        error_codes=dict(sorted(codes.items())),
        tokens=tokens,
        cost=sum(item.result.cost for item in items),
    )


def find_regressions(reports: Sequence[PromptReport]) -> Iterator[Regression]:
    """Compare each prompt with the one before it; more confident answers on unanswerable
    questions is always a regression, whatever happened to the total."""
    for before, after in itertools.pairwise(reports):
        total_note = (
            f"total status accuracy {before.total.status_accuracy:.2f} → {after.total.status_accuracy:.2f}"
        )
        if after.confident_on_unanswerable > before.confident_on_unanswerable:
            yield Regression(
                after.prompt,
                before.prompt,
                "confident answers on unanswerable questions",
                before.confident_on_unanswerable,
                after.confident_on_unanswerable,
                total_note,
                unit="count",
            )
        for category in CATEGORIES:
            old, new = before.categories[category], after.categories[category]
            for metric in ("status_accuracy", "contract_pass_rate"):
                if getattr(new, metric) < getattr(old, metric):
                    yield Regression(
                        after.prompt,
                        before.prompt,
                        f"{category} {metric.replace('_', ' ')}",
                        getattr(old, metric),
                        getattr(new, metric),
                        total_note,
                    )


# Run log -----------------------------------------------------------------------------------------


class _RunLog:
    """JSONL lines: one header, one per question and prompt, one summary per prompt, regressions."""

    def __init__(self, stream: TextIO | None, dataset: Dataset, *, live: bool = False, model: str = "") -> None:
        self.stream = stream
        self.dataset = dataset
        self.live = live
        self.model = model or dataset.settings.model
        self.run_id = ""

    def _write(self, record: dict[str, Any]) -> None:
        if self.stream is not None:
            self.stream.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")

    def _versions(self, prompt: str | None) -> dict[str, str | None]:
        return {
            "prompt_version": prompt,
            "schema_version": SCHEMA_VERSION,
            "validator_version": VALIDATOR_VERSION,
            "dataset_version": self.dataset.version,
        }

    def header(self, prompts: Sequence[str]) -> None:
        started = datetime.now(UTC).isoformat(timespec="seconds")
        self.run_id = hashlib.sha256(f"{started}{self.dataset.version}{list(prompts)}".encode()).hexdigest()[
            :12
        ]
        settings = self.dataset.settings
        self._write(
            {
                "event": "run",
                "run_id": self.run_id,
                "started_at": started,
                **self._versions(None),
                "prompt_versions": {prompt: get_prompt(prompt).sha256 for prompt in prompts},
                "dataset": self.dataset.name,
                "synthetic": self.dataset.synthetic and not self.live,
                "live": self.live,
                "settings": {
                    "model": self.model,
                    "budget": settings.budget,
                    "max_output_tokens": settings.max_output_tokens,
                    "temperature": settings.temperature,
                },
            }
        )

    def prompt(self, report: PromptReport) -> None:
        for item in report.items:
            self._write(self._item(report.prompt, item))
        self._write(
            {
                "event": "summary",
                "run_id": self.run_id,
                **self._versions(report.prompt),
                "categories": {name: stats.to_dict() for name, stats in report.categories.items()},
                "total": report.total.to_dict(),
            }
        )

    def _item(self, prompt: str, item: ItemScore) -> dict[str, Any]:
        return {
            "event": "item",
            "run_id": self.run_id,
            **self._versions(prompt),
            "question_id": item.question.id,
            "category": item.question.category,
            "expected_status": item.question.expected_status,
            "claimed_status": item.claimed_status,
            "kind": item.result.first_attempt.kind,
            "final_kind": item.result.kind,
            "contract_pass": item.contract_pass,
            "status_correct": item.status_correct,
            "fact_match": item.fact_match,
            "error_codes": list(item.outcome_codes),
            "evidence_ids": list(item.result.evidence_ids),
            "attempts": [attempt.to_dict() for attempt in item.result.attempts],
            "tokens": item.result.tokens.to_dict(),
            "cost": item.result.cost,
        }

    def regressions(self, regressions: Sequence[Regression]) -> None:
        for regression in regressions:
            self._write(
                {
                    "event": "regression",
                    "run_id": self.run_id,
                    **self._versions(regression.prompt),
                    **regression.to_dict(),
                }
            )


# Report text -------------------------------------------------------------------------------------


def format_report(report: EvaluationReport) -> str:
    """The human-readable report: per prompt, per category, then the regressions."""
    settings = report.settings
    lines = [
        f"dataset {report.dataset} {report.dataset_version}"
        + (" (SYNTHETIC recorded outputs)" if report.synthetic else "")
        + (" (LIVE run)" if report.live else "")
        + f" · model {report.model}",
        f"schema {report.schema_version} · validator {report.validator_version} · budget {settings.budget}"
        f" · max_output_tokens {settings.max_output_tokens} · temperature {settings.temperature}",
        "scores use each question's first attempt; facts = expected-fact substring rule on passed answers",
    ]
    for prompt in report.prompts:
        lines += ["", *_prompt_lines(prompt)]
    lines += ["", "regressions (each prompt against the one before it)"]
    if not report.regressions:
        lines.append("  none")
    for regression in report.regressions:
        lines.append(_regression_line(regression))
    return "\n".join(lines)


def _prompt_lines(report: PromptReport) -> list[str]:
    header = (
        f"  {'category':<13}{'n':>3}  {'status':>6}  {'contract':>8}  {'confident':>9}  {'facts':>5}  errors"
    )
    lines = [f"{report.prompt}  {report.change}", header]
    rows = [*report.categories.items(), ("total", report.total)]
    for name, stats in rows:
        confident = str(stats.confident_answers) if name in ("unanswerable", "total") else "-"
        facts = f"{stats.fact_matched}/{stats.fact_checked}" if stats.fact_checked else "-"
        codes = ", ".join(f"{code}×{count}" for code, count in stats.error_codes.items()) or "-"
        lines.append(
            f"  {name:<13}{stats.n:>3}  {stats.status_accuracy:>6.2f}  {stats.contract_pass_rate:>8.2f}"
            f"  {confident:>9}  {facts:>5}  {codes}"
        )
    total = report.total
    lines.append(
        f"  tokens {total.tokens.input_tokens} in / {total.tokens.output_tokens} out · cost ${total.cost:.4f}"
    )
    return lines


def _regression_line(regression: Regression) -> str:
    def show(value: float) -> str:
        return str(int(value)) if regression.unit == "count" else f"{value:.2f}"

    change = f"{show(regression.before)} → {show(regression.after)}"
    return f"  REGRESSION {regression.prompt} vs {regression.baseline}: {regression.metric} {change} ({regression.note})"


__all__ = [
    "BUILTIN",
    "CATEGORIES",
    "Category",
    "CategoryStats",
    "Dataset",
    "DatasetError",
    "EvalSettings",
    "EvaluationReport",
    "ItemScore",
    "PromptReport",
    "Question",
    "Regression",
    "evaluate",
    "find_regressions",
    "format_report",
    "load_dataset",
    "replay_generator_for",
]
