"""Seed groups: runs of one configuration over several seeds (``GET /runs?group_by=``), their statistics,
and each project's stored summary of its ended runs' groups."""
