"""External runs: runs a researcher's own script creates, runs and finishes itself through the SDK.

A script opens one (``POST /projects/{id}/runs/external``) and gets the run and a token for that run and
attempt; with it, it posts metrics, params, logs, heartbeats and artifacts and finishes the run through
the runs' own routes, as a worker's job process does. An external run is never queued to a worker: when
its heartbeats stop, the reaper fails it ("crashed") instead of requeueing it, and its script reopens it
by id (``resume="must"``) as a new attempt whose steps continue after its last.
"""
