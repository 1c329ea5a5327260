"""The GPU check's driver (scripts/gpu_check.sh is its entry point; docs/training.md, "The GPU check").

Runs the project's real ``progress-sql train`` on a tiny Qwen2 built here from a config (the Qwen2.5
tokenizer and chat template of tests/fixtures/qwen2_5_tokenizer, a few supervised steps so that its
sampled answers differ in reward, saved in bf16 as released checkpoints are) over the music fixture
task of tests/fixtures, single-process: full fine-tuning at the paper's lr 1e-6, ``--lora``, and FSDP2
with one process through ``accelerate launch`` (CUDA only). After each run it compares the saved final
weights with the initial ones, reads the dtypes from the run's ``summary.json`` and the step times
from ``rl/metrics.jsonl``, and writes ``OUT/gpu_check.json``: pass, fail or skipped per check, with
the reasons. The JSON is rewritten after every stage, so a run stopped at its time limit leaves what
it had.

Usage:
  python scripts/gpu_check.py wheels                  the carried wheels' pins, one name==version a line
  python scripts/gpu_check.py prepare --dest DIR      download them (needs the package registry)
  python scripts/gpu_check.py run --device cuda|cpu --out OUT [--wheels DIR] [--work DIR] [--budget S]
  python scripts/gpu_check.py cli ARGS...             progress-sql ARGS, the project read from PYTHONPATH

``wheels`` and ``prepare`` use the standard library only; ``run`` installs the carried wheels its
Python lacks (``--wheels``) before it imports anything else of the stack. Exit status: 0 when every
check passed or was skipped, 1 when one failed, 2 for a usage or preparation error.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import platform
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints.txt"
TOKENIZER_FIXTURE = ROOT / "tests" / "fixtures" / "qwen2_5_tokenizer"
TASK_QUESTIONS = ROOT / "tests" / "fixtures" / "music_questions.json"
TASK_DATABASE = ROOT / "tests" / "fixtures" / "sql" / "music.sql"
FSDP_CONFIG = ROOT / "recipes" / "trl" / "fsdp.yaml"
#: Questions over the music fixture database added to its six (tests/fixtures/music_questions.json): a
#: rollout batch takes prompts per step x updates per batch distinct prompts, more than six.
EXTRA_QUESTIONS = (
    ("How many stadiums are there?", "SELECT count(*) FROM stadium"),
    ("How many concerts are there?", "SELECT count(*) FROM concert"),
    ("List the names of all singers.", "SELECT name FROM singer"),
    ("What is the average age of singers?", "SELECT avg(age) FROM singer"),
    ("What is the largest stadium capacity?", "SELECT max(capacity) FROM stadium"),
    ("Show the names of stadiums with a capacity above 5000.", "SELECT name FROM stadium WHERE capacity > 5000"),
    ("How many singers are from France?", "SELECT count(*) FROM singer WHERE country = 'France'"),
    ("List the names of the concerts held in 2015.", "SELECT concert_name FROM concert WHERE year = 2015"),
    ("What is the name of the oldest singer?", "SELECT name FROM singer ORDER BY age DESC LIMIT 1"),
    ("How many concerts were held in each year?", "SELECT year, count(*) FROM concert GROUP BY year"),
    ("Show the name and age of every singer.", "SELECT name, age FROM singer"),
    ("Which countries do the singers come from?", "SELECT DISTINCT country FROM singer"),
    ("What is the age of the youngest singer from France?", "SELECT min(age) FROM singer WHERE country = 'France'"),
    (
        "How many singers performed in the concert named Auditions?",
        "SELECT count(*) FROM singer_in_concert AS T1 JOIN concert AS T2 ON T1.concert_id = T2.concert_id "
        "WHERE T2.concert_name = 'Auditions'",
    ),
    (
        "List the stadium names from the smallest capacity to the largest.",
        "SELECT name FROM stadium ORDER BY capacity ASC",
    ),
    ("What is the total capacity of all stadiums?", "SELECT sum(capacity) FROM stadium"),
    ("What are the names of the singers younger than 30?", "SELECT name FROM singer WHERE age < 30"),
    (
        "How many concerts did each stadium host? Show the stadium names.",
        "SELECT T2.name, count(*) FROM concert AS T1 JOIN stadium AS T2 ON T1.stadium_id = T2.stadium_id "
        "GROUP BY T1.stadium_id",
    ),
)
#: The paper's learning rate (the real-model default of ``progress-sql train``).
PAPER_LR = 1e-6
#: Python versions a version-tagged pure wheel is fetched for (TRL 1.16 needs Python >= 3.11).
PYTHONS = ("3.11", "3.12", "3.13")
#: The carried wheels together stay under this (the device call carries at most 64 MiB in all).
MAX_WHEELS_BYTES = 16 * 2**20
#: Weights a tied model saves once (the input embedding) and a FULL_STATE_DICT save may write again.
TIED_WEIGHTS = {"lm_head.weight": "model.embed_tokens.weight"}
#: The model folders' names of the LoRA targets (PEFT's all-linear on Qwen2: every decoder Linear).
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True, slots=True)
class Carried:
    """A package the GPU machine may lack: pinned in constraints.txt, installed there only when its own
    Python has no version of it in ``needed``."""

    name: str
    needed: str
    why: str
    #: A pure-Python wheel published once per Python version (``py312-none-any``): fetched for each of PYTHONS.
    per_python: bool = False


CARRIED = (
    Carried("trl", ">=1.16,<1.17", "the trainer (pyproject [trl])"),
    Carried("datasets", ">=4.7.0", "trl 1.16.0 requires datasets>=4.7.0"),
    Carried("dill", ">=0.3.0,<0.4.2", "datasets 5.2.0 requires it"),
    Carried("multiprocess", ">=0.70.11,<0.70.20", "datasets 5.2.0 requires it", per_python=True),
    Carried("sqlglot", ">=30.0,<31", "the SQL parser (pyproject); pure Python, the compiled sqlglotc is not needed"),
    Carried("typer", ">=0.15,<1", "the command line (pyproject)"),
    Carried("peft", ">=0.21,<0.22", "train --lora (pyproject [trl])"),
)


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(constraints: Path = CONSTRAINTS) -> dict[str, str]:
    """``name -> version`` of constraints.txt's exact pins (names normalized)."""
    found = {}
    for line in constraints.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, version = line.partition("==")
            found[normalized(name)] = version.strip()
    return found


