"""Whole-process `progress-sql eval` against the official Spider evaluator, side by side in one run.

For each published system K (``../shared/data/predictions/spider-dev/model_K.txt``, Spider dev, the
972 questions with a database), R interleaved repeats of two fresh processes, timed from start to exit:

* **ours**: ``progress-sql eval --task spider-dev --data-dir DATA/spider --predictions model_K.txt
  --preset spider --no-plots --out TMP`` (imports, workers, gold and predicted queries, EX, hardness,
  the ODT analysis, summary and report);
* **official**: taoyds/test-suite-sql-eval's ``python evaluation.py --gold G --pred P --db
  DATA/spider/database --etype exec`` (its documented "with values" command: exec on the original
  databases, DISTINCT stripped, no ``--plug_value``) on the same 972 questions (gold and prediction
  lines of the questions whose database is present).

The official evaluator is not vendored: ``--official-source`` is its repository (a checkout, or a bare
git directory read with ``git archive``), extracted into a temporary folder; it runs under
``--official-python`` (a Python with nltk and sqlparse), or in a venv this script makes once in
``--official-venv`` with :data:`OFFICIAL_PINS` from PyPI. nltk's ``word_tokenize`` (used by
``process_sql.py`` for hardness) needs nltk's Punkt data, which is a download from nltk's own server,
not from PyPI; the script writes empty English Punkt parameters instead (no abbreviations known).
That changes nothing here: ``process_sql`` replaces quoted values before tokenizing, so no
``". "`` sentence boundary is left in Spider SQL, and the exec verdicts do not use it at all.

The official evaluator has no working timeout (its ``asyncio.wait_for`` wraps a blocking
``sqlite3`` call) and on some files keeps one query running for ever while its memory grows (killed at
24 GB on this machine once). A run is therefore stopped after ``--official-cap-s`` seconds or above
``--official-memory-gib`` of resident memory and recorded as not finished (a lower bound on its time);
it is then not repeated for that file.

Every command runs as on a user's machine, with Python's bytecode cache: the sources of both
programs (our ``src/``, the ``--baseline-src`` tree, the official evaluator's files) are compiled
once before the timed runs and ``PYTHONDONTWRITEBYTECODE`` is removed from their environment (set
here, it would make each run compile every module of the package from source again).

On a machine with other work (a training run on every core) ``--realtime P`` runs the timed processes
under ``SCHED_FIFO``: they then have the cores as on a quiet machine, both programs alike, and the
other work waits for each run to end.

    .venv/bin/python bench/eval.py --official-source PATH [--models 1 2 3 4 5] [--repeat 5] [--realtime 10]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from _common import ROOT, add_output_options, command_line, machine, provenance, write_section

SECTION = "## Evaluation"
#: What the official evaluator needs (its README: ``pip3 install sqlparse nltk``), pinned.
OFFICIAL_PINS = ("nltk==3.10.4", "sqlparse==0.6.1")
OFFICIAL_FILES = ("evaluation.py", "exec_eval.py", "parse.py", "process_sql.py")
DEFAULT_OFFICIAL_VENV = Path.home() / ".cache" / "progress-sql" / "official-spider-eval-venv"
PUNKT_FILES = ("abbrev_types.txt", "collocations.tab", "sent_starters.txt", "ortho_context.tab")


@dataclass(frozen=True, slots=True)
class Timing:
    """One fresh process: its wall time, whether it finished, and what it printed that we keep;
    ``cpu_seconds``: user + system time of its whole process tree (fork server and workers included)."""

    seconds: float
    finished: bool
    note: str = ""
    cpu_seconds: float = 0.0


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``),
    so that the CPU time of a command's fork server and workers, which outlive or leave their parent,
    is counted in ``RUSAGE_CHILDREN`` once they are reaped. False where that is not possible."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(36, 1, 0, 0, 0) == 0)  # 36: PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def take_realtime(priority: int) -> bool:
    """Put this process (and so every command it starts) under ``SCHED_FIFO`` at ``priority``; False
    where the system refuses it."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except (OSError, ValueError, AttributeError):
        return False
    return True


