"""SMoE: the kinds ``smoe_sraven`` and ``topk_eval`` (experts per token of any mixture-of-experts model):
run(spec, ctx) functions.

One module per kind, named after it; no module of this family imports another family's (a contract in
pyproject.toml)."""
