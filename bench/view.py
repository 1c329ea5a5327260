"""Opening the run explorer on 10,000 examples and applying a filter, in headless Chromium.

Makes a rollout run folder of the embedded data (replay backend, 87 examples, 3 turns; a third right at
once, a third at turn 2, a third never), then a 10,000-example folder from its records repeated under
new indices (examples.jsonl likewise), writes both pages with ``progress-sql view`` and opens each in
Debian's headless Chromium (tests/view/browser.py). Measured per open: load until the page has drawn
(``driver.get`` to the script's ready mark; and inside the page, navigation start to the script's
"view:drawn" mark), then choosing an ODT tag in the filter until the table is drawn again, then opening
the last example (its block decompressed and drawn), both timed inside the page. Baseline: the
87-example page, in the same run. Not asserted.

    .venv/bin/python bench/view.py [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, add_output_options, command_line, machine, provenance, write_section

sys.path.insert(0, str(ROOT))
from tests.view.browser import chromium, open_page

EXAMPLES = 10_000
TAG = "AGGREGATION_MISMATCH"


def _rollout(folder: Path) -> Path:
    from typer.testing import CliRunner

    from progress_sql.cli import app
    from progress_sql.data.embedded import EMBEDDED_DIR, QUESTIONS_FILE

    data = folder / "data"
    data.mkdir(parents=True)
    questions = json.loads((EMBEDDED_DIR / QUESTIONS_FILE).read_text(encoding="utf-8"))
    (data / "questions.json").write_text(json.dumps(questions), encoding="utf-8")
    (data / "database").symlink_to(EMBEDDED_DIR, target_is_directory=True)
    lines = []
    for number, item in enumerate(questions):
        gold = item["query"]
        wrong = "SELECT name FROM singer" if item["db_id"] == "concert_singer" else "SELECT petid FROM pets"
        script = [[gold], [wrong, gold], ["no idea", "SELECT * FROM nowhere", wrong]][number % 3]
        responses = [f"<think>plan</think><sql>{sql}</sql>" if sql != "no idea" else sql for sql in script]
        lines.append(json.dumps({"key": item["question"], "responses": responses}))
    (folder / "replay.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = folder / "small"
    result = CliRunner().invoke(app, ["rollout", "--task", str(data / "questions.json"), "--backend", "replay",
                                      "--replay", str(folder / "replay.jsonl"), "--turns", "3", "--out", str(out),
                                      "--workers", "1", "--json"])  # fmt: skip
    if result.exit_code != 0:
        raise SystemExit(result.output)
    return out


def _repeat(small: Path, big: Path, n: int) -> None:
    from progress_sql.view import write_run_page

    big.mkdir()
    summary = json.loads((small / "summary.json").read_text(encoding="utf-8"))
    for name in ("samples.jsonl", "examples.jsonl"):
        rows = [json.loads(line) for line in (small / name).read_text(encoding="utf-8").splitlines()]
        with (big / name).open("w", encoding="utf-8") as handle:
            for index in range(n):
                handle.write(json.dumps(rows[index % len(rows)] | {"index": index}) + "\n")
    (big / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    write_run_page(big)


FILTER_SCRIPT = """
const select = document.querySelector("select[data-facet='tags']");
select.value = arguments[0];
const start = performance.now();
select.dispatchEvent(new Event("change"));
document.getElementById("table").getBoundingClientRect();  // layout included
return [performance.now() - start, document.getElementById("count").textContent];
"""
DRAWN_SCRIPT = 'return performance.getEntriesByName("view:drawn")[0].startTime;'
OPEN_EXAMPLE_SCRIPT = """
const done = arguments[arguments.length - 1];
const rows = document.querySelectorAll("#table .trow");
const row = rows[rows.length - 1], id = row.getAttribute("data-id"), start = performance.now();
row.click();
const wait = () => {
  const box = document.getElementById("detail");
  if (box.getAttribute("data-id") === id && !box.hasAttribute("aria-busy")) done(performance.now() - start);
  else setTimeout(wait, 1);
};
wait();
"""


def measure(driver: object, page: Path, repeat: int) -> tuple[float, float, float, float, str]:
    """Median seconds to open ``page`` (wall, and inside the page), to apply the tag filter and to open
    an example; the page's count after the filter."""
    opens, drawn, filters, examples, count = [], [], [], [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        open_page(driver, page)
        opens.append(time.perf_counter() - start)
        drawn.append(driver.execute_script(DRAWN_SCRIPT) / 1000)  # type: ignore[attr-defined]
        ms, count = driver.execute_script(FILTER_SCRIPT, TAG)  # type: ignore[attr-defined]
        filters.append(ms / 1000)
        examples.append(driver.execute_async_script(OPEN_EXAMPLE_SCRIPT) / 1000)  # type: ignore[attr-defined]
    median = statistics.median
    return median(opens), median(drawn), median(filters), median(examples), count


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    add_output_options(parser)
    args = parser.parse_args(argv)
    info = machine()
    with tempfile.TemporaryDirectory(prefix="bench-view-") as tmp:
        small = _rollout(Path(tmp))
        from progress_sql.view import write_run_page

        write_run_page(small)
        big = Path(tmp) / "big"
        _repeat(small, big, EXAMPLES)
        size_mib = (big / "view.html").stat().st_size / 2**20
        small_mib = (small / "view.html").stat().st_size / 2**20
        with chromium() as driver:
            base = measure(driver, small / "view.html", args.repeat)
            big_run = measure(driver, big / "view.html", args.repeat)
    end_load = machine()["load average at start"]
    rows = [
        f"| {label} ({mib:.2f} MiB page) | {m[0]:.3f} | {m[1]:.3f} | {1000 * m[2]:.1f} | {1000 * m[3]:.1f} | {m[4]} |"
        for label, mib, m in (
            ("87 examples (baseline)", small_mib, base),
            (f"{EXAMPLES:,} examples", size_mib, big_run),
        )
    ]
    big_open, big_filter = big_run[0], big_run[2]
    base_open = base[0]
    total = big_open + big_filter
    section = "\n".join([
        "## Run explorer (`progress-sql view`)", "",
        "Opening a page in Debian's headless Chromium 150 (Selenium; `driver.get` until the page has drawn) and "
        f"choosing the ODT tag {TAG} in the filter (timed inside the page, layout included); medians of "
        f"{args.repeat}. The {EXAMPLES:,}-example page repeats a real rollout's 87 records of the embedded data "
        "under new indices; baseline: that rollout's own page. The page embeds the table as columnar JSON and the "
        "example views as gzip-compressed blocks of 250, read only when one of their examples is opened.", "",
        *provenance(command_line("bench/view.py", argv), info), "",
        "| page | open s, wall (median) | open s, in the page (median) | filter ms (median) | open an example ms "
        "(median) | shown after the filter |", "|---|---:|---:|---:|---:|---|", *rows, "",
        f"Load average at the end: {end_load}. Wall: `driver.get` until the page has drawn (Selenium's round trips "
        "included); in the page: navigation start to the script's drawn mark. Opening an example decompresses its "
        "block of 250 example views the first time (the timed one is the last shown, in a block not read before).", "",
        f"Open + filter on {EXAMPLES:,} examples: {total:.2f} s (target: under a second: "
        f"{'met' if total < 1 else 'not met'}); opening is {big_open / base_open:.1f}x the 87-example page's.", "",
    ])  # fmt: skip
    print(section)
    if not args.no_doc:
        write_section(args.doc, "## Run explorer (`progress-sql view`)", section)


if __name__ == "__main__":
    main()
