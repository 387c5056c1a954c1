import { describe, expect, it } from 'vitest';
import type { RunPage } from '../api/types';
import { GROUPS_POLL_MS, LIVE_RUNS_POLL_MS, runsRefetchInterval } from './projectRuns';

const run = (id: number, status: string) => ({ id, status }) as unknown as RunPage['items'][number];
const pages = (...p: RunPage[]) => ({ pages: p, pageParams: p.map(() => null) });
const page = (items: RunPage['items'], groups: RunPage['groups'] = null): RunPage => ({ items, groups, next_cursor: null });

describe('runsRefetchInterval', () => {
  it('polls while a loaded run on any page is queued or running, and stops once every run is finished', () => {
    expect(runsRefetchInterval(pages(page([run(1, 'succeeded')]), page([run(2, 'running')])))).toBe(LIVE_RUNS_POLL_MS);
    expect(runsRefetchInterval(pages(page([run(1, 'queued')])))).toBe(LIVE_RUNS_POLL_MS);
    expect(runsRefetchInterval(pages(page([run(1, 'succeeded'), run(2, 'failed')]), page([run(3, 'cancelled')])))).toBe(false);
  });

  it('asks a page of groups again at the slower pace, and nothing before the first answer', () => {
    expect(runsRefetchInterval(pages(page([], [])))).toBe(GROUPS_POLL_MS);
    expect(GROUPS_POLL_MS).toBeGreaterThan(LIVE_RUNS_POLL_MS);
    expect(runsRefetchInterval(undefined)).toBe(false);
  });
});
