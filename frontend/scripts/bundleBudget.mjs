// The dashboard's JavaScript budgets, in bytes (issue: the dashboard got slower as its code grew unseen).
// Reads the build (backend/static: index.html and assets/) and fails when a part grows past its budget in
// bundle-budget.json:
//   early        src/early.ts's chunk: the script that starts the page's first API requests. It must stay
//                tiny and import nothing, or the requests wait for more code.
//   entry        what the browser loads before the dashboard's code runs at all (the entry script and its
//                modulepreloads, less the early chunk; index.html's `reasonlab-entry` block names them, for
//                early.ts to add once the page's first API requests are out).
//   page.<name>  each page's own chunks beyond the entry's (index.html's reasonlab-page-chunks block).
// `node scripts/bundleBudget.mjs` prints every part against its budget; `make test` runs it after the build.
import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The parts of the build named in the header, each a list of served paths ("/assets/x.js"). */
export function buildParts(html) {
  const early = [...html.matchAll(/<script\b[^>]*\basync\b[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]);
  const scripts = [...html.matchAll(/<script\b(?![^>]*\basync\b)[^>]*\btype="module"[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]);
  const preloads = [...html.matchAll(/<link\b[^>]*\brel="modulepreload"[^>]*\bhref="([^"]+)"/g)].map((m) => m[1]);
  const data = (id) => {
    const block = new RegExp(`<script[^>]*id="${id}"[^>]*>([^<]*)</script>`).exec(html);
    return block ? JSON.parse(block[1]) : null;
  };
  const pages = data('reasonlab-page-chunks') ?? {};
  // the entry's tags as Vite writes them, or as the build leaves them to early.ts (its data block)
  const named = data('reasonlab-entry');
  const listed = named ? [named.script, ...named.preload] : [];
  const entry = [...new Set([...scripts, ...preloads, ...listed])].filter((p) => !early.includes(p));
  return {
    early,
    entry,
    ...Object.fromEntries(Object.entries(pages).map(([name, files]) => [`page.${name}`, files])),
  };
}

/** Static imports of a built chunk (`import ... from"./x.js"`, `import"./x.js"`): the early chunk has none. */
export function staticImports(code) {
  return [...code.matchAll(/\bimport\s*(?:[\w*{}\s,$]+from\s*)?["'](\.[^"']+)["']/g)].map((m) => m[1]);
}

/** Rows of [part, bytes, budget, ok] and problems (a part over budget, a part without one, early imports). */
export function check(parts, sizeOf, codeOf, budgets) {
  const rows = [];
  const problems = [];
  for (const [part, files] of Object.entries(parts)) {
    const bytes = files.reduce((n, f) => n + sizeOf(f), 0);
    const budget = budgets[part];
    if (budget === undefined) problems.push(`${part}: no budget in bundle-budget.json`);
    else if (bytes > budget) problems.push(`${part}: ${bytes} bytes, over its budget of ${budget} by ${bytes - budget}`);
    rows.push([part, bytes, budget, budget !== undefined && bytes <= budget]);
  }
  for (const f of parts.early ?? []) {
    const imports = staticImports(codeOf(f));
    if (imports.length) problems.push(`early: ${f} imports ${imports.join(', ')} (it must import nothing)`);
  }
  if (!(parts.early ?? []).length) problems.push('early: index.html loads no async early script');
  return { rows, problems };
}

function main() {
  const here = dirname(fileURLToPath(import.meta.url));
  const root = join(here, '..', '..', 'backend', 'static');
  const html = readFileSync(join(root, 'index.html'), 'utf8');
  const budgets = JSON.parse(readFileSync(join(here, '..', 'bundle-budget.json'), 'utf8')).budgets;
  const file = (p) => join(root, p.replace(/^\//, ''));
  const { rows, problems } = check(buildParts(html), (p) => statSync(file(p)).size, (p) => readFileSync(file(p), 'utf8'), budgets);
  const kib = (n) => (n === undefined ? '-' : `${(n / 1024).toFixed(1)} KiB`);
  for (const [part, bytes, budget, ok] of rows) {
    console.log(`${ok ? 'ok  ' : 'OVER'} ${part.padEnd(18)} ${kib(bytes).padStart(11)} of ${kib(budget)}`);
  }
  if (problems.length) {
    console.error(`\nJavaScript budgets (frontend/bundle-budget.json) exceeded:\n- ${problems.join('\n- ')}`);
    process.exit(1);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
