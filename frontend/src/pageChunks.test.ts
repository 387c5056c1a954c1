import { describe, expect, it } from 'vitest';
import { eagerChunks, pageChunks, takeEntryTags } from '../vite.config';

const chunk = (fileName: string, extra: Record<string, unknown> = {}) => ({ type: 'chunk', fileName, imports: [] as string[], ...extra });

describe("the build's list of each page's chunks (index.html's reasonlab-page-chunks)", () => {
  it("holds a page's chunk and what it imports, less what the entry loads already; the run page adds uPlot", () => {
    const bundle = {
      'assets/index.js': chunk('assets/index.js', { isEntry: true, name: 'index', imports: ['assets/mantine.js', 'assets/runtime.js'] }),
      'assets/mantine.js': chunk('assets/mantine.js', { imports: ['assets/runtime.js'] }),
      'assets/runtime.js': chunk('assets/runtime.js'),
      'assets/early.js': chunk('assets/early.js', { isEntry: true, name: 'early' }),
      'assets/ExperimentPage.js': chunk('assets/ExperimentPage.js', {
        facadeModuleId: '/repo/frontend/src/routes/ExperimentPage.tsx',
        imports: ['assets/mantine.js', 'assets/Table.js'],
      }),
      'assets/Table.js': chunk('assets/Table.js', { imports: ['assets/format.js'] }),
      'assets/format.js': chunk('assets/format.js'),
      'assets/RunPage.js': chunk('assets/RunPage.js', { facadeModuleId: 'C:\\repo\\frontend\\src\\routes\\RunPage.tsx', imports: ['assets/format.js'] }),
      'assets/uplot.js': chunk('assets/uplot.js', { facadeModuleId: '/repo/frontend/src/components/charts/uplot.ts' }),
      'assets/style.css': { type: 'asset', fileName: 'assets/style.css' },
    };
    expect(pageChunks(bundle)).toEqual({
      experiment: ['/assets/ExperimentPage.js', '/assets/Table.js', '/assets/format.js'],
      run: ['/assets/RunPage.js', '/assets/format.js', '/assets/uplot.js'],
    });
  });

  it("compiles eagerly the entry's chunks and the preloaded pages', not another page's", () => {
    const bundle = {
      'assets/index.js': chunk('assets/index.js', { isEntry: true, name: 'index', imports: ['assets/mantine.js'] }),
      'assets/mantine.js': chunk('assets/mantine.js'),
      'assets/early.js': chunk('assets/early.js', { isEntry: true, name: 'early' }),
      'assets/RunPage.js': chunk('assets/RunPage.js', { facadeModuleId: '/repo/frontend/src/routes/RunPage.tsx', imports: ['assets/format.js'] }),
      'assets/format.js': chunk('assets/format.js'),
      'assets/uplot.js': chunk('assets/uplot.js', { facadeModuleId: '/repo/frontend/src/components/charts/uplot.ts' }),
      'assets/NewExperimentPage.js': chunk('assets/NewExperimentPage.js', { facadeModuleId: '/repo/frontend/src/routes/NewExperimentPage.tsx', imports: ['assets/editor.js'] }),
      'assets/editor.js': chunk('assets/editor.js'),
    };
    expect([...eagerChunks(bundle)].sort()).toEqual(['assets/RunPage.js', 'assets/format.js', 'assets/index.js', 'assets/mantine.js', 'assets/uplot.js']);
  });

  it('an empty list for a page whose chunk is not in the bundle', () => {
    expect(pageChunks({ 'assets/index.js': chunk('assets/index.js', { isEntry: true, name: 'index' }) })).toEqual({ experiment: [], run: [] });
  });
});

describe("the entry's tags, left to early.ts (index.html's reasonlab-entry)", () => {
  const html = `<head>
    <script type="module" async crossorigin src="/assets/early.js"></script>
    <title>ReasonLab</title>
    <script type="module" crossorigin src="/assets/index.js"></script>
    <link rel="modulepreload" crossorigin href="/assets/mantine.js">
    <link rel="modulepreload" crossorigin href="/assets/early.js">
    <link rel="stylesheet" crossorigin href="/assets/mantine.css">
  </head>`;

  it("takes the entry's module script and modulepreloads out (less the early chunk), keeping the rest", () => {
    const taken = takeEntryTags(html, '/assets/early.js');
    expect(taken.script).toBe('/assets/index.js');
    expect(taken.preload).toEqual(['/assets/mantine.js']);
    expect(taken.html).toContain('src="/assets/early.js"');
    expect(taken.html).toContain('rel="stylesheet"');
    expect(taken.html).not.toContain('/assets/index.js');
    expect(taken.html).not.toContain('modulepreload');
  });

  it('no entry script: null (the build then fails)', () => {
    expect(takeEntryTags('<head><title>x</title></head>', '/assets/early.js').script).toBeNull();
  });
});
