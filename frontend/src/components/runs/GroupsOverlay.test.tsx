// @vitest-environment jsdom
// The seed-group chart reads its members through the batch read (GET /api/v1/runs/metrics), 200 runs a
// request, up to GROUP_MAX_RUNS runs; past the cap its caption says how many runs the groups average.
// The ECharts canvas is left out: the chart's element carries what it draws.
import { MantineProvider } from '@mantine/core';
import { QueryClientProvider } from '@tanstack/react-query';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { MemoryRouter } from 'react-router';
import { describe, expect, it, vi } from 'vitest';
import { authStore } from '../../api/auth';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import { chunkRefetchInterval, chunkRuns, GROUP_MAX_RUNS, METRICS_BATCH_MAX_IDS, type OverlayRun } from '../../hooks/metrics';
import { testContainer } from '../../test/dom';
import { until } from '../../test/mount';
import { GroupsOverlay, smoothMember, type OverlayGroup } from './GroupsOverlay';

vi.mock('../charts/EChart', () => ({ EChart: () => null }));

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const run = (id: number, status = 'succeeded'): OverlayRun => ({ id, status, params: { seed: id } }) as unknown as OverlayRun;

/** `groups` groups of `seeds` runs each, ids from 1 in group order. */
const sweep = (groups: number, seeds: number): OverlayGroup[] =>
  Array.from({ length: groups }, (_, g) => ({ name: `g${g}`, runs: Array.from({ length: seeds }, (_, s) => run(1 + g * seeds + s)) }));

/** Each run's loss is its id at steps 0..2: the batch read's answer per run. */
function fakeBatch(fail = false) {
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  return vi.spyOn(api, 'GET').mockImplementation((async (url: string, init: { params: { query: { ids: string } } }) => {
    if (url !== '/api/v1/runs/metrics') throw new Error(`unexpected ${url}`);
    if (fail) return { error: { detail: 'run 7 not found', code: 'not_found' }, response: new Response('{}', { status: 404 }) };
    const items = init.params.query.ids.split(',').map((id) => {
      const buckets = [0, 1, 2].map((step) => ({ step_start: step, step_end: step, min: +id, max: +id, last: +id, count: 1 }));
      return { run_id: +id, series: { loss: { total_points: 3, step_min: 0, step_max: 2, buckets } } };
    });
    return { data: items, response: new Response('{}', { status: 200 }) };
  }) as never);
}

const dom = testContainer();

async function show(groups: OverlayGroup[], url = '/compare') {
  dom.root = createRoot(dom.element);
  await act(async () => {
    dom.root!.render(
      <MantineProvider env="test">
        <QueryClientProvider client={makeQueryClient()}>
          <MemoryRouter initialEntries={[url]}>
            <GroupsOverlay groups={groups} metricKey="loss" mode="mean_ci" />
          </MemoryRouter>
        </QueryClientProvider>
      </MantineProvider>,
    );
  });
}

const batchIds = (spy: ReturnType<typeof fakeBatch>) =>
  (spy.mock.calls as unknown as [string, { params: { query: { ids: string; key: string } } }][]).map(([, init]) => init.params.query.ids.split(',').map(Number));

describe('GroupsOverlay', () => {
  it('reads 300 members in two batch reads of at most 200 and counts every member of every group', async () => {
    const spy = fakeBatch();
    const groups = sweep(60, 5); // 300 runs
    await show(groups);
    const chart = await until(() => dom.element.querySelector<HTMLElement>('[data-testid="group-chart"]'));
    expect(chart.dataset.groupN).toBe(Array(60).fill(5).join(','));
    const ids = batchIds(spy);
    expect(ids.map((c) => c.length)).toEqual([200, 100]);
    expect(ids.flat()).toEqual(groups.flatMap((g) => g.runs.map((r) => r.id)));
    expect(dom.element.querySelector('[data-testid="group-chart-cap"]')).toBeNull();
  });

  it(`reads the first ${GROUP_MAX_RUNS} runs of more and says so in the caption`, async () => {
    const spy = fakeBatch();
    await show(sweep(90, 5)); // 450 runs: groups 0..79 read, 80..89 left out
    const chart = await until(() => dom.element.querySelector<HTMLElement>('[data-testid="group-chart"]'));
    expect(chart.dataset.groupN).toBe(Array(80).fill(5).join(','));
    expect(batchIds(spy).map((c) => c.length)).toEqual([200, 200]);
    const cap = dom.element.querySelector('[data-testid="group-chart-cap"]')!;
    expect(cap.textContent).toContain(`at most ${GROUP_MAX_RUNS} runs`);
    expect(cap.textContent).toContain('first 400 of these 450 runs (50 left out');
  });

  it('shows the read error instead of means over some members', async () => {
    fakeBatch(true);
    await show(sweep(2, 3));
    const alert = await until(() => dom.element.querySelector('[data-testid="group-chart-error"]'));
    expect(alert.textContent).toContain('run 7 not found');
    expect(dom.element.querySelector('[data-testid="group-chart"]')).toBeNull();
  });
});

describe("the group chart's options", () => {
  it("draws with the metric's options in the URL, and has the options button", async () => {
    fakeBatch();
    await show(sweep(2, 3), '/compare?charts=loss:log:s0.5');
    const chart = await until(() => dom.element.querySelector<HTMLElement>('[data-testid="group-chart"]'));
    expect(chart.dataset.yScale).toBe('log');
    expect(chart.dataset.smoothing).toBe('0.5');
    expect(dom.element.querySelector('[data-testid="chart-options-loss"]')).not.toBeNull();
  });

  it('smooths a member by the EMA over its steps, leaving it alone at 0', () => {
    const points = [[0, 1], [1, 3], [2, 3]] as const;
    expect(smoothMember(points, 0)).toBe(points);
    const s = smoothMember(points, 0.5);
    expect(s.map(([step]) => step)).toEqual([0, 1, 2]);
    expect(s[0]![1]).toBeCloseTo(1, 12); // debiased: the first value is itself
    expect(s[1]![1]).toBeCloseTo((0.5 * 0.5 * 1 + 0.5 * 3) / (1 - 0.25), 12);
  });
});

describe('the batch chunks', () => {
  it('splits runs into consecutive chunks of the API cap', () => {
    const ids = Array.from({ length: 401 }, (_, i) => i);
    expect(chunkRuns(ids).map((c) => [c[0], c.length])).toEqual([[0, 200], [200, 200], [400, 1]]);
    expect(chunkRuns([])).toEqual([]);
    expect(METRICS_BATCH_MAX_IDS).toBe(200);
  });

  it('polls a chunk every 3 s while one of its runs is unfinished', () => {
    expect(chunkRefetchInterval([run(1), run(2, 'running')])).toBe(3000);
    expect(chunkRefetchInterval([run(1, 'queued')])).toBe(3000);
    expect(chunkRefetchInterval([run(1), run(2, 'failed'), run(3, 'cancelled')])).toBe(false);
  });
});
