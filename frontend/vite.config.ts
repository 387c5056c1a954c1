import react from '@vitejs/plugin-react';
import { copyFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Plugin } from 'vite';
import { defineConfig } from 'vitest/config';

/** Swagger UI's files, copied from the npm package into assets/swagger/: the API's /api/v1/docs page
 *  loads them from the server itself (backend/main.py), so it works offline and its CSP names no CDN. */
export const SWAGGER_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css', 'favicon-32x32.png', 'LICENSE'];

function swaggerUi(): Plugin {
  let outDir = '';
  return {
    name: 'reasonlab-swagger-ui',
    apply: 'build',
    configResolved(config) {
      outDir = config.build.outDir;
    },
    writeBundle() {
      const from = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
      const to = join(outDir, 'assets', 'swagger');
      mkdirSync(to, { recursive: true });
      for (const f of SWAGGER_FILES) copyFileSync(join(from, f), join(to, f));
    },
  };
}

/** The chunks a page needs beyond the entry's: the page's own chunk and what it imports (and, for the run
 *  page, uPlot for its metric charts, which its loader asks for at once), file names as served. */
export const PAGE_MODULES = {
  experiment: ['/src/routes/ExperimentPage.tsx'],
  run: ['/src/routes/RunPage.tsx', '/src/components/charts/uplot.ts'],
};

type Bundle = Record<string, { type: string; fileName: string; name?: string; isEntry?: boolean; facadeModuleId?: string | null; imports?: string[] }>;

/** The build's chunks, and what a list of chunks loads: them and their static imports, transitively. */
function chunkGraph(bundle: Bundle) {
  const chunks = Object.values(bundle).filter((c) => c.type === 'chunk');
  const byFile = new Map(chunks.map((c) => [c.fileName, c]));
  const closure = (roots: string[]) => {
    const seen = new Set<string>();
    const visit = (f: string) => {
      if (seen.has(f)) return;
      seen.add(f);
      byFile.get(f)?.imports?.forEach(visit);
    };
    roots.forEach(visit);
    return seen;
  };
  const entry = closure(chunks.filter((c) => c.isEntry && c.name === 'index').map((c) => c.fileName));
  const facade = (m: string) => chunks.find((c) => c.facadeModuleId?.replaceAll('\\', '/').endsWith(m))?.fileName;
  const pages = Object.entries(PAGE_MODULES).map(([page, modules]) => [page, closure(modules.map(facade).filter((f): f is string => !!f))] as const);
  return { entry, pages };
}

export function pageChunks(bundle: Bundle): Record<string, string[]> {
  const { entry, pages } = chunkGraph(bundle);
  return Object.fromEntries(pages.map(([page, files]) => [page, [...files].filter((f) => !entry.has(f)).map((f) => `/${f}`)]));
}

/** The chunks compiled eagerly (COMPILE_HINT): the entry's and those of the pages early.ts preloads. */
export function eagerChunks(bundle: Bundle): Set<string> {
  const { entry, pages } = chunkGraph(bundle);
  return new Set([...entry, ...pages.flatMap(([, files]) => [...files])]);
}

/** The tags Vite writes into index.html for the entry (its module script and modulepreloads), taken out of
 *  the html: early.ts adds them once it has started the page's first API requests. */
export function takeEntryTags(html: string, early: string): { html: string; script: string | null; preload: string[] } {
  let script: string | null = null;
  const preload: string[] = [];
  const out = html
    .replace(/<script\b(?![^>]*\basync\b)[^>]*\btype="module"[^>]*\bsrc="([^"]+)"[^>]*><\/script>\s*/g, (tag, src: string) => {
      if (script !== null) return tag; // one entry script; anything else stays as written
      script = src;
      return '';
    })
    .replace(/<link\b[^>]*\brel="modulepreload"[^>]*\bhref="([^"]+)"[^>]*>\s*/g, (_tag, href: string) => {
      if (href !== early) preload.push(href);
      return '';
    });
  return { html: out, script, preload };
}

/** src/early.ts, an entry of its own, loaded by index.html first and asynchronously, and the only script the
 *  built index.html loads: it starts the page's first API requests, then adds the entry's module script and
 *  modulepreloads (a data block `reasonlab-entry` names them), so the requests go out first whatever the
 *  CPU's speed. With the entry's tags in index.html as Vite writes them, a slow CPU (make perf at 4x) ran
 *  early.ts only after ~0.7 MB of the entry had arrived, and the requests waited for it. Before it, a data
 *  block (not a script: the CSP allows no inline one) names each page's chunks, which early.ts preloads for
 *  the page being opened: without it the page's code is asked for only once the entry has run. */
function earlyRequests(): Plugin {
  return {
    name: 'reasonlab-early-requests',
    transformIndexHtml: {
      order: 'post',
      handler(html, ctx) {
        const bundle: Bundle = ctx.bundle ?? {};
        const chunk = Object.values(bundle).find((c) => c.type === 'chunk' && c.isEntry && c.name === 'early');
        const early = { tag: 'script', attrs: { type: 'module', async: true, crossorigin: true, src: chunk ? `/${chunk.fileName}` : '/src/early.ts' }, injectTo: 'head-prepend' as const };
        if (!chunk) return [early]; // the dev server: index.html's own script loads the app
        const entry = takeEntryTags(html, `/${chunk.fileName}`);
        if (entry.script === null) throw new Error('reasonlab-early-requests: no entry script in index.html');
        const data = (id: string, value: unknown) => ({ tag: 'script', attrs: { type: 'application/json', id }, children: JSON.stringify(value), injectTo: 'head-prepend' as const });
        return {
          html: entry.html,
          tags: [data('reasonlab-page-chunks', pageChunks(bundle)), data('reasonlab-entry', { script: entry.script, preload: entry.preload }), early],
        };
      },
    },
  };
}

