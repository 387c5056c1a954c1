// @vitest-environment jsdom
// The Datasets section of a project's settings, rendered in jsdom. The typed client itself sends every
// request (its serializers, its headers) to a fake fetch that answers as the API does (the list, an upload
// of raw bytes with its 422 on the name and its 413 over the limit, a delete by an admin or the uploader):
// the file goes as its own bytes with Content-Type application/octet-stream; the API's errors land inline,
// never as a notification; a viewer sees the list and the spec line, no form and no buttons.
import { MantineProvider } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import type { Dataset, Role } from '../../api/types';
import { testContainer } from '../../test/dom';
import { until } from '../../test/mount';
import { ProjectDatasets } from './ProjectDatasets';
import { isoDateTime } from '../../lib/plainFormat';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const LIMIT = 64;
const SHA = 'ab'.repeat(32);

interface Sent {
  method: string;
  path: string;
  contentType: string | null;
  body?: string;
}

function answer(status: number, body?: unknown): Response {
  return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}

/**
 * The API's datasets operations, in memory, behind a fake fetch that the real typed client sends to: each
 * of `api`'s methods is called as the app calls it, with only `fetch` and the base URL swapped in.
 */
function fakeApi({ role, user }: { role: Role; user: string }) {
  const store: Dataset[] = [
    { name: 'skills.csv', size: 2048, sha256: SHA, uploaded_at: '2025-01-02T03:04:05Z', uploaded_by: 'alice' },
    { name: 'topics.txt', size: 10, sha256: 'cd'.repeat(32), uploaded_at: '2025-01-03T03:04:05Z', uploaded_by: user },
  ];
  const sent: Sent[] = [];
  const fetchFake = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const body = request.method === 'PUT' ? await request.text() : undefined;
    sent.push({ method: request.method, path: decodeURIComponent(url.pathname), contentType: request.headers.get('Content-Type'), body });
    const m = /^\/api\/v1\/projects\/1\/datasets(?:\/(.*))?$/.exec(url.pathname);
    if (!m) return answer(404, { detail: 'no such route', code: 'not_found', errors: [] });
    const name = m[1] === undefined ? undefined : decodeURIComponent(m[1]);
    if (request.method === 'GET') return answer(200, [...store].sort((a, b) => (a.name < b.name ? -1 : 1)));
    if (!name) return answer(405, { detail: 'method not allowed', code: '405', errors: [] });
    // the path parameter's pattern (FastAPI's 422), then the API's own check (no '..')
    if (!NAME_PATTERN.test(name)) {
      const msg = `String should match pattern '${NAME_PATTERN.source}'`;
      return answer(422, { detail: `path.name: ${msg}`, code: 'invalid', errors: [{ loc: ['path', 'name'], msg, type: 'string_pattern_mismatch' }] });
    }
    if (name.includes('..')) {
      const msg = 'a dataset name is a file name (letters, digits, . _ -, at most 128, starting with a letter or digit, no \'..\'), never a path';
      return answer(422, { detail: `dataset name '${name}' refused: ${msg}`, code: 'invalid', errors: [{ loc: ['path', 'name'], msg, type: 'dataset_name' }] });
    }
    if (role === 'viewer') return answer(403, { detail: 'your role in this project is viewer; this needs member', code: 'forbidden', errors: [] });
    if (request.method === 'PUT') {
      if ((body ?? '').length > LIMIT)
        return answer(413, { detail: `a dataset may hold at most ${LIMIT} bytes (REASONLAB_DATASET_MAX_BYTES)`, code: 'too_large', errors: [] });
      const dataset = { name, size: body!.length, sha256: 'ef'.repeat(32), uploaded_at: new Date().toISOString(), uploaded_by: user };
      store.splice(0, store.length, ...store.filter((d) => d.name !== name), dataset);
      return answer(200, dataset);
    }
    const dataset = store.find((d) => d.name === name);
    if (!dataset) return answer(404, { detail: `dataset '${name}' not found in project 1`, code: 'not_found', errors: [] });
    if (role !== 'admin' && dataset.uploaded_by !== user)
      return answer(403, { detail: `only a project admin or its uploader deletes dataset '${name}'`, code: 'forbidden', errors: [] });
    store.splice(0, store.length, ...store.filter((d) => d.name !== name));
    return new Response(null, { status: 204 });
  };
  for (const method of ['GET', 'PUT', 'DELETE'] as const) {
    const real = api[method].bind(api) as (url: string, init: object) => Promise<unknown>;
    vi.spyOn(api, method).mockImplementation(((url: string, init: object) =>
      real(url, { ...init, baseUrl: 'http://api.test', fetch: fetchFake })) as never);
  }
  return { store, sent };
}