def carried_specs(constraints: Path = CONSTRAINTS) -> list[str]:
    """``name==version`` of every carried package, pinned as constraints.txt pins it."""
    pinned = pins(constraints)
    missing = [c.name for c in CARRIED if normalized(c.name) not in pinned]
    if missing:
        raise SystemExit(f"constraints.txt pins no version of {', '.join(missing)}")
    return [f"{c.name}=={pinned[normalized(c.name)]}" for c in CARRIED]


# ---------------------------------------------------------------------------------------------- wheels


def prepare(dest: Path, python: str = sys.executable) -> int:
    """Download the carried wheels into ``dest`` (emptied first): wheels only, no dependencies, for
    Linux x86_64 and each Python of PYTHONS where a wheel is per Python. Prints each file's size."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    platforms = [
        f"--platform={tag}" for tag in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
    ]
    for carried, spec in zip(CARRIED, carried_specs(), strict=True):
        for version in PYTHONS if carried.per_python else (PYTHONS[1],):
            command = [
                python, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "--implementation=cp",
                f"--python-version={version}", *platforms, "--dest", str(dest), spec,
            ]  # fmt: skip
            if subprocess.run(command, check=False).returncode != 0:
                print(f"gpu_check: pip could not download {spec} for Python {version}", file=sys.stderr)
                return 2
    wheels = sorted(dest.glob("*.whl"))
    total = sum(w.stat().st_size for w in wheels)
    for wheel in wheels:
        print(f"{wheel.stat().st_size / 2**20:7.2f} MiB  {wheel.name}")
    print(f"{total / 2**20:7.2f} MiB  in {len(wheels)} wheels under {dest}")
    commit = _git("rev-parse", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    (dest.parent / "source.json").write_text(
        json.dumps({"commit": commit, "dirty": bool(dirty), "prepared": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n",
        encoding="utf-8",
    )
    if total > MAX_WHEELS_BYTES:
        print(
            f"gpu_check: the wheels take {total / 2**20:.1f} MiB, more than {MAX_WHEELS_BYTES / 2**20:.0f}",
            file=sys.stderr,
        )
        return 2
    return 0


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@dataclass(frozen=True, slots=True)
class WheelChoice:
    """What :func:`choose_wheels` decided for one carried package."""

    name: str
    present: str | None
    wheel: str | None
    install: bool
    reason: str


def choose_wheels(
    wheels: Iterable[Path], present: Callable[[str], str | None], supported: Callable[[Path], bool]
) -> list[WheelChoice]:
    """For each carried package: install its wheel when this Python has no version of it in
    ``needed`` (``present`` gives the installed version or None), with the first wheel of ``wheels``
    that ``supported`` accepts; keep what is installed otherwise."""
    from packaging.specifiers import SpecifierSet
    from packaging.utils import parse_wheel_filename

    by_name: dict[str, list[Path]] = {}
    for wheel in sorted(wheels):
        by_name.setdefault(normalized(str(parse_wheel_filename(wheel.name)[0])), []).append(wheel)
    choices = []
    for carried in CARRIED:
        key = normalized(carried.name)
        installed = present(carried.name)
        if installed is not None and SpecifierSet(carried.needed).contains(installed, prereleases=True):
            choices.append(WheelChoice(key, installed, None, False, f"{installed} installed, in {carried.needed}"))
            continue
        usable = [w for w in by_name.get(key, []) if supported(w)]
        why = "not installed" if installed is None else f"{installed} installed, outside {carried.needed}"
        if not usable:
            choices.append(WheelChoice(key, installed, None, False, f"{why}, and no carried wheel fits this Python"))
            continue
        choices.append(WheelChoice(key, installed, usable[0].name, True, why))
    return choices


def _installed_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _supported_here(wheel: Path) -> bool:
    from packaging.tags import sys_tags
    from packaging.utils import parse_wheel_filename

    supported = set(sys_tags())
    return any(tag in supported for tag in parse_wheel_filename(wheel.name)[3])


def install_wheels(wheels: Path, site: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Install into ``site`` (a ``pip --target`` folder, put first on the path) the carried wheels this
    Python lacks; the record of what was decided and pip's outcome."""
    choices = choose_wheels(wheels.glob("*.whl"), _installed_version, _supported_here)
    for choice in choices:
        log(f"  {choice.name}: {'install ' + str(choice.wheel) if choice.install else 'keep'} ({choice.reason})")
    chosen = [str(wheels / c.wheel) for c in choices if c.install and c.wheel]
    record: dict[str, Any] = {"wheels_dir": str(wheels), "site": str(site), "choices": [asdict(c) for c in choices]}
    if site.exists():
        shutil.rmtree(site)
    if chosen:
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile",
                   "--no-cache-dir", "--disable-pip-version-check", "--target", str(site), *chosen]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        record["pip_returncode"] = done.returncode
        record["pip_output"] = (done.stdout + done.stderr)[-4000:]
    else:
        site.mkdir(parents=True)
        record["pip_returncode"] = 0
    return record


# ------------------------------------------------------------------------------------------- settings


@dataclass(frozen=True, slots=True)
class Shape:
    """The tiny Qwen2's size and how it is primed."""

    name: str
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    prime_lr: float
    prime_steps: int
    #: Steps of linear learning-rate warm-up.
    prime_warmup: int = 0
    #: Priming also stops after this many seconds.
    prime_seconds: float = 120.0


SHAPES = {
    "tiny": Shape("tiny", hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, prime_lr=1e-2, prime_steps=600),
    "small": Shape(
        "small",
        hidden=512,
        intermediate=2048,
        layers=8,
        heads=8,
        kv_heads=2,
        prime_lr=7e-4,
        prime_steps=600,
        prime_warmup=20,
        prime_seconds=90.0,
    ),
}


TOKENIZERS = {
    "qwen2.5": "Qwen2.5's tokenizer and chat template (tests/fixtures/qwen2_5_tokenizer), 151,665 tokens",
    "bpe": "a byte-level BPE of 1,000 tokens trained on the task's prompts, with ChatML's template",
}


@dataclass(frozen=True, slots=True)
class RunPlan:
    """One ``progress-sql train`` run of the check."""

    name: str
    steps: int
    timeout_s: int
    lora: bool = False
    fsdp: bool = False


