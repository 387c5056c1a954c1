// @vitest-environment jsdom
// The claims page in jsdom against an in-memory fake of the API's claims operations: a claim's card shows
// the API's evaluation (verdict, pre-registration, each arm's n, mean and interval, the comparison's test,
// effect and p-values, the n that would decide); its lock button locks the current version and the card
// then shows what the API answers; a viewer sees the cards without the form, lock or approve; every page of
// the list is read (the cursor followed), so a project's every claim has its card.
import type { QueryClient } from '@tanstack/react-query';
import { readFileSync } from 'node:fs';
import { act } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../../api/auth';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import type { Claim } from '../../api/types';
import { CLAIMS_PAGE } from '../../hooks/claims';
import { ClaimsPage } from '../../routes/ClaimsPage';
import { installDomShims } from '../../test/dom';
import { mountRouter, until } from '../../test/mount';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

/** The `limit` parameter's maximum of a list operation in the API's OpenAPI document. */
function largestLimit(path: string): number | undefined {
  const doc = JSON.parse(readFileSync('openapi.json', 'utf8')) as {
    paths: Record<string, { get: { parameters: { name: string; schema: { maximum?: number } }[] } }>;
  };
  return doc.paths[path]?.get.parameters.find((p) => p.name === 'limit')?.schema.maximum;
}

function json(status: number, body?: unknown) {
  const response = new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
  return status < 300 ? { data: body, response } : { error: body, response };
}

function claim(locked: boolean, canEdit: boolean): Claim {
  return {
    id: 7,
    project_id: 1,
    name: 'shared beats private',
    version: 1,
    hash: 'ab'.repeat(32),
    definition: {
      section: '001 §4.2',
      description: '',
      arms: [
        { name: 'private', query: 'params.m = "private"' },
        { name: 'shared', query: 'params.m = "shared"' },
      ],
      metric: 'acc',
      read: { mode: 'last' },
      direction: 'greater',
      min_effect: 0.02,
      test: { type: 't', pairing: 'auto' },
      alpha: 0.05,
      power: 0.8,
      family: null,
    },
    author: 'meg',
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:00:00Z',
    review: null,
    can_edit: canEdit,
    evaluation: {
      version: 1,
      hash: 'ab'.repeat(32),
      verdict: 'inconclusive',
      arms: [
        { name: 'private', n: 3, mean: 0.61, std: 0.02, ci_low: 0.56, ci_high: 0.66, run_ids: [1, 2, 3] },
        { name: 'shared', n: 3, mean: 0.63, std: 0.03, ci_low: 0.555, ci_high: 0.705, run_ids: [4, 5, 6] },
      ],
      comparisons: [
        {
          arm: 'shared', reference: 'private', test: 'paired', n: 3, effect: 0.02, ci_low: -0.01, ci_high: 0.05,
          statistic: 2.1, df: 2, p_value: 0.17, p_adjusted: 0.17, verdict: 'inconclusive', reason: 'adjusted p 0.17 >= 0.05', needed_n: 12,
        },
      ],
      family: 'claim shared beats private',
      family_size: 1,
      preregistration: locked
        ? { status: 'pre-registered', locked_version: 1, locked_hash: 'ab'.repeat(32), locked_at: '2026-01-01T00:00:01Z', locked_by: 'meg', first_run_started_at: null }
        : { status: 'not locked', locked_version: null, locked_hash: null, locked_at: null, locked_by: null, first_run_started_at: null },
      evaluated_at: '2026-01-01T00:00:02Z',
    },
  };
}

function fakeApi(role: 'viewer' | 'member') {
  let locked = false;
  const posted: string[] = [];
  const canEdit = role === 'member';
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  vi.spyOn(api, 'GET').mockImplementation((async (url: string) => {
    if (url === '/api/v1/projects/{project_id}/claims') return json(200, { items: [claim(locked, canEdit)], next_cursor: null });
    if (url === '/api/v1/auth/me') return json(200, { id: 2, username: 'meg', is_admin: false, memberships: [{ project_id: 1, project: 'default', role }] });
    return json(404, { detail: 'no', code: 'not_found', errors: [] });
  }) as unknown as typeof api.GET);
  vi.spyOn(api, 'POST').mockImplementation((async (url: string) => {
    posted.push(url);
    if (url === '/api/v1/claims/{claim_id}/lock') {
      locked = true;
      return json(200, claim(true, canEdit));
    }
    return json(404, { detail: 'no', code: 'not_found', errors: [] });
  }) as unknown as typeof api.POST);
  return posted;
}

