"""``chatparse parse`` as a data tool you can trust, through the real console script on files in a temporary
folder: nothing is ever lost (output = input refused, temp file + rename, Ctrl-C / SIGTERM / a killed worker
leave an existing output as it was), every failure is said and counted, every write fault is a named error.
Files are checked afterwards by content hash."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SCRIPT = Path(sys.executable).with_name("chatparse")
ENTRY = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "chatparse"]
PROMPT = ("<|im_start|>system\nYou may call get_weather(city).<|im_end|>\n<|im_start|>user\nWeather in Seoul?"
          "<|im_end|>\n<|im_start|>assistant\n")
GENERATIONS = [
    ('<think>The user wants the weather.</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": '
     '"Seoul"}}\n</tool_call><|im_end|>', "stop"),
    ("<think>Easy.</think>\n\nIt is sunny in Seoul today.<|im_end|>", "stop"),
    ('<think>Call it.</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Se', "length"),
    ('<tool_call>\n{"name": "get_weather", "arguments": "Seoul"}\n</tool_call><|im_end|>', "stop"),
]
FIELDS = ["--output-field", "generation", "--prefix-field", "prompt"]


def rollouts(n: int) -> list[dict[str, Any]]:
    """Rows as RL rollouts are dumped: the text under 'generation', the rendered prompt under 'prompt'."""
    return [{"id": f"rollout-{i:05d}", "prompt": PROMPT, "generation": GENERATIONS[i % 4][0],
             "finish_reason": GENERATIONS[i % 4][1], "reward": i % 3} for i in range(n)]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows))
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def env() -> dict[str, str]:
    values = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    values.pop("CHATPARSE_DEBUG", None)
    values.pop("OPENAI_API_KEY", None)
    return values


def chatparse(*args: str, cwd: Path, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    if "stdout" not in kwargs and "stderr" not in kwargs:
        kwargs["capture_output"] = True
    return subprocess.run([*ENTRY, *args], cwd=cwd, env=env(), timeout=120, **kwargs)


def expect(result: subprocess.CompletedProcess[bytes], code: int, *in_stderr: str) -> str:
    err = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert result.returncode == code, (result.returncode, err)
    for text in in_stderr:
        assert text in err, err
    return err


def leftovers(folder: Path) -> list[str]:
    """Temporary files a run left behind (there must be none)."""
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_jsonl(tmp_path / "rollouts.jsonl", rollouts(40))
    (tmp_path / "precious.parquet").write_bytes(b"PAR1 a week of results PAR1")
    (tmp_path / "precious.jsonl").write_bytes(b'{"a week": "of results"}\n')
    return tmp_path


# --- 1. nothing is ever lost ------------------------------------------------------------------------------------


def test_output_naming_the_input_is_refused_also_through_links(folder: Path) -> None:
    source = folder / "rollouts.jsonl"
    pq.write_table(pa.Table.from_pylist(rollouts(8)), folder / "same.parquet")
    (folder / "link.jsonl").symlink_to("rollouts.jsonl")
    os.link(source, folder / "hard.jsonl")
    before = {name: digest(folder / name) for name in ("rollouts.jsonl", "same.parquet")}
    for input_name, output_name in [("rollouts.jsonl", "rollouts.jsonl"), ("rollouts.jsonl", "link.jsonl"),
                                    ("link.jsonl", "hard.jsonl"), ("same.parquet", "./same.parquet")]:
        result = chatparse("parse", "-t", "qwen3", *FIELDS, input_name, "-o", output_name, cwd=folder)
        expect(result, 2, "error [output_is_input]", "destroy the input")
    result = chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "x.parquet", "--errors", "link.jsonl",
                       cwd=folder)
    expect(result, 2, "error [output_is_input]")
    assert {name: digest(folder / name) for name in before} == before
    assert not (folder / "x.parquet").exists() and leftovers(folder) == []


@pytest.mark.parametrize("args", [
    ["-t", "no_such_template"],  # a setup error after the output is named
    ["-t", "qwen3", "--output-field", "text"],  # a field no row has
    ["-t", "qwen3", *FIELDS, "--tools", "missing.json"],
], ids=["unknown-template", "missing-field", "missing-tools-file"])
def test_a_setup_error_touches_no_output(folder: Path, args: list[str]) -> None:
    before = digest(folder / "precious.parquet")
    expect(chatparse("parse", *args, "rollouts.jsonl", "-o", "precious.parquet", cwd=folder), 2)
    assert digest(folder / "precious.parquet") == before and leftovers(folder) == []


def test_an_output_replaced_only_at_the_end_keeps_its_mode(folder: Path) -> None:
    out = folder / "precious.jsonl"
    out.chmod(0o640)
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "precious.jsonl", cwd=folder), 0)
    assert len(out.read_text(encoding="utf-8").splitlines()) == 40 and out.stat().st_mode & 0o777 == 0o640
    (folder / "link.parquet").symlink_to("precious.parquet")
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "link.parquet", cwd=folder), 0)
    assert (folder / "link.parquet").is_symlink() and pq.read_table(folder / "precious.parquet").num_rows == 40


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(word) for word in text.split()]


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def _start(folder: Path, *args: str) -> subprocess.Popen[bytes]:
    # a shell's background job ignores SIGINT, and the child would inherit that: Ctrl-C as on a terminal
    return subprocess.Popen([*ENTRY, "parse", "-t", "qwen3", *FIELDS, *args], cwd=folder, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_rows(process: subprocess.Popen[bytes], folder: Path, pattern: str, workers: int = 0) -> None:
    """Until the run is under way: its temporary output exists (and its workers started)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else b""
        if list(folder.glob(pattern)) and len(_workers(process.pid)) >= workers:
            time.sleep(0.5)
            return
        time.sleep(0.05)
    raise AssertionError("the run did not start")


