"""CARMA: the kind ``carma``: run(spec, ctx) functions.

One module per kind, named after it; no module of this family imports another family's (a contract in
pyproject.toml). What the run is made of lives in the subpackage ``common`` (not kinds)."""
