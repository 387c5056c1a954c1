// @vitest-environment jsdom
// The Provenance tab's view of an external run's provenance: the command line and commit, the "dirty"
// mark, the diff folded until asked for (then monospace lines that wrap, in a box that scrolls), the
// package list folded with a search; a run without git says so; a worker's run has no provenance.
import { MantineProvider } from '@mantine/core';
import { QueryClientProvider } from '@tanstack/react-query';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { expect, it, vi } from 'vitest';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import type { Run } from '../../api/types';
import { testContainer } from '../../test/dom';
import { until } from '../../test/mount';
import { ProvenanceTab, ProvenanceView, type Provenance } from './ProvenanceTab';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const LONG_LINE = `+${'x'.repeat(3000)}`; // one line far wider than any page
const PROVENANCE: Provenance = {
  command: `/venv/bin/python train.py --out ${'/very/long/path'.repeat(40)}`,
  git_commit: 'abcdef0123456789abcdef0123456789abcdef01',
  git_dirty: true,
  git_diff: `diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1 +1,2 @@\n-a = 1\n+a = 2\n${LONG_LINE}\n`,
  python: '3.12.3',
  packages: ['httpx==0.28.1', 'numpy==2.1.0', 'torch==2.5.1'],
  host: 'laptop',
};

const dom = testContainer();

function show(node: React.ReactNode) {
  act(() => {
    dom.root = createRoot(dom.element);
    dom.root.render(
      <MantineProvider env="test">
        <QueryClientProvider client={makeQueryClient()}>{node}</QueryClientProvider>
      </MantineProvider>,
    );
  });
}

const $ = (id: string) => dom.element.querySelector<HTMLElement>(`[data-testid="${id}"]`);

it('shows the command line, the commit and its dirty mark, Python and the host', () => {
  show(<ProvenanceView provenance={PROVENANCE} />);
  expect($('provenance-command')?.textContent).toBe(PROVENANCE.command);
  expect($('provenance-commit')?.textContent).toBe('abcdef012345');
  expect($('provenance-commit')?.getAttribute('title')).toBe(PROVENANCE.git_commit);
  expect($('provenance-dirty')?.textContent).toBe('dirty');
  expect($('provenance-python')?.textContent).toBe('3.12.3');
  expect($('provenance-host')?.textContent).toBe('laptop');
  // a command longer than the page wraps instead of widening it
  expect($('provenance-command')?.style.whiteSpace).toBe('pre-wrap');
  expect($('provenance-command')?.style.overflowWrap).toBe('anywhere');
});

it('folds the diff until asked, then shows its lines wrapped in a box that scrolls', () => {
  show(<ProvenanceView provenance={PROVENANCE} />);
  expect($('provenance-diff')).toBeNull();
  expect($('provenance-diff-summary')?.textContent).toBe('1 file, +2 −1');
  act(() => $('provenance-diff-toggle')!.click());
  const diff = $('provenance-diff')!;
  expect(diff.tagName).toBe('PRE');
  expect(diff.textContent).toContain(LONG_LINE);
  expect(diff.style.whiteSpace).toBe('pre-wrap');
  expect(diff.style.overflowWrap).toBe('anywhere');
  expect(diff.style.overflowX).toBe('hidden');
  expect(diff.style.maxHeight).toBe('520px');
  expect($('provenance-diff-toggle')?.getAttribute('aria-expanded')).toBe('true');
  act(() => $('provenance-diff-toggle')!.click());
  expect($('provenance-diff')).toBeNull();
});

it('folds the packages and narrows them by a search', () => {
  show(<ProvenanceView provenance={PROVENANCE} />);
  expect($('provenance-packages')).toBeNull();
  expect($('provenance-packages-toggle')?.textContent).toBe('Show 3 packages');
  act(() => $('provenance-packages-toggle')!.click());
  expect($('provenance-packages')?.textContent).toBe('httpx==0.28.1\nnumpy==2.1.0\ntorch==2.5.1');
  const search = $('provenance-packages-search') as HTMLInputElement;
  act(() => {
    const set = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!;
    set.call(search, 'TORCH');
    search.dispatchEvent(new Event('input', { bubbles: true }));
  });
  expect($('provenance-packages')?.textContent).toBe('torch==2.5.1');
  expect($('provenance-packages-count')?.textContent).toBe('1 of 3');
});

it('says when the script ran outside git, and marks a clean work tree', () => {
  show(<ProvenanceView provenance={{ ...PROVENANCE, git_commit: null, git_dirty: null, git_diff: null }} />);
  expect($('provenance-commit')).toBeNull();
  expect($('provenance-commit-row')?.textContent).toContain('not in a git work tree');
  expect($('provenance-diff-toggle')).toBeNull();
  act(() => dom.root?.unmount());
  show(<ProvenanceView provenance={{ ...PROVENANCE, git_dirty: false, git_diff: null }} />);
  expect($('provenance-clean')?.textContent).toBe('clean');
  expect($('provenance-dirty')).toBeNull();
});

it("fetches the run's provenance, and says a worker's run has none", async () => {
  const answer = vi.spyOn(api, 'GET').mockImplementation((async () => ({ data: PROVENANCE, response: new Response('{}') })) as never);
  show(<ProvenanceTab run={{ id: 5, attempt: 2 } as Run} />);
  await until(() => $('provenance-command'));
  expect(answer).toHaveBeenCalledWith('/api/v1/runs/{run_id}/provenance', { params: { path: { run_id: 5 } } });
  act(() => dom.root?.unmount());
  answer.mockImplementation((async () => ({ data: null, response: new Response('null') })) as never);
  show(<ProvenanceTab run={{ id: 6, attempt: 1 } as Run} />);
  await until(() => dom.element.textContent?.includes('No provenance'));
});
