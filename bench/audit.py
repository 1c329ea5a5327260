"""Wall time and findings of the gold audit on the benchmarks at hand.

Runs ``progress-sql audit`` as a user does (a fresh process under ``/usr/bin/time``) on Spider train
(7,000 questions of ``train_spider``; the target is 30 minutes on 2 cores), Spider dev and BIRD dev
on ``superhero``, all checks. Baseline: the same Spider train audit with one worker. Writes the
"## Audit" section of docs/benchmarks.md and the "## Results" section of docs/audit.md (counts per
check and examples for each check).

    .venv/bin/python bench/audit.py [--repeat R] [--workers W]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import DEFAULT_DATA, DEFAULT_DOC, ROOT, machine, provenance, write_section
from progress_sql.audit.catalogue import CHECKS
from progress_sql.audit.filters import FILTER_SETS

AUDIT_DOC = ROOT / "docs" / "audit.md"
EXAMPLES_PER_CHECK = 3
#: CPU seconds of every Spider train run, by worker count (less sensitive to other jobs than wall time).
CPU_SECONDS: dict[int, list[float]] = {}


def _runs(data: Path) -> dict[str, list[str]]:
    spider = data / "spider"
    return {
        "Spider train": ["--task", str(spider / "train_spider.min.json"), "--data-dir", str(spider)],
        "Spider dev": ["--task", "spider-dev", "--data-dir", str(spider)],
        "BIRD dev (superhero)": ["--task", "bird-dev", "--data-dir", str(data / "bird"), "--db", "superhero"],
    }


def _audit(args: list[str], out: Path, workers: int) -> tuple[float, float, dict[str, Any]]:
    """Run the command under /usr/bin/time -v: (wall seconds, peak RSS MiB, summary.json); the CPU
    seconds (user + system, worker processes included) go to ``CPU_SECONDS``."""
    command = ["/usr/bin/time", "-v", str(Path(sys.executable).parent / "progress-sql"), "audit", *args,
               "--out", str(out), "--workers", str(workers)]  # fmt: skip
    finished = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", finished.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", finished.stderr)
    if wall is None or rss is None:
        raise RuntimeError(f"no /usr/bin/time report in: {finished.stderr[-2000:]}")
    seconds = sum(float(part) * 60**i for i, part in enumerate(reversed(wall.group(1).split(":"))))
    cpu = re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", finished.stderr)
    CPU_SECONDS.setdefault(workers, []).append(sum(float(value) for value in cpu))
    return seconds, int(rss.group(1)) / 1024, json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _relative(args: list[str]) -> list[str]:
    """Arguments with paths written relative to the project root (as a user types them)."""
    return [os.path.relpath(a, ROOT) if a.startswith("/") else a for a in args]


def _dropped_by_filter(out: Path) -> dict[str, int]:
    """How many examples each filter set would drop, from the audit's records (all checks ran)."""
    records = [json.loads(line) for line in (out / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    return {
        name: sum(1 for r in records if set(r["fired"]) & set(filter_set.checks))
        for name, filter_set in FILTER_SETS.items()
    }


def _examples(out: Path, check_id: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in (out / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r for r in records if check_id in r["fired"]][:EXAMPLES_PER_CHECK]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeat", type=int, default=1, help="Timed runs of the Spider train audit per setting.")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    info = machine()
    runs = _runs(args.data)
    with tempfile.TemporaryDirectory() as scratch:
        folders = {name: Path(scratch) / f"run{i}" for i, name in enumerate(runs)}
        train_times = []
        summaries: dict[str, dict[str, Any]] = {}
        rss: dict[str, float] = {}
        for _ in range(args.repeat):
            seconds, rss["Spider train"], summaries["Spider train"] = _audit(
                runs["Spider train"], folders["Spider train"], args.workers
            )
            train_times.append(seconds)
        baseline = [_audit(runs["Spider train"], Path(scratch) / "baseline", 1)[0] for _ in range(args.repeat)]
        other_times = {}
        for name in list(runs)[1:]:
            other_times[name], rss[name], summaries[name] = _audit(runs[name], folders[name], args.workers)
        examples = {
            check_id: [(name, r) for name in runs for r in _examples(folders[name], check_id)] for check_id in CHECKS
        }
        dropped = {name: _dropped_by_filter(folders[name]) for name in runs}
    command = f"{shlex.join(['.venv/bin/python', 'bench/audit.py', *sys.argv[1:]])}"
    train, base = statistics.median(train_times), statistics.median(baseline)
    lines = ["## Audit", "", "Gold-query audit (`progress-sql audit`, all checks) timed with `/usr/bin/time -v` on a",
             "fresh process; baseline: the same Spider train audit with one worker.", "",
             *provenance(command, info), "",
             "| run | examples | workers | wall s (median) | CPU s user+sys (median) | peak RSS MiB |",
             "|---|---:|---:|---:|---:|---:|",
             f"| Spider train | {summaries['Spider train']['examples']} | {args.workers} | {train:.1f} | "
             f"{statistics.median(CPU_SECONDS[args.workers][: args.repeat]):.1f} | {rss['Spider train']:.0f} |",
             f"| Spider train (baseline) | {summaries['Spider train']['examples']} | 1 | {base:.1f} | "
             f"{statistics.median(CPU_SECONDS[1][-args.repeat :]):.1f} | |"]  # fmt: skip
    lines += [f"| {n} | {summaries[n]['examples']} | {args.workers} | {other_times[n]:.1f} | | {rss[n]:.0f} |"
              for n in list(runs)[1:]]  # fmt: skip
    lines += ["", f"Speed-up of {args.workers} workers over one: {base / train:.2f}x (the 2 cores are shared with "
              "other jobs; see the load average). Target: Spider train within 30 minutes on 2 cores "
              f"({train / 60:.1f} min: {'met' if train <= 1800 else 'missed'})."]  # fmt: skip
    write_section(DEFAULT_DOC, "## Audit", "\n".join(lines) + "\n")

    counts = ["## Results", "", *provenance(command, info), "",
              f"Wall time of the Spider train audit (`/usr/bin/time -v`, median of {args.repeat}): {train:.1f} s "
              f"with {args.workers} workers, {base:.1f} s with one (docs/benchmarks.md, section Audit).", "",
              "Commands (one per column, from the project root): "
              + "; ".join(f"`progress-sql audit {shlex.join(_relative(a))} --out OUT`" for a in runs.values()), "",
              "| id | check | " + " | ".join(f"{n} ({summaries[n]['examples']})" for n in runs) + " |",
              "|---|---|" + "---:|" * len(runs)]  # fmt: skip
    for check_id, item in CHECKS.items():
        cells = " | ".join(str(summaries[n]["checks"][check_id]["fired"]) for n in runs)
        counts.append(f"| {check_id} | {item.name} | {cells} |")
    for name in runs:
        s = summaries[name]
        counts.append("")
        counts.append(f"{name}: {s['examples']} examples, {s['with_findings']} with a finding, "
                      f"{s['database_missing']} without their database (static checks only), "
                      f"gold status {s['gold_status']}, check errors {s['check_errors']}.")  # fmt: skip
    counts += ["", "Examples each filter set drops (from the same records):", "",
               "| filter set | " + " | ".join(runs) + " |", "|---|" + "---:|" * len(runs)]  # fmt: skip
    for filter_name in FILTER_SETS:
        shares = {n: (dropped[n][filter_name], 100 * dropped[n][filter_name] / summaries[n]["examples"]) for n in runs}
        cells = " | ".join(f"{count} ({share:.1f}%)" for count, share in shares.values())
        counts.append(f"| {filter_name} | {cells} |")
    counts += ["", "### Examples per check", ""]
    for check_id, item in CHECKS.items():
        counts.append(f"**{check_id} {item.name}**" + ("" if examples[check_id] else ": fired on none of them."))
        counts.append("")
        for name, record in examples[check_id]:
            evidence = next(f["evidence"] for f in record["findings"] if f["check"] == check_id)
            sql = " ".join(record["gold_sql"].split()).replace("|", "\\|")
            counts.append(f"- {name} #{record['index']} `{record['db_id']}`: {record['question']}  ")
            counts.append(f"  `{sql}`  ")
            counts.append(f"  evidence: {evidence.replace('|', '/')}")
        counts.append("")
    write_section(AUDIT_DOC, "## Results", "\n".join(counts) + "\n")
    print(f"Spider train: {train:.1f} s with {args.workers} workers, {base:.1f} s with one")


if __name__ == "__main__":
    main()
