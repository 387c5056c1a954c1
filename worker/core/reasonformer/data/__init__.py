"""Data for ReasonFormer: one example type, the appendix-A prompts, a word-level tokenizer for symbolic
data, the synthetic compositional-skills suite, JSONL and HF-datasets loaders, batching and few-shot
subsampling."""
