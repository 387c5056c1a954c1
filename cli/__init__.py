"""The ``reasonlab`` command (``cli.main:main``). It composes the two sides: server commands run the API
(``backend``) and workers (``worker``), client commands call the REST API, ``run`` runs a spec here
without a server. Neither the backend nor the worker imports this package."""