def _workers(pid: int) -> list[int]:
    found = []
    for child in _children(pid):
        try:
            if b"spawn_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            pass
    return found


@pytest.fixture
def big(folder: Path) -> Path:
    """Enough rows that a run is still going when it is interrupted."""
    return write_jsonl(folder / "big.jsonl", rollouts(60_000))


def test_ctrl_c_prints_one_line_exits_130_and_leaves_the_output_unchanged(folder: Path, big: Path) -> None:
    before = digest(folder / "precious.parquet")
    process = _start(folder, big.name, "-o", "precious.parquet")
    _wait_for_rows(process, folder, ".precious.parquet.*.part")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    text = err.decode()
    assert process.returncode == 130, text
    assert text.count("\n") == 1 and "interrupted after" in text and "precious.parquet left unchanged" in text, text
    assert "Traceback" not in text
    assert digest(folder / "precious.parquet") == before and leftovers(folder) == []


def test_sigterm_ends_the_workers_too_and_leaves_no_file(folder: Path, big: Path) -> None:
    process = _start(folder, big.name, "-o", "new.parquet", "-j", "2")
    _wait_for_rows(process, folder, ".new.parquet.*.part", workers=2)
    workers = _workers(process.pid)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143 and "terminated after" in err.decode() and "nothing written to new.parquet" \
        in err.decode(), err
    deadline = time.monotonic() + 10
    while not all(map(_gone, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(map(_gone, workers)), workers
    assert not (folder / "new.parquet").exists() and leftovers(folder) == []


@pytest.mark.parametrize("output", ["precious.parquet", "new.arrow"])
def test_a_killed_worker_leaves_no_empty_or_unreadable_output(folder: Path, big: Path, output: str) -> None:
    existed = (folder / output).exists()
    before = digest(folder / output) if existed else None
    process = _start(folder, big.name, "-o", output, "-j", "2")
    _wait_for_rows(process, folder, f".{output}.*.part", workers=2)
    os.kill(_workers(process.pid)[0], signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 2 and "error [worker_died]" in err.decode() and "Traceback" not in err.decode()
    assert (digest(folder / output) if existed else (folder / output).exists()) == (before if existed else False)
    assert leftovers(folder) == []


def test_ray_takes_no_value_so_the_documented_command_reads_its_input() -> None:
    from chatparse.cli.main import build_parser

    args = build_parser().parse_args(["parse", "-t", "qwen3", "--ray", "rollouts.parquet", "-o", "p.parquet"])
    assert args.ray is True and args.input == "rollouts.parquet" and args.ray_address is None
    args = build_parser().parse_args(["parse", "-t", "qwen3", "--ray-address", "auto", "dir/"])
    assert args.ray_address == "auto" and args.input == "dir/"


# --- 2. every failure said and counted ------------------------------------------------------------------------


def test_malformed_calls_carry_the_parsers_reason_and_are_counted(folder: Path) -> None:
    err = expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "out.jsonl", cwd=folder), 0)
    assert "40 ok, 0 failed; 10 with tool calls, 20 with malformed output (truncated 10, content_parse_failed 10)" \
        in err
    rows = [json.loads(line) for line in (folder / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    cut, bad = rows[2]["message"]["malformed"][0], rows[3]["message"]["malformed"][0]
    assert cut["code"] == "truncated" and "ends inside" in cut["error"]
    assert bad["code"] == "content_parse_failed" and "must be a JSON object, found a string" in bad["error"]
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "out.parquet", cwd=folder), 0)
    malformed = pq.read_table(folder / "out.parquet").column("malformed").to_pylist()
    assert [m[0]["error"] for m in malformed[2:4]] == [cut["error"], bad["error"]]


def test_a_field_no_row_has_is_a_setup_error_listing_the_keys(folder: Path) -> None:
    err = expect(chatparse("parse", "-t", "qwen3", "rollouts.jsonl", "-o", "out.jsonl", cwd=folder), 2,
                 "error [missing_field]", "found: id, prompt, generation, finish_reason, reward", "--output-field")
    assert err.count("\n") == 1 and not (folder / "out.jsonl").exists()
    expect(chatparse("parse", "-t", "qwen3", "--output-field", "generation", "rollouts.jsonl", cwd=folder), 2,
           "'prefix'", "--prefix-field", "--prefix ''")
    pq.write_table(pa.Table.from_pylist(rollouts(4)), folder / "r.parquet")
    err = expect(chatparse("parse", "-t", "qwen3", "r.parquet", "-q", cwd=folder), 2, "--output-field")
    assert "output_column" not in err


def test_quiet_silences_the_summary_never_an_error(folder: Path) -> None:
    result = chatparse("parse", "-t", "qwen3", *FIELDS, "-q", "rollouts.jsonl", "-o", "out.jsonl", cwd=folder)
    assert expect(result, 0) == ""
    expect(chatparse("parse", "-t", "qwen3", "-q", "rollouts.jsonl", cwd=folder), 2, "error [missing_field]")


def test_column_collision_names_a_flag_that_exists(folder: Path) -> None:
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "once.parquet", cwd=folder), 0)
    err = expect(chatparse("parse", "-t", "qwen3", *FIELDS, "once.parquet", "-o", "twice.parquet", cwd=folder), 2,
                 "error [column_collision]", "--column-prefix")
    assert "column_prefix=" not in err
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "once.parquet", "-o", "twice.parquet", "--column-prefix", "v2_",
                     "--message-field", "message2", cwd=folder), 0)
    names = pq.read_schema(folder / "twice.parquet").names
    assert "role" in names and "v2_role" in names and "v2_message2" in names


