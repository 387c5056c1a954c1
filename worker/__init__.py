"""The worker: Celery tasks that run experiment kinds and report through a RunContext. It never imports
``backend`` or ``cli``: it talks to the API over REST."""
