// The first API requests of the page being opened, started before the dashboard's code has arrived and
// run: index.html loads this module on its own (no imports, ~1 KB) beside the entry (~0.65 MB of
// JavaScript, ~0.3 s to download and run on a loaded 2-core machine before the route's loader could ask).
// On every page the signed-in user; the run page's run, metric keys and, as soon as the keys
// arrive, each key's series; the experiment page's experiment and runs table. The route loaders (src/router.tsx) take the answers from
// here once; anything but a 2xx (an expired login's 401) they ask again themselves, errors handled there.

const TOKEN_KEY = 'reasonlab.token';
const EXPIRES_KEY = 'reasonlab.expires_at';

/** The signed-in user's credential (src/api/auth.ts keeps it): null when none or expired. */
export function readToken(): string | null {
  try {
    const token = localStorage.getItem(TOKEN_KEY);
    const expires = localStorage.getItem(EXPIRES_KEY);
    if (token && expires && Date.parse(expires) <= Date.now()) return null;
    return token;
  } catch {
    return null;
  }
}

/** Buckets per key for a chart the width of a page: more would be sub-pixel (hooks/metrics.ts re-exports
 *  it; defined here so that a chart's early request and its own are one query). */
export const CHART_MAX_POINTS = 1000;

/** The names of the early answers, shared with the route loaders. */
export const earlyKey = {
  me: () => 'me',
  run: (id: number) => `run:${id}`,
  metricKeys: (id: number) => `metric-keys:${id}`,
  metrics: (id: number, key: string) => `metrics:${id}:${key}`,
  experiment: (id: number) => `experiment:${id}`,
  runsTable: (id: number) => `runs-table:${id}`,
};

const started = new Map<string, Promise<unknown>>();

/** The early answer named `key` (once: a later ask goes to the API), or undefined. */
export function takeEarly<T>(key: string): Promise<T> | undefined {
  const answer = started.get(key) as Promise<T> | undefined;
  started.delete(key);
  return answer;
}

/** The early answer named `key` if there is one and it succeeds; else (none, or refused: an expired
 *  login's 401) what `ask` gets from the API, where errors are handled. */
export function takeEarlyOr<T>(key: string, ask: () => Promise<T>): Promise<T> {
  const answer = takeEarly<T>(key);
  return answer ? answer.catch(() => ask()) : ask();
}

/** What early.ts needs of the document (a test passes its own). */
export interface PreloadDocument {
  getElementById(id: string): { textContent: string | null } | null;
  createElement(tag: 'link'): { rel: string; href: string; crossOrigin: string | null };
  createElement(tag: 'script'): { type: string; src: string; crossOrigin: string | null };
  head: { appendChild(node: unknown): unknown };
}

function addPreload(doc: PreloadDocument, file: string): void {
  const link = doc.createElement('link');
  link.rel = 'modulepreload';
  link.crossOrigin = ''; // as the module scripts load (crossorigin): one request serves both
  link.href = file;
  doc.head.appendChild(link);
}

/**
 * Loads the dashboard's code: the built index.html names the entry's module script and its modulepreloads
 * in the data block `reasonlab-entry` instead of as tags (vite.config.ts), so that they are asked for after
 * the page's first API requests have gone out, however slow the CPU. Nothing without the block (the dev
 * server, whose index.html loads the app itself).
 */
export function startEntry(doc: PreloadDocument): void {
  let entry: unknown;
  try {
    entry = JSON.parse(doc.getElementById('reasonlab-entry')?.textContent ?? 'null');
  } catch {
    return;
  }
  if (!entry || typeof entry !== 'object') return;
  const { script, preload } = entry as { script?: unknown; preload?: unknown };
  if (Array.isArray(preload)) for (const file of preload) if (typeof file === 'string') addPreload(doc, file);
  if (typeof script !== 'string') return;
  const tag = doc.createElement('script');
  tag.type = 'module';
  tag.crossOrigin = '';
  tag.src = script;
  doc.head.appendChild(tag);
}

/**
 * Asks for a page's code at once, as module preloads: index.html's data block `reasonlab-page-chunks`
 * (written by the build, vite.config.ts) names each page's chunks beyond the entry's. Without it the page's
 * chunk is asked for only once the entry has run, and its own imports once it has arrived (on the
 * experiment page the table's code arrived ~0.1 s after the runs did). Nothing when the build
 * wrote no list (the dev server) or the list is unreadable.
 */
export function preloadPage(page: 'run' | 'experiment', doc: PreloadDocument): void {
  let files: unknown;
  try {
    files = (JSON.parse(doc.getElementById('reasonlab-page-chunks')?.textContent ?? '{}') as Record<string, unknown>)[page];
  } catch {
    return;
  }
  if (!Array.isArray(files)) return;
  for (const file of files) if (typeof file === 'string') addPreload(doc, file);
}

/** Starts the page's first requests for `pathname` (the URL the browser opened), and with `doc` the
 *  download of its code. */
export function startEarly(pathname: string, token: string | null, doc?: PreloadDocument): void {
  if (!token) return;
  const get = (name: string, path: string) => {
    const answer = fetch(path, { headers: { Authorization: `Bearer ${token}` } }).then((r) =>
      r.ok ? r.json() : Promise.reject(new Error(`${r.status}`)),
    );
    answer.catch(() => undefined); // not taken, or taken and asked again: never an unhandled rejection
    started.set(name, answer);
    return answer;
  };
  // every page shows who is signed in and what they may do (the layout, the pages' buttons)
  get(earlyKey.me(), '/api/v1/auth/me');
  const run = /^\/runs\/(\d+)\/?$/.exec(pathname);
  if (run) {
    const id = Number(run[1]);
    if (doc) preloadPage('run', doc);
    get(earlyKey.run(id), `/api/v1/runs/${id}`);
    void get(earlyKey.metricKeys(id), `/api/v1/runs/${id}/metric-keys`).then((keys) => {
      if (!Array.isArray(keys)) return; // not the API's answer: the page asks again itself
      for (const key of keys as string[]) {
        const query = new URLSearchParams({ keys: key, max_points: String(CHART_MAX_POINTS) });
        get(earlyKey.metrics(id, key), `/api/v1/runs/${id}/metrics?${query}`);
      }
    }, () => undefined);
    return;
  }
  const experiment = /^\/experiments\/(\d+)\/?$/.exec(pathname);
  if (experiment) {
    const id = Number(experiment[1]);
    if (doc) preloadPage('experiment', doc);
    get(earlyKey.experiment(id), `/api/v1/experiments/${id}?with_runs=false`);
    get(earlyKey.runsTable(id), `/api/v1/experiments/${id}/runs-table`);
  }
}

// the requests first, then the page's chunks (in startEarly) and the entry's code
if (typeof location !== 'undefined' && typeof fetch !== 'undefined') {
  startEarly(location.pathname, readToken(), document);
  startEntry(document);
}
