"""SMoE: the kinds ``smoe_sraven`` and ``topk_eval`` (experts per token of any mixture-of-experts model):
specs and result records (pydantic only).

One module per kind, named after it; no module of this family imports another family's (a contract in
pyproject.toml)."""
