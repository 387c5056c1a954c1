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
  it("keeps the latest progress with the API's ETA", () => {
    const s1 = applyRunEvent(NOT_LIVE, { event: 'progress', data: { done: 1, total: 10, message: 'a', eta_at: null } });
    const eta_at = '2026-11-25T12:01:30Z';
    const s2 = applyRunEvent(s1, { event: 'progress', data: { done: 4, total: 10, message: 'b', eta_at } });
    expect(s2.progress).toEqual({ done: 4, total: 10, message: 'b', eta_at });
  });
  it('merges the latest step per metric key', () => {
    const s = applyRunEvent(applyRunEvent(NOT_LIVE, { event: 'metrics', data: { steps: { loss: 1, acc: 1 } } }), { event: 'metrics', data: { steps: { loss: 5 } } });
    expect(s.steps).toEqual({ loss: 5, acc: 1 });
  });
  it('marks the stream closed at the end', () => {
    expect(applyRunEvent({ ...NOT_LIVE, connected: true }, { event: 'end', data: { status: 'failed' } }).connected).toBe(false);
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
