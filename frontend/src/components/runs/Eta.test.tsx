// @vitest-environment jsdom
// Every running run shows an ETA from the API's estimate (`progress.eta_at`), at once and counting down:
// on the run page ("ETA 1m 30s") and in the experiment's runs table (the ETA column), which gets the
// estimates from the running runs (useRunningEtas) since its columns carry no progress.
import { MantineProvider } from '@mantine/core';
import { act, type ReactNode } from 'react';
import { createRoot } from 'react-dom/client';
import { MemoryRouter } from 'react-router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunRow } from '../../lib/runsTable';
import { RunEta } from './Eta';
import { RunsTable } from './RunsTable';
import { sizeElements, testContainer } from '../../test/dom';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const NOW = Date.parse('2026-11-25T12:00:00Z');
const dom = testContainer(() =>
  vi.useFakeTimers({ now: NOW, toFake: ['Date', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] }),
);
afterEach(() => vi.useRealTimers());

function render(node: ReactNode) {
  act(() => {
    dom.root = createRoot(dom.element);
    dom.root.render(<MantineProvider env="test">{node}</MantineProvider>);
  });
}

const text = (testid: string) => [...dom.element.querySelectorAll(`[data-testid="${testid}"]`)].map((e) => e.textContent);

describe('the run page ETA', () => {
  it("shows the API's estimate at once and counts down to it", () => {
    render(<RunEta etaAt="2026-11-25T12:01:30Z" />);
    expect(text('eta')).toEqual(['ETA 1m 30s']);
    act(() => vi.advanceTimersByTime(30_000));
    expect(text('eta')).toEqual(['ETA 1m 00s']);
    act(() => vi.advanceTimersByTime(61_000));
    expect(text('eta')).toEqual(['ETA overdue']);
  });
  it('says there is no estimate yet', () => {
    render(<RunEta etaAt={null} />);
    expect(text('eta')).toEqual(['ETA —']);
    expect(dom.element.querySelector('[data-testid="eta"]')?.getAttribute('title')).toMatch(/no estimate yet/);
  });
});

describe('the runs table ETA column', () => {
  const row = (id: number, status: RunRow['status'], eta_at?: string | null): RunRow => ({
    id, index: id - 1, status, attempt: 1, params: {}, summary: {}, created_at: '2026-11-25T11:00:00Z',
    started_at: status === 'queued' ? null : '2026-11-25T11:30:00Z', finished_at: status === 'succeeded' ? '2026-11-25T11:50:00Z' : null, eta_at,
  });

  it('shows each running run its ETA, and none for the others', () => {
    sizeElements(); // the virtualised rows need a scroll element with a height
    const runs = [row(1, 'running', '2026-11-25T12:10:00Z'), row(2, 'running', null), row(3, 'succeeded'), row(4, 'queued')];
    render(
      <MemoryRouter>
        <RunsTable runs={runs} selected={new Set()} onSelect={() => {}} />
      </MemoryRouter>,
    );
    const headers = [...dom.element.querySelectorAll('[role="columnheader"]')].map((h) => h.textContent);
    expect(headers).toContain('ETA');
    const etaColumn = headers.indexOf('ETA');
    const cells = [...dom.element.querySelectorAll('[role="row"][data-run-id]')].map((r) => [
      r.getAttribute('data-run-id'),
      r.querySelectorAll('[role="cell"]')[etaColumn]!.textContent,
    ]);
    expect(cells).toEqual([['1', '10m 00s'], ['2', '—'], ['3', ''], ['4', '']]);
    act(() => vi.advanceTimersByTime(60_000));
    expect(text('eta-cell')).toEqual(['9m 00s', '—']);
  });
});
