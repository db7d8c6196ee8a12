"""Shared pytest configuration: hypothesis profiles (``--slow`` runs the long profile)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=100_000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_addoption(parser):  # type: ignore[no-untyped-def]
    parser.addoption("--slow", action="store_true", help="run the long hypothesis profile (10^5 examples)")


def pytest_configure(config):  # type: ignore[no-untyped-def]
    if config.getoption("--slow"):
        settings.load_profile("slow")
