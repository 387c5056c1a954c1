// @vitest-environment jsdom
// The claims page in jsdom against an in-memory fake of the API's claims operations: a claim's card shows
// the API's evaluation (verdict, pre-registration, each arm's n, mean and interval, the comparison's test,
// effect and p-values, the n that would decide); its lock button locks the current version and the card
// then shows what the API answers; its edit opens the claims form prefilled and sends only what changed (a
// 422 under the field it names; a locked claim's form says what a new version means, and the card then says
// "edited after lock"); its delete asks first, naming the claim, and the card goes; a viewer sees the cards
// without the form, lock, approve, edit or delete, and a member delete only on a claim of their own; every
// page of the list is read (the cursor followed), so a project's every claim has its card.
import type { QueryClient } from '@tanstack/react-query';
import { readFileSync } from 'node:fs';
import { act } from 'react';
import type { Root } from 'react-dom/client';
import { createMemoryRouter } from 'react-router';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { authStore } from '../../api/auth';
import { api } from '../../api/client';
import { makeQueryClient } from '../../api/queryClient';
import type { Claim, ClaimDefinition } from '../../api/types';
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

const definition: ClaimDefinition = {
  section: '001 §4.2',
  description: 'as table 2 reports it',
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
};

/** The claim's pre-registration as the API evaluates it: locked at `lockedVersion` (or not), which is the
 *  deciding version or was edited after. */
function preregistration(version: number, lockedVersion: number | null): Claim['evaluation']['preregistration'] {
  if (lockedVersion === null) {
    return { status: 'not locked', locked_version: null, locked_hash: null, locked_at: null, locked_by: null, first_run_started_at: null };
  }
  return {
    status: lockedVersion === version ? 'pre-registered' : 'edited after lock',
    locked_version: lockedVersion,
    locked_hash: 'ab'.repeat(32),
    locked_at: '2026-01-01T00:00:01Z',
    locked_by: 'meg',
    first_run_started_at: null,
  };
}

function claim(locked: boolean, canEdit: boolean): Claim {
  return {
    id: 7,
    project_id: 1,
    name: 'shared beats private',
    version: 1,
    hash: 'ab'.repeat(32),
    definition,
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
      preregistration: preregistration(1, locked ? 1 : null),
      evaluated_at: '2026-01-01T00:00:02Z',
    },
  };
}

type PatchBody = { name?: string; definition?: ClaimDefinition };

/** The API's claims operations on one claim (7, stated by meg), for a caller named `username` with `role`:
 *  lock; PATCH as the API does it (a new name; a changed definition a new version, a query naming
 *  `colour` a 422 at its path); DELETE for its author or an admin, else 403 (`refuse` answers it 404, as
 *  when someone else deleted it first). The requests' bodies are kept. */