@dataclass(frozen=True, slots=True)
class Settings:
    device: str
    shape: Shape
    runs: tuple[RunPlan, ...]
    prompts_per_step: int
    generations: int
    per_device_batch: int
    turns: int
    max_turn_tokens: int
    max_completion_tokens: int
    threads: int
    #: ``qwen2.5`` or ``bpe`` (:data:`TOKENIZERS`).
    tokenizer: str
    #: The supervised priming stops once the mean token loss of the answers is below this.
    prime_target_loss: float = 0.05
    prompt: str = "paper"

    def train_arguments(self, plan: RunPlan, model: Path, data: Path, out: Path) -> list[str]:
        arguments = [
            "train", "--model", str(model), "--task", str(data / "questions.json"), "--data-dir", str(data),
            "--out", str(out), "--prompt", self.prompt, "--lr", repr(PAPER_LR), "--steps", str(plan.steps),
            "--turns", str(self.turns), "--generations", str(self.generations),
            "--prompts-per-step", str(self.prompts_per_step), "--per-device-batch", str(self.per_device_batch),
            "--max-turn-tokens", str(self.max_turn_tokens), "--max-completion-tokens", str(self.max_completion_tokens),
            "--save-steps", str(plan.steps), "--save-total-limit", "1", "--threads", str(self.threads),
            "--seed", "0", "--no-view", "--json",
        ]  # fmt: skip
        if plan.lora:
            arguments += ["--lora", "--lora-r", "8", "--lora-alpha", "16"]
        return arguments


def settings_for(device: str) -> Settings:
    if device == "cuda":
        return Settings(
            device="cuda", shape=SHAPES["small"],
            runs=(RunPlan("full", 8, 150), RunPlan("lora", 4, 120, lora=True), RunPlan("fsdp", 4, 150, fsdp=True)),
            prompts_per_step=4, generations=8, per_device_batch=8, turns=2, max_turn_tokens=48,
            max_completion_tokens=384, threads=4, tokenizer="qwen2.5",
        )  # fmt: skip
    return Settings(
        device="cpu", shape=SHAPES["tiny"],
        runs=(RunPlan("full", 2, 240), RunPlan("lora", 2, 240, lora=True), RunPlan("fsdp", 2, 240, fsdp=True)),
        prompts_per_step=2, generations=4, per_device_batch=8, turns=2, max_turn_tokens=40,
        max_completion_tokens=320, threads=1, tokenizer="bpe", prompt="small",
    )  # fmt: skip


# ------------------------------------------------------------------------------------------- report


@dataclass
class Report:
    """``gpu_check.json``: rewritten whole after every stage."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)

    def check(self, name: str, status: str, detail: str) -> None:
        assert status in ("pass", "fail", "skipped"), status
        self.data.setdefault("checks", []).append({"name": name, "status": status, "detail": detail})

    def write(self) -> None:
        checks = self.data.get("checks", [])
        self.data["ok"] = bool(checks) and all(c["status"] != "fail" for c in checks)
        self.data["failed"] = [c["name"] for c in checks if c["status"] == "fail"]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(self.data, indent=2, default=str) + "\n", encoding="utf-8")
        partial.replace(self.path)


class Log:
    """Timestamped lines on stdout and in ``OUT/gpu_check.log``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.started = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def __call__(self, line: str) -> None:
        text = f"[{time.monotonic() - self.started:6.1f}s] {line}"
        print(text, flush=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(text + "\n")


# ------------------------------------------------------------------------------------- data and model


def build_task(folder: Path) -> Path:
    """The music fixture task (its six questions and :data:`EXTRA_QUESTIONS`) in Spider's release layout:
    ``questions.json``, ``database/music/music.sqlite``."""
    database = folder / "database" / "music" / "music.sqlite"
    database.parent.mkdir(parents=True, exist_ok=True)
    database.unlink(missing_ok=True)
    connection = sqlite3.connect(database)
    try:
        connection.executescript(TASK_DATABASE.read_text(encoding="utf-8"))
        connection.commit()
    finally:
        connection.close()
    questions = json.loads(TASK_QUESTIONS.read_text(encoding="utf-8"))
    questions += [{"db_id": "music", "question": q, "query": sql} for q, sql in EXTRA_QUESTIONS]
    (folder / "questions.json").write_text(json.dumps(questions, indent=1) + "\n", encoding="utf-8")
    return folder


def load_fixture_tokenizer(folder: Path) -> Any:
    """The Qwen2.5 tokenizer and chat template of tests/fixtures (its README gives the provenance)."""
    from transformers import AutoTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TOKENIZER_FIXTURE / "tokenizer_config.json", folder / "tokenizer_config.json")
    (folder / "tokenizer.json").write_bytes(lzma.decompress((TOKENIZER_FIXTURE / "tokenizer.json.xz").read_bytes()))
    return AutoTokenizer.from_pretrained(folder)


