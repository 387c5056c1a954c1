// uPlot's module, as the build serves it (vite.config.ts uplotLazyIntl): no Intl object made as it is
// evaluated, only on a first use, which our charts never make (they format their own labels).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { lazyIntl, UPLOT_LAZY_INTL } from '../vite.config';

const uplotSource = () => readFileSync(createRequire(import.meta.url).resolve('uplot/dist/uPlot.esm.js'), 'utf8');

describe("uPlot's Intl, made on first use", () => {
  it('leaves no Intl object made at the module level of the installed uPlot', () => {
    const before = uplotSource();
    expect(before).toMatch(/^const numFormatter = new Intl\.NumberFormat/m); // the cost this removes is there
    const after = lazyIntl(before, UPLOT_LAZY_INTL);
    const topLevel = after.split('\n').filter((l) => /^(const|let|var) [^=]+= new Intl\./.test(l));
    expect(topLevel).toEqual([]);
    expect(after.match(/\?\?= new Intl\./g)).toHaveLength(2);
  });

  it('fails the build when uPlot no longer holds a text it replaces', () => {
    expect(() => lazyIntl('const x = 1;', UPLOT_LAZY_INTL)).toThrow(/found 0 times/);
  });
});
