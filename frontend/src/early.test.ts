import { afterEach, describe, expect, it, vi } from 'vitest';
import { earlyKey, preloadPage, startEarly, startEntry, takeEarly, takeEarlyOr, type PreloadDocument } from './early';

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
      '/api/v1/auth/me': { status: 200, body: { username: 'ada' } },
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
    expect(await takeEarly(earlyKey.me())).toEqual({ username: 'ada' });
    expect(calls.every((c) => c.auth === 'Bearer jwt')).toBe(true);
    expect(calls).toHaveLength(5);
  });

  it("start the experiment page's experiment and runs table; a refused one rejects (the loader asks again)", async () => {
    const calls = fakeFetch({
      '/api/v1/experiments/3?with_runs=false': { status: 200, body: { id: 3 } },
      '/api/v1/experiments/3/runs-table': { status: 401, body: { detail: 'expired' } },
    });
    startEarly('/experiments/3/', 'jwt');
    expect(await takeEarly(earlyKey.experiment(3))).toEqual({ id: 3 });
    await expect(takeEarly(earlyKey.runsTable(3))).rejects.toThrow('401');
    expect(calls.map((c) => c.url)).toEqual(['/api/v1/auth/me', '/api/v1/experiments/3?with_runs=false', '/api/v1/experiments/3/runs-table']);
  });

  it('ask nothing without a login; on other pages only the signed-in user', () => {
    const calls = fakeFetch({});
    startEarly('/runs/9', null);
    expect(calls).toHaveLength(0);
    startEarly('/experiments/new', 'jwt');
    startEarly('/runs/9/extra', 'jwt');
    startEarly('/', 'jwt');
    expect(calls.map((c) => c.url)).toEqual(['/api/v1/auth/me', '/api/v1/auth/me', '/api/v1/auth/me']);
    expect(takeEarly(earlyKey.run(9))).toBeUndefined();
  });

  it('a query takes the early answer once, and asks the API itself when there is none or it was refused', async () => {
    fakeFetch({ '/api/v1/auth/me': { status: 401, body: { detail: 'expired' } } });
    startEarly('/', 'jwt');
    const ask = vi.fn(async () => 'asked');
    expect(await takeEarlyOr(earlyKey.me(), ask)).toBe('asked'); // refused early: asked again
    expect(await takeEarlyOr(earlyKey.me(), ask)).toBe('asked'); // none left
    expect(ask).toHaveBeenCalledTimes(2);
    fakeFetch({ '/api/v1/auth/me': { status: 200, body: { username: 'ada' } } });
    startEarly('/', 'jwt');
    expect(await takeEarlyOr(earlyKey.me(), ask)).toEqual({ username: 'ada' });
    expect(ask).toHaveBeenCalledTimes(2);
  });
});

/** A document with index.html's data block (or none) that records the links appended to its head. */
function fakeDocument(block: string | null, entry: string | null = null) {
  const links: { rel: string; href: string; crossOrigin: string | null }[] = [];
  const blocks: Record<string, string | null> = { 'reasonlab-page-chunks': block, 'reasonlab-entry': entry };
  const doc = {
    getElementById: (id: string) => (blocks[id] != null ? { textContent: blocks[id] } : null),
    createElement: (tag: string) => (tag === 'script' ? { type: '', src: '', crossOrigin: null } : { rel: '', href: '', crossOrigin: null }),
    head: { appendChild: (node: unknown) => links.push(node as (typeof links)[number]) },
  } as unknown as PreloadDocument;
  return { doc, links };
}

describe("the dashboard's code, added after the first requests", () => {
  const entry = JSON.stringify({ script: '/assets/index-x.js', preload: ['/assets/mantine-y.js', '/assets/client-z.js'] });

  it("preloads the entry's imports, then adds its module script, as the built index.html would have", () => {
    const { doc, links } = fakeDocument(null, entry);
    startEntry(doc);
    expect(links).toEqual([
      { rel: 'modulepreload', href: '/assets/mantine-y.js', crossOrigin: '' },
      { rel: 'modulepreload', href: '/assets/client-z.js', crossOrigin: '' },
      { type: 'module', src: '/assets/index-x.js', crossOrigin: '' },
    ]);
  });

  it('nothing without the block (the dev server loads the app itself) or with a broken one', () => {
    for (const block of [null, '{', 'null', '{"script": 3}']) {
      const { doc, links } = fakeDocument(null, block);
      startEntry(doc);
      expect(links.filter((l) => 'type' in l)).toEqual([]);
    }
  });

  it('runs after the requests are started: the module asks the API before it adds the entry', async () => {
    const order: string[] = [];
    vi.stubGlobal('fetch', vi.fn(async (url: string) => (order.push(`fetch ${url}`), new Response(url.endsWith('/metric-keys') ? '[]' : '{}'))));
    const { doc } = fakeDocument(null, entry);
    const recording = { ...doc, head: { appendChild: (n: { src?: string; href?: string }) => order.push(`add ${n.src ?? n.href}`) } };
    vi.stubGlobal('document', recording);
    vi.stubGlobal('location', { pathname: '/runs/5' });
    const stored: Record<string, string> = { 'reasonlab.token': 'jwt', 'reasonlab.expires_at': new Date(Date.now() + 60_000).toISOString() };
    vi.stubGlobal('localStorage', { getItem: (k: string) => stored[k] ?? null });
    vi.resetModules();
    await import('./early');
    expect(order.slice(0, 3)).toEqual(['fetch /api/v1/auth/me', 'fetch /api/v1/runs/5', 'fetch /api/v1/runs/5/metric-keys']);
    expect(order.at(-1)).toBe('add /assets/index-x.js');
  });
});

describe("a page's code, preloaded", () => {
  const block = JSON.stringify({ run: ['/assets/RunPage-a.js', '/assets/uplot-b.js'], experiment: ['/assets/ExperimentPage-c.js'] });

  it('the page being opened gets module preloads of its chunks, as the module scripts load them', () => {
    fakeFetch({});
    const { doc, links } = fakeDocument(block);
    startEarly('/runs/4', 'jwt', doc);
    expect(links).toEqual([
      { rel: 'modulepreload', href: '/assets/RunPage-a.js', crossOrigin: '' },
      { rel: 'modulepreload', href: '/assets/uplot-b.js', crossOrigin: '' },
    ]);
    const other = fakeDocument(block);
    startEarly('/experiments/2', 'jwt', other.doc);
    expect(other.links.map((l) => l.href)).toEqual(['/assets/ExperimentPage-c.js']);
  });

  it('nothing without the block (the dev server), with a broken one, or on a page without a list', () => {
    for (const b of [null, '{not json', JSON.stringify({ run: 'x' }), JSON.stringify({ run: [3, '/a.js'] })]) {
      const { doc, links } = fakeDocument(b);
      preloadPage('run', doc);
      expect(links.map((l) => l.href)).toEqual(b?.includes('/a.js') ? ['/a.js'] : []);
    }
    const { doc, links } = fakeDocument(block);
    startEarly('/experiments/new', 'jwt', doc);
    expect(links).toEqual([]);
  });
});
