"""What writing the run explorer page costs `eval`: whole-process CPU with the page and with `--no-view`.

Runs `progress-sql eval` on Spider dev over the first published prediction file of ../shared/data
(model 1, 1,034 examples, 972 with a database) with the page (the default) and with `--no-view`,
interleaved, each a fresh process; with `--baseline-src`, also with that src/ folder first on
PYTHONPATH (a checkout before the page). Measured per run: the CPU time (user + sys) of the command and
of every process under it (the fork server and the execution workers included: this script becomes a
child subreaper, reaps every orphan and reads its children's resource usage), and the wall time.
Medians; not asserted.

    .venv/bin/python bench/eval_page.py [--repeat R] [--baseline-src PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, add_output_options, command_line, machine, provenance, spider_dev_missing, write_section

TITLE = "## Run explorer: what the page costs `eval` (issue 19)"
PR_SET_CHILD_SUBREAPER = 36


def tree_cpu(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds of ``command`` and every process under it, and its wall seconds, in a child process
    (a subreaper of its own, so every run's usage is counted apart)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: subreaper, run, reap everything, report
        os.close(read)
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        start = time.perf_counter()
        code = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
        with contextlib.suppress(ChildProcessError):
            while True:
                os.wait()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        os.write(write, f"{code} {usage.ru_utime + usage.ru_stime} {time.perf_counter() - start}".encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as handle:
        code, cpu, wall = handle.read().split()
    os.waitpid(pid, 0)
    if code != "0":
        raise SystemExit(f"error: {' '.join(command[:2])} ... exited {code}")
    return float(cpu), float(wall)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--baseline-src", type=Path, help="also time `eval` with this src/ first on PYTHONPATH")
    parser.add_argument("--progress-sql", type=Path, default=Path(sys.executable).parent / "progress-sql")
    add_output_options(parser)
    args = parser.parse_args(argv)
    if spider_dev_missing(args.data_dir):
        return 2
    info = machine()
    predictions = args.data_dir / "predictions" / "spider-dev" / "model_1.txt"
    base = [str(args.progress_sql), "eval", "--task", "spider-dev", "--data-dir", str(args.data_dir / "spider"),
            "--predictions", str(predictions), "--preset", "spider", "--no-plots"]  # fmt: skip
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT / "src")}
    arms: dict[str, tuple[list[str], dict[str, str]]] = {
        "with the page": (base, env),
        "--no-view": ([*base, "--no-view"], env),
    }
    if args.baseline_src is not None:
        arms[f"before the page ({args.baseline_src})"] = (base, env | {"PYTHONPATH": str(args.baseline_src)})
    timings: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
    with tempfile.TemporaryDirectory(prefix="bench-eval-page-") as tmp:
        for _ in range(args.repeat):
            for name, (command, arm_env) in arms.items():  # interleaved: the machine's load falls on every arm
                timings[name].append(tree_cpu([*command, "--out", str(Path(tmp) / "run")], arm_env))
    end_load = machine()["load average at start"]
    cpu = {name: statistics.median(t[0] for t in runs) for name, runs in timings.items()}
    rows = [
        f"| {name} | {cpu[name]:.3f} | {min(t[0] for t in runs):.3f}-{max(t[0] for t in runs):.3f} | "
        f"{statistics.median(t[1] for t in runs):.3f} |"
        for name, runs in timings.items()
    ]
    page, plain = cpu["with the page"], cpu["--no-view"]
    section = "\n".join([
        TITLE, "",
        "`progress-sql eval` on Spider dev over the published predictions of model 1 (../shared/data; 972 examples "
        "with a database), each run a fresh process: CPU time (user + sys) of the process and every process under "
        f"it (fork server and execution workers included), medians of {args.repeat} runs per arm, arms interleaved. "
        "The page runs no query: the first rows of the gold's and the answer's results come from the results "
        "`eval` judged (kept in `samples.jsonl`), the questions and schema excerpts from the gold store's "
        "in-memory preparation.", "",
        *provenance(command_line("bench/eval_page.py", argv), info), "",
        "| eval | CPU s (median) | CPU s (range) | wall s (median) |", "|---|---:|---:|---:|", *rows, "",
        f"Load average at the end: {end_load}. The page (examples.jsonl, view.html) adds {page - plain:.2f} s of CPU "
        f"({100 * (page / plain - 1):.0f}%) to this eval; `--no-view` leaves it out.",
        *(
            [f"`--no-view` against the code before the page: {100 * (plain / cpu[name] - 1):+.0f}% (the records' "
             "result rows and ODT locations)." for name in cpu if name.startswith("before")]
        ),
        "",
    ])  # fmt: skip
    print(section)
    if not args.no_doc:
        write_section(args.doc, TITLE, section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
