// @vitest-environment jsdom
// Saved views in the dashboard, rendered in jsdom against an in-memory fake of the API's views
// operations: the "Save view" button saves the state the page's URL holds (lib/viewState.ts) and shows a
// taken name on the name field; the sidebar lists the project's views and offers rename and delete only
// where the API says the caller may; `/views/<id>` reads a view by its id alone (any of the caller's
// projects), switches to its project and replaces itself with the view's page carrying its state.
import type { QueryClient } from '@tanstack/react-query';
import { act, type ReactNode } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter, useLocation } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../../api/auth';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import type { SavedView } from '../../api/types';
import { SavedViewPage } from '../../routes/SavedViewPage';
import { installDomShims } from '../../test/dom';
import { mountRouter, until } from '../../test/mount';
import { SavedViewsNav } from '../layout/SavedViewsNav';
import { SaveViewButton } from './SaveViewButton';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function json(status: number, body?: unknown) {
  const response = new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  return status < 300 ? { data: body, response } : { error: body, response };
}

const STATE = { query: 'kind = "carma"', columns: [], group_by: 'all spec fields but seed', sort: null, chart: null };

function view(id: number, name: string, projectId: number, canEdit: boolean): SavedView {
  return {
    id,
    project_id: projectId,
    name,
    page: 'experiments',
    state: STATE as SavedView['state'],
    author: 'meg',
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    can_edit: canEdit,
  };
}

/** The API's auth-me, projects-list and views operations, in memory. */
function fakeApi(role: 'viewer' | 'member', views: SavedView[]) {
  const requests: { method: string; path: Record<string, number>; body?: unknown }[] = [];
  type Init = { params?: { path?: Record<string, number> }; body?: { name: string } & Record<string, unknown> };
  const me = { id: 2, username: 'meg', is_admin: false, memberships: [{ project_id: 1, project: 'default', role }, { project_id: 2, project: 'side', role }] };
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  vi.spyOn(api, 'GET').mockImplementation((async (url: string, init?: Init) => {
    const path = init?.params?.path ?? {};
    requests.push({ method: 'GET', path });
    if (url === '/api/v1/auth/me') return json(200, me);
    if (url === '/api/v1/projects') return json(200, [{ id: 1, name: 'default', role }, { id: 2, name: 'side', role }]);
    if (url.endsWith('/views')) return json(200, views.filter((v) => v.project_id === path.project_id));
    // `/api/v1/views/{view_id}` answers for any of the caller's projects; the project's route for its own
    const byId = url === '/api/v1/views/{view_id}';
    const found = views.find((v) => v.id === path.view_id && (byId ? me.memberships.some((m) => m.project_id === v.project_id) : v.project_id === path.project_id));
    return found ? json(200, found) : json(404, { detail: 'view not found', code: 'not_found', errors: [] });
  }) as never);
  vi.spyOn(api, 'POST').mockImplementation((async (_url: string, init: Init) => {
    requests.push({ method: 'POST', path: init.params!.path!, body: init.body });
    if (views.some((v) => v.name === init.body!.name)) {
      return json(409, { detail: `a view named '${init.body!.name}' already exists in this project`, code: 'conflict', errors: [{ loc: ['body', 'name'], msg: 'taken', type: 'duplicate' }] });
    }
    const saved = { ...view(50 + views.length, init.body!.name, 1, true), state: init.body!.state as SavedView['state'] };
    views.push(saved);
    return json(201, saved);
  }) as never);
  vi.spyOn(api, 'PATCH').mockImplementation((async (_url: string, init: Init) => {
    requests.push({ method: 'PATCH', path: init.params!.path!, body: init.body });
    const v = views.find((x) => x.id === init.params!.path!.view_id)!;
    v.name = init.body!.name;
    return json(200, v);
  }) as never);
  vi.spyOn(api, 'DELETE').mockImplementation((async (_url: string, init: Init) => {
    requests.push({ method: 'DELETE', path: init.params!.path! });
    views.splice(views.findIndex((x) => x.id === init.params!.path!.view_id), 1);
    return { data: undefined, response: new Response(null, { status: 204 }) };
  }) as never);
  return requests;
}

let root: Root | null = null;
let container: HTMLElement;
let qc: QueryClient;
let where = '';
let project = { id: 1 as number | undefined, name: 'default', setProject: vi.fn() };

function Where() {
  const location = useLocation();
  where = location.pathname + location.search;
  return null;
}

beforeEach(() => {
  installDomShims();
  container = document.body.appendChild(document.createElement('div'));
  qc = makeQueryClient();
  project = { id: 1, name: 'default', setProject: vi.fn() };
});

