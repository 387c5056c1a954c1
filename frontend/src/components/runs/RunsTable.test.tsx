// @vitest-environment jsdom
// The experiment's runs table at scale: a scroll to other runs updates the rows already in the DOM (keyed
// by their slot in the window, not by run), and a run's plain link navigates inside the dashboard as
// react-router's Link would, leaving a modified click (new tab, new window) to the browser.
import { MantineProvider } from '@mantine/core';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { MemoryRouter, Route, Routes, useLocation } from 'react-router';
import { describe, expect, it } from 'vitest';
import type { RunRow } from '../../lib/runsTable';
import { sizeElements, testContainer } from '../../test/dom';
import { ROW_HEIGHT, RunsTable } from './RunsTable';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const dom = testContainer(() => sizeElements()); // the virtualised rows need a scroll element with a height

const runs: RunRow[] = Array.from({ length: 2000 }, (_, i) => ({
  id: i + 1, index: i, status: i % 3 ? 'succeeded' : 'failed', attempt: 1, params: { 'train.lr': 0.1 }, summary: { loss: i / 2000 },
  created_at: '2026-11-25T11:00:00Z', started_at: '2026-11-25T11:30:00Z', finished_at: '2026-11-25T11:50:00Z',
}));

function Where() {
  return <div data-testid="where">{useLocation().pathname}</div>;
}

function render() {
  act(() => {
    dom.root = createRoot(dom.element);
    dom.root.render(
      <MantineProvider env="test">
        <MemoryRouter initialEntries={['/experiments/1']}>
          <Routes>
            <Route path="/experiments/1" element={<RunsTable runs={runs} selected={new Set()} onSelect={() => {}} />} />
            <Route path="*" element={<Where />} />
          </Routes>
        </MemoryRouter>
      </MantineProvider>,
    );
  });
}

const rows = () => [...dom.element.querySelectorAll<HTMLElement>('[role="row"][data-run-id]')];

describe('the runs table', () => {
  it('scrolled to other runs, updates the rows it has instead of making new ones', () => {
    render();
    const before = rows();
    expect(before.map((r) => r.dataset.runId).slice(0, 3)).toEqual(['1', '2', '3']);
    const table = dom.element.querySelector<HTMLElement>('[data-testid="runs-table"]')!;
    act(() => {
      table.scrollTop = 1000 * ROW_HEIGHT;
      table.dispatchEvent(new Event('scroll'));
    });
    const after = rows();
    const ids = after.map((r) => Number(r.dataset.runId));
    expect(Math.min(...ids)).toBeGreaterThan(900);
    // the same elements, now showing runs far below: none was removed and made again
    expect(after.filter((r) => before.includes(r)).length).toBe(before.length);
    // each shows its own run, status and all
    const shown = after.find((r) => r.dataset.runId === '1000')!;
    expect(shown.querySelector('[data-testid="run-link"]')!.textContent).toBe('run 1000');
    expect(shown.querySelector('[data-status]')!.textContent).toBe('failed');
  });

  it("follows a run's link inside the dashboard on a plain click", () => {
    render();
    const link = dom.element.querySelector<HTMLAnchorElement>('[data-run-id="2"] [data-testid="run-link"]')!;
    expect(link.getAttribute('href')).toBe('/runs/2');
    const click = new MouseEvent('click', { bubbles: true, cancelable: true, button: 0 });
    act(() => void link.dispatchEvent(click));
    expect(click.defaultPrevented).toBe(true);
    expect(dom.element.querySelector('[data-testid="where"]')?.textContent).toBe('/runs/2');
  });

  it('leaves a click with a modifier to the browser (a new tab or window)', () => {
    render();
    const link = dom.element.querySelector<HTMLAnchorElement>('[data-run-id="2"] [data-testid="run-link"]')!;
    for (const modifier of ['ctrlKey', 'metaKey', 'shiftKey'] as const) {
      const click = new MouseEvent('click', { bubbles: true, cancelable: true, button: 0, [modifier]: true });
      act(() => void link.dispatchEvent(click));
      expect(click.defaultPrevented).toBe(false);
    }
    expect(dom.element.querySelector('[data-testid="where"]')).toBeNull();
  });
});
