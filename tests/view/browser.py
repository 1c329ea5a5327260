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


def screenshot(driver: Any, path: Path) -> float:
    """Save a PNG of the window to ``path``; returns its pixel variance (grey levels), ~0 for a blank page."""
    from PIL import Image, ImageStat

    driver.save_screenshot(str(path))
    with Image.open(path) as image:
        return float(ImageStat.Stat(image.convert("L")).var[0])


def shown_ids(driver: Any) -> list[str]:
    """The ids of the table rows drawn now (all shown ones when they fit the window)."""
    return [str(row.get_attribute("data-id")) for row in driver.find_elements("css selector", "#table .trow")]


def shown_count(driver: Any) -> int:
    """The page's own count of the examples that pass the filters."""
    return int(driver.find_element("id", "count").text.split(" of ")[0])


def choose(driver: Any, facet: str, value: str) -> None:
    """Pick ``value`` in the filter ``facet`` (a select; "" = any)."""
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("css selector", f"select[data-facet='{facet}']")).select_by_value(value)


def metric(driver: Any, label: str) -> float:
    """The exact value behind a headline metric of the page."""
    element = driver.find_element("css selector", f".metric[data-metric='{label}']")
    return float(element.get_attribute("data-value"))


def opened(driver: Any, item_id: str) -> Any:
    """Wait until the example view shows ``item_id`` (it is drawn once its block is decompressed); the view."""
    from selenium.webdriver.support.ui import WebDriverWait

    ready = f"#detail[data-id='{item_id}']:not([aria-busy])"
    WebDriverWait(driver, 10).until(lambda d: d.find_elements("css selector", ready))
    return driver.find_element("id", "detail")


def open_example(driver: Any, item_id: str) -> Any:
    """Click the table row of ``item_id`` and wait for its example view; the view."""
    driver.find_element("css selector", f"#table .trow[data-id='{item_id}']").click()
    return opened(driver, item_id)