let qc: QueryClient;
const dom = testContainer(() => {
  qc = makeQueryClient();
});
afterEach(() => {
  document.body.innerHTML = ''; // what Mantine put in the body outside the container (its portals)
});

async function render(role: Role, username: string) {
  await act(async () => {
    dom.root = createRoot(dom.element);
    dom.root.render(
      <MantineProvider env="test">
        <QueryClientProvider client={qc}>
          <ProjectDatasets projectId={1} role={role} username={username} />
        </QueryClientProvider>
      </MantineProvider>,
    );
  });
  await until(() => dom.element.querySelector('[data-testid="datasets-table"], [data-testid="datasets-empty"]'));
}

const byLabel = (label: string) =>
  [...document.querySelectorAll('label')].find((l) => l.textContent?.replace('*', '').trim() === label)?.control as HTMLInputElement;
const button = (name: string) => [...document.querySelectorAll('button')].find((b) => (b.getAttribute('aria-label') ?? b.textContent) === name)!;
const rows = () => [...dom.element.querySelectorAll('[data-testid="dataset-row"]')].map((r) => r.getAttribute('data-name'));
const row = (name: string) => dom.element.querySelector(`[data-testid="dataset-row"][data-name="${name}"]`)!;
const click = (b: HTMLElement) => act(async () => b.click());

