// @vitest-environment jsdom
// The experiments list paged on the server, in jsdom against a fake GET /api/v1/experiments: the first
// page of 50 and the next one by its cursor ("Load more"), the search box as the language's q (plain
// words: a name search, said under the box), and a refused query's 422 under the box while the loaded
// experiments stay.
import { act } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter, useLocation } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../api/auth';
import { api } from '../api/client';
import { makeQueryClient } from '../api/queryClient';
import { installDomShims } from '../test/dom';
import { mountRouter, until } from '../test/mount';
import { ExperimentsPage } from './ExperimentsPage';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function json(status: number, body: unknown) {
  const response = new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  return status < 300 ? { data: body, response } : { error: body, response };
}

const experiment = (id: number) => ({
  id, name: `exp ${id}`, kind: 'diagnostic', description: '', project_id: 1, author: 'meg', created_at: '2026-01-01T00:00:00Z',
  run_count: 1, status_counts: { succeeded: 1 }, tags: [], starred: false, review_state: null, spec: {}, sweep: null,
});

let requests: Record<string, unknown>[] = [];
let root: Root | null = null;
let container: HTMLElement;
let where = '';

function Where() {
  where = useLocation().search;
  return null;
}

beforeEach(() => {
  installDomShims();
  container = document.body.appendChild(document.createElement('div'));
  requests = [];
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  vi.spyOn(api, 'GET').mockImplementation((async (url: string, init?: { params?: { query?: Record<string, unknown> } }) => {
    if (url === '/api/v1/auth/me') return json(200, { id: 2, username: 'meg', is_admin: false, memberships: [{ project_id: 1, project: 'default', role: 'member' }] });
    const query = init?.params?.query ?? {};
    requests.push(query);
    if (typeof query.q === 'string' && query.q.startsWith('runs >'))
      return json(422, { detail: 'invalid request', code: 'validation_error', errors: [{ loc: ['query', 'q'], msg: "position 6: expected a value after '>'", type: 'query_syntax' }] });
    if (query.q === 'name contains "exp 7"') return json(200, { items: [experiment(7)], next_cursor: null });
    // 60 experiments, newest (highest id) first, 50 a page
    const from = query.cursor === 'page2' ? 50 : 0;
    const ids = Array.from({ length: 60 }, (_, i) => 60 - i).slice(from, from + 50);
    return json(200, { items: ids.map(experiment), next_cursor: from === 0 ? 'page2' : null });
  }) as never);
});

afterEach(() => {
  act(() => root?.unmount());
  root = null;
  container.remove();
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

async function render(url: string) {
  const router = createMemoryRouter([{ path: '/', element: <><ExperimentsPage /><Where /></> }], { initialEntries: [url] });
  root = await mountRouter(container, router, makeQueryClient(), { id: 1, name: 'default', setProject: vi.fn() });
}


const rowIds = () => [...container.querySelectorAll('tr[data-experiment-id]')].map((r) => Number(r.getAttribute('data-experiment-id')));
const testId = (id: string) => container.querySelector<HTMLElement>(`[data-testid="${id}"]`);

async function type(text: string) {
  const box = container.querySelector<HTMLInputElement>('input[data-testid="experiments-search"]')!;
  await act(async () => {
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(box, text);
    box.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

describe('the experiments list', () => {
  it('pages on the server: 50, then the rest by the cursor', async () => {
    await render('/');
    await until(() => rowIds().length === 50);
    expect(rowIds()[0]).toBe(60);
    expect(testId('experiments-shown')!.textContent).toBe('50 shown, more on scroll');
    expect(requests[0]).toMatchObject({ project: 'default', limit: 50, order: 'desc' });
    await act(async () => testId('experiments-more')!.click());
    await until(() => rowIds().length === 60);
    expect(requests.some((r) => r.cursor === 'page2')).toBe(true);
    expect(rowIds().at(-1)).toBe(1);
    expect(testId('experiments-more')).toBeNull();
  });

  it("searches with q: plain words are a name search; a refused query's 422 shows under the box and the list stays", async () => {
    await render('/?q=exp%207');
    await until(() => rowIds().length === 1);
    expect(requests[0]!.q).toBe('name contains "exp 7"');
    expect(testId('experiments-search-hint')!.textContent).toContain('searching for name contains "exp 7"');
    await type('runs > ');
    const error = await until(() => testId('experiments-search-error'));
    expect(error.textContent).toContain('position 6');
    expect(rowIds()).toEqual([7]);
    expect(new URLSearchParams(where).get('q')).toBe('runs > ');
  });
});
