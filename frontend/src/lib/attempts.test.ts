import { describe, expect, it } from 'vitest';
import type { RunAttempt } from '../api/types';
import { attemptHelp, attemptLabel, attemptSeconds, countedAttempt, holderNote, isLive, outcomeLabel, runTimeSeconds } from './attempts';

const NOW = Date.parse('2026-11-25T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();

function attempt(over: Partial<RunAttempt>): RunAttempt {
  return {
    attempt: 1, worker: 'w1', started_at: ago(100), ended_at: ago(40), duration_seconds: 60, outcome: 'lost', resumed_step: null,
    ...over,
  };
}

describe('runTimeSeconds', () => {
  it('counts on from the last heartbeat only while a worker holds the run', () => {
    // 70 s over the attempts up to a heartbeat 5 s ago: 75 s now
    expect(runTimeSeconds({ status: 'running', held: true, run_seconds: 70, heartbeat_at: ago(5) }, NOW)).toBe(75);
  });
  it('stops at the last heartbeat when nobody holds it: the silence of a lost worker is not run time', () => {
    expect(runTimeSeconds({ status: 'running', held: false, run_seconds: 70, heartbeat_at: ago(50) }, NOW)).toBe(70);
  });
  it('is the sum the API gives once queued again or finished (the downtime between attempts excluded)', () => {
    expect(runTimeSeconds({ status: 'queued', held: false, run_seconds: 70, heartbeat_at: ago(500) }, NOW)).toBe(70);
    expect(runTimeSeconds({ status: 'succeeded', held: false, run_seconds: 90, heartbeat_at: ago(500) }, NOW)).toBe(90);
  });
  it('is unknown before the first claim', () => {
    expect(runTimeSeconds({ status: 'queued', held: false, run_seconds: null, heartbeat_at: null }, NOW)).toBeNull();
  });
});

describe('live and holder', () => {
  it('is live only while a worker holds the run and the stream is connected', () => {
    expect(isLive({ status: 'running', held: true }, true)).toBe(true);
    expect(isLive({ status: 'running', held: false }, true)).toBe(false);
    expect(isLive({ status: 'running', held: true }, false)).toBe(false);
    expect(isLive({ status: 'queued', held: false }, true)).toBe(false);
  });
  it('says why a running run is not live', () => {
    const note = holderNote({ status: 'running', held: false, run_seconds: 1, heartbeat_at: ago(75) }, NOW);
    expect(note).toContain('no worker holds this run (no heartbeat for 75s)');
    expect(holderNote({ status: 'running', held: true, run_seconds: 1, heartbeat_at: ago(1) }, NOW)).toBeNull();
    expect(holderNote({ status: 'queued', held: false, run_seconds: 1, heartbeat_at: ago(75) }, NOW)).toBeNull();
  });
});

describe('attempt rows', () => {
  it('counts a held running attempt from its claim, and keeps an ended one at its duration', () => {
    const running = attempt({ attempt: 2, outcome: 'running', started_at: ago(30), ended_at: null, duration_seconds: 25 });
    expect(attemptSeconds(running, { held: true }, NOW)).toBe(30);
    expect(attemptSeconds(running, { held: false }, NOW)).toBe(25);
    expect(attemptSeconds(attempt({}), { held: true }, NOW)).toBe(60);
  });
  it('labels a running attempt nobody holds, and a resumed one', () => {
    const running = attempt({ attempt: 2, outcome: 'running', ended_at: null });
    expect(outcomeLabel(running, { held: false, attempt: 2 })).toBe('running (no heartbeat)');
    expect(outcomeLabel(running, { held: true, attempt: 2 })).toBe('running');
    expect(outcomeLabel(attempt({ outcome: 'succeeded', resumed_step: 1200 }), { held: false, attempt: 1 })).toBe(
      'succeeded · resumed from step 1,200',
    );
  });
});

describe('the run header\'s attempt, released attempts apart', () => {
  it('shows a run released at three worker shutdowns as its first attempt, resumed 3 times, not "attempt 4/6"', () => {
    const run = { attempt: 4, released: 3, max_attempts: 3 };
    expect(countedAttempt(run)).toBe(1);
    expect(attemptLabel(run)).toBe('attempt 1/3, resumed 3×');
    expect(attemptHelp(run)).toContain('handed back 3 times at a worker\'s shutdown');
    expect(attemptHelp(run)).toContain('attempt #4 in the attempt history');
  });
  it('counts failures and lost workers, and says nothing of releases when there were none', () => {
    expect(attemptLabel({ attempt: 2, released: 0, max_attempts: 3 })).toBe('attempt 2/3');
    expect(attemptHelp({ attempt: 2, released: 0, max_attempts: 3 })).not.toContain('attempt #');
    expect(attemptLabel({ attempt: 3, released: 1, max_attempts: 3 })).toBe('attempt 2/3, resumed 1×');
    expect(attemptHelp({ attempt: 3, released: 1, max_attempts: 3 })).toContain('handed back once');
  });
});
