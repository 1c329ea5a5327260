"""A real headless Chromium (Debian's ``chromium`` and ``chromium-driver``) driven by Selenium, for
the run explorer's tests and bench/view.py. Nothing is downloaded: the driver and the browser are
the Debian files, and the flags keep Chromium off the network (it stalls on a closed one without)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,1000",
)  # fmt: skip


def missing() -> str | None:
    """Why the browser cannot run here (None when it can)."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not path.is_file():
            return f"{path} not found: install Debian's {package} (scripts/test.sh does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -c constraints.txt -e '.[view-test]'"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A Selenium driver of a fresh headless Chromium (its own profile folder), with the browser log."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="progress-sql-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_problems(driver: Any) -> list[str]:
    """The browser log's warnings and errors since the last call."""
    return [f"{e['level']}: {e['message']}" for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def open_page(driver: Any, path: Path) -> None:
    """Load ``path`` from ``file://`` and wait until the page's script has drawn it."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.resolve().as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
