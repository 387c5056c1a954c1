// A run's attempts and what "live" means: the API says whether a worker holds the
// run now (`held`: running with a heartbeat fresher than the reaper's timeout) and how long workers spent
// on it (`run_seconds`: the sum of its attempts, the running one up to its last heartbeat). These pure
// functions turn that into the run page's run time, attempt rows and notes.
import type { Run, RunAttempt } from '../api/types';
import { formatCount } from './plainFormat';

type Timing = Pick<Run, 'status' | 'held' | 'run_seconds' | 'heartbeat_at'>;
type Counted = Pick<Run, 'attempt' | 'max_attempts' | 'released'>;

/**
 * The attempts that count against the run's allowance, the current one included: every attempt but those
 * released at a worker's shutdown (`released`; each resumed from its checkpoint by the next). `attempt`
 * itself is the current attempt's number, released ones included (the attempt history's rows).
 */
export function countedAttempt(run: Counted): number {
  return run.attempt - run.released;
}

/** The run header's attempt: `attempt 2/3`, and the released attempts apart: `attempt 1/3, resumed 3×`. */
export function attemptLabel(run: Counted): string {
  const counted = `attempt ${countedAttempt(run)}/${run.max_attempts}`;
  return run.released ? `${counted}, resumed ${run.released}×` : counted;
}

/** The attempt label's title: what the numbers mean, with the attempt's own number once it differs. */
export function attemptHelp(run: Counted): string {
  const counted = `${countedAttempt(run)} of the ${run.max_attempts} attempts allowed (a failure or a lost worker uses one)`;
  if (!run.released) return counted;
  const times = run.released === 1 ? 'once' : `${run.released} times`;
  return `${counted}; handed back ${times} at a worker's shutdown and resumed from its checkpoint, which does not count (attempt #${run.attempt} in the attempt history)`;
}

/**
 * Seconds workers spent on the run, at `now`: the API's `run_seconds` (measured to the last heartbeat),
 * counted on from that heartbeat while a worker holds the run. The downtime between attempts, and the
 * time a lost worker's run waits for the reaper, never count.
 */
export function runTimeSeconds(run: Timing, now: number): number | null {
  if (run.run_seconds === null || run.run_seconds === undefined) return null;
  if (!run.held || !run.heartbeat_at) return run.run_seconds;
  return run.run_seconds + Math.max(0, (now - Date.parse(run.heartbeat_at)) / 1000);
}

/** An attempt's duration at `now`: the running one counts on while a worker holds the run. */
export function attemptSeconds(attempt: RunAttempt, run: Pick<Run, 'held'>, now: number): number {
  if (attempt.outcome === 'running' && run.held) return Math.max(0, (now - Date.parse(attempt.started_at)) / 1000);
  return attempt.duration_seconds;
}

/** "● live" only while a worker holds the run and the page hears its event stream. */
export function isLive(run: Pick<Run, 'status' | 'held'>, connected: boolean): boolean {
  return connected && run.status === 'running' && run.held;
}

/**
 * Why a running run is not live: its worker stopped sending heartbeats (it died, or the host lost its
 * network) and the reaper has not requeued it yet. Null when a worker holds it, or it is not running.
 */
export function holderNote(run: Timing, now: number): string | null {
  if (run.status !== 'running' || run.held) return null;
  if (!run.heartbeat_at) return 'no worker holds this run: it is requeued when the heartbeat timeout passes';
  const ago = Math.max(0, Math.round((now - Date.parse(run.heartbeat_at)) / 1000));
  return `no worker holds this run (no heartbeat for ${ago}s): it is requeued when the heartbeat timeout passes`;
}

export const OUTCOME_COLOURS: Record<RunAttempt['outcome'], string> = {
  running: 'blue',
  succeeded: 'green',
  failed: 'red',
  cancelled: 'yellow',
  released: 'gray',
  lost: 'orange',
};

/** What an attempt's outcome means, for its badge's title. */
export const OUTCOME_HELP: Record<RunAttempt['outcome'], string> = {
  running: 'a worker runs it now',
  succeeded: 'its worker finished it',
  failed: 'it failed',
  cancelled: 'it was cancelled',
  released: 'handed back at its worker’s shutdown (not counted against the attempts allowed); the next attempt resumes from the checkpoint',
  lost: 'its worker stopped sending heartbeats: the run was requeued as the next attempt, or failed at the last',
};

/** The attempt's outcome as the history shows it: a running attempt nobody holds is "no heartbeat". */
export function outcomeLabel(attempt: RunAttempt, run: Pick<Run, 'held' | 'attempt'>): string {
  if (attempt.outcome === 'running' && attempt.attempt === run.attempt && !run.held) return 'running (no heartbeat)';
  return attempt.resumed_step !== null && attempt.resumed_step !== undefined
    ? `${attempt.outcome} · resumed from step ${formatCount(attempt.resumed_step)}`
    : attempt.outcome;
}
