// @vitest-environment jsdom
// The run page's attempt history: one row per attempt with its worker, times, duration and outcome,
// lost and released attempts included.
import { MantineProvider } from '@mantine/core';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { afterEach, expect, it, vi } from 'vitest';
import type { Run, RunAttempt } from '../../api/types';
import { AttemptHistory } from './AttemptHistory';
import { testContainer } from '../../test/dom';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const NOW = Date.parse('2026-11-25T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();
const dom = testContainer(() => vi.useFakeTimers({ now: NOW, toFake: ['Date', 'setInterval', 'clearInterval'] }));
afterEach(() => vi.useRealTimers());

function render(run: Partial<Run>, attempts: RunAttempt[]) {
  act(() => {
    dom.root = createRoot(dom.element);
    dom.root.render(
      <MantineProvider env="test">
        <AttemptHistory run={{ status: 'running', held: true, attempt: 3, ...run } as Run} attempts={attempts} />
      </MantineProvider>,
    );
  });
}

const rows = (): string[][] =>
  [...dom.element.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? ''));

const HISTORY: RunAttempt[] = [
  { attempt: 1, worker: 'gpu-a', started_at: ago(600), ended_at: ago(500), duration_seconds: 100, outcome: 'released', resumed_step: null },
  { attempt: 2, worker: 'gpu-b', started_at: ago(400), ended_at: ago(330), duration_seconds: 70, outcome: 'lost', resumed_step: 40 },
  { attempt: 3, worker: 'gpu-c', started_at: ago(90), ended_at: null, duration_seconds: 85, outcome: 'running', resumed_step: 80 },
];

it('shows every attempt, released and lost ones included, and counts the held one on', () => {
  render({}, HISTORY);
  const got = rows();
  expect(got.map((r) => [r[0], r[1], r[4], r[5]])).toEqual([
    ['1', 'gpu-a', '1m 40s', 'released'],
    ['2', 'gpu-b', '1m 10s', 'lost · resumed from step 40'],
    ['3', 'gpu-c', '1m 30s', 'running · resumed from step 80'],
  ]);
  expect(got[2]![3]).toBe('—'); // not ended
  act(() => vi.advanceTimersByTime(10_000));
  expect(rows()[2]![4]).toBe('1m 40s');
});

it('does not count a running attempt on while no worker holds the run', () => {
  render({ held: false }, HISTORY);
  expect(rows()[2]!.slice(4)).toEqual(['1m 25s', 'running (no heartbeat)']);
  act(() => vi.advanceTimersByTime(10_000));
  expect(rows()[2]![4]).toBe('1m 25s');
});

it('says when no worker claimed the run yet', () => {
  render({ status: 'queued', held: false, attempt: 1 }, []);
  expect(dom.element.textContent).toContain('No attempt yet: the run waits for a worker.');
});
