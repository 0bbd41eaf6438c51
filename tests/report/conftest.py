"""Fixtures of the report tests: the published upstream comparison reports."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from upstream_reports import RESULTS


@pytest.fixture
def upstream_reports(fixtures: Path) -> dict[str, Path]:
    if not RESULTS.is_dir():
        pytest.fail(f"shared fixtures not found at {RESULTS}")
    return {p.stem.removeprefix("comparison_"): p for p in sorted(RESULTS.glob("*.md"))}


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A headless system Chromium with a fresh profile, driven by Playwright.

    Skipped, with the reason printed (``-rs``), when Playwright or Chromium is missing.
    Module-scoped: Playwright's sync API keeps an event loop running while it is open,
    which would break later tests that call ``asyncio.run``.
    """
    from report_browser import LAUNCH_ARGS, find_chromium, why_no_browser

    reason = why_no_browser()
    if reason:
        if os.environ.get("CI"):  # .ci/run installs Chromium: missing there is a failure
            pytest.fail(reason.replace("skipped", "cannot run in CI"))
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=find_chromium(), headless=True, args=LAUNCH_ARGS,
            service_workers="block", accept_downloads=False)
        try:
            yield context
        finally:
            context.close()
