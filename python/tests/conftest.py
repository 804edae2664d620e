"""Shared set-up of the kiln package's tests.

Two suites, run by CTest as two tests (a process opens the CUDA driver once, so the fake
driver and the real one cannot share a process):
  test_host_*.py  the fake CUDA driver (tests/fake_driver) through KILN_CUDA_DRIVER, objects
                  exposing __cuda_array_interface__ over its memory; no GPU, no torch.
  test_gpu_*.py   a real GPU and torch; each module skips, saying why, without them.
Environment: KILN_RUNTIME_LIB, KILN_BIN (set by CTest), KILN_FAKE_DRIVER (the fake driver,
host suite), KILN_REQUIRE_GPU=1 (nothing may skip: a skip fails the session).
Exit status: 5 (pytest's "no tests ran") stays a failure; a session where every test was
skipped exits 77, which CTest reports as skipped, unless KILN_REQUIRE_GPU=1 (then 1)."""
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))


def require_gpu() -> bool:
    return os.environ.get("KILN_REQUIRE_GPU") == "1"


def skip_or_fail(reason: str):
    """Skips the calling module with `reason`; under KILN_REQUIRE_GPU=1 fails instead."""
    if require_gpu():
        pytest.fail(f"KILN_REQUIRE_GPU=1 and {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


_counts = {"skipped": 0, "ran": 0}


def pytest_runtest_logreport(report):
    if report.skipped:
        _counts["skipped"] += 1
    elif report.when == "call":
        _counts["ran"] += 1


def pytest_collectreport(report):
    if report.skipped:
        _counts["skipped"] += 1


def pytest_sessionfinish(session, exitstatus):
    # A module that skips at import leaves nothing collected: pytest says 5 ("no tests
    # ran"), which stays a failure only when nothing was skipped either.
    if exitstatus not in (0, 5) or (exitstatus == 5 and not _counts["skipped"]):
        return
    if _counts["skipped"] and require_gpu():
        print(f"\nKILN_REQUIRE_GPU=1: {_counts['skipped']} test(s) skipped: failing")
        session.exitstatus = 1
    elif _counts["skipped"] and _counts["ran"] == 0:
        print(f"\nevery test skipped ({_counts['skipped']}): exit 77 (CTest: skipped)")
        session.exitstatus = 77
