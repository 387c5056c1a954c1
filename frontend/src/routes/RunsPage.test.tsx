// @vitest-environment jsdom
// The project-wide runs page in jsdom against a fake GET /api/v1/runs: the URL's state (lib/viewState.ts)
// becomes the request (q, sort, group_by, metrics), group rows show n and "mean ± half-CI" (a group of
// one its bare value), a refused query shows its 422 and position under the box while the last good rows
// stay, a header click writes the sort into the URL, and an external run (a script's) is badged.
import type { QueryClient } from '@tanstack/react-query';
import { act } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter, useLocation } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../api/auth';
import { api } from '../api/client';
import { makeQueryClient } from '../api/queryClient';
import { installDomShims, sizeElements } from '../test/dom';
import { mountRouter, until } from '../test/mount';
import { RunsPage } from './RunsPage';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function json(status: number, body: unknown) {
  const response = new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  return status < 300 ? { data: body, response } : { error: body, response };
}

function run(id: number, lambda: number, acc: number) {
  return {
    id, name: null, kind: 'carma', status: 'succeeded', experiment_id: 1, project_id: 1, index: id, attempt: 1, max_attempts: 3,
    created_at: '2026-01-01T00:00:00Z', spec: { kind: 'carma', carma: { lambda }, seed: id }, params: {}, logged_params: {},
    summary: { acc }, tags: [], progress: {}, error: null,
  };
}

const GROUPS = [
  { key: { kind: 'carma', carma: { lambda: 0.2 } }, n: 3, run_ids: [1, 2, 3], metrics: { 'metrics.acc': { n: 3, mean: 0.8, std: 0.1, ci_low: 0.55159, ci_high: 1.04841, min: 0.7, max: 0.9 } } },
  { key: { kind: 'carma', carma: { lambda: 0 } }, n: 1, run_ids: [4], metrics: { 'metrics.acc': { n: 1, mean: 0.6, std: null, ci_low: null, ci_high: null, min: 0.6, max: 0.6 } } },
];

let requests: Record<string, unknown>[] = [];
function fakeApi() {
  requests = [];
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  vi.spyOn(api, 'GET').mockImplementation((async (url: string, init?: { params?: { query?: Record<string, unknown> } }) => {
    if (url === '/api/v1/auth/me') return json(200, { id: 2, username: 'meg', is_admin: false, memberships: [{ project_id: 1, project: 'default', role: 'member' }] });
    if (url === '/api/v1/projects/{project_id}/views') return json(200, []);
    const query = init?.params?.query ?? {};
    requests.push(query);
    if (typeof query.q === 'string' && query.q.includes('>>'))
      return json(422, { detail: 'invalid request', code: 'validation_error', errors: [{ loc: ['query', 'q'], msg: "position 10: expected a value after '>'", type: 'query_syntax' }] });
    if (query.group_by) return json(200, { items: [], next_cursor: null, groups: GROUPS });
    if (typeof query.q === 'string' && query.q.includes('external'))
      return json(200, { items: [run(1, 0.2, 0.7), { ...run(9, 0, 0.5), kind: 'external', spec: { lr: 0.1 } }], next_cursor: null });
    return json(200, { items: [run(1, 0.2, 0.7), run(2, 0.2, 0.8), run(4, 0, 0.6)], next_cursor: null });
  }) as never);
}

let root: Root | null = null;
let container: HTMLElement;
let qc: QueryClient;
let where = '';

function Where() {
  const location = useLocation();
  where = location.pathname + location.search;
  return null;
}

beforeEach(() => {
  installDomShims();
  sizeElements(600, 1200); // the virtualised table's window gets a size, so its rows render
  container = document.body.appendChild(document.createElement('div'));
  qc = makeQueryClient();
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
  const router = createMemoryRouter([{ path: '/runs', element: <><RunsPage /><Where /></> }], { initialEntries: [url] });
  root = await mountRouter(container, router, qc, { id: 1, name: 'default', setProject: vi.fn() });
}


const $$ = (sel: string) => [...container.querySelectorAll<HTMLElement>(sel)];

describe('the project runs page', () => {
  it("asks for the URL's groups and shows n and mean ± half-CI; a group of one its value alone", async () => {
    await render('/runs?q=kind%20%3D%20%22carma%22&cols=id,metrics.acc&group=*&sort=-metrics.acc');
    const cells = await until(() => ($$('[data-testid="group-metric"]').length === 2 ? $$('[data-testid="group-metric"]') : null));
    expect(cells.map((c) => c.textContent)).toEqual(['0.8 ± 0.24841', '0.6']);
    expect(cells[0]!.title).toContain('95% CI [0.55159, 1.0484]');
    expect($$('[data-testid="group-n"]').map((c) => c.textContent)).toEqual(['3', '1']);
    expect($$('[data-group-row]').map((r) => r.dataset.groupRow)).toEqual(['carma.lambda=0.2', 'carma.lambda=0']);
    const grouped = requests.find((r) => r.group_by);
    expect(grouped).toMatchObject({ project: 'default', q: 'kind = "carma"', group_by: 'default', metrics: 'metrics.acc', sort: 'metric-mean:metrics.acc', order: 'desc' });
  });

  it('a refused query shows its message and a caret under its position; the last good rows stay', async () => {
    await render('/runs?q=kind%20%3D%20%22carma%22');
    await until(() => $$('[data-run-id]').length === 3);
    const box = container.querySelector<HTMLInputElement>('[data-testid="runs-query"]')!;
    await act(async () => {
      const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!;
      setter.call(box, 'status >> 1');
      box.dispatchEvent(new Event('input', { bubbles: true }));
    });
    const error = await until(() => container.querySelector('[data-testid="runs-query-error"]'));
    expect(error.textContent).toContain("position 10: expected a value after '>'");
    expect(container.querySelector('[data-testid="runs-query-caret"]')!.textContent).toBe(`status >> 1\n${' '.repeat(10)}^`);
    expect($$('[data-run-id]').map((r) => r.dataset.runId)).toEqual(['1', '2', '4']);
    expect(new URLSearchParams(where.split('?')[1]).get('q')).toBe('status >> 1');
  });

  it("badges an external run beside its link, and only it", async () => {
    await render('/runs?q=kind%20in%20(%22carma%22%2C%20%22external%22)');
    await until(() => $$('[data-run-id]').length === 2);
    const badges = (id: string) => container.querySelectorAll(`[data-run-id="${id}"] [data-testid="external-badge"]`).length;
    expect([badges('1'), badges('9')]).toEqual([0, 1]);
    expect(container.querySelector('[data-run-id="9"] [data-testid="external-badge"]')!.getAttribute('title')).toContain('SDK');
  });

  it('a header click sorts on the server and lands in the URL', async () => {
    await render('/runs?cols=id,params.carma.lambda,metrics.acc:max');
    await until(() => $$('[data-run-id]').length === 3);
    const header = container.querySelector<HTMLElement>('[data-testid="sort-metrics.acc:max"]')!;
    expect(header.textContent).toBe('max(metrics.acc)');
    await act(async () => header.click());
    await until(() => requests.some((r) => r.sort === 'max(metrics.acc)' && r.order === 'asc'));
    expect(new URLSearchParams(where.split('?')[1]).get('sort')).toBe('metrics.acc:max');
    // the max column's cells come from the aggregates request (the run rows carry only latest values)
    expect(requests.some((r) => r.group_by === 'id' && r.metrics === 'max(metrics.acc)' && r.q === 'id in (1, 2, 4)')).toBe(true);
  });
});
