"""The processes a claimed run passes through, below ``tasks`` and above ``runtime``:

pool    Celery's pool: a fresh pool process per run, which claims it (a prompt respawn), and the pids
        of the job processes, whichever thread forked them (the interrupt of a warm shutdown)
server  the job server's program (``python -m worker.jobs.server``), from which every job process is
        forked, and what a job process runs (the mechanism: ``worker.runtime.zygote``)
"""
