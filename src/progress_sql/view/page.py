"""The page itself: one self-contained HTML file (the data as JSON in a ``<script
type="application/json">`` block, the script and styles inline from this package's ``assets/``; no
network, works from ``file://``)."""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
import re
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from progress_sql.jsonio import escape_surrogates, write_atomic
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


#: Example views per block. Each block is the JSON of its views, gzip-compressed and in base64 in a
#: ``<script type="application/gzip+base64">`` element; the page decompresses and parses a block
#: (DecompressionStream) only when one of its examples is opened, so opening a page of 10,000
#: examples reads the table alone and the file stays small.
CHUNK = 250


def _dump(value: Any) -> str:
    """Plain, finite data as JSON safe inside a ``<script>`` element: every ``<`` (only ever inside a
    JSON string) written as its escape, so no ``</script>`` or ``<!--`` can end or change the element;
    line separators and lone surrogates escaped too."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    # a lone surrogate a model wrote cannot be UTF-8: its escape is the same string to JSON.parse
    return escape_surrogates(text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


#: Detail fields whose text repeats across examples (feedback is built from the tags): written
#: once in the page's ``texts`` and referred to by number.
SHARED_TEXT = ("feedback",)


def _compact(value: Any, texts: dict[str, int]) -> Any:
    """A detail as the page embeds it, plain and finite (:func:`_finite`) in one walk: empty (None)
    fields left out, :data:`SHARED_TEXT` fields by their number in ``texts`` (added when new)."""
    if value is None or isinstance(value, (str, int)):  # the leaves first: most values are
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (dict, Mapping)):  # dict first: a plain dict skips the ABC check
        return {
            key: (
                texts.setdefault(item, len(texts))
                if key in SHARED_TEXT and isinstance(item, str)
                else _compact(item, texts)
            )
            for key, item in value.items()
            if item is not None
        }
    if isinstance(value, (list, tuple)):
        return [_compact(item, texts) for item in value]
    return _compact(plain(value), texts)  # a record (details read from files are plain already)


def encode(page: Page) -> tuple[dict[str, Any], list[list[Any]]]:
    """The page data its script parses on opening, and the example views in blocks of :data:`CHUNK`.

    The data holds everything but the example views, the table column by column (``rows.values[key][i]``
    of the i-th item, only the keys of columns and facets) and the shared texts the views refer to.

    >>> from progress_sql.view.model import Item, ListColumn
    >>> item = Item("#0", {"a": 1, "b": 2}, "x", {"feedback": "fix it", "error": None})
    >>> data, blocks = encode(Page("eval", "t", [], [], [ListColumn("a", "A")], [], [item]))
    >>> data["rows"], data["texts"], blocks
    ({'count': 1, 'ids': ['#0'], 'values': {'a': [1]}, 'text': ['x'], 'chunk': 250}, ['fix it'], [[{'feedback': 0}]])
    """
    keys = list(dict.fromkeys([c.key for c in page.columns] + [f.key for f in page.facets]))
    data: dict[str, Any] = {f.name: _finite(plain(getattr(page, f.name))) for f in fields(page) if f.name != "items"}
    data["rows"] = {
        "count": len(page.items),
        "ids": [item.id for item in page.items],
        "values": {key: _finite([item.values.get(key) for item in page.items]) for key in keys},
        "text": [item.text for item in page.items],
        "chunk": CHUNK,
    }
    texts: dict[str, int] = {}
    blocks = [
        [_compact(item.detail, texts) for item in page.items[at : at + CHUNK]]
        for at in range(0, len(page.items), CHUNK)
    ]
    data["texts"] = list(texts)
    return data, blocks


#: The ``type`` of the example views' blocks (a data block: the browser runs none of it).
DETAIL_TYPE = "application/gzip+base64"


def pack(block: list[Any]) -> str:
    """One block of example views as the page embeds it: its JSON, gzip (no time stamp), base64."""
    return base64.b64encode(gzip.compress(_dump(block).encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


def unpack(text: str) -> list[Any]:
    """The inverse of :func:`pack` (what the page's script does; tests read blocks back with it).

    >>> unpack(pack([{"sql": "SELECT '</script>'"}]))
    [{'sql': "SELECT '</script>'"}]
    """
    data: list[Any] = json.loads(gzip.decompress(base64.b64decode(text)).decode("utf-8"))
    return data


def page_json(page: Page) -> str:
    """The page data (:func:`encode`) as JSON safe inside a ``<script>`` element.

    >>> page_json(Page("eval", "</script>", [], [], [], [], []))[:40]
    '{"kind":"eval","title":"\\\\u003c/script>",'
    """
    return _dump(encode(page)[0])


#: The template's markers, each replaced once, in one pass over the template alone: no text put in
#: (a title, a question, a file name holding ``__JS__``) is ever searched for a marker.
_MARKER = re.compile(r"__(TITLE|CSS|JS|DATA|DETAILS)__")


def render(page: Page) -> str:
    """The whole HTML document of ``page``."""
    data, blocks = encode(page)
    parts = {
        "TITLE": html.escape(escape_surrogates(page.title)),
        "CSS": (ASSETS / "page.css").read_text(encoding="utf-8"),
        "JS": (ASSETS / "page.js").read_text(encoding="utf-8"),
        "DATA": _dump(data),
        "DETAILS": "\n".join(
            f'<script type="{DETAIL_TYPE}" id="details-{k}">{pack(block)}</script>' for k, block in enumerate(blocks)
        ),
    }
    template = (ASSETS / "page.html").read_text(encoding="utf-8")
    return _MARKER.sub(lambda marker: parts[marker.group(1)], template)


def write_page(page: Page, path: Path) -> Path:
    """Write ``page`` to ``path`` (UTF-8); returns ``path`` (OSError propagates)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, (render(page),))