describe('claims page', () => {
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

  async function mount() {
    const router = createMemoryRouter([{ path: '/claims', element: <ClaimsPage /> }], { initialEntries: ['/claims'] });
    root = await mountRouter(container, router, qc, { id: 1, name: 'default', setProject: () => {} });
  }

  const byTestId = (id: string) => container.querySelector(`[data-testid="${id}"]`);

  it("shows the API's evaluation on the card and locks the current version", async () => {
    const posted = fakeApi('member');
    await mount();
    await until(() => byTestId('claim-7'));
    expect(byTestId('claim-7-verdict')?.textContent).toBe('inconclusive');
    expect(byTestId('claim-7-prereg')?.textContent).toBe('not locked');
    expect(byTestId('claim-7-n-0')?.textContent).toBe('3');
    const comparisons = byTestId('claim-7-comparisons')?.textContent ?? '';
    expect(comparisons).toContain('paired (n 3)');
    expect(comparisons).toContain('[-0.01, 0.05]');
    expect(comparisons).toContain('0.17');
    expect(comparisons).toContain('about 12 pairs would decide');
    expect(byTestId('claim-7-arms')?.textContent).toContain('[0.56, 0.66]');
    expect(byTestId('new-claim')).not.toBeNull();
    const lock = byTestId('claim-7-lock') as HTMLButtonElement;
    expect(lock.textContent).toBe('Lock version 1');
    await act(async () => lock.click());
    await until(() => byTestId('claim-7-prereg')?.textContent === 'pre-registered');
    expect(posted).toEqual(['/api/v1/claims/{claim_id}/lock']);
    await until(() => (byTestId('claim-7-lock') as HTMLButtonElement).disabled);
    expect(byTestId('claim-7-version')?.textContent).toContain('version 1 locked by meg');
  });

  it("follows the list's pages: every claim is shown, each page asked with the largest limit", async () => {
    vi.spyOn(authStore, 'token').mockReturnValue('jwt');
    const asked: unknown[] = [];
    vi.spyOn(api, 'GET').mockImplementation((async (url: string, init?: { params?: { query?: unknown } }) => {
      if (url === '/api/v1/projects/{project_id}/claims') {
        const query = init?.params?.query as { limit?: number; cursor?: string };
        asked.push(query);
        if (query.cursor === undefined) return json(200, { items: [claim(false, false)], next_cursor: 'after-7' });
        if (query.cursor === 'after-7') return json(200, { items: [{ ...claim(false, false), id: 8, name: 'second' }], next_cursor: null });
        return json(422, { detail: 'invalid cursor', code: 'invalid', errors: [] });
      }
      if (url === '/api/v1/auth/me') return json(200, { id: 2, username: 'vic', is_admin: false, memberships: [{ project_id: 1, project: 'default', role: 'viewer' }] });
      return json(404, { detail: 'no', code: 'not_found', errors: [] });
    }) as unknown as typeof api.GET);
    await mount();
    await until(() => byTestId('claim-8'));
    expect(byTestId('claim-7')).not.toBeNull();
    expect(container.querySelectorAll('[data-testid="claims"] > *').length).toBe(2);
    expect(asked.slice(0, 2)).toEqual([{ limit: CLAIMS_PAGE }, { limit: CLAIMS_PAGE, cursor: 'after-7' }]);
  });

  it("asks with the API's largest limit (a larger one would be a 422)", () => {
    expect(CLAIMS_PAGE).toBe(largestLimit('/api/v1/projects/{project_id}/claims'));
  });

  it('a viewer sees the cards, not the form, the lock or the approval', async () => {
    fakeApi('viewer');
    await mount();
    await until(() => byTestId('claim-7'));
    expect(byTestId('new-claim')).toBeNull();
    expect(byTestId('claim-7-lock')).toBeNull();
    expect(byTestId('claim-7-approve')).toBeNull();
  });
});
