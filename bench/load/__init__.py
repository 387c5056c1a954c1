"""The API load test's parts (``bench/load_test.py`` is the command): the simulated workers and dashboards
(generator), what the client saw (recorder), the machine's samples (sampling), the in-process API
profiler (profiler), the experiments patched into the API (whatif), setting up and driving a run
(driver), the printed report (report), compose's nginx in front of the API (proxy) and the members
breaking the per-request budgets meanwhile (misbehave)."""