#: ChatML, the Qwen models' chat format, for the small tokenizer of the CPU check.
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def small_tokenizer(texts: Sequence[str], vocab_size: int = 1000) -> Any:
    """A byte-level BPE trained on ``texts`` (every byte encodable) with ChatML's special tokens and
    template, eos ``<|im_end|>`` and pad ``<|endoftext|>`` as Qwen2.5's: the CPU check's tokenizer, whose
    small vocabulary keeps the logits of a CPU run small (the Qwen2.5 vocabulary has 151,665 tokens)."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )  # fmt: skip
    bpe.train_from_iterator(texts, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=special[1:2]
    )
    tokenizer.chat_template = CHATML
    return tokenizer


def build_tokenizer(kind: str, examples: Sequence[Any], style: Any, folder: Path) -> Any:
    """The check's tokenizer: ``qwen2.5`` (the fixture's) or ``bpe`` (:func:`small_tokenizer` trained on
    the task's prompts and answers)."""
    if kind == "qwen2.5":
        return load_fixture_tokenizer(folder)
    from progress_sql.data.ddl import db_details
    from progress_sql.prompts import opening_messages

    texts = [style.answer(e.gold_sql) for e in examples]
    for example in examples:
        texts += [
            m["content"]
            for m in opening_messages(example, db_details(example.db_path, style.schema_profile), style=style)
        ]
    return small_tokenizer(texts)


def primed_model(
    settings: Settings, data: Path, folder: Path, work: Path, log: Callable[[str], None]
) -> dict[str, Any]:
    """A Qwen2 of ``settings.shape`` from a config with the fixture tokenizer, primed by a few supervised
    steps on the task's gold answers in the chat format (the mean answer-token loss brought below
    ``prime_target_loss``: answers sampled at temperature 1 then differ, some executable, some not, so
    GRPO's groups carry reward variance), saved to ``folder`` in bf16 as released checkpoints are."""
    import torch
    import transformers

    from progress_sql.data.ddl import db_details
    from progress_sql.data.tasks import load_task
    from progress_sql.prompts import ChatTemplateFormat, opening_messages, prompt_style

    started = time.perf_counter()
    style = prompt_style(settings.prompt)
    examples = load_task(str(data / "questions.json"), data)
    tokenizer = build_tokenizer(settings.tokenizer, examples, style, work / "tokenizer")
    shape = settings.shape
    torch.manual_seed(0)
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=shape.hidden, intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
        max_position_embeddings=4096, tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
    )  # fmt: skip
    device = torch.device(settings.device)
    model = transformers.Qwen2ForCausalLM(config).to(device)
    fmt = ChatTemplateFormat(tokenizer, style)
    rows = []
    for example in examples:
        messages = opening_messages(example, db_details(example.db_path, style.schema_profile), style=style)
        prompt = tokenizer(fmt.first_prompt(messages, example.db_id, example.question), add_special_tokens=False)
        answer = tokenizer(fmt.answer(example.gold_sql), add_special_tokens=False)
        rows.append((list(prompt["input_ids"]), [*answer["input_ids"], tokenizer.eos_token_id]))
    width = max(len(p) + len(a) for p, a in rows)
    input_ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    row_index, column_index, labels = [], [], []
    for i, (prompt_ids, answer_ids) in enumerate(rows):
        ids = prompt_ids + answer_ids
        input_ids[i, : len(ids)] = torch.tensor(ids)
        attention[i, : len(ids)] = 1
        for j, token in enumerate(answer_ids):  # position len(prompt) - 1 + j predicts the answer's token j
            row_index.append(i)
            column_index.append(len(prompt_ids) - 1 + j)
            labels.append(token)
    input_ids, attention = input_ids.to(device), attention.to(device)
    rows_t, columns_t = torch.tensor(row_index, device=device), torch.tensor(column_index, device=device)
    labels_t = torch.tensor(labels, device=device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=shape.prime_lr, weight_decay=0.0)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / (shape.prime_warmup + 1)))
    model.train()
    losses: list[float] = []
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    for _step in range(shape.prime_steps):
        with autocast:
            hidden = model.model(input_ids=input_ids, attention_mask=attention).last_hidden_state
            logits = model.lm_head(hidden[rows_t, columns_t])
        loss = torch.nn.functional.cross_entropy(logits.float(), labels_t)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        warmup.step()
        losses.append(float(loss.detach()))
        if losses[-1] < settings.prime_target_loss or time.perf_counter() - started > shape.prime_seconds:
            break
    model.to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    parameters = sum(p.numel() for p in model.parameters())
    seconds = time.perf_counter() - started
    log(f"model: {shape.name} Qwen2, {parameters / 1e6:.1f}M parameters, primed {len(losses)} steps, "
        f"answer loss {losses[0]:.2f} -> {losses[-1]:.3f}, {seconds:.0f} s")  # fmt: skip
    del model, optimizer
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {
        "shape": asdict(shape) | {"vocab": len(tokenizer), "parameters": parameters},
        "tokenizer": TOKENIZERS[settings.tokenizer],
        "saved_dtype": "bfloat16",
        "prime": {
            "examples": len(rows),
            "answer_tokens": len(labels),
            "steps": len(losses),
            "lr": shape.prime_lr,
            "target_loss": settings.prime_target_loss,
            "first_loss": round(losses[0], 4),
            "last_loss": round(losses[-1], 4),
            "reached_target": losses[-1] < settings.prime_target_loss,
        },
        "seconds": round(seconds, 1),
    }


# ------------------------------------------------------------------------------------------- weights


def load_weights(folder: Path) -> dict[str, Any]:
    """Every tensor of a model folder's safetensors files."""
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no safetensors file in {folder}")
    tensors: dict[str, Any] = {}
    for path in files:
        tensors.update(load_file(str(path)))
    return tensors


def weight_change(initial: Mapping[str, Any], final: Mapping[str, Any]) -> dict[str, Any]:
    """How ``final`` differs from ``initial`` (compared in fp32): the share of elements changed, the
    largest and mean absolute change, the tensors that changed and those that did not, and the share of
    the changes that bf16 weights would have rounded away (the update is below bf16's resolution there).
    A tied weight that ``final`` writes out again (:data:`TIED_WEIGHTS`) is in ``tied_copies``, and among
    ``only_in_final`` only when it differs from its source."""
    import torch

    names = sorted(set(initial) & set(final))
    total = changed = bf16_lost = 0
    largest = 0.0
    absolute_sum = 0.0
    changed_tensors, unchanged_tensors = [], []
    nonfinite = 0
    for name in names:
        before, after = initial[name].float(), final[name].float()
        nonfinite += int((~torch.isfinite(after)).sum())
        moved = after != before
        count = int(moved.sum())
        total += before.numel()
        changed += count
        if count:
            delta = (after - before)[moved].abs()
            largest = max(largest, float(delta.max()))
            absolute_sum += float(delta.double().sum())
            bf16_lost += int((after[moved].to(torch.bfloat16) == before[moved].to(torch.bfloat16)).sum())
            changed_tensors.append(name)
        else:
            unchanged_tensors.append(name)
    only_in_final = sorted(set(final) - set(initial))
    tied_copies = {}
    for name in list(only_in_final):
        source = TIED_WEIGHTS.get(name)
        if source in final and source in initial:
            same = bool(torch.equal(final[name], final[source]))
            tied_copies[name] = f"{'equal' if same else 'NOT equal'} to the saved {source}"
            if same:  # the tie written out as a copy (a FULL_STATE_DICT save): the same weights
                only_in_final.remove(name)
    return {
        "tensors": len(names),
        "only_in_initial": sorted(set(initial) - set(final)),
        "only_in_final": only_in_final,
        "tied_copies": tied_copies,
        "elements": total,
        "nonfinite": nonfinite,
        "changed_share": changed / total if total else 0.0,
        "max_abs_delta": largest,
        "mean_abs_delta_of_changed": absolute_sum / changed if changed else 0.0,
        "bf16_would_round_away_share": bf16_lost / changed if changed else 0.0,
        "changed_tensors": changed_tensors,
        "unchanged_tensors": unchanged_tensors,
    }


def is_lora_target(name: str) -> bool:
    """A base model weight PEFT's all-linear puts an adapter on (the decoder's Linear layers' weights)."""
    parts = name.split(".")
    return len(parts) >= 2 and parts[-1] == "weight" and parts[-2] in LORA_TARGETS