async function pickFile(name: string, text: string) {
  const input = byLabel('File');
  expect(input.type).toBe('file');
  const file = new File([text], name, { type: 'application/json' });
  Object.defineProperty(input, 'files', { value: [file], configurable: true });
  await act(async () => input.dispatchEvent(new Event('change', { bubbles: true })));
}
async function typeName(text: string) {
  const input = byLabel('Name');
  await act(async () => {
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, text);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}
function fieldError(input: HTMLInputElement): string | undefined {
  const id = input.getAttribute('aria-describedby')?.split(' ').find((x) => x.includes('error'));
  return id ? (document.getElementById(id)?.textContent ?? undefined) : undefined;
}

describe('ProjectDatasets for a member', () => {
  it('lists name, size, short sha256, uploader and time, with copy buttons and the spec line', async () => {
    fakeApi({ role: 'member', user: 'bob' });
    const writeText = vi.fn(async () => {});
    Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });
    await render('member', 'bob');
    expect(rows()).toEqual(['skills.csv', 'topics.txt']);
    const skills = row('skills.csv');
    expect(skills.querySelector('[data-testid="dataset-size"]')?.textContent).toBe('2.00 KB');
    expect(skills.querySelector('[data-testid="dataset-size"]')?.getAttribute('title')).toBe('2048 bytes');
    expect(skills.textContent).toContain('abababababab');
    expect(skills.textContent).not.toContain(SHA);
    expect(skills.textContent).toContain('alice');
    expect(skills.querySelector('[data-testid="dataset-uploaded-at"]')?.getAttribute('title')).toBe(isoDateTime('2025-01-02T03:04:05Z'));

    await click(button('copy the sha256 of skills.csv'));
    expect(writeText).toHaveBeenLastCalledWith(SHA);
    await until(() => button('copy the sha256 of skills.csv').hasAttribute('data-copied'));
    await click(button('copy dataset:skills.csv'));
    expect(writeText).toHaveBeenLastCalledWith('dataset:skills.csv');
    expect(dom.element.querySelector('[data-testid="dataset-spec-line"] code')?.textContent).toBe('data.path: dataset:skills.csv');
    await click(button('copy the spec line'));
    expect(writeText).toHaveBeenLastCalledWith('data.path: dataset:skills.csv');
  });

  it('uploads the file as raw bytes with Content-Type application/octet-stream, the name defaulting to the file name, and lists it', async () => {
    const { sent } = fakeApi({ role: 'member', user: 'bob' });
    const notified = vi.spyOn(notifications, 'show');
    await render('member', 'bob');
    const jsonl = '{"input": "1+1", "output": "2"}\n';
    await pickFile('train.jsonl', jsonl);
    expect(byLabel('Name').value).toBe('train.jsonl');
    await click(button('Upload'));
    await until(() => rows().includes('train.jsonl'));
    expect(sent.filter((s) => s.method === 'PUT')).toEqual([
      { method: 'PUT', path: '/api/v1/projects/1/datasets/train.jsonl', contentType: 'application/octet-stream', body: jsonl },
    ]);
    expect(row('train.jsonl').querySelector('[data-testid="dataset-size"]')?.textContent).toBe(`${jsonl.length} B`);
    expect(row('train.jsonl').textContent).toContain('bob');
    // the form is emptied, and the list asked again (the mutation invalidates it)
    expect(byLabel('Name').value).toBe('');
    await until(() => sent.filter((s) => s.method === 'GET').length >= 2);
    expect(notified).not.toHaveBeenCalled();
  });

  it("shows the API's 422 on the Name field and its 413 on the File field, with no notification", async () => {
    const { sent } = fakeApi({ role: 'member', user: 'bob' });
    const notified = vi.spyOn(notifications, 'show');
    await render('member', 'bob');
    await pickFile('my data.jsonl', '{}\n');
    await click(button('Upload'));
    const name = byLabel('Name');
    await until(() => name.getAttribute('aria-invalid') === 'true');
    expect(fieldError(name)).toBe("String should match pattern '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$'");
    expect(sent.filter((s) => s.method === 'PUT').map((s) => s.path)).toEqual(['/api/v1/projects/1/datasets/my data.jsonl']);
    await typeName('a..b.jsonl');
    await click(button('Upload'));
    await until(() => fieldError(name)?.includes('never a path'));

    await typeName('big.jsonl');
    expect(name.getAttribute('aria-invalid')).not.toBe('true');
    await pickFile('big.jsonl', 'x'.repeat(LIMIT + 1));
    await click(button('Upload'));
    const file = byLabel('File');
    await until(() => file.getAttribute('aria-invalid') === 'true');
    expect(fieldError(file)).toBe(`a dataset may hold at most ${LIMIT} bytes (REASONLAB_DATASET_MAX_BYTES)`);
    expect(rows()).toEqual(['skills.csv', 'topics.txt']);
    expect(notified).not.toHaveBeenCalled();

    // a name the URL cannot carry is refused before any request
    const before = sent.length;
    await typeName('a/b');
    await click(button('Upload'));
    await until(() => fieldError(name)?.includes('never a path'));
    expect(sent.length).toBe(before);
  });

  it("replaces from a row: the row's name kept whatever the new file is called, the button says Replace", async () => {
    const { sent } = fakeApi({ role: 'member', user: 'bob' });
    await render('member', 'bob');
    await click(button('replace skills.csv'));
    expect(byLabel('Name').value).toBe('skills.csv');
    await pickFile('skills-v2.csv', 'a,b\n1,2\n');
    expect(byLabel('Name').value).toBe('skills.csv');
    await click(button('Replace dataset'));
    await until(() => row('skills.csv').textContent?.includes('bob'));
    expect(sent.find((s) => s.method === 'PUT')?.path).toBe('/api/v1/projects/1/datasets/skills.csv');
    expect(row('skills.csv').querySelector('[data-testid="dataset-size"]')?.textContent).toBe('8 B');
  });

  it('deletes only what it uploaded, only once confirmed', async () => {
    const { sent } = fakeApi({ role: 'member', user: 'bob' });
    await render('member', 'bob');
    expect(button('delete skills.csv')).toBeUndefined(); // alice's
    await click(button('delete topics.txt'));
    const dialog = await until(() => document.querySelector('[role="dialog"]'));
    expect(dialog.textContent).toContain('Delete dataset topics.txt?');
    await click(button('Cancel'));
    expect(sent.some((s) => s.method === 'DELETE')).toBe(false);

    await click(button('delete topics.txt'));
    await click(await until(() => document.querySelector<HTMLElement>('[data-testid="confirm-delete-dataset"]')));
    await until(() => !rows().includes('topics.txt'));
    expect(sent.filter((s) => s.method === 'DELETE').map((s) => s.path)).toEqual(['/api/v1/projects/1/datasets/topics.txt']);
    expect(rows()).toEqual(['skills.csv']);
  });
});

describe('ProjectDatasets for an admin and a viewer', () => {
  it("an admin deletes anyone's dataset", async () => {
    fakeApi({ role: 'admin', user: 'root' });
    await render('admin', 'root');
    await click(button('delete skills.csv'));
    await click(await until(() => document.querySelector<HTMLElement>('[data-testid="confirm-delete-dataset"]')));
    await until(() => !rows().includes('skills.csv'));
  });

  it('a viewer sees the list and how a spec names one; no form, no replace, no delete', async () => {
    fakeApi({ role: 'viewer', user: 'vic' });
    await render('viewer', 'vic');
    expect(rows()).toEqual(['skills.csv', 'topics.txt']);
    expect(dom.element.querySelector('form')).toBeNull();
    expect(dom.element.querySelector('[data-testid="datasets-read-only"]')?.textContent).toMatch(/Project members and admins upload them/);
    const labels = [...dom.element.querySelectorAll('button')].map((b) => b.getAttribute('aria-label') ?? b.textContent);
    expect(labels.filter((l) => /^(replace|delete|Upload)/.test(l ?? ''))).toEqual([]);
    expect(labels).toContain('copy the spec line');
  });
});
