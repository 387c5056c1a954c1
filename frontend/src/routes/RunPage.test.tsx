// @vitest-environment jsdom
// The run page of an external run (a script's, logged through the SDK) in jsdom against an in-memory API:
// the "external" badge in its header, the script's host instead of a worker and queue, no Retry (its script
// resumes it), only the tabs that mean something for it (no Results or Examples while it has none; its
// config; Provenance, whose command line and commit show), while a worker's run keeps every tab, with no
// badge and no Provenance; an external run with an example table gets its Examples tab.
import type { QueryClient } from '@tanstack/react-query';
import { act } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../api/auth';
import { api } from '../api/client';
import { makeQueryClient } from '../api/queryClient';
import { installDomShims } from '../test/dom';
import { mountRouter, settled, until } from '../test/mount';
import { RunPage } from './RunPage';

vi.mock('../components/charts/EChart', () => ({ EChart: () => null }));
vi.mock('../components/charts/LinePlot', () => ({ LinePlot: () => null }));

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const PROVENANCE = {
  command: '/usr/bin/python3 train.py --lr 0.1',
  git_commit: '0123456789abcdef0123456789abcdef01234567',
  git_dirty: true,
  git_diff: 'diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-lr = 1\n+lr = 0.1\n',
  python: '3.12.3',
  packages: ['numpy==2.1.0', 'torch==2.5.1'],
  host: 'gpu-box-7',
};

function run(kind: string, status = 'failed') {
  const external = kind === 'external';
  return {
    id: 7, experiment_id: 3, project_id: 1, kind, index: 0, name: null,
    spec: external ? { lr: 0.1, model: { width: 64 } } : { kind, seed: 1 },
    params: external ? { lr: 0.1, model: { width: 64 } } : { seed: 1 },
    status, attempt: 1, max_attempts: external ? 1 : 3, queue: external ? 'external' : 'default',
    worker: external ? 'script on gpu-box-7' : 'w1', heartbeat_at: null, held: false, run_seconds: 12,
    progress: { done: 0, total: 0, message: '' }, error: null, cancel_requested: false,
    created_at: '2026-11-28T10:00:00Z', started_at: '2026-11-28T10:00:00Z', finished_at: '2026-11-28T10:00:12Z',
    mlflow_run_id: null, logged_params: {}, summary: {}, tags: [],
  };
}

let exampleTables: { name: string; rows: number }[] = [];

function fakeApi(kind: string) {
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  vi.spyOn(api, 'GET').mockImplementation((async (url: string) => {
    const ok = (data: unknown) => ({ data, response: new Response('{}', { status: 200 }) });
    switch (url) {
      case '/api/v1/auth/me':
        return ok({ id: 2, username: 'meg', is_admin: false, memberships: [{ project_id: 1, project: 'default', role: 'member' }] });
      case '/api/v1/server':
        return ok({ mlflow_ui_url: null });
      case '/api/v1/runs/{run_id}':
        return ok(run(kind));
      case '/api/v1/experiments/{experiment_id}':
        return ok({ id: 3, name: 'mnist', run_count: 1, runs: [] });
      case '/api/v1/runs/{run_id}/example-tables':
        return ok(exampleTables);
      case '/api/v1/runs/{run_id}/provenance':
        return ok(kind === 'external' ? PROVENANCE : null);
      case '/api/v1/runs/{run_id}/artifacts':
        return ok({ items: [], next_cursor: null });
      default: // metric keys, results, attempts, comments: none
        return ok([]);
    }
  }) as never);
}

let root: Root | null = null;
let container: HTMLElement;
let qc: QueryClient;

beforeEach(() => {
  installDomShims();
  container = document.body.appendChild(document.createElement('div'));
  qc = makeQueryClient();
  exampleTables = [];
});

afterEach(() => {
  act(() => root?.unmount());
  root = null;
  container.remove();
  document.body.innerHTML = '';
  vi.restoreAllMocks();
});

async function open(kind: string) {
  fakeApi(kind);
  const router = createMemoryRouter([{ path: '/runs/:id', element: <RunPage /> }], { initialEntries: ['/runs/7'] });
  root = await mountRouter(container, router, qc);
  await until(() => container.querySelector('[role="tablist"]'));
  // who is signed in is known, so the buttons a member sees (Retry) have had their chance to show
  await until(() => qc.getQueryData(['me', 'jwt']));
  // the tabs and buttons that wait on an answer (Results, Examples, Retry) have had it, and are drawn
  await settled(qc);
}

const tabNames = () => [...container.querySelectorAll('[role="tab"]')].map((t) => t.textContent?.trim());
const tab = (name: string) => [...container.querySelectorAll<HTMLElement>('[role="tab"]')].find((t) => t.textContent?.trim() === name)!;

describe('the run page', () => {
  it("marks an external run and shows only its tabs, with the script's host and no Retry; not a worker's", async () => {
    await open('external');
    expect(container.querySelector('[data-testid="external-badge"]')?.textContent).toBe('external');
    expect(tabNames()).toEqual(['Metrics', 'Config & params', 'Logs', 'Attempts', 'Artifacts', 'Provenance', 'Comments']);
    expect(container.querySelector('[data-testid="run-driver"]')?.textContent).toBe('script on gpu-box-7');
    expect(container.textContent).not.toContain('queue external');
    expect(container.querySelector('[data-testid="retry-run"]')).toBeNull(); // failed, yet its script resumes it

    // a worker's run, on a page of its own: every tab, no badge, no Provenance, its worker and queue, Retry
    act(() => root?.unmount());
    vi.restoreAllMocks();
    qc = makeQueryClient();
    await open('diagnostic');
    expect(container.querySelector('[data-testid="external-badge"]')).toBeNull();
    expect(tabNames()).toEqual(['Metrics', 'Results', 'Examples', 'Spec & params', 'Logs', 'Attempts', 'Artifacts', 'Comments']);
    expect(container.textContent).toContain('worker w1 · queue default');
    expect(container.querySelector('[data-testid="retry-run"]')).not.toBeNull();
  });

  it("shows an external run's provenance on its tab", async () => {
    await open('external');
    await act(async () => tab('Provenance').click());
    const command = await until(() => container.querySelector('[data-testid="provenance-command"]'));
    expect(command.textContent).toBe(PROVENANCE.command);
    const commit = container.querySelector('[data-testid="provenance-commit"]')!;
    expect(commit.getAttribute('data-commit')).toBe(PROVENANCE.git_commit);
    expect(commit.textContent).toBe('0123456789ab');
    expect(container.querySelector('[data-testid="provenance-dirty"]')?.textContent).toBe('dirty');
    expect(container.querySelector('[data-testid="provenance-host"]')?.textContent).toBe('gpu-box-7');
  });

  it('shows the config of an external run where a spec would be', async () => {
    await open('external');
    await act(async () => tab('Config & params').click());
    await until(() => container.textContent?.includes('Config, as the script passed it to init'));
    expect(container.textContent).not.toContain('Sweep params');
  });

  it('gives an external run with an example table its Examples tab', async () => {
    exampleTables = [{ name: 'predictions', rows: 10 }];
    await open('external');
    // the tab appears once the run's example tables have been asked for and answered
    await until(() => tabNames().includes('Examples'));
    expect(tabNames()).toEqual(['Metrics', 'Examples', 'Config & params', 'Logs', 'Attempts', 'Artifacts', 'Provenance', 'Comments']);
  });

});
