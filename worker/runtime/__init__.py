"""The process a run executes in, below the modules an operator or Celery names (``celery_app``,
``tasks``, ``jobs``, ``executor``, ``local``), which use it; it never imports them.

    environment  the environment a worker hands its runs: an allow-list, credentials in memory only
    heartbeat    the heartbeat thread of one attempt: progress up, cancel and lease loss down
    sysmetrics   the job's system metrics (``system/*``), sampled by the heartbeat
    logcapture   Python logging during a run -> the run's log lines
    confined     the worker's side of spec confinement: a spec's names resolved inside the stores
    zygote       the job server: every run's job process is forked from it, and it never held a credential
"""
