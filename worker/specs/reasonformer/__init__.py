"""ReasonFormer: the kinds ``reasonformer_pretrain`` and ``reasonformer_finetune``: specs and result records
(pydantic only).

One module per kind, named after it; no module of this family imports another family's (a contract in
pyproject.toml). What both share lives in the subpackage ``common`` (not kinds)."""
