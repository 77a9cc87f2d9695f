"""Headless Chromium (Debian's `chromium` and `chromium-driver`) driven by Selenium, for
tests of pages people read. No browser is ever downloaded: the system's are used."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--window-size=1280,2400",
)


def _unavailable(reason: str) -> None:
    """Skip the test locally; fail it in CI, where the browser must be installed."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"Chromium is required in CI (make system-deps): {reason}")
    pytest.skip(f"no browser: {reason}")


@pytest.fixture
def browser() -> Iterator[Any]:
    """Return a Selenium WebDriver of headless Chromium with a fresh profile."""
    try:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service
    except ImportError as exc:
        _unavailable(f"selenium is not installed ({exc})")
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            _unavailable(f"{path} is missing")
    # Selenium Manager must not look for (or download) drivers: ours are given.
    os.environ["SE_OFFLINE"] = "true"
    profile = tempfile.mkdtemp(prefix="sitemapd-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    try:
        driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    except WebDriverException as exc:
        shutil.rmtree(profile, ignore_errors=True)
        _unavailable(f"Chromium did not start ({exc.msg})")
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
