"""The page itself: one self-contained HTML file (the data as JSON in a ``<script
type="application/json">`` block, the script and styles inline from this package's ``assets/``; no
network, works from ``file://``)."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from progress_sql.types import plain
from progress_sql.view.model import Page

ASSETS = Path(__file__).resolve().parent / "assets"
#: The page's default file name inside a run folder.
PAGE_FILE = "view.html"


def _finite(value: Any) -> Any:
    """JSON that ``JSON.parse`` reads: NaN and infinities (which Python's json writes) become text."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def page_json(page: Page) -> str:
    """The page data as JSON safe inside a ``<script>`` element: every ``<`` (only ever inside a JSON
    string) written as its escape, so no ``</script>`` or ``<!--`` can end or change the element.

    >>> page_json(Page("eval", "</script>", [], [], [], [], []))[:44]
    '{"kind": "eval", "title": "\\\\u003c/script>", '
    """
    text = json.dumps(_finite(plain(page)), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render(page: Page) -> str:
    """The whole HTML document of ``page``."""
    template = (ASSETS / "page.html").read_text(encoding="utf-8")
    parts = {
        "__TITLE__": html.escape(page.title),
        "__CSS__": (ASSETS / "page.css").read_text(encoding="utf-8"),
        "__JS__": (ASSETS / "page.js").read_text(encoding="utf-8"),
        "__DATA__": page_json(page),
    }
    for key in ("__TITLE__", "__CSS__", "__JS__"):  # the data last: it may contain the other markers
        template = template.replace(key, parts[key], 1)
    return template.replace("__DATA__", parts["__DATA__"], 1)


def write_page(page: Page, path: Path) -> Path:
    """Write ``page`` to ``path`` (UTF-8); returns ``path`` (OSError propagates)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(page), encoding="utf-8")
    return path
