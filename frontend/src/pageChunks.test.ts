import { describe, expect, it } from 'vitest';
import { pageChunks } from '../vite.config';

const chunk = (fileName: string, extra: Record<string, unknown> = {}) => ({ type: 'chunk', fileName, imports: [] as string[], ...extra });

describe("the build's list of each page's chunks (index.html's reasonlab-page-chunks)", () => {
  it("holds a page's chunk and what it imports, less what the entry loads already; the run page adds ECharts", () => {
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
      'assets/echarts.js': chunk('assets/echarts.js', { facadeModuleId: '/repo/frontend/src/components/charts/echarts.ts' }),
      'assets/style.css': { type: 'asset', fileName: 'assets/style.css' },
    };
    expect(pageChunks(bundle)).toEqual({
      experiment: ['/assets/ExperimentPage.js', '/assets/Table.js', '/assets/format.js'],
      run: ['/assets/RunPage.js', '/assets/format.js', '/assets/echarts.js'],
    });
  });

  it('an empty list for a page whose chunk is not in the bundle', () => {
    expect(pageChunks({ 'assets/index.js': chunk('assets/index.js', { isEntry: true, name: 'index' }) })).toEqual({ experiment: [], run: [] });
  });
});
