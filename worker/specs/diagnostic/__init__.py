"""The platform's own: the kind ``diagnostic``: specs and result records (pydantic only).

One module per kind, named after it; no module of this family imports another family's (a contract in
pyproject.toml)."""
