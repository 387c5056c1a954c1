"""What the API and the worker share and nothing else (DESIGN.md): the run-status vocabulary, broker
options and queue names. Imports the standard library only, so either side may import it."""