/** V8's explicit compile hint (Chrome 136+; other engines read a comment): the code every page runs at
 *  load (the entry and its static imports: React, the router, the query client, Mantine) and the chunks
 *  of the pages early.ts preloads (PAGE_MODULES: the run and experiment pages, the line charts' ECharts)
 *  are compiled eagerly on a background thread while they download, instead of function by function on
 *  the main thread when first called (docs/benchmarks.md, "Dashboard in the browser": without any hint
 *  both pages' loads are ~8% slower at 4x; the pages' own chunks with one ~3-4% faster). */
export const COMPILE_HINT = '//# allFunctionsCalledOnLoad\n';

function compileHints(): Plugin {
  return {
    name: 'reasonlab-compile-hints',
    apply: 'build',
    generateBundle: {
      // after Vite's own rewrites of the chunks (its preload helper goes at the top of a chunk too)
      order: 'post',
      handler(_options, bundle) {
        const eager = eagerChunks(bundle);
        for (const c of Object.values(bundle)) if (c.type === 'chunk' && eager.has(c.fileName)) c.code = COMPILE_HINT + c.code;
      },
    },
  };
}

/** uPlot's module makes an Intl.NumberFormat and an Intl.DateTimeFormat as it is evaluated: ICU's first
 *  use of each, 50-140 ms on a slow CPU (docs/benchmarks.md, `npm run perf:icu`), on the run page's path to
 *  its first chart, though our charts format every label themselves (components/charts/metricPlot.ts).
 *  This makes both on first use instead. Each replaced text must be found once: a uPlot whose code moved
 *  fails the build rather than quietly keeping the cost. */
export const UPLOT_LAZY_INTL: [string, string][] = [
  [
    "const numFormatter = new Intl.NumberFormat(domEnv ? nav.language : 'en-US');\nconst fmtNum = val => numFormatter.format(val);",
    "let numFormatter = null;\nconst fmtNum = val => (numFormatter ??= new Intl.NumberFormat(domEnv ? nav.language : 'en-US')).format(val);",
  ],
  [
    'const localTz = new Intl.DateTimeFormat().resolvedOptions().timeZone;',
    'let localTz_ = null;\nconst localTzNow = () => (localTz_ ??= new Intl.DateTimeFormat().resolvedOptions().timeZone);',
  ],
  ['else if (tz == localTz)', 'else if (tz == localTzNow())'],
];

export function lazyIntl(code: string, replacements: [string, string][]): string {
  return replacements.reduce((out, [from, to]) => {
    const n = out.split(from).length - 1;
    if (n !== 1) throw new Error(`reasonlab-uplot-lazy-intl: ${JSON.stringify(from.slice(0, 60))} found ${n} times in uPlot (expected once)`);
    return out.replace(from, to);
  }, code);
}

function uplotLazyIntl(): Plugin {
  return {
    name: 'reasonlab-uplot-lazy-intl',
    transform(code, id) {
      return /[\\/]uplot[\\/]dist[\\/]uPlot\.esm\.js$/.test(id) ? lazyIntl(code, UPLOT_LAZY_INTL) : null;
    },
  };
}

// Built assets go to backend/static, which the API serves at `/`; `npm run dev` proxies /api to a
// locally running API (`reasonlab up` or `reasonlab api`).
export default defineConfig({
  plugins: [react(), swaggerUi(), earlyRequests(), compileHints(), uplotLazyIntl()],
  build: {
    outDir: '../backend/static',
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
    rollupOptions: {
      input: { index: 'index.html', early: 'src/early.ts' },
      output: {
        // mantine is large and changes rarely: its own chunk caches across releases. A group, not
        // manualChunks: a manual echarts chunk took the helpers mantine shares with it (tslib), so the entry
        // preloaded all of ECharts though only the pages with charts use it.
        // ECharts is split by its two entry modules instead (components/charts/echarts.ts: line charts,
        // what the run page draws; echartsFull.ts: the rest, for heatmaps, bars, parallel coordinates).
        codeSplitting: {
          groups: [{ name: 'mantine', test: /node_modules[\\/](@mantine|tslib)[\\/]/, priority: 2 }],
        },
      },
    },
  },
  // the dev server's pre-bundling would skip uplotLazyIntl's transform: uPlot is served as it is built
  optimizeDeps: { exclude: ['uplot'] },
  server: {
    proxy: { '/api': { target: process.env.REASONLAB_API ?? 'http://127.0.0.1:8000', changeOrigin: true } },
  },
  test: {
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
    environment: 'node',
    // one module graph per test process instead of one per file: 59 files took 50 CPU-s, 39 s of it
    // re-importing the same modules (Mantine, ECharts, the client) per file; without isolation 12 CPU-s.
    // The files leave no state behind that another reads: the suite passes with its files
    // shuffled (`npx vitest run --sequence.shuffle.files --sequence.seed=N`, seeds 1-3).
    isolate: false,
    // a test's limit, not a goal: `make test` runs vitest beside pytest's processes on two cores, where a
    // jsdom page test that takes 0.5 s alone was measured past 5 s (the default)
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
