"""Local generation with Hugging Face transformers (the ``[trl]`` extra), the chat template or plain
role lines (docs/environment.md#generation-backends-and-progress-sql-rollout)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from progress_sql.backends.base import GenerationConfig
from progress_sql.prompts import Message


def render_plain(messages: Sequence[Message]) -> str:
    """A chat rendered without a template, ending with the assistant's cue.

    >>> render_plain([{"role": "user", "content": "hi"}])
    'user: hi\\nassistant:'
    """
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"


def load_tokenizer(path: str) -> Any:
    """Load a tokenizer; a plain tokenizers-backed one (as ``progress-sql train`` saves) is loaded as
    is: ``AutoTokenizer`` would swap in the model type's own pre-tokenizer (Qwen2's for a qwen2 model
    folder) and silently change the tokenization."""
    import json
    from pathlib import Path

    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    config = Path(path) / "tokenizer_config.json"
    if config.is_file():
        declared = json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class")
        if declared in {"TokenizersBackend", "PreTrainedTokenizerFast"}:
            return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


class TransformersBackend:
    """Generates with a causal LM and its tokenizer, one conversation at a time, on CPU or GPU."""

    name = "transformers"
    draws = "one generate call per conversation with num_return_sequences=n"

    def __init__(self, model: Any, tokenizer: Any, *, use_chat_template: bool | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        has_template = bool(getattr(tokenizer, "chat_template", None))
        self.use_chat_template = has_template if use_chat_template is None else use_chat_template

    @classmethod
    def from_pretrained(cls, path: str, *, device: str = "cpu") -> TransformersBackend:
        """Load a model folder (or hub name, where a hub is reachable) with its tokenizer."""
        from transformers import AutoModelForCausalLM

        tokenizer = load_tokenizer(path)
        model = AutoModelForCausalLM.from_pretrained(path).to(device)
        return cls(model, tokenizer)

    def _prompt(self, messages: Sequence[Message]) -> str:
        if self.use_chat_template:
            text = self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
            return str(text)
        return render_plain(messages)

    def generate(self, conversations: Sequence[Sequence[Message]], config: GenerationConfig) -> list[list[str]]:
        import torch

        if config.seed is not None:
            torch.manual_seed(config.seed)
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        sampling = config.temperature > 0
        results = []
        for messages in conversations:
            encoded = self.tokenizer(self._prompt(messages), return_tensors="pt").to(self.model.device)
            with torch.no_grad():
                output = self.model.generate(
                    **encoded,
                    do_sample=sampling,
                    temperature=config.temperature if sampling else None,
                    top_p=config.top_p if sampling else None,
                    top_k=0 if sampling else None,
                    max_new_tokens=config.max_tokens,
                    num_return_sequences=config.n,
                    pad_token_id=pad,
                    eos_token_id=eos,
                )
            new_tokens = output[:, encoded["input_ids"].shape[1] :]
            results.append([self.tokenizer.decode(row, skip_special_tokens=True) for row in new_tokens])
        return results
