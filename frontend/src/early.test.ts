import { afterEach, describe, expect, it, vi } from 'vitest';
import { earlyKey, startEarly, takeEarly } from './early';

function fakeFetch(answers: Record<string, { status: number; body: unknown }>) {
  const calls: { url: string; auth: string | null }[] = [];
  const fetch = vi.fn(async (url: string, init?: RequestInit) => {
    calls.push({ url, auth: new Headers(init?.headers).get('Authorization') });
    const a = answers[url] ?? { status: 404, body: { detail: 'no' } };
    return new Response(JSON.stringify(a.body), { status: a.status });
  });
  vi.stubGlobal('fetch', fetch);
  return calls;
}

afterEach(() => vi.unstubAllGlobals());

describe('early requests', () => {
  it("start the run page's run, keys and, once the keys arrive, each key's first series, taken once", async () => {
    const calls = fakeFetch({
      '/api/v1/runs/7': { status: 200, body: { id: 7 } },
      '/api/v1/runs/7/metric-keys': { status: 200, body: ['loss', 'moe/load e0'] },
      '/api/v1/runs/7/metrics?keys=loss&max_points=1000': { status: 200, body: { run_id: 7, series: { loss: {} } } },
      '/api/v1/runs/7/metrics?keys=moe%2Fload+e0&max_points=1000': { status: 200, body: { run_id: 7, series: {} } },
    });
    startEarly('/runs/7', 'jwt');
    expect(await takeEarly(earlyKey.run(7))).toEqual({ id: 7 });
    expect(takeEarly(earlyKey.run(7))).toBeUndefined(); // once
    expect(await takeEarly(earlyKey.metricKeys(7))).toEqual(['loss', 'moe/load e0']);
    expect(await takeEarly(earlyKey.metrics(7, 'loss'))).toEqual({ run_id: 7, series: { loss: {} } });
    expect(await takeEarly(earlyKey.metrics(7, 'moe/load e0'))).toEqual({ run_id: 7, series: {} });
    expect(calls.every((c) => c.auth === 'Bearer jwt')).toBe(true);
    expect(calls).toHaveLength(4);
  });

  it("start the experiment page's experiment and runs table; a refused one rejects (the loader asks again)", async () => {
    const calls = fakeFetch({
      '/api/v1/experiments/3?with_runs=false': { status: 200, body: { id: 3 } },
      '/api/v1/experiments/3/runs-table': { status: 401, body: { detail: 'expired' } },
    });
    startEarly('/experiments/3/', 'jwt');
    expect(await takeEarly(earlyKey.experiment(3))).toEqual({ id: 3 });
    await expect(takeEarly(earlyKey.runsTable(3))).rejects.toThrow('401');
    expect(calls.map((c) => c.url)).toEqual(['/api/v1/experiments/3?with_runs=false', '/api/v1/experiments/3/runs-table']);
  });

  it('ask nothing without a login, nor for other pages', () => {
    const calls = fakeFetch({});
    startEarly('/runs/9', null);
    startEarly('/experiments/new', 'jwt');
    startEarly('/runs/9/extra', 'jwt');
    startEarly('/', 'jwt');
    expect(calls).toHaveLength(0);
    expect(takeEarly(earlyKey.run(9))).toBeUndefined();
  });
});