def _reap_descendants() -> None:
    """Wait for every process left to this subreaper (the timed command's orphans)."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def official_python(args: argparse.Namespace) -> Path:
    """The interpreter that runs the official evaluator: given, or a venv made once with the pins."""
    if args.official_python is not None:
        return Path(args.official_python)
    venv: Path = args.official_venv
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    if not marker.is_file() or marker.read_text() != "\n".join(OFFICIAL_PINS):
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *OFFICIAL_PINS], check=True)
        marker.write_text("\n".join(OFFICIAL_PINS))
    return python


def extract_official(source: Path, into: Path) -> None:
    """Copy the evaluator's files from a checkout, or from a bare git directory (its HEAD)."""
    if (source / "evaluation.py").is_file():
        for name in OFFICIAL_FILES:
            shutil.copy2(source / name, into / name)
        return
    archive = into / "official.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "--git-dir", str(source), "archive", "HEAD", *OFFICIAL_FILES], stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    archive.unlink()


def write_official_inputs(spider: Path, predictions: Path, into: Path) -> tuple[Path, Path, int]:
    """The official gold (``SQL<TAB>db_id``) and prediction files for the questions whose database is
    present, in dev.json order; returns their paths and the count."""
    examples = json.loads((spider / "dev.json").read_text(encoding="utf-8"))
    predicted = predictions.read_text(encoding="utf-8").splitlines()
    if len(predicted) != len(examples):
        raise SystemExit(f"error: {predictions} has {len(predicted)} lines, dev.json {len(examples)} questions")
    kept = [
        (example, sql)
        for example, sql in zip(examples, predicted, strict=True)
        if (spider / "database" / example["db_id"] / f"{example['db_id']}.sqlite").is_file()
    ]
    gold, pred = into / "gold.txt", into / "pred.txt"
    gold.write_text("".join(f"{e['query'].strip()}\t{e['db_id']}\n" for e, _ in kept), encoding="utf-8")
    pred.write_text("".join(f"{sql.strip()}\n" for _, sql in kept), encoding="utf-8")
    return gold, pred, len(kept)


def resident_bytes(pid: int) -> int:
    """The resident memory of ``pid`` (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) * 1024 if found else 0


def with_bytecode_cache(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without ``PYTHONDONTWRITEBYTECODE``: the programs read compiled modules, as installed."""
    return {key: value for key, value in environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def compile_sources(python: str, *folders: Path) -> None:
    """Write the bytecode cache of every module below ``folders`` with ``python`` (untimed)."""
    subprocess.run(
        [python, "-m", "compileall", "-q", *map(str, folders)], check=True, env=with_bytecode_cache(os.environ)
    )


def run_timed(
    command: Sequence[str], *, cwd: Path, env: dict[str, str], cap_s: float = float("inf"), memory_bytes: int = 2**62
) -> Timing:
    """Run ``command`` to its end, or stop it (its whole process group) past ``cap_s`` seconds or
    ``memory_bytes`` resident; stdout goes to a file so a chatty process never blocks on a pipe."""
    with tempfile.TemporaryFile() as out:
        cpu_before = _children_cpu()
        start = time.perf_counter()
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        note = ""
        while process.poll() is None:
            elapsed = time.perf_counter() - start
            if elapsed > cap_s:
                note = f"stopped after {cap_s:g} s"
            elif resident_bytes(process.pid) > memory_bytes:
                note = f"stopped at {memory_bytes / 2**30:g} GiB resident after {elapsed:.0f} s"
            if note:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                seconds = time.perf_counter() - start
                _reap_descendants()
                return Timing(seconds, finished=False, note=note, cpu_seconds=_children_cpu() - cpu_before)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.02)
        seconds = time.perf_counter() - start
        _reap_descendants()
        cpu_seconds = _children_cpu() - cpu_before
        out.seek(0)
        text = out.read().decode(errors="replace")
    if process.returncode != 0:
        raise SystemExit(f"error: {command[0]} ... exited {process.returncode}:\n{text[-3000:]}")
    return Timing(seconds, finished=True, note=_accuracy_line(text), cpu_seconds=cpu_seconds)


