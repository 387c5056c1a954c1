// `npm run e2e`: the browser test files under node's test runner (E2E_CONCURRENCY files at a time, default
// 2), all against one chromium started here. Each file still opens a context of its own (a fresh profile:
// harness.mjs, launchBrowser) and starts its own platform; what the files share is the browser's processes
// (the browser, its GPU and network services), which a file used to start and stop for itself: ~2.5 CPU-s
// a file. Arguments, if any, replace the default file list (e2e/).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from './harness.mjs';

// The files that take longest (seconds in a clean-clone `make test`, four at a time) start first: node's test
// runner starts files in the order given, so a long file started last would run alone at the end while
// the other slots sit empty. Files not named here follow, in name order (E2E_ORDER=name: every file in name
// order, as before; 193.8 s against 181.7 s longest first, side by side).
const LONGEST_FIRST = [
  'carma', // ~125 s alone in a quiet `npm run e2e` (2026-11-29, four at a time): the CARMA views and reports
  'dashboard', // 103
  'reasonformer', // 98
  'skillmix', // 84
  'attempts', // 76
  'run_page', // 71
  'claims', // 67: six diagnostic runs on one worker, watched as they end
  'small_defects', // 51
  'exports', // 49
  'run_names', // 46
  'topk_eval', // 42
];

function defaultFiles() {
  const names = readdirSync('e2e')
    .filter((f) => f.endsWith('.test.mjs'))
    .map((f) => f.slice(0, -'.test.mjs'.length))
    .sort();
  if (process.env.E2E_ORDER === 'name') return names.map((n) => `e2e/${n}.test.mjs`);
  const rank = (n) => (LONGEST_FIRST.includes(n) ? LONGEST_FIRST.indexOf(n) : LONGEST_FIRST.length);
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).map((n) => `e2e/${n}.test.mjs`);
}

const server = await chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
const files = process.argv.slice(2);
const runner = spawn(
  process.execPath,
  ['--test', '--test-force-exit', `--test-concurrency=${process.env.E2E_CONCURRENCY ?? 2}`, ...(files.length ? files : defaultFiles())],
  { stdio: 'inherit', env: { ...process.env, E2E_BROWSER_WS: server.wsEndpoint() } },
);
const stop = () => runner.kill('SIGINT');
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
const [code, signal] = await new Promise((res) => runner.on('exit', (c, s) => res([c, s])));
await server.close();
process.exit(code ?? (signal ? 1 : 0));
