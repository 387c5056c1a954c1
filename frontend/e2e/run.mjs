// `npm run e2e`: the browser test files under node's test runner (E2E_CONCURRENCY files at a time, default
// 2), all against one chromium started here. Each file still opens a context of its own (a fresh profile:
// harness.mjs, launchBrowser) and starts its own platform; what the files share is the browser's processes
// (the browser, its GPU and network services), which a file used to start and stop for itself: ~2.5 CPU-s
// a file (issue 24). Arguments, if any, replace the default file list (e2e/).
import { spawn } from 'node:child_process';
import { chromium } from 'playwright-core';
import { CHROMIUM, CHROMIUM_ARGS } from './harness.mjs';

const server = await chromium.launchServer({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
const files = process.argv.slice(2);
const runner = spawn(
  process.execPath,
  ['--test', '--test-force-exit', `--test-concurrency=${process.env.E2E_CONCURRENCY ?? 2}`, ...(files.length ? files : ['e2e/'])],
  { stdio: 'inherit', env: { ...process.env, E2E_BROWSER_WS: server.wsEndpoint() } },
);
const stop = () => runner.kill('SIGINT');
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
const [code, signal] = await new Promise((res) => runner.on('exit', (c, s) => res([c, s])));
await server.close();
process.exit(code ?? (signal ? 1 : 0));
