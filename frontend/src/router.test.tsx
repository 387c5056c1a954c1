import { QueryClient } from '@tanstack/react-query';
import type { LoaderFunctionArgs } from 'react-router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { authStore } from './api/auth';
import { metricsQuery } from './hooks/metrics';
import { prefetchLayout, prefetchRun, samePageKeepsLoaders } from './router';

// prefetchRun also starts loading the run page's chart code (`void import('./components/charts/uplot')`),
// which nothing awaits: left real, that import could still be loading uPlot when the file's environment is
// torn down (seen under load: an unhandled EnvironmentTeardownError failed vitest though every test
// passed), so it resolves to a stand-in here.
vi.mock('./components/charts/uplot', () => ({ uPlot: vi.fn() }));

// What a page's route asks for before the page renders: everything the page shows, so that it
// renders once with it instead of again when a component's own request is answered.
function spiedClient() {
  const qc = new QueryClient();
  const asked: string[] = [];
  const answer = (key: readonly unknown[]) => {
    asked.push(JSON.stringify(key));
    if (key[0] === 'runs' && key.length === 2) return Promise.resolve({ id: key[1], experiment_id: 3 });
    if (key[2] === 'metric-keys') return Promise.resolve(['loss', 'acc']);
    return Promise.resolve(null);
  };
  vi.spyOn(qc, 'fetchQuery').mockImplementation(((o: { queryKey: readonly unknown[] }) => answer(o.queryKey)) as never);
  vi.spyOn(qc, 'prefetchQuery').mockImplementation(((o: { queryKey: readonly unknown[] }) => answer(o.queryKey).then(() => undefined)) as never);
  return { qc, asked };
}

const args = (id: string) => ({ params: { id } }) as unknown as LoaderFunctionArgs;
const settle = () => new Promise((r) => setTimeout(r, 0));

afterEach(() => vi.restoreAllMocks());

describe('route prefetches', () => {
  it("the run page's: the run, then its experiment; its keys, then each key's series; its results", async () => {
    const { qc, asked } = spiedClient();
    prefetchRun(qc)(args('7'));
    await settle();
    expect(asked).toEqual(
      expect.arrayContaining([
        '["runs",7]',
        '["runs",7,"metric-keys"]',
        '["runs",7,"results"]',
        '["experiments",3]',
        JSON.stringify(metricsQuery(7, ['loss']).queryKey),
        JSON.stringify(metricsQuery(7, ['acc']).queryKey),
      ]),
    );
    expect(asked).toHaveLength(6);
  });

  it('nothing for a run id that is not one', async () => {
    const { qc, asked } = spiedClient();
    prefetchRun(qc)(args('x'));
    prefetchRun(qc)(args('0'));
    await settle();
    expect(asked).toEqual([]);
  });

  it("the layout's projects and server settings when signed in, nothing when signed out", async () => {
    const { qc, asked } = spiedClient();
    vi.spyOn(authStore, 'token').mockReturnValue(null);
    prefetchLayout(qc)();
    expect(asked).toEqual([]);
    vi.spyOn(authStore, 'token').mockReturnValue('jwt');
    prefetchLayout(qc)();
    expect(asked).toEqual(['["projects"]', '["server"]']);
  });
});

describe('loaders on a change of the search params alone', () => {
  const check = (from: string, to: string, defaultShouldRevalidate = true) =>
    samePageKeepsLoaders({
      currentUrl: new URL(from, 'http://x'),
      nextUrl: new URL(to, 'http://x'),
      defaultShouldRevalidate,
    } as Parameters<typeof samePageKeepsLoaders>[0]);

  it("do not run again: a run page's tab or chart options, a list's query", () => {
    expect(check('/runs/7', '/runs/7?tab=results')).toBe(false);
    expect(check('/runs/7?tab=results', '/runs/7?tab=results&charts=loss%3Alog')).toBe(false);
    expect(check('/experiments?q=a', '/experiments?q=ab')).toBe(false);
  });

  it('run on another page as React Router would', () => {
    expect(check('/runs/7?tab=logs', '/runs/8')).toBe(true);
    expect(check('/runs/7', '/experiments/3', false)).toBe(false);
  });
});
