// @vitest-environment jsdom
// The Secrets section of a project's settings, rendered in jsdom against a fake of the API's four
// secrets operations (the typed client's GET/PUT/PATCH/DELETE answered in memory, with the API's error
// bodies): an admin sets, replaces and deletes, with the hosts each may be sent to; the value is
// sent once and kept nowhere; the API's 422s land on the field they name and a 403 above the form, with no
// notification; members and viewers only read names and hosts.
import { MantineProvider } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import type { Secret } from '../../api/types';
import { ProjectSecrets } from './ProjectSecrets';
import { testContainer } from '../../test/dom';
import { until } from '../../test/mount';
import { isoDateTime } from '../../lib/plainFormat';

const VALUE = 'sk-test-0123456789-do-not-show';
const NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function json(status: number, body?: unknown) {
  const response = new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  return status < 300 ? { data: body, response } : { error: body, response };
}

/** The API's secrets operations, in memory: what each request carried, and the answers the backend gives. */
function fakeApi({ admin }: { admin: boolean }) {
  const store: Secret[] = [{ name: 'GRADER_KEY', hosts: ['api.openai.com'], updated_at: '2025-01-02T03:04:05Z', updated_by: 'alice' }];
  const requests: { method: string; path: unknown; body?: unknown }[] = [];
  type Init = { params: { path: { project_id: number; name?: string } }; body?: { value?: string; hosts?: string[] } };
  /** the API's 422 for an entry that is no host (here: one with a blank or starting with ftp) */
  const badHost = (hosts: string[] | undefined) => {
    const i = (hosts ?? []).findIndex((h) => h.startsWith('ftp:'));
    if (i < 0) return null;
    const msg = "Value error, 'ftp://x': only http and https URL prefixes";
    return json(422, { detail: `body.hosts.${i}: ${msg}`, code: 'invalid', errors: [{ loc: ['body', 'hosts', i], msg, type: 'value_error' }] });
  };
  vi.spyOn(api, 'GET').mockImplementation((async (_url: string, init: Init) => {
    requests.push({ method: 'GET', path: init.params.path });
    return json(200, [...store]);
  }) as never);
  vi.spyOn(api, 'PUT').mockImplementation((async (_url: string, init: Init) => {
    requests.push({ method: 'PUT', path: init.params.path, body: structuredClone(init.body) });
    const name = init.params.path.name ?? '';
    if (!NAME_PATTERN.test(name)) {
      const msg = "String should match pattern '^[A-Za-z_][A-Za-z0-9_]{0,63}$'";
      return json(422, { detail: `path.name: ${msg}`, code: 'invalid', errors: [{ loc: ['path', 'name'], msg, type: 'string_pattern_mismatch' }] });
    }
    if (!init.body?.value) {
      const msg = 'String should have at least 1 character';
      return json(422, { detail: `body.value: ${msg}`, code: 'invalid', errors: [{ loc: ['body', 'value'], msg, type: 'string_too_short' }] });
    }
    const refused = badHost(init.body?.hosts);
    if (refused) return refused;
    if (!admin) return json(403, { detail: 'project 1: admin role required', code: 'forbidden', errors: [] });
    const before = store.find((s) => s.name === name);
    const secret = { name, hosts: init.body?.hosts ?? before?.hosts ?? [], updated_at: new Date().toISOString(), updated_by: 'root' };
    store.splice(0, store.length, ...store.filter((s) => s.name !== name), secret);
    return json(200, secret);
  }) as never);
  vi.spyOn(api, 'PATCH').mockImplementation((async (_url: string, init: Init) => {
    requests.push({ method: 'PATCH', path: init.params.path, body: structuredClone(init.body) });
    const refused = badHost(init.body?.hosts);
    if (refused) return refused;
    const before = store.find((s) => s.name === init.params.path.name);
    if (!before) return json(404, { detail: 'not found', code: 'not_found', errors: [] });
    const secret = { ...before, hosts: init.body?.hosts ?? [] };
    store.splice(0, store.length, ...store.filter((s) => s.name !== secret.name), secret);
    return json(200, secret);
  }) as never);
  vi.spyOn(api, 'DELETE').mockImplementation((async (_url: string, init: Init) => {
    requests.push({ method: 'DELETE', path: init.params.path });
    store.splice(0, store.length, ...store.filter((s) => s.name !== init.params.path.name));
    return { data: undefined, response: new Response(null, { status: 204 }) };
  }) as never);
  return { store, requests };
}