# ------------------------------------------------------------------------------------------ the runs


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_command(
    command: Sequence[str], env: Mapping[str, str], log_path: Path, timeout: float
) -> tuple[int | None, float]:
    """Run ``command`` in its own process group with its output in ``log_path``; on timeout the whole
    group is killed and the return code is None."""
    started = time.perf_counter()
    with log_path.open("w", encoding="utf-8") as output:
        output.write("$ " + " ".join(command) + "\n")
        output.flush()
        process = subprocess.Popen(
            list(command), cwd=ROOT, env=dict(env), stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = None
    return code, time.perf_counter() - started


def log_tail(path: Path, lines: int = 25) -> str:
    if not path.is_file():
        return ""
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def check_run(
    report: Report,
    plan: RunPlan,
    run: Path,
    model: Path,
    record: dict[str, Any],
    settings: Settings,
    probe: Mapping[str, Any] | None,
) -> None:
    """The checks of one finished run (``record`` gets its figures); ``probe`` is the trainer's
    :func:`trainer_probe`."""
    prefix = plan.name
    record["trainer"] = probe
    check_trainer(report, plan, settings, probe)
    summary = read_json(run / "summary.json") or {}
    config = read_json(run / "config.json") or {}
    metrics = read_jsonl(run / "rl" / "metrics.jsonl")
    record["summary"] = summary
    record["metrics"] = metrics

    lr = (config.get("rl") or {}).get("learning_rate")
    record["learning_rate"] = lr
    report.check(f"{prefix}.lr", "pass" if lr == PAPER_LR else "fail", f"config.json rl.learning_rate = {lr}")
    rl = next(iter((summary.get("rl") or {}).values()), {})
    steps = rl.get("steps")
    report.check(
        f"{prefix}.steps", "pass" if steps == plan.steps and len(metrics) == plan.steps else "fail",
        f"summary rl steps = {steps}, metrics.jsonl rows = {len(metrics)}, asked {plan.steps}",
    )  # fmt: skip

    check_precision(report, plan, run, settings, summary.get("precision") or {}, record)
    bad = [
        f"step {row.get('step')} {key} {row.get(key)}"
        for row in metrics
        for key in ("loss", "grad_norm")
        if not isinstance(row.get(key), int | float) or not math.isfinite(row[key])
    ]
    report.check(
        f"{prefix}.finite", "fail" if bad else "pass",
        "; ".join(bad) if bad else f"loss and grad_norm finite on all {len(metrics)} steps",
    )  # fmt: skip

    step_times = [row["step_time"] for row in metrics if isinstance(row.get("step_time"), int | float)]
    warm = step_times[1:] or step_times
    # a step that generated its rollout batch logs its reward; the further updates on that batch log none
    generating = [row["step_time"] for row in metrics if row.get("reward") is not None and "step_time" in row]
    record["timing"] = {
        "step_time_s": step_times,
        "mean_step_time_s_after_first": sum(warm) / len(warm) if warm else None,
        "generating_step_time_s": generating,
        "rl_seconds": rl.get("seconds"),
        "run_seconds": summary.get("seconds"),
    }
    tied = [row.get("groups/zero_variance_share") for row in metrics]
    record["signal"] = {
        "reward": [row.get("reward") for row in metrics],
        "reward_std": [row.get("reward_std") for row in metrics],
        "zero_variance_share": tied,
        "turns_mean": [row.get("trajectory/turns_mean") for row in metrics],
    }
    measured = [share for share in tied if share is not None]  # a step without a rollout of its own logs none
    no_signal = bool(measured) and all(share == 1.0 for share in measured)

    checkpoint = run / "rl" / "checkpoints" / f"checkpoint-{plan.steps}"
    report.check(
        f"{prefix}.checkpoint", "pass" if checkpoint.is_dir() else "fail",
        f"{checkpoint.relative_to(run)} {'saved' if checkpoint.is_dir() else 'missing'}",
    )  # fmt: skip
    initial = load_weights(model)
    try:
        final = load_weights(run / "rl" / "final")
    except FileNotFoundError as error:
        report.check(f"{prefix}.weights", "fail", str(error))
        return
    change = weight_change(initial, final)
    record["weights"] = {k: v for k, v in change.items() if k not in ("changed_tensors", "unchanged_tensors")}
    record["weights"]["unchanged_tensors"] = change["unchanged_tensors"][:40]
    ok, detail = lora_weights(run, initial, change, record) if plan.lora else full_weights(plan, change)
    if no_signal:
        detail += " (every reward group was tied on every step: no gradient, so no verdict on the precision)"
    report.check(f"{prefix}.weights", "pass" if ok else "fail", detail)


def full_weights(plan: RunPlan, change: Mapping[str, Any]) -> tuple[bool, str]:
    """Full fine-tuning at lr 1e-6: nearly every weight moved, each by about the lr a step (Adam), and
    the saved model has the initial one's tensors."""
    bound = 10 * PAPER_LR * plan.steps
    ok = (
        change["changed_share"] >= 0.9 and 0 < change["max_abs_delta"] <= bound and not change["nonfinite"]
        and not change["only_in_initial"] and not change["only_in_final"]
    )  # fmt: skip
    if change["nonfinite"]:
        return False, f"{change['nonfinite']} of {change['elements']} final weights are NaN or infinite"
    parts = [
        f"{100 * change['changed_share']:.1f}% of {change['elements']} weights changed at lr {PAPER_LR} (max |delta| "
        f"{change['max_abs_delta']:.3g}, bound {bound:.0e}; bf16 weights would have dropped "
        f"{100 * change['bf16_would_round_away_share']:.0f}% of these updates)"
    ]
    parts += [f"{name} saved as well, {how}" for name, how in change["tied_copies"].items()]
    if change["only_in_final"]:
        parts.append(f"only in the final model: {', '.join(change['only_in_final'])}")
    if change["only_in_initial"]:
        parts.append(f"missing from the final model: {', '.join(change['only_in_initial'])}")
    return ok, "; ".join(parts)


def lora_weights(
    run: Path, initial: Mapping[str, Any], change: Mapping[str, Any], record: dict[str, Any]
) -> tuple[bool, str]:
    """LoRA at lr 1e-6: every lora_B (zero at the start) moved, and the merged model differs from the
    initial one in the adapted Linear weights only, all of them."""
    adapter = load_weights(run / "rl" / "final-adapter")
    lora_b = {name: tensor for name, tensor in adapter.items() if "lora_B" in name}
    moved_b = sorted(name for name, tensor in lora_b.items() if float(tensor.abs().max()) > 0)
    outside = [name for name in change["changed_tensors"] if not is_lora_target(name)]
    targets = [name for name in initial if is_lora_target(name)]
    moved_targets = [name for name in change["changed_tensors"] if is_lora_target(name)]
    record["weights"]["lora"] = {
        "adapter_tensors": len(adapter), "lora_B": len(lora_b), "lora_B_moved": len(moved_b),
        "base_targets": len(targets), "merged_targets_changed": len(moved_targets), "changed_outside_targets": outside,
    }  # fmt: skip
    ok = bool(lora_b) and len(moved_b) == len(lora_b) and not outside and len(moved_targets) == len(targets)
    if change["nonfinite"]:
        return False, f"{change['nonfinite']} of {change['elements']} merged weights are NaN or infinite"
    return ok, (
        f"{len(moved_b)}/{len(lora_b)} lora_B matrices moved from zero at lr {PAPER_LR}; merged model: "
        f"{len(moved_targets)}/{len(targets)} target weights changed, {len(outside)} other tensors changed"
    )


def check_precision(
    report: Report, plan: RunPlan, run: Path, settings: Settings, precision: Mapping[str, Any], record: dict[str, Any]
) -> None:
    """summary.json's ``precision``: a bf16 checkpoint loaded and trained as fp32 master weights, the
    compute in bf16 autocast on a GPU; with LoRA the saved adapter's dtypes are the trained weights'."""
    computes = {reward: value.get("compute") for reward, value in (precision.get("rl") or {}).items()}
    trainable = sorted(
        {d for value in (precision.get("rl") or {}).values() for d in value.get("trainable_parameter_dtypes", [])}
    )
    record["precision"] = dict(precision)
    detail = f"checkpoint {precision.get('checkpoint_dtype')}, loaded {precision.get('weight_dtypes')}, "
    if plan.lora:
        adapter = load_weights(run / "rl" / "final-adapter")
        adapter_dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in adapter.values()})
        record["precision"]["adapter_dtypes"] = adapter_dtypes
        trained_ok = adapter_dtypes == ["float32"] and trainable in ([], ["float32"])
        detail += f"saved adapter {adapter_dtypes}, summary's trainable dtypes {trainable}"
        if not trainable:
            detail += " (empty: read after the adapters were merged)"
    else:
        trained_ok = trainable == ["float32"]
        detail += f"trainable {trainable}"
    expected = "bf16 autocast" if settings.device == "cuda" else None
    ok = (
        precision.get("checkpoint_dtype") == "bfloat16"
        and precision.get("weight_dtypes") == ["float32"]
        and trained_ok
        and (expected is None or set(computes.values()) == {expected})
    )
    detail += f", compute {computes}" + (f" (expected {expected})" if expected else "")
    report.check(f"{plan.name}.precision", "pass" if ok else "fail", detail)


