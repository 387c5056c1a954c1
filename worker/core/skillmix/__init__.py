"""Skill-Mix (Yu et al.; paper 004 section 2.2 and appendix A.3): k-skill compositions graded by a
chat model, scored with the six metrics of A.3.1. One concept per file: ``skills`` (loaders),
``combinations``, ``prompts`` (two-turn generation), ``rubric`` (grading prompt), ``parse`` (tolerant table
parser), ``sentences`` (sentence counter), ``metrics`` (vote, metrics, aggregation, skill-name filter),
``cache``, ``chat`` (the chat-model protocol), ``hf_chat`` (an HF causal LM), ``rule_grader`` (a scripted
grader), ``pipeline`` (one cell end to end)."""