let qc: QueryClient;
const dom = testContainer(() => {
  qc = makeQueryClient();
});
afterEach(() => {
  document.body.innerHTML = ''; // what Mantine put in the body outside the container (its portals)
});

async function render(canManage: boolean) {
  await act(async () => {
    dom.root = createRoot(dom.element);
    dom.root.render(
      <MantineProvider env="test">
        <QueryClientProvider client={qc}>
          <ProjectSecrets projectId={1} canManage={canManage} />
        </QueryClientProvider>
      </MantineProvider>,
    );
  });
  await until(() => dom.element.querySelector('[data-testid="secrets-table"], [data-testid="secrets-empty"]'));
}


const byLabel = (label: string) =>
  [...document.querySelectorAll('label')].find((l) => l.textContent?.replace('*', '').trim() === label)?.control as HTMLInputElement;
const button = (name: string) => [...document.querySelectorAll('button')].find((b) => (b.getAttribute('aria-label') ?? b.textContent) === name)!;
const rows = () => [...dom.element.querySelectorAll('[data-testid="secret-row"]')].map((r) => r.getAttribute('data-name'));

async function typeName(text: string) {
  const input = byLabel('Name');
  await act(async () => {
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, text);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}
async function typeInto(input: HTMLTextAreaElement, text: string) {
  await act(async () => {
    Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value')!.set!.call(input, text);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}
const hostsField = (within: ParentNode = document) =>
  [...within.querySelectorAll('label')].find((l) => l.textContent?.replace('*', '').trim() === 'Sent only to')?.control as HTMLTextAreaElement;
async function typeValue(text: string) {
  const input = byLabel('Value');
  await act(async () => {
    input.value = text;
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}
const click = (b: HTMLElement) => act(async () => b.click());

describe('ProjectSecrets for a project admin', () => {
  it('lists names with who set them and when, never a value', async () => {
    fakeApi({ admin: true });
    await render(true);
    expect(rows()).toEqual(['GRADER_KEY']);
    const row = dom.element.querySelector('[data-name="GRADER_KEY"]')!;
    expect(row.textContent).toContain('alice');
    expect(row.querySelector('td[title]')?.getAttribute('title')).toBe(isoDateTime('2025-01-02T03:04:05Z'));
    expect(dom.element.textContent).toContain('api_key_secret: NAME');
    expect(dom.element.querySelector('[data-testid="secrets-read-only"]')).toBeNull();
  });

  it('sends the value once, in the body, then keeps it nowhere: not in the page, the input, React state or the mutation cache', async () => {
    const { requests } = fakeApi({ admin: true });
    const notified = vi.spyOn(notifications, 'show');
    await render(true);
    const value = byLabel('Value');
    expect(value.type).toBe('password');
    expect(value.autocomplete).toBe('new-password');
    await typeName('OPENAI_API_KEY');
    await typeValue(VALUE);
    await click(button('Save secret'));
    await until(() => rows().includes('OPENAI_API_KEY'));
    expect(requests.filter((r) => r.method === 'PUT')).toEqual([{ method: 'PUT', path: { project_id: 1, name: 'OPENAI_API_KEY' }, body: { value: VALUE, hosts: [] } }]);
    // set without hosts: listed as sent nowhere yet
    expect(dom.element.querySelector('[data-name="OPENAI_API_KEY"] [data-testid="secret-hosts-none"]')?.textContent).toBe('nowhere yet');
    expect(value.value).toBe('');
    expect(byLabel('Name').value).toBe('');
    expect(document.documentElement.outerHTML).not.toContain(VALUE);
    expect(JSON.stringify(qc.getMutationCache().getAll().map((m) => m.state))).not.toContain(VALUE);
    expect(JSON.stringify(qc.getQueryCache().getAll().map((q) => q.state.data))).not.toContain(VALUE);
    expect(notified).not.toHaveBeenCalled();
  });

  it("shows the API's 422 on the field it names, the name's and the value's, and sends no name the URL cannot carry", async () => {
    const { requests } = fakeApi({ admin: true });
    await render(true);
    await typeName('1-bad');
    await typeValue(VALUE);
    await click(button('Save secret'));
    const nameInput = byLabel('Name');
    await until(() => nameInput.getAttribute('aria-invalid') === 'true');
    expect(document.getElementById(nameInput.getAttribute('aria-describedby')!.split(' ').find((id) => id.includes('error'))!)?.textContent).toMatch(
      /should match pattern/,
    );
    expect(byLabel('Value').value).toBe(VALUE); // kept in the input to fix the name; never in React state or the page
    expect(document.documentElement.outerHTML).not.toContain(VALUE);

    await typeName('EMPTY_ONE');
    await typeValue('');
    await click(button('Save secret'));
    await until(() => byLabel('Value').getAttribute('aria-invalid') === 'true');
    expect(dom.element.textContent).toContain('String should have at least 1 character');
    expect(byLabel('Name').getAttribute('aria-invalid')).not.toBe('true');

    const before = requests.length;
    await typeName('a/b');
    await click(button('Save secret'));
    await until(() => dom.element.textContent?.includes('letters, digits and _ only'));
    expect(requests.length).toBe(before);
  });

  it('replaces a secret from its row: the name and its hosts filled in, the value asked again', async () => {
    const { requests } = fakeApi({ admin: true });
    await render(true);
    await click(button('replace GRADER_KEY'));
    expect(byLabel('Name').value).toBe('GRADER_KEY');
    expect(hostsField().value).toBe('api.openai.com');
    expect(document.activeElement).toBe(byLabel('Value'));
    await typeValue('new-value');
    await click(button('Save secret'));
    await until(() => requests.some((r) => r.method === 'PUT'));
    const put = requests.find((r) => r.method === 'PUT');
    expect(put?.path).toEqual({ project_id: 1, name: 'GRADER_KEY' });
    expect(put?.body).toEqual({ value: 'new-value', hosts: ['api.openai.com'] });
  });

  it('sends the hosts one a line with the value, and shows a 422 on a host entry on the hosts field', async () => {
    const { requests, store } = fakeApi({ admin: true });
    await render(true);
    await typeName('AZURE_KEY');
    await typeValue(VALUE);
    await typeInto(hostsField(), 'ftp://x\n');
    await click(button('Save secret'));
    await until(() => hostsField().getAttribute('aria-invalid') === 'true');
    expect(dom.element.textContent).toContain('host 1: Value error');
    await typeInto(hostsField(), ' *.openai.azure.com \n\nhttps://llm.internal:8443/v1, 10.0.0.0/8');
    await click(button('Save secret'));
    await until(() => rows().includes('AZURE_KEY'));
    expect(requests.filter((r) => r.method === 'PUT').at(-1)?.body).toEqual({
      value: VALUE,
      hosts: ['*.openai.azure.com', 'https://llm.internal:8443/v1', '10.0.0.0/8'],
    });
    expect(store.find((s) => s.name === 'AZURE_KEY')?.hosts).toHaveLength(3);
    expect([...dom.element.querySelectorAll('[data-name="AZURE_KEY"] [data-testid="secret-hosts"] code')].map((c) => c.textContent)).toEqual([
      '*.openai.azure.com',
      'https://llm.internal:8443/v1',
      '10.0.0.0/8',
    ]);
  });

  it("edits a secret's hosts without its value (PATCH), a bad entry shown in the dialog", async () => {
    const { requests, store } = fakeApi({ admin: true });
    await render(true);
    await click(button('hosts of GRADER_KEY'));
    const dialog = await until(() => document.querySelector<HTMLElement>('[data-testid="secret-hosts-form"]'));
    const field = hostsField(dialog);
    expect(field.value).toBe('api.openai.com');
    await typeInto(field, 'api.openai.com\nftp://x');
    await click(button('Save hosts'));
    await until(() => field.getAttribute('aria-invalid') === 'true');
    expect(dialog.textContent).toContain('host 2: Value error');
    await typeInto(field, 'api.openai.com\nhttps://proxy.example.com/openai');
    await click(button('Save hosts'));
    await until(() => !document.querySelector('[data-testid="secret-hosts-form"]'));
    expect(requests.filter((r) => r.method === 'PATCH').at(-1)).toEqual({
      method: 'PATCH',
      path: { project_id: 1, name: 'GRADER_KEY' },
      body: { hosts: ['api.openai.com', 'https://proxy.example.com/openai'] },
    });
    expect(requests.some((r) => r.method === 'PUT')).toBe(false); // the value was not sent again
    expect(store.find((s) => s.name === 'GRADER_KEY')?.hosts).toEqual(['api.openai.com', 'https://proxy.example.com/openai']);
  });

  it('deletes only once confirmed', async () => {
    const { requests } = fakeApi({ admin: true });
    await render(true);
    await click(button('delete GRADER_KEY'));
    const dialog = await until(() => document.querySelector('[role="dialog"]'));
    expect(dialog.textContent).toContain('Delete secret GRADER_KEY?');
    await click(button('Cancel'));
    expect(requests.some((r) => r.method === 'DELETE')).toBe(false);
    expect(rows()).toEqual(['GRADER_KEY']);

    await click(button('delete GRADER_KEY'));
    await click(await until(() => document.querySelector<HTMLElement>('[data-testid="confirm-delete-secret"]')));
    await until(() => dom.element.querySelector('[data-testid="secrets-empty"]'));
    expect(requests.filter((r) => r.method === 'DELETE')).toEqual([{ method: 'DELETE', path: { project_id: 1, name: 'GRADER_KEY' } }]);
  });
});

describe('ProjectSecrets for members and viewers', () => {
  it('shows the names and hosts read-only with the note, no form and no buttons', async () => {
    fakeApi({ admin: false });
    await render(false);
    expect(rows()).toEqual(['GRADER_KEY']);
    expect(dom.element.querySelector('[data-name="GRADER_KEY"] [data-testid="secret-hosts"]')?.textContent).toBe('api.openai.com');
    expect(dom.element.querySelector('[data-testid="secrets-read-only"]')?.textContent).toBe(
      "Only project admins set secrets; a spec names one in a field ending in _secret: api_key_secret: NAME, with an endpoint among the secret's hosts.",
    );
    expect(dom.element.querySelector('form')).toBeNull();
    expect(dom.element.querySelectorAll('button')).toHaveLength(0);
  });

  it("shows a 403 above the form when the API refuses (a role taken away meanwhile), with no notification", async () => {
    fakeApi({ admin: false });
    const notified = vi.spyOn(notifications, 'show');
    await render(true);
    await typeName('OPENAI_API_KEY');
    await typeValue(VALUE);
    await click(button('Save secret'));
    const alert = await until(() => dom.element.querySelector('[data-testid="secret-form-error"]'));
    expect(alert.textContent).toBe('project 1: admin role required');
    expect(notified).not.toHaveBeenCalled();
    expect(rows()).toEqual(['GRADER_KEY']);
  });
});
