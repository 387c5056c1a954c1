// @vitest-environment jsdom
// The compare page's "Group seeds", rendered in jsdom against an in-memory fake of the runs and metrics
// reads (the ECharts canvas left out: the chart's element carries what it draws). Ungrouped, the page is
// one line per run; grouped (`group=*` in the URL, the checkbox writes it), it shows one row per seed group
// with n and the mean ± 95% Student-t interval of the final values, and the group chart in the URL's mode.
import { act } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter, useLocation } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../api/auth';
import { api } from '../api/client';
import { makeQueryClient } from '../api/queryClient';
import { installDomShims } from '../test/dom';
import { mountRouter, until } from '../test/mount';
import { ComparePage } from './ComparePage';

vi.mock('../components/charts/EChart', () => ({ EChart: () => null }));

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

// (lr, seed) -> final loss; the curve is final + 1 - 0.1 step over steps 0..4
const RUNS = [
  { id: 1, lr: 0.1, seed: 1, final: 0.5 },
  { id: 2, lr: 0.1, seed: 2, final: 0.7 },
  { id: 3, lr: 0.2, seed: 1, final: 0.9 },
  { id: 4, lr: 0.1, seed: 3, final: 0.6 },
  { id: 5, lr: 0.3, seed: 1, final: 0.4 },
  { id: 6, lr: 0.1, seed: 1, final: 0.45 }, // an external run: a script's, logged through the SDK
];
const EXTERNAL = 6;
// a sweep of 8 learning rates x 5 seeds (ids 101..140): more runs than the ungrouped overlay's 20 curves
const SWEEP = Array.from({ length: 40 }, (_, i) => ({ id: 101 + i, lr: 1 + (i % 8), seed: 1 + Math.floor(i / 8), final: 0.1 * (i % 8) + 0.01 * Math.floor(i / 8) }));
RUNS.push(...SWEEP);

const curve = (r: { id: number; final: number }) => {
  const buckets = [0, 1, 2, 3, 4].map((step) => {
    const v = r.final + 1 - 0.1 * step;
    return { step_start: step, step_end: step, min: v, max: v, last: v, count: 1 };
  });
  return { run_id: r.id, series: { loss: { total_points: 5, step_min: 0, step_max: 4, buckets } } };
};

function fakeApi() {
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  vi.spyOn(api, 'GET').mockImplementation((async (url: string, init: { params: { path?: { run_id: number }; query?: { ids?: string } } }) => {
    const ok = (data: unknown) => ({ data, response: new Response('{}', { status: 200 }) });
    // the signed-in user (the page's buttons ask): answered, not thrown on, or react-query's retries of a
    // failed `me` outlive this file and report into another file's notification spy
    if (url === '/api/v1/auth/me') return ok({ id: 1, username: 'admin', is_admin: true, memberships: [{ project_id: 1, project: 'default', role: 'admin' }] });
    if (url === '/api/v1/runs/metrics') {
      // the group chart's batch read: one key of many runs
      return ok(init.params.query!.ids!.split(',').map((id) => curve(RUNS.find((x) => x.id === Number(id))!)));
    }
    const r = RUNS.find((x) => x.id === init.params.path!.run_id)!;
    if (url === '/api/v1/runs/{run_id}') {
      return ok({
        id: r.id, name: null, status: 'succeeded', experiment_id: 1, kind: r.id === EXTERNAL ? 'external' : 'diagnostic',
        spec: r.id === EXTERNAL ? { seed: r.seed, train: { lr: r.lr } } : { kind: 'diagnostic', seed: r.seed, train: { lr: r.lr } },
        params: { seed: r.seed, 'train.lr': r.lr },
        summary: { loss: r.final },
      });
    }
    return ok(curve(r));
  }) as never);
}

let root: Root | null = null;
let container: HTMLElement;
let where = '';

function Where() {
  const location = useLocation();
  where = location.pathname + location.search;
  return null;
}

beforeEach(() => {
  installDomShims();
  container = document.body.appendChild(document.createElement('div'));
  fakeApi();
});

