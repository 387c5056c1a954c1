"""Claims of papers as objects of a project: versioned, pre-registered, evaluated on the runs (routes, service,
statistics, repository)."""
