// @vitest-environment jsdom
// The run page's title with its inline rename, rendered in jsdom against a fake of GET and PATCH
// /runs/{id} (the typed client answered in memory, with the API's 422 body for a refused name): a member
// renames, the answer replaces the cached run and the title follows; Escape sends nothing; a refused name
// is said under the box, with no notification; a viewer gets no pencil.
import { MantineProvider } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { QueryClientProvider, type QueryClient } from '@tanstack/react-query';
import { act } from 'react';
import { createRoot } from 'react-dom/client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import type { Run } from '../../api/types';
import { useRun } from '../../hooks/runs';
import { RunTitle } from './RunTitle';
import { testContainer } from '../../test/dom';
import { until } from '../../test/mount';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function json(status: number, body: unknown) {
  const response = new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  return status < 300 ? { data: body, response } : { error: body, response };
}

/** GET and PATCH /runs/1 in memory; PATCH answers as the API does (trimmed, blank clears, > 200: 422). */
function fakeApi() {
  const run = { id: 1, name: null as string | null, project_id: 3, experiment_id: 2 } as unknown as Run;
  const patches: unknown[] = [];
  vi.spyOn(api, 'GET').mockImplementation((async () => json(200, { ...run })) as never);
  vi.spyOn(api, 'PATCH').mockImplementation((async (_url: string, init: { body: { name: string } }) => {
    patches.push(init.body);
    const name = init.body.name.trim();
    if (name.length > 200) {
      const msg = 'String should have at most 200 characters';
      return json(422, { detail: `body.name: ${msg}`, code: 'invalid', errors: [{ loc: ['body', 'name'], msg, type: 'string_too_long' }] });
    }
    run.name = name || null;
    return json(200, { ...run });
  }) as never);
  return { patches };
}

function Page({ canWrite }: { canWrite: boolean }) {
  const run = useRun(1).data;
  return run ? <RunTitle run={run} canWrite={canWrite} /> : null;
}

let qc: QueryClient;
const dom = testContainer(() => {
  qc = makeQueryClient();
});
afterEach(() => {
  document.body.innerHTML = ''; // what Mantine put in the body outside the container (its portals)
});

async function render(canWrite: boolean) {
  await act(async () => {
    dom.root = createRoot(dom.element);
    dom.root.render(
      <MantineProvider env="test">
        <QueryClientProvider client={qc}>
          <Page canWrite={canWrite} />
        </QueryClientProvider>
      </MantineProvider>,
    );
  });
  await until(() => dom.element.querySelector('[data-testid="run-title"]'));
}

const byTestId = (id: string) => dom.element.querySelector<HTMLElement>(`[data-testid="${id}"]`);
const title = () => byTestId('run-title')?.textContent;
const click = (el: HTMLElement) => act(async () => el.click());

async function type(text: string) {
  const input = byTestId('run-name-input') as HTMLInputElement;
  await act(async () => {
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, text);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  });
}

describe('RunTitle', () => {
  it('renames inline: the answer replaces the cached run and the title shows the name beside the id', async () => {
    const { patches } = fakeApi();
    await render(true);
    expect(title()).toBe('Run 1');
    await click(byTestId('rename-run')!);
    await type('  baseline  ');
    await click(byTestId('run-name-save')!);
    await until(() => title() === 'baseline');
    expect(patches).toEqual([{ name: '  baseline  ' }]);
    expect(dom.element.textContent).toContain('run 1');
    expect(qc.getQueryData<Run>(['runs', 1])?.name).toBe('baseline');
    expect(byTestId('run-name-input')).toBeNull();

    // an empty box clears the name
    await click(byTestId('rename-run')!);
    expect((byTestId('run-name-input') as HTMLInputElement).value).toBe('baseline');
    await type('');
    await click(byTestId('run-name-save')!);
    await until(() => title() === 'Run 1');
  });

  it('leaves the name on Escape, sending nothing', async () => {
    const { patches } = fakeApi();
    await render(true);
    await click(byTestId('rename-run')!);
    await type('not kept');
    await act(async () => {
      byTestId('run-name-input')!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    });
    expect(byTestId('run-name-input')).toBeNull();
    expect(title()).toBe('Run 1');
    expect(patches).toEqual([]);
  });

  it('says a refused name under the box, without a notification', async () => {
    const { patches } = fakeApi();
    const shown = vi.spyOn(notifications, 'show');
    await render(true);
    await click(byTestId('rename-run')!);
    await type('x'.repeat(201)); // the box's maxLength stops typing; a pasted or scripted value reaches the API
    await click(byTestId('run-name-save')!);
    await until(() => dom.element.textContent?.includes('String should have at most 200 characters'));
    expect(patches).toHaveLength(1);
    expect(byTestId('run-name-input')).not.toBeNull(); // still open, to fix
    expect(shown).not.toHaveBeenCalled();
    expect(title()).toBeUndefined();
  });

  it('offers no rename to a viewer', async () => {
    fakeApi();
    await render(false);
    expect(title()).toBe('Run 1');
    expect(byTestId('rename-run')).toBeNull();
  });
});
