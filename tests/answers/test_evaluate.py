"""Evaluation: the shipped dataset, per-category scores, regression flags and the stamped run log."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from chatparse.answers.check import check_answer
from chatparse.answers.evaluate import (
    CATEGORIES,
    CategoryStats,
    EvaluationReport,
    PromptReport,
    evaluate,
    find_regressions,
    format_report,
    load_dataset,
)
from chatparse.answers.generators import RecordingError
from chatparse.answers.prompts import P2, PROMPTS
from chatparse.answers.result import TokenUsage

DATA = resources.files("chatparse.answers") / "data"


@pytest.fixture(scope="module")
def report_and_log() -> tuple[EvaluationReport, list[dict[str, object]]]:
    log = io.StringIO()
    report = evaluate(load_dataset("builtin"), ["P0", "P1", "P2"], log=log)
    return report, [json.loads(line) for line in log.getvalue().splitlines()]


def test_builtin_dataset_shape() -> None:
    dataset = load_dataset("builtin")
    counts = Counter(question.category for question in dataset.questions)
    assert len(dataset.questions) >= 30
    assert all(counts[category] >= 8 for category in CATEGORIES)
    titles = {block.title for block in dataset.blocks}
    assert {"교육비 지원 규정", "육아휴직 운영 지침", "출장비 규정"} <= titles
    assert len(titles) >= 6
    assert len({question.id for question in dataset.questions}) == len(dataset.questions)
    assert dataset.synthetic


def test_recordings_are_marked_synthetic_everywhere() -> None:
    for prompt in ("P0", "P1", "P2"):
        lines = (DATA / "recordings" / f"{prompt}.jsonl").read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0])
        assert header["synthetic"] is True and header["note"].startswith("SYNTHETIC")
        assert all(json.loads(line)["synthetic"] is True for line in lines[1:])
        assert len(lines) - 1 == len(load_dataset("builtin").questions)


def test_prompt_examples_do_not_contain_evaluation_questions() -> None:
    for question in load_dataset("builtin").questions:
        assert question.question not in P2.instructions


def test_report_scores(report_and_log: tuple[EvaluationReport, list[dict[str, object]]]) -> None:
    report, _ = report_and_log
    p0, p1, p2 = report.prompts
    assert (p0.total.status_correct, p1.total.status_correct, p2.total.status_correct) == (12, 24, 27)
    assert p0.confident_on_unanswerable == 5
    assert p1.confident_on_unanswerable == 1
    assert p2.confident_on_unanswerable == 4
    assert p0.categories["answerable"].error_codes == {
        "not_bare_json": 2,
        "quote_not_found": 1,
        "schema_violation": 2,
    }
    assert p1.categories["unanswerable"].error_codes == {"refused": 1}
    assert p0.categories["unanswerable"].error_codes["truncated"] == 1
    # The seed's third case: passes the contract with a verbatim quote, but the expected fact is absent.
    assert (p0.categories["answerable"].fact_checked, p0.categories["answerable"].fact_matched) == (9, 8)


def test_confident_answers_on_unanswerable_are_flagged_even_when_total_improves(
    report_and_log: tuple[EvaluationReport, list[dict[str, object]]],
) -> None:
    report, _ = report_and_log
    p1, p2 = report.prompts[1:]
    assert p2.total.status_accuracy > p1.total.status_accuracy
    flagged = [(r.prompt, r.baseline, r.metric) for r in report.regressions]
    assert ("P2", "P1", "confident answers on unanswerable questions") in flagged
    assert not [r for r in report.regressions if r.prompt == "P1"]


def stats(n: int, correct: int, confident: int = 0) -> CategoryStats:
    return CategoryStats(n, correct, n, confident, 0, 0, {}, TokenUsage(), 0.0)


def prompt_report(name: str, answerable: int, unanswerable: int, confident: int) -> PromptReport:
    categories = {
        "answerable": stats(10, answerable),
        "ambiguous": stats(10, 5),
        "unanswerable": stats(10, unanswerable, confident),
    }
    total = stats(30, answerable + 5 + unanswerable, confident)
    return PromptReport(name, "", categories, total, ())  # type: ignore[arg-type]


def test_regression_rule_in_isolation() -> None:
    # Unanswerable status accuracy unchanged, total up, but one more confident answer: flagged.
    before = prompt_report("A", answerable=5, unanswerable=8, confident=1)
    after = prompt_report("B", answerable=9, unanswerable=8, confident=2)
    regressions = list(find_regressions([before, after]))
    assert [(r.metric, r.before, r.after, r.unit) for r in regressions] == [
        ("confident answers on unanswerable questions", 1, 2, "count")
    ]
    assert "total status accuracy 0.60 → 0.73" in regressions[0].note
    assert list(find_regressions([after, before])) != []
    assert list(find_regressions([before])) == []


def test_run_log_lines_carry_all_four_versions(
    report_and_log: tuple[EvaluationReport, list[dict[str, object]]],
) -> None:
    _, lines = report_and_log
    dataset_version = load_dataset("builtin").version
    assert lines[0]["event"] == "run"
    assert lines[0]["prompt_versions"] == {name: PROMPTS[name].sha256 for name in ("P0", "P1", "P2")}
    for line in lines:
        assert line["schema_version"] == "grounded-answer/1"
        assert line["validator_version"] == "answer-check/1"
        assert line["dataset_version"] == dataset_version
        if line["event"] != "run":
            assert line["prompt_version"] in ("P0", "P1", "P2")
    events = Counter(str(line["event"]) for line in lines)
    assert events == {"run": 1, "item": 96, "summary": 3, "regression": 2}


def test_run_log_items_hold_hashes_not_generations(
    report_and_log: tuple[EvaluationReport, list[dict[str, object]]],
) -> None:
    _, lines = report_and_log
    text = "\n".join(json.dumps(line, ensure_ascii=False) for line in lines)
    assert "```json" not in text and "다음은 요청하신 답변입니다" not in text
    item = next(
        line
        for line in lines
        if line["event"] == "item" and line["question_id"] == "q03" and line["prompt_version"] == "P0"
    )
    assert item["error_codes"] == ["not_bare_json"]
    assert isinstance(item["attempts"], list) and item["attempts"][0]["output_sha256"]


def test_recorded_outputs_agree_with_the_checker_directly() -> None:
    dataset = load_dataset("builtin")
    evidence = {block.source_id: block.text for block in dataset.blocks if "all-staff" in block.readers}
    line = (DATA / "recordings" / "P0.jsonl").read_text(encoding="utf-8").splitlines()[1]
    record = json.loads(line)
    assert record["key"] == "q01"
    assert check_answer(record["text"], evidence).ok  # '매월 50만 원' with a verbatim quote: the limit


def test_report_text_mentions_synthetic_versions_and_regressions(
    report_and_log: tuple[EvaluationReport, list[dict[str, object]]],
) -> None:
    text = format_report(report_and_log[0])
    assert "SYNTHETIC" in text
    assert "grounded-answer/1" in text and "answer-check/1" in text
    assert "REGRESSION P2 vs P1: confident answers on unanswerable questions 1 → 4" in text
    for category in CATEGORIES:
        assert category in text


def copy_builtin(tmp_path: Path) -> Path:
    target = tmp_path / "ds"
    with resources.as_file(DATA) as source:
        shutil.copytree(source, target)
    return target


def test_stale_recordings_are_refused(tmp_path: Path) -> None:
    root = copy_builtin(tmp_path)
    questions = root / "questions.jsonl"
    questions.write_text(
        questions.read_text(encoding="utf-8").replace("교육비 한도는", "교육비 상한은"), encoding="utf-8"
    )
    dataset = load_dataset(root)
    assert dataset.version != load_dataset("builtin").version
    with pytest.raises(RecordingError) as info:
        evaluate(dataset, ["P1"])
    assert info.value.key == "dataset_version"


def test_settings_are_fixed_across_prompts(tmp_path: Path) -> None:
    root = copy_builtin(tmp_path)
    path = root / "recordings" / "P2.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["model"] = "another-model"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]), encoding="utf-8")
    dataset = load_dataset(root)
    assert evaluate(dataset, ["P0", "P1"]).prompts  # unaffected prompts still run
    with pytest.raises(RecordingError) as info:
        evaluate(dataset, ["P1", "P2"])
    assert info.value.key == "model"


def test_custom_generator_for_live_runs() -> None:
    from chatparse.answers.generators import Generation, ReplayGenerator

    dataset = load_dataset("builtin")
    dataset = replace(dataset, questions=dataset.questions[:2])
    refusing = ReplayGenerator({q.id: [Generation(kind="refused")] for q in dataset.questions}, model="live")
    report = evaluate(dataset, ["P1"], generator_for=lambda prompt: refusing)
    assert report.model == "live"
    assert report.prompts[0].total.error_codes == {"refused": 2}
    assert report.prompts[0].total.contract_pass == 0
