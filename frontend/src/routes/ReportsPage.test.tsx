// @vitest-environment jsdom
// The reports page in jsdom against a fake of the reports list: the list answers a page at a time, and the
// page reads every page (the cursor followed, each asked with the largest limit), then shows every report
// once, the most recently saved first.
import type { QueryClient } from '@tanstack/react-query';
import { readFileSync } from 'node:fs';
import { act } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../api/auth';
import { api } from '../api/client';
import { makeQueryClient } from '../api/queryClient';
import type { ReportSummary } from '../api/types';
import { REPORTS_PAGE } from '../hooks/reports';
import { installDomShims } from '../test/dom';
import { mountRouter, until } from '../test/mount';
import { ReportsPage } from './ReportsPage';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function json(status: number, body?: unknown) {
  const response = new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  return status < 300 ? { data: body, response } : { error: body, response };
}

const report = (id: number, updated: string): ReportSummary => ({
  id,
  project_id: 1,
  title: `report ${id}`,
  version: 1,
  author: 'meg',
  updated_at: updated,
  revisions: id % 2,
});

describe('reports page', () => {
  let container: HTMLDivElement;
  let root: Root | undefined;
  let qc: QueryClient;

  beforeEach(() => {
    installDomShims();
    container = document.createElement('div');
    document.body.appendChild(container);
    qc = makeQueryClient();
  });

  afterEach(async () => {
    await act(async () => root?.unmount());
    container.remove();
    qc.clear();
    vi.restoreAllMocks();
  });

  it("follows the list's pages and shows every report once, the most recently saved first", async () => {
    vi.spyOn(authStore, 'token').mockReturnValue('jwt');
    const asked: unknown[] = [];
    // pages newest first by id, as the API answers them; report 1 was saved last
    const first = [report(3, '2026-01-03T00:00:00Z'), report(2, '2026-01-02T00:00:00Z')];
    const second = [report(1, '2026-01-05T00:00:00Z')];
    vi.spyOn(api, 'GET').mockImplementation((async (url: string, init?: { params?: { query?: unknown } }) => {
      if (url === '/api/v1/projects/{project_id}/reports') {
        const query = init?.params?.query as { limit?: number; cursor?: string };
        asked.push(query);
        if (query.cursor === undefined) return json(200, { items: first, next_cursor: 'before-2' });
        if (query.cursor === 'before-2') return json(200, { items: second, next_cursor: null });
        return json(422, { detail: 'invalid cursor', code: 'invalid', errors: [] });
      }
      return json(404, { detail: 'no', code: 'not_found', errors: [] });
    }) as unknown as typeof api.GET);
    const router = createMemoryRouter([{ path: '/reports', element: <ReportsPage /> }], { initialEntries: ['/reports'] });
    root = await mountRouter(container, router, qc, { id: 1, name: 'default', setProject: () => {} });
    const table = await until(() => container.querySelector('[data-testid="reports"]'));
    const titles = [...table.querySelectorAll('tbody tr')].map((tr) => tr.querySelector('td')?.textContent);
    expect(titles).toEqual(['report 1', 'report 3', 'report 2']);
    expect(asked).toEqual([{ limit: REPORTS_PAGE }, { limit: REPORTS_PAGE, cursor: 'before-2' }]);
  });

  it("asks with the API's largest limit (a larger one would be a 422)", () => {
    const doc = JSON.parse(readFileSync('openapi.json', 'utf8')) as {
      paths: Record<string, { get: { parameters: { name: string; schema: { maximum?: number } }[] } }>;
    };
    const limit = doc.paths['/api/v1/projects/{project_id}/reports']?.get.parameters.find((p) => p.name === 'limit');
    expect(REPORTS_PAGE).toBe(limit?.schema.maximum);
  });
});