afterEach(() => {
  act(() => root?.unmount());
  root = null;
  container.remove();
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

async function render(url: string) {
  const router = createMemoryRouter([{ path: '/compare', element: <><ComparePage /><Where /></> }], { initialEntries: [url] });
  root = await mountRouter(container, router, makeQueryClient());
}


const all = (sel: string) => [...document.querySelectorAll<HTMLElement>(sel)];

describe('ComparePage, Group seeds', () => {
  it('is one line per run until grouped; the checkbox writes group=* and shows the groups', async () => {
    await render('/compare?runs=1,2,3,4,5');
    await until(() => document.querySelector('[data-testid="overlay"][data-runs="5"]'));
    expect(document.querySelector('[data-testid="compare-groups"]')).toBeNull();
    const box = await until(() => document.querySelector<HTMLInputElement>('[data-testid="group-seeds"] input, input[data-testid="group-seeds"]'));
    await act(async () => box.click());
    await until(() => all('[data-testid="group-row"]').length === 3);
    expect(new URLSearchParams(where.split('?')[1]).get('group')).toBe('*');
  });

  it('shows n and the mean ± 95% CI of the final values per group, and the chart in the URL mode', async () => {
    await render('/compare?runs=1,2,3,4,5&group=*&chart=loss%3Aenvelope%3Astep');
    const rows = await until(() => (all('[data-testid="group-row"]').length === 3 ? all('[data-testid="group-row"]') : null));
    expect(rows.map((r) => [r.dataset.group, r.dataset.n])).toEqual([
      ['train.lr=0.1', '3'],
      ['train.lr=0.2', '1'],
      ['train.lr=0.3', '1'],
    ]);
    // numpy/scipy over 0.5, 0.7, 0.6: mean 0.6, std 0.1, t_{0.975,2} = 4.302652729749462
    const cell = rows[0]!.querySelector<HTMLElement>('[data-testid="group-metric"][data-metric="loss"]')!;
    expect(Number(cell.dataset.mean)).toBeCloseTo(0.6, 12);
    expect(Number(cell.dataset.lo)).toBeCloseTo(0.35158622882496704, 12);
    expect(Number(cell.dataset.hi)).toBeCloseTo(0.8484137711750329, 12);
    expect(cell.textContent).toBe('0.600 ± 0.248');
    const one = rows[1]!.querySelector<HTMLElement>('[data-testid="group-metric"]')!;
    expect([one.textContent, one.dataset.n, one.dataset.lo]).toEqual(['0.900', '1', '']);
    const chart = await until(() => document.querySelector<HTMLElement>('[data-testid="group-chart"][data-group-n="3,1,1"]'));
    expect(chart.dataset.mode).toBe('envelope');
    expect(chart.dataset.bands).toBe('env:0'); // groups of one: their line only
  });

  it('draws every member of 8 groups x 5 seeds (40 runs) from one batch read, none per run', async () => {
    await render(`/compare?runs=${SWEEP.map((r) => r.id).join(',')}&group=*`);
    const chart = await until(() => document.querySelector<HTMLElement>('[data-testid="group-chart"]'));
    expect(chart.dataset.groupN).toBe('5,5,5,5,5,5,5,5');
    // (the page's other reads, e.g. the caller's role for "Save view", name no query)
    const calls = (vi.mocked(api.GET).mock.calls as unknown as [string, { params?: { query?: unknown } } | undefined][]).map(([url, init]) => [url, init?.params?.query]);
    expect(calls.filter(([url]) => url === '/api/v1/runs/{run_id}/metrics')).toEqual([]);
    const batches = calls.filter(([url]) => url === '/api/v1/runs/metrics');
    expect(batches).toHaveLength(1);
    const query = batches[0]![1] as { ids: string; key: string; max_points: number };
    expect(query.ids.split(',').map(Number).sort((a, b) => a - b)).toEqual(SWEEP.map((r) => r.id));
    expect([query.key, query.max_points]).toEqual(['loss', 500]);
    expect(document.querySelector('[data-testid="group-chart-cap"]')).toBeNull();
  });
});

describe('ComparePage, an external run', () => {
  it("is marked in its column's header, and its config is diffed as a spec", async () => {
    await render(`/compare?runs=1,${EXTERNAL}`);
    await until(() => document.querySelector(`[data-testid="compare-run-${EXTERNAL}"]`));
    const headers = all('[data-testid="param-diff"] thead th');
    expect(headers.map((h) => h.querySelectorAll('[data-testid="external-badge"]').length)).toEqual([0, 0, 1]);
    const kindRow = all('[data-testid="param-diff"] tbody tr').find((tr) => tr.firstElementChild?.textContent === 'kind')!;
    expect(kindRow.dataset.differs).toBe('true'); // a worker's spec names its kind, a script's config does not
  });
});
