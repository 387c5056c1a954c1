// @vitest-environment jsdom
// The layout's current project on a page load: the project kept in localStorage from the first render.
// Read in an effect (Mantine's default), the first render had the project `default`, so every page that
// lists by project asked once for `default` beside the kept project (make perf-scale saw it on /runs).
import { MantineProvider } from '@mantine/core';
import { QueryClientProvider } from '@tanstack/react-query';
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { RouterProvider } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../../api/auth';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import { makeRouter } from '../../router';
import { installDomShims } from '../../test/dom';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function json(body: unknown) {
  return { data: body, response: new Response(JSON.stringify(body), { status: 200, headers: { 'Content-Type': 'application/json' } }) };
}

let root: Root | null = null;
let container: HTMLElement;
let runsProjects: unknown[] = [];

beforeEach(() => {
  installDomShims();
  container = document.body.appendChild(document.createElement('div'));
  localStorage.clear();
  runsProjects = [];
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  vi.spyOn(api, 'GET').mockImplementation((async (url: string, init?: { params?: { query?: Record<string, unknown> } }) => {
    if (url === '/api/v1/auth/me') return json({ id: 2, username: 'alice', is_admin: false, memberships: [{ project_id: 7, project: 'scale', role: 'member' }] });
    if (url === '/api/v1/projects') return json([{ id: 7, name: 'scale', description: '' }]);
    if (url === '/api/v1/runs') {
      runsProjects.push(init?.params?.query?.project);
      return json({ items: [], next_cursor: null });
    }
    return json([]);
  }) as never);
});

afterEach(() => {
  act(() => root?.unmount());
  root = null;
  container.remove();
  localStorage.clear();
  vi.restoreAllMocks();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the current project on a page load', () => {
  it('is the kept one from the first render: /runs asks for it alone, never for `default`', async () => {
    localStorage.setItem('reasonlab.project', JSON.stringify('scale'));
    window.history.replaceState(null, '', '/runs');
    const qc = makeQueryClient();
    await act(async () => {
      root = createRoot(container);
      root.render(
        <MantineProvider env="test">
          <QueryClientProvider client={qc}>
            <RouterProvider router={makeRouter(qc)} />
          </QueryClientProvider>
        </MantineProvider>,
      );
    });
    for (let i = 0; i < 100 && !/Runs in scale/.test(container.textContent ?? ''); i++) await act(() => sleep(20));
    for (let i = 0; i < 100 && runsProjects.length === 0; i++) await act(() => sleep(20));
    expect(container.textContent).toMatch(/Runs in scale/);
    expect(runsProjects.length).toBeGreaterThan(0);
    expect(runsProjects.filter((p) => p !== 'scale')).toEqual([]);
  });
});
