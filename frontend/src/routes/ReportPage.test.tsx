// @vitest-environment jsdom
// The report editor in jsdom against an in-memory fake of the reports API: an edit is saved a moment after
// it is typed, naming the version it was made on; when someone else saved since, the API's 409 is shown
// with the blocks that changed, and "Load the saved version" replaces the local draft with the saved one.
import { act } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../api/auth';
import { api } from '../api/client';
import { makeQueryClient } from '../api/queryClient';
import { installDomShims } from '../test/dom';
import { mountRouter, until } from '../test/mount';
import { ReportPage } from './ReportPage';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const report = (version: number, text: string) => ({
  id: 7, project_id: 1, title: 'Finding', version, author: 'meg', created_at: '2026-11-28T20:00:00Z', updated_at: '2026-11-28T20:00:00Z',
  revisions: 0, can_edit: true, blocks: [{ id: 'm', type: 'markdown', text }],
});

let server = report(2, 'saved by someone else');
const puts: unknown[] = [];

function fakeApi() {
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  const ok = (data: unknown) => ({ data, response: new Response('{}', { status: 200 }) });
  vi.spyOn(api, 'GET').mockImplementation((async (url: string) => {
    if (url === '/api/v1/reports/{report_id}') return ok(server);
    return ok(url.endsWith('/data') ? {} : []);
  }) as never);
  vi.spyOn(api, 'PUT').mockImplementation((async (_url: string, init: { body: { base_version: number; blocks: unknown[] } }) => {
    puts.push(init.body);
    if (init.body.base_version !== server.version) {
      const body = {
        detail: `the report changed since version ${init.body.base_version}: it is at version ${server.version}`,
        code: 'conflict',
        errors: [
          { loc: ['body', 'base_version'], msg: `current version is ${server.version}`, type: 'stale' },
          { loc: ['blocks', 'm'], msg: 'differs from the saved version', type: 'stale' },
        ],
      };
      return { error: body, response: new Response(JSON.stringify(body), { status: 409 }) };
    }
    server = { ...server, version: server.version + 1, blocks: init.body.blocks as typeof server.blocks };
    return ok(server);
  }) as never);
}

let root: Root | null = null;
let container: HTMLElement;

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

function type(el: HTMLTextAreaElement, value: string) {
  Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value')!.set!.call(el, value);
  el.dispatchEvent(new Event('input', { bubbles: true }));
}

const button = (name: string) => [...document.querySelectorAll('button')].find((b) => b.textContent === name);

describe('ReportPage, saving as you type', () => {
  it('shows a stale edit refused with 409, which blocks changed, and loads the saved version', async () => {
    // the page opens version 1; someone saves version 2 before this editor's first save
    server = report(1, 'first');
    const router = createMemoryRouter([{ path: '/reports/:id', element: <ReportPage /> }], { initialEntries: ['/reports/7'] });
    root = await mountRouter(container, router, makeQueryClient());
    const edit = await until(() => button('Edit'));
    await act(async () => edit.click());
    const area = await until(() => document.querySelector<HTMLTextAreaElement>('[data-testid="block-text"]'));
    server = report(2, 'saved by someone else');
    await act(async () => type(area, 'mine'));
    const conflict = await until(() => document.querySelector('[data-testid="conflict"]'));
    expect(puts).toEqual([{ base_version: 1, title: 'Finding', blocks: [{ id: 'm', type: 'markdown', text: 'mine' }] }]);
    expect(conflict.textContent).toContain('block m: differs from the saved version');
    expect(document.querySelector('[data-testid="save-state"]')!.textContent).toBe('not saved');
    await act(async () => button('Load the saved version (drops my unsaved edits)')!.click());
    await until(() => !document.querySelector('[data-testid="conflict"]'));
    expect(document.querySelector<HTMLTextAreaElement>('[data-testid="block-text"]')!.value).toBe('saved by someone else');
    // the next edit is made on version 2 and saved
    await act(async () => type(document.querySelector<HTMLTextAreaElement>('[data-testid="block-text"]')!, 'mine, again'));
    await until(() => document.querySelector('[data-testid="save-state"]')!.textContent === 'saved (version 3)');
    expect(puts.at(-1)).toMatchObject({ base_version: 2, blocks: [{ id: 'm', text: 'mine, again' }] });
  });
});
