import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script of the build (no type declarations)
import { buildParts, check, staticImports } from '../scripts/bundleBudget.mjs';

const HTML = `<!doctype html><html><head>
<script type="application/json" id="reasonlab-page-chunks">{"run":["/assets/RunPage.js","/assets/uplot.js"],"experiment":["/assets/ExperimentPage.js"]}</script>
<script type="module" async crossorigin src="/assets/early.js"></script>
<script type="module" crossorigin src="/assets/index.js"></script>
<link rel="modulepreload" crossorigin href="/assets/mantine.js">
<link rel="modulepreload" crossorigin href="/assets/early.js">
<link rel="stylesheet" crossorigin href="/assets/mantine.css">
</head><body><div id="root"></div></body></html>`;

const SIZES: Record<string, number> = {
  '/assets/early.js': 1000,
  '/assets/index.js': 300,
  '/assets/mantine.js': 200,
  '/assets/RunPage.js': 50,
  '/assets/uplot.js': 70,
  '/assets/ExperimentPage.js': 40,
};

const BUILT = HTML.replace(
  /<script type="module" crossorigin src="\/assets\/index.js"><\/script>\n<link rel="modulepreload" crossorigin href="\/assets\/mantine.js">\n/,
  '<script type="application/json" id="reasonlab-entry">{"script":"/assets/index.js","preload":["/assets/mantine.js"]}</script>\n',
);

describe("the dashboard's JavaScript budgets (scripts/bundleBudget.mjs)", () => {
  it("reads the entry from the reasonlab-entry block the build leaves to early.ts", () => {
    expect(BUILT).not.toContain('modulepreload" crossorigin href="/assets/mantine.js');
    expect(buildParts(BUILT)).toEqual(buildParts(HTML));
  });

  it('reads the early script, the entry with its preloads (less the early chunk) and each page from index.html', () => {
    expect(buildParts(HTML)).toEqual({
      early: ['/assets/early.js'],
      entry: ['/assets/index.js', '/assets/mantine.js'],
      'page.run': ['/assets/RunPage.js', '/assets/uplot.js'],
      'page.experiment': ['/assets/ExperimentPage.js'],
    });
  });

  it('passes within the budgets and names each part that grows past its own, by how much', () => {
    const budgets = { early: 1000, entry: 500, 'page.run': 120, 'page.experiment': 40 };
    const size = (f: string) => SIZES[f];
    expect(check(buildParts(HTML), size, () => '', budgets).problems).toEqual([]);
    const grown = check(buildParts(HTML), (f: string) => (size(f) ?? 0) + (f.includes('mantine') ? 1 : 0), () => '', budgets);
    expect(grown.problems).toEqual(['entry: 501 bytes, over its budget of 500 by 1']);
    expect(check(buildParts(HTML), size, () => '', { ...budgets, 'page.run': undefined }).problems).toEqual([
      'page.run: no budget in bundle-budget.json',
    ]);
  });

  it('fails when the early chunk imports anything or is missing', () => {
    expect(staticImports('import{a as b}from"./client-1.js";import"./x.js";const y=import("./lazy.js")')).toEqual([
      './client-1.js',
      './x.js',
    ]);
    const budgets = { early: 4096, entry: 1e9, 'page.run': 1e9, 'page.experiment': 1e9 };
    const { problems } = check(buildParts(HTML), (f: string) => SIZES[f], () => 'import{q}from"./client-1.js";', budgets);
    expect(problems).toEqual(['early: /assets/early.js imports ./client-1.js (it must import nothing)']);
    const noEarly = HTML.replace(/<script type="module" async[^>]*><\/script>/, '');
    expect(check(buildParts(noEarly), (f: string) => SIZES[f], () => '', budgets).problems).toContain(
      'early: index.html loads no async early script',
    );
  });
});
