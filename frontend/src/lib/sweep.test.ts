import { describe, expect, it } from 'vitest';
import {
  emptySweep, expandGrid, modelToSweep, parseValueList, previewColumns, sweepProblems, sweepRunCount, sweepToModel,
} from './sweep';

describe('parseValueList', () => {
  it('reads numbers, booleans, null and strings', () => {
    expect(parseValueList('0.1, 1e-3, 2, true, null, adam, "x y"')).toEqual([0.1, 0.001, 2, true, null, 'adam', 'x y']);
  });
  it('drops empty items', () => {
    expect(parseValueList(' , 1,, ')).toEqual([1]);
  });
});

describe('modelToSweep / sweepRunCount', () => {
  it('combines grid x random x seeds like the server', () => {
    const model = {
      ...emptySweep(),
      grid: [
        { type: 'grid' as const, path: 'train.lr', text: '0.1, 0.01' },
        { type: 'grid' as const, path: 'model.hidden', text: '16, 32, 64' },
      ],
      random: [{ type: 'random' as const, path: 'data.noise', distribution: { dist: 'uniform' as const, low: 0, high: 0.2 } }],
      randomN: 4,
      seeds: '1, 2',
    };
    const sweep = modelToSweep(model);
    expect(sweep).toEqual({
      grid: { 'train.lr': [0.1, 0.01], 'model.hidden': [16, 32, 64] },
      random: { n: 4, seed: 0, params: { 'data.noise': { dist: 'uniform', low: 0, high: 0.2 } } },
      seeds: [1, 2],
    });
    expect(sweepRunCount(sweep)).toBe(2 * 3 * 4 * 2);
  });

  it('is null (one run) when nothing is swept', () => {
    expect(modelToSweep(emptySweep())).toBeNull();
    expect(sweepRunCount(null)).toBe(1);
  });

  it('ignores random n without random axes', () => {
    expect(sweepRunCount({ random: { n: 5, seed: 0, params: {} }, seeds: [1, 2, 3] })).toBe(3);
  });

  it('round-trips through the editor model', () => {
    const sweep = { grid: { 'train.lr': [0.1, 0.01] }, random: { n: 3, seed: 7, params: { x: { dist: 'choice', values: [1, 2] } } }, seeds: [1] };
    expect(modelToSweep(sweepToModel(sweep))).toEqual(sweep);
  });

  it('reads int_uniform axes and leaves out what the editor cannot model', () => {
    const model = sweepToModel({
      grid: { a: [1, 2], b: 'not a list' },
      random: { n: 2, params: { k: { dist: 'int_uniform', low: 1, high: 8 }, bad: { dist: 'uniform', low: 'x' }, odd: { dist: 'gamma' } } },
      seeds: [1, 'two', 3],
    });
    expect(model.grid.map((a) => a.path)).toEqual(['a']);
    expect(model.random).toEqual([{ type: 'random', path: 'k', distribution: { dist: 'int_uniform', low: 1, high: 8 } }]);
    expect(model.seeds).toBe('1, 3');
    expect(sweepToModel(null)).toEqual(emptySweep());
  });
});

describe('expandGrid', () => {
  it('varies the last axis fastest', () => {
    expect(expandGrid({ a: [1, 2], b: ['x', 'y'] })).toEqual([
      { a: 1, b: 'x' }, { a: 1, b: 'y' }, { a: 2, b: 'x' }, { a: 2, b: 'y' },
    ]);
  });
});

describe('previewColumns', () => {
  it('lists every param in first-seen order', () => {
    expect(previewColumns([{ params: { a: 1 } }, { params: { a: 2, seed: 3 } }])).toEqual(['a', 'seed']);
  });
});

describe('sweepProblems', () => {
  it('flags a path swept twice, an empty axis and a bad range', () => {
    const problems = sweepProblems({
      ...emptySweep(),
      grid: [{ type: 'grid', path: 'x', text: '1' }, { type: 'grid', path: 'y', text: '' }],
      random: [{ type: 'random', path: 'x', distribution: { dist: 'loguniform', low: 0, high: 1 } }],
    });
    expect(problems.join('\n')).toMatch(/"x" is swept twice/);
    expect(problems.join('\n')).toMatch(/"y" has no values/);
    expect(problems.join('\n')).toMatch(/loguniform needs low > 0/);
  });
  it('flags an int_uniform range with no whole number in it', () => {
    const problems = sweepProblems({ ...emptySweep(), random: [{ type: 'random', path: 'k', distribution: { dist: 'int_uniform', low: 1.2, high: 1.8 } }] });
    expect(problems.join()).toMatch(/no whole number/);
  });
  it('flags a sweep over the run limit', () => {
    const big = Array.from({ length: 5 }, (_, i) => ({ type: 'grid' as const, path: `p${i}`, text: '1,2,3,4,5,6,7' }));
    expect(sweepProblems({ ...emptySweep(), grid: big }).join()).toMatch(/exceed the limit/);
  });
});
