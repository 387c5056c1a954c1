"""A HuggingFace causal LM as a chat model (a Skill-Mix student or a local grader): the tokenizer's chat
template (a plain 'User:/Assistant:' layout for tokenizers without one), batched generation with LEFT
padding (every row's next token sits at the last position), and sampling with one seeded generator per
conversation, so a reply depends on its own seed and not on the batch it was generated in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import LogitsProcessor, LogitsProcessorList, PreTrainedModel, PreTrainedTokenizerBase

from worker.core.skillmix.chat import Conversation, Reply, Sampling


class PerRowSampler(LogitsProcessor):
    """Samples each row's next token from softmax(logits / T) with that row's own generator and leaves
    it as the only finite logit, so the (greedy) decoding loop picks it."""

    def __init__(self, seeds: Sequence[int], temperature: float, device: torch.device) -> None:
        assert temperature > 0, f"sampling needs a temperature > 0, got {temperature}"
        self.temperature = temperature
        self.generators = [torch.Generator(device=device).manual_seed(int(s)) for s in seeds]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        rows = scores.shape[0]  # scores: [B, V]
        assert len(self.generators) == rows, f"{rows} rows for {len(self.generators)} generators"
        probs = torch.softmax(scores.float() / self.temperature, dim=-1)  # [B, V]
        chosen = torch.stack(
            [torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(self.generators)]
        )  # [B, 1]
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

    @property
    def identity(self) -> str:
        return f"hf:{self.name}"

    @torch.no_grad()
    def complete(
        self, conversations: Sequence[Conversation], seeds: Sequence[int], sampling: Sampling
    ) -> list[Reply]:
        assert len(conversations) == len(seeds), f"{len(conversations)} conversations, {len(seeds)} seeds"
        texts = [render_chat(self.tokenizer, c) for c in conversations]
        lengths = [len(self.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        # rows of similar length share a batch: less padding to compute
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        replies: list[Reply] = [""] * len(texts)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            outs = self.generate([texts[i] for i in rows], [seeds[i] for i in rows], sampling)
            for i, out in zip(rows, outs, strict=True):
                replies[i] = out
        return replies

    def generate(self, texts: Sequence[str], seeds: Sequence[int], sampling: Sampling) -> list[str]:
        """One batch: left-padded prompts -> the decoded new tokens of each row."""
        tok = self.tokenizer
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        device = next(self.model.parameters()).device
        enc = tok(
            list(texts),
            return_tensors="pt",
            padding=True,
            add_special_tokens=False,
            truncation=True,
            max_length=self.max_input_tokens,
        ).to(device)
        T = enc["input_ids"].shape[1]  # [B, T], left-padded
        processors = LogitsProcessorList()
        if sampling.temperature > 0:
            processors.append(PerRowSampler(seeds, sampling.temperature, device))
        out = self.model.generate(  # type: ignore[operator]
            **enc,
            max_new_tokens=sampling.max_new_tokens,
            do_sample=False,  # the sampler above draws; the loop then takes its only finite token
            logits_processor=processors,
            pad_token_id=tok.pad_token_id,
            temperature=None,
            top_p=None,
            top_k=None,
        )
        new = out[:, T:]  # [B, new tokens]
        return [str(tok.decode(row, skip_special_tokens=True)).strip() for row in new]