@pytest.mark.parametrize("template", ["../models/Qwen3-8B", "./nothere", "/no/such/dir", "mine.json"])
def test_a_path_looking_template_that_does_not_exist_is_no_such_file(folder: Path, template: str) -> None:
    expect(chatparse("parse", "-t", template, *FIELDS, "rollouts.jsonl", cwd=folder), 2, "error [file_not_found]",
           "no such file or directory")


def test_detect_and_templates_check_say_no_such_file_for_a_path_that_is_not_there(folder: Path) -> None:
    """newcomer-3 #14: `detect ./nonexistent-dir` and `templates check nothere.json` are 'no such file'
    (exit 2), not a model id that no built-in fits or an unknown template name."""
    expect(chatparse("detect", "./nonexistent-dir", cwd=folder), 2, "error [file_not_found]", "no such file")
    expect(chatparse("templates", "check", "nothere.json", cwd=folder), 2, "error [file_not_found]")
    result = chatparse("detect", "Qwen/Qwen3-8B", cwd=folder)  # a model id is still a model id
    assert result.returncode == 0 and result.stdout.decode().strip() == "qwen3"


def test_gzip_input_is_read_and_zstd_is_named(folder: Path) -> None:
    data = (folder / "rollouts.jsonl").read_bytes()
    (folder / "rollouts.jsonl.gz").write_bytes(gzip.compress(data))
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "plain.jsonl", cwd=folder), 0)
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl.gz", "-o", "gz.jsonl", cwd=folder), 0)
    assert digest(folder / "gz.jsonl") == digest(folder / "plain.jsonl")
    (folder / "r.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 20)
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "r.jsonl.zst", cwd=folder), 2, "error [compressed_input]",
           "zstdcat")