afterEach(() => {
  act(() => root?.unmount());
  root = null;
  container.remove();
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

async function render(element: ReactNode, url: string, path = '/') {
  const router = createMemoryRouter(
    [
      { path, element: <>{element}<Where /></> },
      { path: '*', element: <Where /> },
    ],
    { initialEntries: [url] },
  );
  root = await mountRouter(container, router, qc, project);
}


const byTestId = (id: string) => document.querySelector<HTMLElement>(`[data-testid="${id}"]`);
const button = (name: string) => [...document.querySelectorAll('button')].find((b) => (b.getAttribute('aria-label') ?? b.textContent?.trim()) === name);
const click = (b: HTMLElement) => act(async () => b.click());
async function type(input: HTMLInputElement, text: string) {
  await act(async () => {
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, text);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

describe('SaveViewButton', () => {
  it("saves the state of the page's URL under a name, and shows a taken name on the name field", async () => {
    const requests = fakeApi('member', [view(7, 'taken', 1, true)]);
    await render(<SaveViewButton page="experiments" />, '/?tab=x&q=kind+%3D+%22carma%22&group=*&sort=-metrics.acc%3Abest');
    await click(await until(() => byTestId('save-view')));
    const name = await until(() => byTestId('view-name') as HTMLInputElement | null);
    await type(name, 'taken');
    await click(byTestId('view-name-submit')!);
    await until(() => name.getAttribute('aria-invalid') === 'true');
    expect(document.body.textContent).toContain("a view named 'taken' already exists");

    await type(name, '  carma seeds ');
    await click(byTestId('view-name-submit')!);
    const saved = await until(() => byTestId('view-saved'));
    expect(saved.textContent).toBe('Saved as carma seeds');
    expect(saved.querySelector('a')!.getAttribute('href')).toBe('/views/51');
    expect(requests.filter((r) => r.method === 'POST').map((r) => r.body)).toEqual([
      { name: 'taken', page: 'experiments', state: expect.anything() },
      {
        name: 'carma seeds',
        page: 'experiments',
        state: {
          query: 'kind = "carma"',
          columns: [],
          group_by: 'all spec fields but seed',
          sort: { field: 'metrics.acc', order: 'desc', aggregate: 'best' },
          chart: null,
          charts: [],
          runs: [],
        },
      },
    ]);
  });

  it('is not there for a viewer', async () => {
    const requests = fakeApi('viewer', []);
    await render(<SaveViewButton page="runs" />, '/?q=x');
    // once the caller's role is known (the button is not there while it loads either)
    await until(() => requests.some((r) => r.method === 'GET') && qc.getQueryData(['me', 'jwt']));
    await act(() => new Promise((r) => setTimeout(r, 30)));
    expect(byTestId('save-view')).toBeNull();
    expect(container.querySelectorAll('button')).toHaveLength(0);
  });
});

describe('SavedViewsNav', () => {
  it("lists the project's views as /views/<id> links; rename and delete only where can_edit", async () => {
    const requests = fakeApi('member', [view(3, 'mine', 1, true), view(4, 'theirs', 1, false), view(9, 'elsewhere', 2, true)]);
    await render(<SavedViewsNav />, '/');
    await until(() => container.querySelector('[data-view-id="4"]'));
    const links = [...container.querySelectorAll('nav a')].map((a) => [a.textContent, a.getAttribute('href')]);
    expect(links).toEqual([
      ['mine', '/views/3'],
      ['theirs', '/views/4'],
    ]);
    expect(button('Actions for view mine')).toBeDefined();
    expect(button('Actions for view theirs')).toBeUndefined();

    await click(button('Actions for view mine')!);
    await click(await until(() => [...document.querySelectorAll('[role="menuitem"]')].find((m) => m.textContent === 'Rename') as HTMLElement));
    const name = await until(() => byTestId('view-name') as HTMLInputElement | null);
    expect(name.value).toBe('mine');
    await type(name, 'mine, renamed');
    await click(byTestId('view-name-submit')!);
    await until(() => container.querySelector('[data-view-id="3"] a')?.textContent === 'mine, renamed');
    expect(requests.find((r) => r.method === 'PATCH')).toEqual({ method: 'PATCH', path: { project_id: 1, view_id: 3 }, body: { name: 'mine, renamed' } });

    await click(button('Actions for view mine, renamed')!);
    await click(await until(() => [...document.querySelectorAll('[role="menuitem"]')].find((m) => m.textContent === 'Delete') as HTMLElement));
    await click(await until(() => byTestId('view-delete-confirm')));
    await until(() => !container.querySelector('[data-view-id="3"]'));
    expect(requests.filter((r) => r.method === 'DELETE')).toEqual([{ method: 'DELETE', path: { project_id: 1, view_id: 3 } }]);
  });
});

describe('/views/<id>', () => {
  it("reads a view of another of the caller's projects by its id, switches to that project and opens its page with its state in the URL", async () => {
    const requests = fakeApi('member', [view(9, 'elsewhere', 2, false)]);
    await render(<SavedViewPage />, '/views/9', '/views/:id');
    await until(() => where.startsWith('/experiments?'));
    expect(where).toBe('/experiments?q=kind+%3D+%22carma%22&group=*');
    expect(project.setProject).toHaveBeenCalledWith('side');
    // one request, by the id alone: the address names no project
    expect(requests.filter((r) => 'view_id' in r.path).map((r) => r.path)).toEqual([{ view_id: 9 }]);
  });

  it("stays in the current project when the view is one of its own", async () => {
    const requests = fakeApi('member', [view(7, 'here', 1, true)]);
    await render(<SavedViewPage />, '/views/7', '/views/:id');
    await until(() => where.startsWith('/experiments?'));
    expect(where).toBe('/experiments?q=kind+%3D+%22carma%22&group=*');
    expect(project.setProject).not.toHaveBeenCalled();
    expect(requests.filter((r) => 'view_id' in r.path).map((r) => r.path)).toEqual([{ view_id: 7 }]);
  });

  it('says so when no project has it, and when the id is not one', async () => {
    fakeApi('member', []);
    await render(<SavedViewPage />, '/views/12', '/views/:id');
    expect((await until(() => byTestId('view-missing'))).textContent).toBe('view 12 not found in your projects');
    act(() => root?.unmount());
    root = null;
    await render(<SavedViewPage />, '/views/abc', '/views/:id');
    expect((await until(() => byTestId('view-missing'))).textContent).toBe('abc is not a view id');
    expect(project.setProject).not.toHaveBeenCalled();
  });
});
