"""A HuggingFace causal LM as a chat model (a Skill-Mix student or a local grader): the tokenizer's chat
template (a plain 'User:/Assistant:' layout for tokenizers without one), batched generation, and sampling
with one seeded generator per conversation, so a reply depends on its own seed and not on the batch it
was generated in.

A batch runs through our own decoding loop (``decode.py``: the prompts' common prefix computed once,
finished rows dropped from the batch). A model that cannot take that loop (``decode.unsupported``: an
attention implementation or a cache with a sliding window it was not checked for, a generation config
that shapes the scores, ...) falls back to HF ``generate`` with LEFT padding (every row's next token sits
at the last position) and the same per-row sampler."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from transformers import LogitsProcessor, LogitsProcessorList, PreTrainedModel, PreTrainedTokenizerBase

from worker.core.models import input_device
from worker.core.skillmix.chat import Conversation, Reply, Sampling
from worker.core.skillmix.decode import LoopOptions, RowSampler, decode, stop_tokens, unsupported


class PerRowSampler(LogitsProcessor):
    """``generate``'s side of the per-row draw (the fallback path): samples each row's next token with
    that row's own generator (``RowSampler``, as our loop does) and leaves it as the only finite logit, so
    the (greedy) decoding loop picks it."""

    def __init__(self, seeds: Sequence[int], temperature: float, device: torch.device) -> None:
        self.rows = RowSampler(seeds, temperature, device)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        chosen = self.rows.draw(scores)[:, None]  # scores: [B, V] -> [B, 1]
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(1, chosen, 0.0)
        return out  # type: ignore[return-value]


def render_chat(tokenizer: PreTrainedTokenizerBase, conversation: Conversation) -> str:
    """The prompt text of a conversation, ending where the assistant's next turn starts."""
    if getattr(tokenizer, "chat_template", None):
        messages = [{"role": m["role"], "content": m["content"]} for m in conversation]
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        assert isinstance(text, str)
        return text
    turns = [f"{m['role'].capitalize()}: {m['content']}" for m in conversation]
    return "\n\n".join([*turns, "Assistant:"])


@dataclass
class HFChat:
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    name: str  # the model's name in records and cache keys
    batch_size: int = 8
    max_input_tokens: int = 2048
    use_generate: bool = False  # always HF generate (the path before our own loop; benchmarks compare)
    loop: LoopOptions = field(default_factory=LoopOptions)

    @property
    def identity(self) -> str:
        return f"hf:{self.name}"

    @torch.no_grad()
    def complete(
        self, conversations: Sequence[Conversation], seeds: Sequence[int], sampling: Sampling
    ) -> list[Reply]:
        assert len(conversations) == len(seeds), f"{len(conversations)} conversations, {len(seeds)} seeds"
        prompts = [self.tokenize(render_chat(self.tokenizer, c)) for c in conversations]
        # rows of similar length share a batch: less padding to compute
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        replies: list[Reply] = [""] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            outs = self.generate_batch([prompts[i] for i in rows], [seeds[i] for i in rows], sampling)
            for i, out in zip(rows, outs, strict=True):
                replies[i] = out
        return replies

    def generate_batch(
        self, prompts: Sequence[Sequence[int]], seeds: Sequence[int], sampling: Sampling
    ) -> list[str]:
        """One batch: prompts' token ids -> the decoded new tokens of each row."""
        tok = self.tokenizer
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        stop = stop_tokens(self.model, tok.eos_token_id)
        # the longest a row's cache gets: prefix + pads + suffix is the longest prompt, then the new tokens
        longest = max(len(p) for p in prompts) + sampling.max_new_tokens
        why_not = "asked for generate" if self.use_generate else unsupported(self.model, longest)
        if why_not is None:
            new = decode(
                self.model,
                prompts,
                seeds,
                sampling.temperature,
                sampling.max_new_tokens,
                stop,
                tok.pad_token_id,
                self.loop,
            )
        else:
            new = self.generate_with_hf(prompts, seeds, sampling, stop)
        return [str(tok.decode(row, skip_special_tokens=True)).strip() for row in new]

    def tokenize(self, text: str) -> list[int]:
        """A prompt's ids, cut to ``max_input_tokens`` on the tokenizer's truncation side (done here: not
        every backend takes the tokenizer's own truncation arguments)."""
        ids = [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]
        if len(ids) <= self.max_input_tokens:
            return ids
        keep_end = getattr(self.tokenizer, "truncation_side", "right") == "left"
        return ids[-self.max_input_tokens :] if keep_end else ids[: self.max_input_tokens]

    def generate_with_hf(
        self, prompts: Sequence[Sequence[int]], seeds: Sequence[int], sampling: Sampling, stop: set[int]
    ) -> list[list[int]]:
        """HF ``generate`` on LEFT-padded prompts, stopping on the same tokens -> each row's new tokens."""
        pad = self.tokenizer.pad_token_id
        device = input_device(self.model)
        T = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), T), pad, dtype=torch.long)  # [B, T], left-padded
        mask = torch.zeros(len(prompts), T, dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, T - len(p) :] = torch.tensor(p, dtype=torch.long)
            mask[i, T - len(p) :] = 1
        processors = LogitsProcessorList()
        if sampling.temperature > 0:
            processors.append(PerRowSampler(seeds, sampling.temperature, device))
        out = self.model.generate(  # type: ignore[operator]
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            max_new_tokens=sampling.max_new_tokens,
            do_sample=False,  # the sampler above draws; the loop then takes its only finite token
            logits_processor=processors,
            pad_token_id=pad,
            eos_token_id=sorted(stop) or None,
            temperature=None,
            top_p=None,
            top_k=None,
        )
        return [row.tolist() for row in out[:, T:]]  # [B, new tokens]