def check_trainer(report: Report, plan: RunPlan, settings: Settings, probe: Mapping[str, Any] | None) -> None:
    """Where the trainer put the model (the GPU in a CUDA check) and, for the FSDP run, that accelerate
    wrapped it with FSDP2 (its parameters sharded as DTensors)."""
    if not probe or "error" in probe:
        report.check(f"{plan.name}.trainer", "fail", f"no trainer probe: {(probe or {}).get('error', 'file missing')}")
        return
    devices = probe["parameter_devices"]
    expected = "cuda" if settings.device == "cuda" else "cpu"
    on_device = bool(devices) and all(d.split(":")[0] == expected for d in devices)
    detail = (
        f"parameters on {devices}, accelerate {probe['distributed_type']} with {probe['num_processes']} process(es), "
        f"mixed precision {probe['mixed_precision']}"
    )
    if "peak_gpu_memory_gib" in probe:
        detail += f", peak GPU memory {probe['peak_gpu_memory_gib']} GiB"
    if plan.fsdp:
        sharded = probe["distributed_type"] == "FSDP" and probe["is_fsdp2"] and probe["dtensor_parameters"] > 0
        detail += (
            f"; FSDP version {probe['fsdp_version']}, {probe['dtensor_parameters']}/{probe['parameters']} "
            "parameters are DTensors"
        )
        on_device = on_device and sharded
    report.check(f"{plan.name}.trainer", "pass" if on_device else "fail", detail)


def fsdp_support(settings: Settings) -> str | None:
    """Why FSDP2 through ``accelerate launch`` cannot run here; None when it can."""
    if settings.device != "cuda":
        # tried: on a CPU, accelerate launch runs the FSDP config as MULTI_CPU, the model unsharded
        return "needs CUDA: on a CPU accelerate runs the FSDP config without FSDP (MULTI_CPU, no sharded parameters)"
    if not FSDP_CONFIG.is_file():
        return f"{FSDP_CONFIG.relative_to(ROOT)} is missing"
    return None


def environment() -> dict[str, Any]:
    """Versions and the device, read in this process (after the wheels were installed)."""
    from importlib import metadata

    found: dict[str, Any] = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    for name in ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "tokenizers", "huggingface_hub",
                 "safetensors", "sqlglot", "sqlglotc", "typer", "rich", "numpy", "pyarrow"):  # fmt: skip
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    import torch

    found["cuda_available"] = torch.cuda.is_available()
    if torch.cuda.is_available():
        found["cuda"] = torch.version.cuda
        found["gpu"] = torch.cuda.get_device_name(0)
        found["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    found["src_digest"] = source_digest()
    found["git_head"] = _git("rev-parse", "HEAD")  # of the folder the check runs in, where it has git
    found["prepared_from"] = read_json(ROOT / ".gpu-check" / "source.json")
    return found


def source_digest(folder: Path = ROOT / "src" / "progress_sql") -> str:
    """sha256 over the package's Python files (path and content): which source a run used, also where
    the working tree travelled without git (compare with the same digest of a checkout)."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def subprocess_env(path_entries: Sequence[str], threads: int) -> dict[str, str]:
    """The runs' environment: the project (and the installed wheels) first on the path, offline hubs
    (the GPU machine has no network), the threads, unbuffered output."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*path_entries, *filter(None, [os.environ.get("PYTHONPATH")])]),
        "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg",
    }  # fmt: skip