function fakeApi(role: 'viewer' | 'member' | 'admin', { username = 'meg', locked = false, refuse = false } = {}) {
  const canEdit = role !== 'viewer';
  let current: Claim | null = claim(locked, canEdit);
  let lockedVersion: number | null = locked ? 1 : null;
  const posted: string[] = [];
  const patched: PatchBody[] = [];
  const deleted: number[] = [];
  const evaluated = (c: Claim): Claim => ({
    ...c,
    evaluation: { ...c.evaluation, version: c.version, preregistration: preregistration(c.version, lockedVersion) },
  });
  vi.spyOn(authStore, 'token').mockReturnValue('jwt');
  vi.spyOn(api, 'GET').mockImplementation((async (url: string) => {
    if (url === '/api/v1/projects/{project_id}/claims') return json(200, { items: current ? [current] : [], next_cursor: null });
    if (url === '/api/v1/auth/me') return json(200, { id: 2, username, is_admin: false, memberships: [{ project_id: 1, project: 'default', role }] });
    return json(404, { detail: 'no', code: 'not_found', errors: [] });
  }) as unknown as typeof api.GET);
  vi.spyOn(api, 'POST').mockImplementation((async (url: string) => {
    posted.push(url);
    if (url === '/api/v1/claims/{claim_id}/lock' && current) {
      lockedVersion = current.version;
      current = evaluated(current);
      return json(200, current);
    }
    return json(404, { detail: 'no', code: 'not_found', errors: [] });
  }) as unknown as typeof api.POST);
  vi.spyOn(api, 'PATCH').mockImplementation((async (url: string, init: { params: { path: { claim_id: number } }; body: PatchBody }) => {
    patched.push(init.body);
    if (url !== '/api/v1/claims/{claim_id}' || !current || init.params.path.claim_id !== current.id) return json(404, { detail: 'no', code: 'not_found', errors: [] });
    const arm = init.body.definition?.arms.findIndex((a) => a.query.includes('colour')) ?? -1;
    if (arm >= 0) {
      return json(422, {
        detail: 'invalid claim', code: 'invalid',
        errors: [{ loc: ['body', 'definition', 'arms', arm, 'query'], msg: 'unknown field colour', type: 'query' }],
      });
    }
    const next = { ...current, name: init.body.name ?? current.name };
    if (init.body.definition && JSON.stringify(init.body.definition) !== JSON.stringify(current.definition)) {
      Object.assign(next, { version: current.version + 1, definition: init.body.definition });
    }
    current = evaluated(next);
    return json(200, current);
  }) as unknown as typeof api.PATCH);
  vi.spyOn(api, 'DELETE').mockImplementation((async (url: string, init: { params: { path: { claim_id: number } } }) => {
    if (url !== '/api/v1/claims/{claim_id}' || !current || refuse) return json(404, { detail: 'claim 7 not found', code: 'not_found', errors: [] });
    if (role !== 'admin' && username !== current.author) {
      return json(403, { detail: "only the claim's author or a project admin may delete it", code: 'forbidden', errors: [] });
    }
    deleted.push(init.params.path.claim_id);
    current = null;
    return json(204);
  }) as unknown as typeof api.DELETE);
  return { posted, patched, deleted };
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

  // the document, not the container: a dialog is drawn outside the page (a portal)
  const byTestId = (id: string) => document.querySelector(`[data-testid="${id}"]`);
  const input = (id: string) => byTestId(id) as HTMLInputElement;
  const click = async (el: Element | null) => act(async () => (el as HTMLElement).click());
  async function type(id: string, text: string) {
    const el = input(id);
    await act(async () => {
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(el, text);
      el.dispatchEvent(new Event('input', { bubbles: true }));
    });
  }
  /** The error Mantine draws under an input (the element its aria-describedby names). */
  const errorUnder = (id: string) =>
    document.getElementById(input(id).getAttribute('aria-describedby')?.split(' ').find((x) => x.includes('error')) ?? '')?.textContent;

  it("shows the API's evaluation on the card and locks the current version", async () => {
    const { posted } = fakeApi('member');
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

  it('edits a locked claim in the prefilled form, sending only the changed definition: a new version, edited after lock', async () => {
    const { patched } = fakeApi('member', { locked: true });
    await mount();
    await until(() => byTestId('claim-7-prereg')?.textContent === 'pre-registered');
    await click(byTestId('claim-7-edit'));
    await until(() => byTestId('claim-7-edit-form'));
    expect(input('claim-7-edit-name').value).toBe('shared beats private');
    expect(input('claim-7-edit-section').value).toBe('001 §4.2');
    expect(input('claim-7-edit-arm-0-name').value).toBe('private');
    expect(input('claim-7-edit-arm-1-query').value).toBe('params.m = "shared"');
    expect(input('claim-7-edit-metric').value).toBe('acc');
    expect(input('claim-7-edit-min-effect').value).toBe('0.02');
    expect(input('claim-7-edit-family').value).toBe('');
    expect(byTestId('claim-7-edit-locked')?.textContent).toContain('makes version 2, which is not pre-registered until it is locked again');
    const save = byTestId('claim-7-edit-submit') as HTMLButtonElement;
    expect(save.disabled).toBe(true); // nothing changed yet
    await type('claim-7-edit-min-effect', '0.05');
    expect(save.disabled).toBe(false);
    await click(save);
    await until(() => byTestId('claim-7-prereg')?.textContent === 'edited after lock');
    // the definition as it was but for the one field (the description, which the form has no field for,
    // kept), and no name
    expect(patched).toEqual([{ definition: { ...definition, min_effect: 0.05 } }]);
    expect(byTestId('claim-7-version')?.textContent).toContain('version 2 decided');
    expect(byTestId('claim-7-version')?.textContent).toContain('version 1 locked by meg');
    expect(byTestId('claim-7-edit-form')).toBeNull(); // saved: the form closes
    expect((byTestId('claim-7-lock') as HTMLButtonElement).textContent).toBe('Lock version 2');
  });

  it('renames a claim with a body of the name alone, and shows a 422 under the field it names', async () => {
    const { patched } = fakeApi('member');
    await mount();
    await until(() => byTestId('claim-7'));
    await click(byTestId('claim-7-edit'));
    await until(() => byTestId('claim-7-edit-form'));
    expect(byTestId('claim-7-edit-locked')).toBeNull(); // not locked: nothing to say of versions
    await type('claim-7-edit-arm-1-query', 'colour = 1');
    await click(byTestId('claim-7-edit-submit'));
    await until(() => input('claim-7-edit-arm-1-query').getAttribute('aria-invalid') === 'true');
    expect(errorUnder('claim-7-edit-arm-1-query')).toBe('unknown field colour');
    expect(patched[0]?.name).toBeUndefined();
    expect(patched[0]?.definition?.arms[1]?.query).toBe('colour = 1');
    await type('claim-7-edit-arm-1-query', 'params.m = "shared"');
    await type('claim-7-edit-name', 'shared modules beat private ones');
    await click(byTestId('claim-7-edit-submit'));
    await until(() => byTestId('claim-7')?.getAttribute('aria-label') === 'claim shared modules beat private ones');
    expect(patched[1]).toEqual({ name: 'shared modules beat private ones' });
    expect(byTestId('claim-7-version')?.textContent).toContain('version 1 decided');
  });

  it("deletes a claim of one's own after a confirmation naming it: the card goes", async () => {
    const { deleted } = fakeApi('member');
    await mount();
    await until(() => byTestId('claim-7'));
    await click(byTestId('claim-7-delete'));
    const confirm = await until(() => byTestId('claim-7-delete-confirm'));
    expect(document.querySelector('[role="dialog"]')?.textContent).toContain('Delete claim “shared beats private”?');
    expect(deleted).toEqual([]); // asked, not yet deleted
    await click(confirm);
    await until(() => byTestId('claim-7') === null);
    expect(deleted).toEqual([7]);
    expect(container.textContent).toContain('No claims yet.');
  });

  it("shows the API's refusal of a delete in the dialog, the card kept", async () => {
    const { deleted } = fakeApi('admin', { username: 'ada', refuse: true });
    await mount();
    await until(() => byTestId('claim-7'));
    await click(byTestId('claim-7-delete')); // an admin may delete another's claim
    await click(await until(() => byTestId('claim-7-delete-confirm')));
    expect((await until(() => byTestId('claim-7-delete-error'))).textContent).toBe('claim 7 not found');
    expect(deleted).toEqual([]);
    expect(byTestId('claim-7')).not.toBeNull();
  });

  it("a member may edit another's claim but not delete it", async () => {
    fakeApi('member', { username: 'vic' });
    await mount();
    // the new-claim button waits on the signed-in user too (their role), as the delete does
    await until(() => byTestId('new-claim') && byTestId('claim-7-edit'));
    expect(byTestId('claim-7-delete')).toBeNull();
  });

  it('a viewer sees the cards, not the form, the lock, the approval, the edit or the delete', async () => {
    fakeApi('viewer');
    await mount();
    await until(() => byTestId('claim-7'));
    expect(byTestId('new-claim')).toBeNull();
    expect(byTestId('claim-7-lock')).toBeNull();
    expect(byTestId('claim-7-approve')).toBeNull();
    expect(byTestId('claim-7-edit')).toBeNull();
    expect(byTestId('claim-7-delete')).toBeNull();
  });
});
