import { describe, expect, it } from 'vitest';
import { applyRunEvent, decodeRunEvent, EVERY_EVENT_LISTED, NOT_LIVE } from './runEvents';
import { canCancel, canRetry, EVERY_STATUS_LISTED, FINISHED, isFinished, isRunStatus, RUN_STATUSES } from './runStatus';

describe('decodeRunEvent', () => {
  it('reads the four documented events', () => {
    expect(decodeRunEvent('progress', '{"done": 3, "total": 10, "message": ""}')).toEqual({ event: 'progress', data: { done: 3, total: 10, message: '' } });
    expect(decodeRunEvent('metrics', '{"steps": {"loss": 4}}')).toEqual({ event: 'metrics', data: { steps: { loss: 4 } } });
    expect(decodeRunEvent('end', '{"status": "succeeded"}')?.event).toBe('end');
  });
  it('drops unknown events and data that is not a JSON object', () => {
    expect(decodeRunEvent('ping', '{}')).toBeNull();
    expect(decodeRunEvent('progress', 'not json')).toBeNull();
    expect(decodeRunEvent('progress', '[1]')).toBeNull();
    expect(decodeRunEvent('progress', 'null')).toBeNull();
  });
});

describe('applyRunEvent', () => {
  it('keeps the latest progress and a sample for the ETA', () => {
    const s1 = applyRunEvent(NOT_LIVE, { event: 'progress', data: { done: 1, total: 10, message: 'a' } }, 1000);
    const s2 = applyRunEvent(s1, { event: 'progress', data: { done: 4, total: 10, message: 'b' } }, 2000);
    expect(s2.progress).toEqual({ done: 4, total: 10, message: 'b' });
    expect(s2.samples).toEqual([{ done: 1, at: 1000 }, { done: 4, at: 2000 }]);
  });
  it('merges the latest step per metric key', () => {
    const s = applyRunEvent(applyRunEvent(NOT_LIVE, { event: 'metrics', data: { steps: { loss: 1, acc: 1 } } }, 0), { event: 'metrics', data: { steps: { loss: 5 } } }, 0);
    expect(s.steps).toEqual({ loss: 5, acc: 1 });
  });
  it('marks the stream closed at the end', () => {
    expect(applyRunEvent({ ...NOT_LIVE, connected: true }, { event: 'end', data: { status: 'failed' } }, 0).connected).toBe(false);
  });
});

describe('run statuses', () => {
  it('are listed once, every status of the API, with the finished ones', () => {
    expect(EVERY_STATUS_LISTED && EVERY_EVENT_LISTED).toBe(true);
    expect(RUN_STATUSES.filter(isFinished)).toEqual([...FINISHED]);
    expect(RUN_STATUSES.filter(canCancel)).toEqual(['queued', 'running']);
    expect(RUN_STATUSES.filter(canRetry)).toEqual(['failed', 'cancelled']);
    expect(isRunStatus('deleted')).toBe(false);
  });
});