class Check:
    """One check: the stages in order, each recorded in the report before the next starts."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.settings = settings_for(args.device)
        self.out: Path = args.out.resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.work: Path = (args.work or Path(tempfile.mkdtemp(prefix="gpu-check-"))).resolve()
        self.work.mkdir(parents=True, exist_ok=True)
        self.wheels: Path | None = args.wheels.resolve() if args.wheels else None
        self.started = time.monotonic()
        self.deadline = self.started + args.budget
        self.log = Log(self.out / "gpu_check.log")
        settings = self.settings
        self.report = Report(self.out / "gpu_check.json", {"schema": 1, "device": settings.device, "complete": False})
        self.report.data |= {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "budget_s": args.budget,
            "settings": {
                "lr": PAPER_LR,
                "prompt": settings.prompt,
                "tokenizer": settings.tokenizer,
                "turns": settings.turns,
                "generations": settings.generations,
                "prompts_per_step": settings.prompts_per_step,
                "per_device_batch": settings.per_device_batch,
                "max_turn_tokens": settings.max_turn_tokens,
                "max_completion_tokens": settings.max_completion_tokens,
                "runs": [asdict(plan) for plan in settings.runs],
            },
        }
        self.env: dict[str, str] = {}
        self.plans = [plan for plan in settings.runs if not args.runs or plan.name in args.runs.split(",")]
        unknown = set((args.runs or "").split(",")) - {plan.name for plan in settings.runs} - {""}
        if unknown:
            raise SystemExit(f"gpu_check: no run named {', '.join(sorted(unknown))} (full, lora, fsdp)")
        self.detect_anomaly = bool(args.detect_anomaly)
        self.no_cudnn_sdpa = bool(args.no_cudnn_sdpa)
        self.report.data["settings"] |= {"detect_anomaly": self.detect_anomaly, "no_cudnn_sdpa": self.no_cudnn_sdpa}

    def __call__(self) -> int:
        if self.setup() and self.model():
            self.report.data["runs"] = {}
            for plan in self.plans:
                self.train(plan)
        return self.finish()

    def setup(self) -> bool:
        """Install the carried wheels this Python lacks, put them and the project on the path, import
        the stack, and (CUDA) see the GPU."""
        report, log = self.report, self.log
        path_entries = [str(ROOT / "src")]
        if self.wheels is not None:
            site = self.work / "site"
            log(f"install: the wheels of {self.wheels} that Python {platform.python_version()} lacks, into {site}")
            record = install_wheels(self.wheels, site, log)
            report.data["install"] = record
            installed = [c["name"] for c in record["choices"] if c["install"]]
            ok = record["pip_returncode"] == 0
            detail = f"installed {', '.join(installed) or 'nothing'}" if ok else record["pip_output"]
            report.check("install", "pass" if ok else "fail", detail)
            path_entries.insert(0, str(site))
        for entry in reversed(path_entries):
            sys.path.insert(0, entry)
        self.env = subprocess_env(path_entries, self.settings.threads)
        self.env["GPU_CHECK_DETECT_ANOMALY"] = "1" if self.detect_anomaly else "0"
        self.env["GPU_CHECK_NO_CUDNN_SDPA"] = "1" if self.no_cudnn_sdpa else "0"
        os.environ.update({k: self.env[k] for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")})
        try:
            report.data["environment"] = found = environment()
            import trl  # noqa: F401  (here, so that a missing piece fails before any run)

            import progress_sql.cli  # noqa: F401
        except Exception as error:  # any import failure is the check's finding
            report.check("imports", "fail", f"{type(error).__name__}: {error}")
            return False
        report.check("imports", "pass", "torch, transformers, trl, peft, accelerate, datasets and progress_sql import")
        names = ("python", "torch", "transformers", "trl", "peft", "accelerate", "gpu")
        log("environment: " + ", ".join(f"{name} {found.get(name)}" for name in names))
        if self.settings.device == "cuda":
            report.check("cuda", "pass" if found["cuda_available"] else "fail", found.get("gpu", "torch sees no GPU"))
            if not found["cuda_available"]:
                return False
        report.write()
        return True

    def model(self) -> bool:
        """The task's files and the primed model."""
        self.data = build_task(self.work / "data")
        self.model_folder = self.work / "model"
        try:
            self.report.data["model"] = primed_model(self.settings, self.data, self.model_folder, self.work, self.log)
        except Exception as error:  # a model that cannot be built is the check's finding
            self.report.check("model", "fail", f"{type(error).__name__}: {error}")
            return False
        prime = self.report.data["model"]["prime"]
        self.report.check(
            "model.primed", "pass" if prime["reached_target"] else "fail",
            f"answer loss {prime['first_loss']} -> {prime['last_loss']} in {prime['steps']} steps "
            f"(target {prime['target_loss']})",
        )  # fmt: skip
        self.report.write()
        return True

    def train(self, plan: RunPlan) -> None:
        """One ``progress-sql train`` run and its checks."""
        report, log = self.report, self.log
        record: dict[str, Any] = {"lora": plan.lora, "fsdp": plan.fsdp, "steps": plan.steps}
        report.data["runs"][plan.name] = record
        remaining = self.deadline - time.monotonic() - 20  # kept for the comparison and the JSON
        reason = fsdp_support(self.settings) if plan.fsdp else None
        if reason is None and remaining < 30:
            reason = f"out of time: {remaining + 20:.0f} s of the budget left"
        if reason is not None:
            record["skipped"] = reason
            report.check(f"{plan.name}.exit", "skipped", reason)
            report.write()
            return
        folder = self.work / "runs" / plan.name
        shutil.rmtree(folder, ignore_errors=True)  # a run folder left there would be resumed
        entry = [
            str(Path(__file__).resolve()),
            "cli",
            *self.settings.train_arguments(plan, self.model_folder, self.data, folder),
        ]
        command = [sys.executable, *entry]
        if plan.fsdp:
            launch = ["-m", "accelerate.commands.launch", "--config_file", str(FSDP_CONFIG), "--num_processes", "1",
                      "--main_process_port", str(free_port())]  # fmt: skip
            command = [sys.executable, *launch, *entry]
        timeout = min(plan.timeout_s * (2 if self.detect_anomaly else 1), remaining)  # anomaly mode is slower
        how = " with LoRA" if plan.lora else " under accelerate launch (FSDP2, 1 process)" if plan.fsdp else ""
        log(f"run {plan.name}: {plan.steps} steps{how}, timeout {timeout:.0f} s")
        probe = self.work / "runs" / f"{plan.name}.probe.json"
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.unlink(missing_ok=True)
        run_log = self.out / f"{plan.name}.log"
        code, seconds = run_command(command, {**self.env, "GPU_CHECK_PROBE": str(probe)}, run_log, timeout)
        record.update({"command": command, "returncode": code, "seconds": round(seconds, 1)})
        if code != 0:
            why = f"timed out after {timeout:.0f} s" if code is None else f"exit status {code}"
            report.check(f"{plan.name}.exit", "fail", f"{why}; the log ends:\n{log_tail(run_log)}")
            log(f"run {plan.name}: {why}")
            report.write()
            return
        report.check(f"{plan.name}.exit", "pass", f"exit 0 in {seconds:.0f} s")
        try:
            check_run(report, plan, folder, self.model_folder, record, self.settings, read_json(probe))
        except Exception as error:  # a broken run folder is the check's finding
            report.check(f"{plan.name}.read", "fail", f"{type(error).__name__}: {error}")
        verdicts = [
            f"{c['name']} {c['status']}" for c in report.data["checks"] if c["name"].startswith(f"{plan.name}.")
        ]
        step_times = [round(t, 2) for t in record.get("timing", {}).get("step_time_s", [])]
        log(f"run {plan.name}: done in {seconds:.0f} s; step times {step_times} s; {'; '.join(verdicts)}")
        report.write()

    def finish(self) -> int:
        report = self.report
        report.data["seconds"] = round(time.monotonic() - self.started, 1)
        report.data["complete"] = True
        report.write()
        for check in report.data.get("checks", []):
            self.log(f"{check['status']:>7}  {check['name']}: {(check['detail'].splitlines() or [''])[0]}")
        verdict = "ok" if report.data["ok"] else "FAILED: " + ", ".join(report.data["failed"])
        self.log(f"gpu_check: {verdict}; {report.path}")
        return 0 if report.data["ok"] else 1


