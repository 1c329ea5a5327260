"""``cpu_lm_head``: TRL's fused LM head on a CPU scores only the completion positions, in small tiles,
with the log-probabilities and gradients of the head it replaces (and of a plain log-softmax)."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="TRL tests need the [trl] extra")
pytest.importorskip("trl", reason="TRL tests need the [trl] extra")

import trl.kernels.chunked_logprob as kernel  # noqa: E402
import trl.trainer.utils as trl_utils  # noqa: E402

from progress_sql.integrations.trl import CPU_LM_HEAD_TOKENS, cpu_lm_head  # noqa: E402
from tests.tiny_lm import tiny_model  # noqa: E402

BATCH, LENGTH, PROMPT = 4, 400, 250  # 4 x 150 scored positions: more than one 512-token tile


def _batch(vocab: int) -> tuple[Any, Any, Any]:
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(5, vocab, (BATCH, LENGTH), generator=generator)
    attention = torch.ones_like(input_ids)
    attention[1, :40] = 0  # left padding, as TRL's batches have
    labels = input_ids.masked_fill(attention == 0, -100)
    labels[:, :PROMPT] = -100  # TRL scores the completion only
    return input_ids, attention, labels


def _fused(model: Any, input_ids: Any, attention: Any, labels: Any) -> tuple[Any, list[Any]]:
    model.zero_grad()
    output = model(input_ids=input_ids, attention_mask=attention, labels=labels, fused_lm_head=True)
    log_probs = output.log_probs
    (log_probs * (labels[:, 1:] != -100)).sum().backward()
    return log_probs.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_cpu_lm_head_scores_completions_as_trl_and_a_log_softmax_do(chat_tokenizer: Any) -> None:
    model = tiny_model(chat_tokenizer)
    trl_utils.add_fused_lm_head(model)
    input_ids, attention, labels = _batch(len(chat_tokenizer))
    scored = labels[:, 1:] != -100

    trl_log_probs, trl_grads = _fused(model, input_ids, attention, labels)
    calls: list[int] = []
    original_fold = kernel._forward_tile

    def counting_fold(tile: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(tile.shape[0])
        original_fold(tile, *args, **kwargs)

    kernel._forward_tile = counting_fold
    try:
        with cpu_lm_head("cpu"):
            assert kernel.TOKEN_CHUNK_SIZE == CPU_LM_HEAD_TOKENS
            ours, our_grads = _fused(model, input_ids, attention, labels)
    finally:
        kernel._forward_tile = original_fold
    # only the scored positions, in tiles of at most 512 tokens
    assert sum(calls) == int(scored.sum())
    assert max(calls) <= CPU_LM_HEAD_TOKENS
    assert len(calls) > 1

    assert torch.allclose(ours[scored], trl_log_probs[scored], atol=1e-5)
    assert (ours[~scored] == 0).all()
    assert len(our_grads) == len(trl_grads) > 0
    for mine, theirs in zip(our_grads, trl_grads, strict=True):
        assert torch.allclose(mine, theirs, atol=1e-5, rtol=1e-4)

    with torch.no_grad():
        logits = model(input_ids=input_ids, attention_mask=attention).logits[:, :-1]
        reference = torch.log_softmax(logits.float(), -1).gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(ours[scored], reference[scored], atol=1e-4)


def test_cpu_lm_head_restores_trl_and_leaves_other_devices_alone() -> None:
    use_triton, tokens = trl_utils._use_triton, kernel.TOKEN_CHUNK_SIZE
    with cpu_lm_head("cuda"):
        assert (trl_utils._use_triton, kernel.TOKEN_CHUNK_SIZE) == (use_triton, tokens)

    def failing_trainer() -> None:
        with cpu_lm_head("cpu"):
            assert trl_utils._use_triton(torch.device("cpu"))
            raise RuntimeError("the trainer failed")

    with pytest.raises(RuntimeError, match="the trainer failed"):
        failing_trainer()
    assert (trl_utils._use_triton, kernel.TOKEN_CHUNK_SIZE) == (use_triton, tokens)


def test_frozen_layers_stay_out_of_the_graph_under_trls_checkpointing(chat_tokenizer: Any, tmp_path: Any) -> None:
    """TRL checkpoints activations by default and transformers then makes the embeddings require a
    gradient; with non-reentrant checkpoints that hook only drags the frozen layers into the backward
    pass. Removed, the trainable layer gets the same gradient."""
    from trl import GRPOConfig

    from progress_sql.integrations.trl import frozen_layers_out_of_the_graph
    from progress_sql.training.pretrained import train_top_layers

    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[])
    assert args.activation_checkpointing  # TRL's default
    model = tiny_model(chat_tokenizer)
    train_top_layers(model, 1)
    model.activation_checkpointing_enable()  # what Trainer.train() does with these arguments
    model.train()
    input_ids, attention, labels = _batch(len(chat_tokenizer))

    def top_layer_gradient() -> Any:
        model.zero_grad()
        model(input_ids=input_ids, attention_mask=attention, labels=labels).loss.backward()
        return [p.grad.clone() for p in model.model.layers[-1].parameters()]

    assert model.get_input_embeddings()(input_ids).requires_grad  # the hook transformers added
    with_hook = top_layer_gradient()
    assert frozen_layers_out_of_the_graph(model, args)
    assert not model.get_input_embeddings()(input_ids).requires_grad
    without = top_layer_gradient()
    for a, b in zip(with_hook, without, strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    assert all(p.grad is None for p in model.model.layers[0].parameters())
    assert not frozen_layers_out_of_the_graph(model, args)  # nothing left to remove
