"""Offline hostile-input run: the generators and checks of ``tests/hostile.py`` at scale, plus the growth
exponent of long inputs per area (log-log slope of time against length; 1.0 is linear).

    python -m benchmarks.fuzz_hostile [--cases N] [--areas a,b] [--first-seed S] [--workers W] [--growth]

Case ``seed`` of area ``A`` is ``random.Random(f"A:{seed}")``, so any finding reruns alone with
``--areas A --first-seed seed --cases 1`` on the same tree (the OpenAI cases draw from the corpora and the
built-in templates: adding a corpus case changes what a seed generates). Prints the outcome counts per area, then every finding grouped
by where it was raised, then one JSON document. The test suite runs a few hundred of these cases; time
belongs here, not there.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import signal
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import hostile

from chatparse.bench.engine import growth_exponent

CASE_TIMEOUT = 60  # seconds: a case running longer is reported as a hang


class _Hang(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _Hang


def run_case(job: tuple[str, int]) -> tuple[str, int, str, str | None]:
    """(area, seed, outcome, finding): the finding is the exception and where it was raised."""
    area, seed = job
    generate, check = hostile.AREAS[area]
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_TIMEOUT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            case = generate(random.Random(f"{area}:{seed}"))
            return area, seed, check(case), None
    except _Hang:
        return area, seed, "finding", f"hang past {CASE_TIMEOUT} s"
    except BaseException as exc:  # every escape is a finding: that is what the run looks for
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames)
                      if "/chatparse/" in f.filename), f"{Path(frames[-1].filename).name}:{frames[-1].lineno}")
        return area, seed, "finding", f"{type(exc).__name__} at {where}: {str(exc)[:300]}"
    finally:
        signal.alarm(0)


def fuzz(areas: list[str], cases: int, first_seed: int, workers: int) -> dict[str, Any]:
    jobs = [(area, seed) for area in areas for seed in range(first_seed, first_seed + cases)]
    outcomes: dict[str, Counter[str]] = {area: Counter() for area in areas}
    findings: dict[str, list[tuple[str, int]]] = {}
    started = time.perf_counter()
    with multiprocessing.Pool(workers) as pool:
        for area, seed, outcome, finding in pool.imap_unordered(run_case, jobs, chunksize=16):
            outcomes[area][outcome] += 1
            if finding is not None:
                findings.setdefault(finding.split(": ")[0], []).append((area, seed))
                findings.setdefault("  " + finding, [])
    return {"cases": len(jobs), "seconds": round(time.perf_counter() - started, 1),
            "outcomes": {area: dict(counts.most_common()) for area, counts in outcomes.items()},
            "findings": {where: sorted(seeds)[:10] for where, seeds in findings.items() if seeds},
            "examples": sorted(k.strip() for k, seeds in findings.items() if not seeds)[:50]}


def growth(scales: tuple[float, ...] = (0.5, 1, 2, 4, 8)) -> dict[str, float]:
    """The growth exponent of each long-input workload of ``tests/hostile.py``, from half to 8 times the
    size the test suite runs (best of two runs per size)."""
    out = {}
    for name, (make, size) in hostile.long_inputs().items():
        sizes = [int(size * scale) for scale in scales]
        times = [max(1e-6, min(_timed(make(n)) for _ in range(2))) for n in sizes]
        out[name] = round(growth_exponent(sizes, times), 2)
    return out


def _timed(run: Any) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=2000, help="cases per area")
    parser.add_argument("--areas", default=",".join(hostile.AREAS))
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=max(1, multiprocessing.cpu_count()))
    parser.add_argument("--growth", action="store_true", help="measure the long-input growth exponents too")
    args = parser.parse_args(argv)
    report = fuzz(args.areas.split(","), args.cases, args.first_seed, args.workers)
    if args.growth:
        report["growth"] = growth()
    print(f"{report['cases']:,} cases in {report['seconds']} s")
    for area, counts in report["outcomes"].items():
        print(f"  {area:24} {sum(counts.values()):>8,}  " + ", ".join(f"{k} {v:,}" for k, v in list(counts.items())[:6]))
    for where, seeds in report["findings"].items():
        print(f"FINDING {where}: {len(seeds)}+ seeds, e.g. {seeds[:3]}")
    for example in report["examples"]:
        print("   ", example)
    for name, exponent in report.get("growth", {}).items():
        print(f"  growth {name:32} {exponent}")
    print(json.dumps(report))
    return 1 if report["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