def trainer_probe(trainer: Any) -> dict[str, Any]:
    """How the trainer ran, read after its training: accelerate's distributed type and FSDP version,
    its mixed precision, the processes, whether the parameters are FSDP2's sharded DTensors, and the
    peak GPU memory."""
    import torch

    accelerator = trainer.accelerator
    parameters = list(trainer.model.parameters())
    plugin = getattr(accelerator.state, "fsdp_plugin", None)
    found: dict[str, Any] = {
        "distributed_type": str(accelerator.distributed_type).rsplit(".", 1)[-1],
        "fsdp_version": getattr(plugin, "fsdp_version", None),
        "is_fsdp2": bool(getattr(accelerator, "is_fsdp2", False)),
        "mixed_precision": str(accelerator.mixed_precision),
        "num_processes": accelerator.num_processes,
        "parameter_devices": sorted({str(p.device) for p in parameters}),
        "dtensor_parameters": sum(type(p).__name__ == "DTensor" for p in parameters),
        "parameters": len(parameters),
        "anomaly_detection": torch.is_anomaly_enabled(),
        "cudnn_sdpa": bool(torch.backends.cuda.cudnn_sdp_enabled()),
    }
    if torch.cuda.is_available():
        found["peak_gpu_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return found


def _install_probe(path: Path) -> None:
    """Record :func:`trainer_probe` of the run's trainer into ``path`` once it has trained (the main
    process only). Wraps the trainer factory ``progress_sql.training.rl`` calls; when that name is gone
    the probe file says so and the run goes on unprobed."""
    import progress_sql.training.rl as rl

    factory = getattr(rl, "grpo_trainer", None)
    if factory is None:
        path.write_text(json.dumps({"error": "progress_sql.training.rl has no grpo_trainer to wrap"}) + "\n")
        return

    def probed(*args: Any, **kwargs: Any) -> Any:
        trainer = factory(*args, **kwargs)
        train = trainer.train

        def train_and_record(*train_args: Any, **train_kwargs: Any) -> Any:
            result = train(*train_args, **train_kwargs)
            if trainer.accelerator.is_main_process:
                path.write_text(json.dumps(trainer_probe(trainer)) + "\n", encoding="utf-8")
            return result

        trainer.train = train_and_record
        return trainer

    rl.grpo_trainer = probed


def cli(arguments: Sequence[str]) -> int:
    """``progress-sql ARGUMENTS`` from the project's source (no install needed). With ``GPU_CHECK_PROBE``
    set, the trainer's :func:`trainer_probe` is written to that file; ``GPU_CHECK_NO_CUDNN_SDPA=1`` turns off
    torch's cuDNN attention backend and ``GPU_CHECK_DETECT_ANOMALY=1`` turns on anomaly detection (a NaN
    gradient fails at the operation that made it)."""
    sys.argv = ["progress-sql", *arguments]
    probe = os.environ.get("GPU_CHECK_PROBE")
    if probe:
        _install_probe(Path(probe))
    if os.environ.get("GPU_CHECK_NO_CUDNN_SDPA") == "1":
        import torch

        torch.backends.cuda.enable_cudnn_sdp(False)
    if os.environ.get("GPU_CHECK_DETECT_ANOMALY") == "1":  # a NaN in the backward pass fails at its op
        import torch

        torch.autograd.set_detect_anomaly(True, check_nan=True)
    from progress_sql.cli import main

    main()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["cli"]:
        return cli(argv[1:])
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("wheels", help="print the carried wheels' pins")
    prepare_parser = commands.add_parser("prepare", help="download the carried wheels")
    prepare_parser.add_argument("--dest", type=Path, default=ROOT / ".gpu-check" / "wheels")
    run_parser = commands.add_parser("run", help="run the check")
    run_parser.add_argument("--device", choices=("cuda", "cpu"), required=True)
    run_parser.add_argument("--out", type=Path, required=True)
    run_parser.add_argument("--wheels", type=Path, help="install the carried wheels of this folder this Python lacks")
    run_parser.add_argument("--work", type=Path, help="working folder (default: a new temporary one)")
    run_parser.add_argument("--budget", type=float, default=420.0, help="seconds the whole check may take")
    run_parser.add_argument("--runs", help="only these runs, comma-separated (full, lora, fsdp; default: all)")
    run_parser.add_argument(
        "--no-cudnn-sdpa",
        action="store_true",
        help="turn off torch's cuDNN attention backend in the runs (its backward returned NaN on an H200, torch 2.11)",
    )
    run_parser.add_argument(
        "--detect-anomaly",
        action="store_true",
        help="torch's anomaly detection in the runs: a NaN gradient fails at its op",
    )
    args = parser.parse_args(argv)
    if args.command == "wheels":
        print("\n".join(carried_specs()))
        return 0
    if args.command == "prepare":
        return prepare(args.dest)
    return Check(args)()


if __name__ == "__main__":
    sys.exit(main())