def test_an_output_suffix_chatparse_does_not_write_is_refused(folder: Path) -> None:
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "out.csv", cwd=folder), 2,
           "error [bad_format]", ".csv")
    assert not (folder / "out.csv").exists()
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", "out.csv", "--output-format", "jsonl",
                     cwd=folder), 0)


# --- 3. write faults ------------------------------------------------------------------------------------------


def test_dev_full_closed_stdout_stdin_and_a_missing_directory_are_named_errors(folder: Path) -> None:
    args = ["parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl"]
    with open("/dev/full", "wb") as full:
        err = expect(chatparse(*args, cwd=folder, stdout=full, stderr=subprocess.PIPE), 2, "error [disk_full]",
                     "stdout")
    assert err.count("\n") == 1
    expect(chatparse(*args, "-o", "/dev/full", cwd=folder), 2, "error [disk_full]", "/dev/full")
    expect(chatparse(*args, cwd=folder, stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1)), 2,
           "error [no_stdout]")
    expect(chatparse("parse", "-t", "qwen3", "-o", "x.jsonl", cwd=folder, stderr=subprocess.PIPE,
                     preexec_fn=lambda: os.close(0)), 2, "error [no_stdin]")
    expect(chatparse(*args, "-o", "no/such/dir/out.jsonl", cwd=folder), 2, "error [unwritable_output]",
           "does not exist")


def test_a_corrupt_parquet_found_midway_is_one_error_and_the_output_is_unchanged(folder: Path) -> None:
    path = folder / "corrupt.parquet"
    pq.write_table(pa.Table.from_pylist(rollouts(3000)), path, row_group_size=1000, compression="snappy")
    meta = pq.ParquetFile(path).metadata
    chunk = meta.row_group(2).column(2)  # 'generation' of the last row group
    data = bytearray(path.read_bytes())
    start = chunk.data_page_offset + 40
    data[start:start + 200] = os.urandom(200)
    path.write_bytes(bytes(data))
    before = digest(folder / "precious.parquet")
    err = expect(chatparse("parse", "-t", "qwen3", *FIELDS, "corrupt.parquet", "-o", "precious.parquet", cwd=folder),
                 2, "error [unreadable_input]")
    assert err.count("\n") == 1
    assert digest(folder / "precious.parquet") == before and leftovers(folder) == []


def test_a_nul_byte_in_the_first_rows_fails_only_its_row(folder: Path) -> None:
    lines = (folder / "rollouts.jsonl").read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b"Seoul", b"Se\0oul", 1)
    (folder / "nul.jsonl").write_bytes(b"".join(lines))
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "nul.jsonl", "-o", "o.jsonl", cwd=folder), 2,
           "error [binary_input]", "--input-format")
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "nul.jsonl", "--input-format", "jsonl", "-o", "o.jsonl",
                     cwd=folder), 1, "39 ok, 1 failed (invalid_json 1)")
    rows = [json.loads(line) for line in (folder / "o.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["line"] for r in rows if "error" in r] == [1] and len(rows) == 40


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real, small filesystem (tmpfs of 256 KB); needs root to mount."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small tmpfs needs root and mount(8); the disk-full path is not exercised here")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()}): disk-full path not exercised")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