def _accuracy_line(text: str) -> str:
    """The official evaluator's ``execution`` row (easy .. all), or our EX line, for the record."""
    for line in text.splitlines():
        if line.startswith("execution ") or "execution_accuracy" in line:
            return " ".join(line.split())
    return ""


def median_of(timings: Sequence[Timing], cpu: bool = False) -> float | None:
    """The median wall time (``cpu``: process-tree CPU time), or None when a run did not finish."""
    if not timings or not all(t.finished for t in timings):
        return None
    return statistics.median(t.cpu_seconds if cpu else t.seconds for t in timings)


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ratio(numerator: float | None, denominator: float | None) -> str:
    return "-" if numerator is None or not denominator else f"{numerator / denominator:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--models", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="published systems (1..5)")
    parser.add_argument("--repeat", type=int, default=5, help="fresh processes of each (median)")
    parser.add_argument(
        "--progress-sql",
        type=Path,
        default=Path(sys.executable).parent / "progress-sql",
        help="the console script to time (default: the one beside this Python)",
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        help="also time `progress-sql eval` with this src/ folder first on PYTHONPATH (a checkout before a change)",
    )
    parser.add_argument("--baseline-models", type=int, nargs="+", default=[1], help="the files --baseline-src runs on")
    parser.add_argument("--official-source", type=Path, help="taoyds/test-suite-sql-eval: a checkout or a bare git dir")
    parser.add_argument("--official-python", type=Path, help="a Python with nltk and sqlparse (else a venv is made)")
    parser.add_argument("--official-venv", type=Path, default=DEFAULT_OFFICIAL_VENV, help="where that venv is made")
    parser.add_argument("--official-cap-s", type=float, default=300.0, help="stop an official run after this")
    parser.add_argument("--official-memory-gib", type=float, default=4.0, help="stop an official run above this RSS")
    parser.add_argument(
        "--warm",
        action="store_true",
        help="also time `eval --cache-dir` with the cache filled by one untimed run first (gold results and "
        "gold analyses read from disk): the warm figure, reported apart from the cold one",
    )
    parser.add_argument(
        "--no-view",
        action="store_true",
        help="time `eval --no-view` (and the baseline likewise): without the run explorer page, an output "
        "the official evaluator has no counterpart of",
    )
    parser.add_argument(
        "--realtime",
        type=int,
        metavar="PRIORITY",
        help="run this script and every timed command under SCHED_FIFO at this priority (1-99; root): on a "
        "machine with other work, the timed processes take the cores as on a quiet one (the other work waits "
        "meanwhile; the kernel's RT throttling leaves it 5%%)",
    )
    add_output_options(parser)
    args = parser.parse_args(argv)
    if args.realtime is not None and not take_realtime(args.realtime):
        print(f"error: --realtime {args.realtime}: SCHED_FIFO refused (needs root or CAP_SYS_NICE)", file=sys.stderr)
        return 1
    subreaper = become_subreaper()
    spider = args.data_dir / "spider"
    folder = args.data_dir / "predictions" / "spider-dev"
    if not (spider / "dev.json").is_file() or not folder.is_dir():
        print(f"error: {spider}/dev.json or {folder} not found (needs ../shared/data)", file=sys.stderr)
        return 1
    if args.official_source is None or not args.official_source.exists():
        print("error: --official-source: a checkout (or bare git dir) of taoyds/test-suite-sql-eval", file=sys.stderr)
        return 1
    info = machine()
    python = official_python(args)
    memory_bytes = int(args.official_memory_gib * 2**30)

    rows: list[tuple[int, list[Timing], list[Timing], list[Timing], list[Timing], int]] = []
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as scratch_name:
        scratch = Path(scratch_name)
        official_dir = scratch / "official"
        official_dir.mkdir()
        extract_official(args.official_source, official_dir)
        punkt = scratch / "nltk_data" / "tokenizers" / "punkt_tab" / "english"
        punkt.mkdir(parents=True)
        for name in PUNKT_FILES:
            (punkt / name).touch()
        environ = with_bytecode_cache(os.environ)
        official_env = {**environ, "NLTK_DATA": str(scratch / "nltk_data")}
        official_env.pop("PYTHONPATH", None)
        compile_sources(sys.executable, ROOT / "src", *([args.baseline_src] if args.baseline_src else []))
        compile_sources(str(python), official_dir)
        for model in args.models:
            predictions = folder / f"model_{model}.txt"
            inputs = scratch / f"model_{model}"
            inputs.mkdir()
            gold, pred, count = write_official_inputs(spider, predictions, inputs)
            ours_command = [str(args.progress_sql), "eval", "--task", "spider-dev", "--data-dir", str(spider),
                            "--predictions", str(predictions), "--preset", "spider", "--no-plots",
                            *(["--no-view"] if args.no_view else []), "--out", str(inputs / "run")]  # fmt: skip
            official_command = [str(python), "evaluation.py", "--gold", str(gold), "--pred", str(pred),
                                "--db", str(spider / "database"), "--etype", "exec"]  # fmt: skip
            baseline_env = None
            if args.baseline_src is not None and model in args.baseline_models:
                baseline_env = {**environ, "PYTHONPATH": str(args.baseline_src)}
            warm_command = [*ours_command[:-1], str(inputs / "run-warm"), "--cache-dir", str(inputs / "cache")]
            if args.warm:  # fills the cache; untimed
                run_timed(warm_command, cwd=ROOT, env=dict(environ))
            ours: list[Timing] = []
            warm: list[Timing] = []
            baseline: list[Timing] = []
            official: list[Timing] = []
            for repeat in range(args.repeat):  # interleaved: all see the same machine load
                ours.append(run_timed(ours_command, cwd=ROOT, env=dict(environ)))
                if args.warm:
                    warm.append(run_timed(warm_command, cwd=ROOT, env=dict(environ)))
                if baseline_env is not None:
                    baseline.append(run_timed(ours_command, cwd=ROOT, env=baseline_env))
                if not official or official[-1].finished:
                    cap = args.official_cap_s
                    official.append(
                        run_timed(
                            official_command, cwd=official_dir, env=official_env, cap_s=cap, memory_bytes=memory_bytes
                        )
                    )
                before = f", before {baseline[-1].seconds:.2f} s" if baseline else ""
                warmed = f", warm {warm[-1].seconds:.2f} s (CPU {warm[-1].cpu_seconds:.2f})" if warm else ""
                print(f"model {model} run {repeat + 1}: ours {ours[-1].seconds:.2f} s (CPU {ours[-1].cpu_seconds:.2f})"
                      f"{warmed}{before}, official {official[-1].seconds:.2f} s (CPU {official[-1].cpu_seconds:.2f}) "
                      f"{official[-1].note}", flush=True)  # fmt: skip
            rows.append((model, ours, warm, baseline, official, count))

    table_lines = [
        f"| model | questions | ours: median s (of {args.repeat}) | before: median s | official: median s "
        "| official / ours | official / before | official's `execution` row (easy medium hard extra all) |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for model, ours, _warm, baseline, official, count in rows:
        ours_s, baseline_s, official_s = median_of(ours), median_of(baseline), median_of(official)
        assert ours_s is not None
        last = official[-1]
        if official_s is None:
            shown = f"> {last.seconds:.1f} ({last.note}; 1 run)"
            ratio = f"> {last.seconds / ours_s:.1f}"
            ratio_before = f"> {last.seconds / baseline_s:.1f}" if baseline_s else "-"
        else:
            shown, ratio = f"{official_s:.2f}", f"{official_s / ours_s:.2f}"
            ratio_before = f"{official_s / baseline_s:.2f}" if baseline_s else "-"
        before = f"{baseline_s:.2f}" if baseline_s else "-"
        note = next((t.note.removeprefix("execution").strip() for t in official if t.finished), "")
        table_lines.append(
            f"| {model} | {count} | {ours_s:.2f} | {before} | {shown} | {ratio} | {ratio_before} | {note} |"
        )
    cpu_lines = [
        "Process-tree CPU time (user + system of the command, its fork server and workers; "
        + ("a subreaper reaps them" if subreaper else "NOT counted: no subreaper on this system")
        + f"), medians of {args.repeat}:",
        "",
        "| model | ours: CPU s | warm (`--cache-dir`, filled): CPU s | before: CPU s | official: CPU s "
        "| official / ours (CPU) | official / warm (CPU) | warm: wall s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for model, ours, warm, baseline, official, _count in rows:
        cells = [median_of(t, cpu=True) for t in (ours, warm, baseline, official)]
        ours_cpu, warm_cpu, baseline_cpu, official_cpu = cells
        cpu_lines.append(
            f"| {model} | {_shown(ours_cpu)} | {_shown(warm_cpu)} | {_shown(baseline_cpu)} | {_shown(official_cpu)} "
            f"| {_ratio(official_cpu, ours_cpu)} | {_ratio(official_cpu, warm_cpu)} | {_shown(median_of(warm))} |"
        )
    table_lines += ["", *cpu_lines]
    print("\n".join(table_lines))
    load = os.getloadavg()
    print(f"load average at the end: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}"
          + ("" if args.realtime is None else f" (runs under SCHED_FIFO priority {args.realtime})"))  # fmt: skip

    if not args.no_doc:
        invocation = command_line("bench/eval.py", argv)
        lines = [
            SECTION,
            "",
            "Whole-process `progress-sql eval` against the official Spider evaluator (taoyds/test-suite-sql-eval),",
            "side by side in one run, interleaved, on the five published systems' Spider dev predictions (972",
            "questions with a database). Ours: `progress-sql eval --task spider-dev --data-dir DATA/spider",
            "--predictions model_K.txt --preset spider --no-plots"
            + (" --no-view" if args.no_view else "")
            + " --out TMP` (EX, hardness, ODT analysis, summary, samples, report"
            + ("" if args.no_view else ", the run explorer page")
            + "); official: `python evaluation.py --gold G --pred P --db DATA/spider/database --etype exec`",
            f"under nltk and sqlparse ({', '.join(OFFICIAL_PINS)}) on the same 972 questions. Each a fresh",
            "process, start to exit; medians of the repeats. *before*: the same `progress-sql eval` command with",
            f"`--baseline-src` ({args.baseline_src}) first on PYTHONPATH, interleaved in the same run.",
            "An official run stopped at the cap or the memory limit did not finish (its time is a lower bound)",
            "and is not repeated; its per-example verdicts (../shared/data/predictions/spider-dev/official) mark",
            "the questions it could not finish in 20 s. Both programs run with their bytecode cache, as installed",
            "programs do (sources compiled once, untimed, before the runs; PYTHONDONTWRITEBYTECODE unset).",
            "",
            *provenance(invocation, info),
            "",
            f"Load average at the end: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}"
            + (
                ""
                if args.realtime is None
                else f"; every run under SCHED_FIFO priority {args.realtime} (--realtime): other work on the "
                "machine waited while it ran"
            ),
            "",
            *table_lines,
            "",
        ]
        write_section(args.doc, SECTION, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