@pytest.mark.parametrize("name", ["out.jsonl", "out.parquet"])
def test_a_full_disk_is_a_named_error_and_the_existing_output_is_unchanged(folder: Path, small_disk: Path,
                                                                             name: str) -> None:
    write_jsonl(folder / "wide.jsonl", [{**row, "generation": row["generation"] + os.urandom(600).hex()}
                                        for row in rollouts(400)])
    out = small_disk / name
    out.write_bytes(b"yesterday's results\n" * 10)
    before = digest(out)
    err = expect(chatparse("parse", "-t", "qwen3", *FIELDS, "wide.jsonl", "-o", str(out), cwd=folder), 2,
                 "error [disk_full]", str(out))
    assert err.count("\n") == 1 and digest(out) == before and leftovers(small_disk) == []


def test_a_read_only_directory_is_a_named_error(folder: Path, small_disk: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True, capture_output=True)
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "rollouts.jsonl", "-o", str(small_disk / "o.jsonl"),
                     cwd=folder), 2, "error [read_only_output]", "o.jsonl")


def test_no_ray_cluster_at_the_address_is_a_setup_error_that_touches_no_output(folder: Path) -> None:
    pytest.importorskip("ray")
    if Path("/tmp/ray/ray_current_cluster").exists() or os.environ.get("RAY_ADDRESS"):
        pytest.skip("a Ray instance is running on this machine: 'auto' would find it")
    pq.write_table(pa.Table.from_pylist(rollouts(8)), folder / "r.parquet")
    before = digest(folder / "precious.parquet")
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "--ray-address", "auto", "r.parquet", "-o", "precious.parquet",
                     cwd=folder), 2, "error [ray_unavailable]", "ray start --head")
    assert digest(folder / "precious.parquet") == before and leftovers(folder) == []


def test_finish_reason_field_renames_the_column(folder: Path) -> None:
    rows = [{"text": '<tool_call>\n<function=get_weather>\n<parameter=city>\nSeoul\n</parameter>\n', "prompt": "",
             "why": "length"}]
    write_jsonl(folder / "cut.jsonl", rows)
    expect(chatparse("parse", "-t", "qwen3.5", "--output-field", "text", "--prefix-field", "prompt",
                     "--finish-reason-field", "why", "cut.jsonl", "-o", "cut-out.jsonl", cwd=folder), 0,
           "0 with tool calls, 1 with malformed output (truncated 1)")


def test_stream_recovers_by_default_reads_stdin_and_says_why(folder: Path) -> None:
    text = GENERATIONS[3][0].encode()
    result = chatparse("stream", "-t", "qwen3", "--prefix", PROMPT, "--text", "@-", cwd=folder, input=text)
    expect(result, 0)
    message = json.loads(result.stdout.decode().splitlines()[-1])["message"]
    assert message["malformed"][0]["error"].startswith("json-calls: call 0 arguments must be a JSON object, found a string")
    expect(chatparse("stream", "-t", "qwen3", "--prefix", PROMPT, "--text", "@-", "--on-malformed", "raise",
                     cwd=folder, input=text), 1, "content_parse_failed")


def test_bad_rows_keep_what_identifies_them(folder: Path) -> None:
    good = json.dumps(rollouts(1)[0])
    (folder / "bad.jsonl").write_text(good + "\n" + good[:-1] + "\n" + json.dumps({**rollouts(1)[0], "line": 7})
                                      + "\n", encoding="utf-8")
    expect(chatparse("parse", "-t", "qwen3", *FIELDS, "bad.jsonl", "-o", "o.jsonl", cwd=folder), 1)
    rows = [json.loads(line) for line in (folder / "o.jsonl").read_text(encoding="utf-8").splitlines()]
    cut = rows[1]["error"]
    assert cut["code"] == "invalid_json" and f"column {len(good)}" in cut["message"] and cut["offset"] == len(good) - 1
    assert rows[2]["error"]["code"] == "key_collision" and rows[2]["id"] == "rollout-00000" and rows[2]["line"] == 3
