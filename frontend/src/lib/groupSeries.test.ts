import { describe, expect, it } from 'vitest';
import { alignGroup, carryTolerance, formatMeanCi, groupByFields, groupBySeed, groupFieldValue, groupLabels, groupStats, seedGroupKey, withoutSeeds } from './groupSeries';

// reference numbers: numpy mean / std(ddof=1) and scipy.stats.t.ppf(0.975, n - 1), computed outside this code
describe('groupStats', () => {
  it('gives the mean, sample std and Student-t 95% interval', () => {
    const s = groupStats([1, 2, 3, 4, 5])!;
    expect(s.n).toBe(5);
    expect(s.mean).toBe(3);
    expect(s.std).toBeCloseTo(1.5811388300841898, 12);
    expect(s.ci!.lo).toBeCloseTo(1.0367568385224428, 12);
    expect(s.ci!.hi).toBeCloseTo(4.963243161477557, 12);
    expect([s.min, s.max]).toEqual([1, 5]);
    const two = groupStats([0.5, 0.7])!;
    expect(two.ci!.lo).toBeCloseTo(-0.6706204736174691, 12); // t_{0.975,1} = 12.706: not clipped
    expect(two.ci!.hi).toBeCloseTo(1.870620473617469, 12);
    const three = groupStats([0.81, 0.79, 0.86])!;
    expect(three.ci!.lo).toBeCloseTo(0.730433141049704, 12);
    expect(three.ci!.hi).toBeCloseTo(0.9095668589502959, 12);
  });

  it('gives a group of one its value and no interval; none for no values', () => {
    expect(groupStats([0.42, null, NaN])).toEqual({ n: 1, mean: 0.42, std: null, ci: null, min: 0.42, max: 0.42 });
    expect(groupStats([null, undefined])).toBeNull();
    expect(formatMeanCi(groupStats([0.42]))).toBe('0.420');
    expect(formatMeanCi(groupStats([0.81, 0.79, 0.86]))).toBe('0.820 ± 0.090');
    expect(formatMeanCi(null)).toBe('—');
  });
});

describe('alignGroup', () => {
  it('averages members logged at the same steps', () => {
    const pts = alignGroup([
      [[0, 1], [10, 2]],
      [[0, 3], [10, 4]],
      [[0, 5], [10, 9]],
    ]);
    expect(pts.map((p) => [p.step, p.n, p.mean, p.min, p.max])).toEqual([
      [0, 3, 3, 1, 5],
      [10, 3, 5, 2, 9],
    ]);
    expect(pts[0]!.ci!.lo).toBeCloseTo(3 - 4.302652729749462 * 2 / Math.sqrt(3), 12);
  });

  it('carries a value forward within the member’s own logging interval, never past its last step', () => {
    const a: [number, number][] = [[0, 0], [10, 1], [20, 2], [30, 3]]; // every 10
    const b: [number, number][] = [[0, 10], [15, 11], [30, 12], [45, 13]]; // every 15
    expect(carryTolerance(a)).toBe(10);
    expect(carryTolerance(b)).toBe(15);
    const pts = alignGroup([a, b]);
    // 10: a's 1 and b's 10 (from step 0, 10 < 15); 15: b's 11 and a's 1 (from 10, 5 < 10);
    // 45: only b (a ended at 30): n = 1, not drawn
    expect(pts.map((p) => [p.step, p.n, p.mean])).toEqual([
      [0, 2, 5],
      [10, 2, 5.5],
      [15, 2, 6],
      [20, 2, 6.5],
      [30, 2, 7.5],
    ]);
  });

  it('does not carry across a hole in a run, and draws where at least two members count', () => {
    const a: [number, number][] = [[0, 1], [1, 1], [2, 1], [50, 1]];
    const b: [number, number][] = [[0, 3], [1, 3], [2, 3], [3, 3], [4, 3]];
    const steps = alignGroup([a, b]).map((p) => [p.step, p.n]);
    expect(steps).toEqual([[0, 2], [1, 2], [2, 2]]); // 3, 4: a's last value (step 2) is older than its interval
    expect(alignGroup([a, b], 1).map((p) => p.step)).toEqual([0, 1, 2, 3, 4, 50]);
  });

  it('draws a group of one as its own line, without an interval', () => {
    const pts = alignGroup([[[5, 0.3], [6, NaN], [7, 0.2]]]);
    expect(pts.map((p) => [p.step, p.n, p.mean, p.ci])).toEqual([
      [5, 1, 0.3, null],
      [7, 1, 0.2, null],
    ]);
    expect(alignGroup([[], []])).toEqual([]);
  });
});

describe('seed groups', () => {
  it('groups by the spec without keys named seed at any depth, whatever the key order', () => {
    expect(withoutSeeds({ seed: 1, model: { seed: 2, d: 4 }, list: [{ seed: 3, x: 1 }] })).toEqual({ model: { d: 4 }, list: [{ x: 1 }] });
    expect(seedGroupKey({ b: 1, a: { seed: 9, c: 2 } })).toBe(seedGroupKey({ a: { c: 2 }, b: 1, seed: 4 }));
    expect(seedGroupKey({ lr: 0.1 })).not.toBe(seedGroupKey({ lr: 0.2 }));
    const runs = [
      { id: 1, spec: { lr: 0.1, seed: 1 } },
      { id: 2, spec: { lr: 0.2, seed: 1 } },
      { id: 3, spec: { seed: 2, lr: 0.1 } },
      { id: 4, spec: { lr: 0.2, seed: 2 } },
      { id: 5, spec: { lr: 0.3, seed: 2, seeds: 5 } },
    ];
    expect(groupBySeed(runs).map((g) => g.runs.map((r) => r.id))).toEqual([[1, 3], [2, 4], [5]]);
  });

  it("follows the API's group key where a run has one: external runs grouped by their group's name", () => {
    // the SDK's rl.init(group=...): one config in two named groups, two configs in one
    const runs = [
      { id: 1, spec: { lr: 0.1, seed: 1 }, group_key: 'aaa' },
      { id: 2, spec: { lr: 0.1, seed: 2 }, group_key: 'bbb' },
      { id: 3, spec: { lr: 0.2, seed: 3 }, group_key: 'aaa' },
      { id: 4, spec: { lr: 0.1, seed: 4 }, group_key: null },
      { id: 5, spec: { lr: 0.1, seed: 5 } },
    ];
    expect(groupBySeed(runs).map((g) => g.runs.map((r) => r.id))).toEqual([[1, 3], [2], [4, 5]]);
  });
});

describe('groupLabels', () => {
  it('names groups by the params that differ between them, seeds left out', () => {
    const groups = [
      { runs: [{ params: { method: 'carma', lambda: 0.2, seed: 1, 'model.seed': 3 } }] },
      { runs: [{ params: { method: 'ft', lambda: 0.2, seed: 2, 'model.seed': 4 } }] },
    ];
    expect(groupLabels(groups)).toEqual(['method=carma', 'method=ft']);
    expect(groupLabels([{ runs: [{ params: { a: 1 } }] }])).toEqual(['group 1']);
  });
});

describe('groupByFields', () => {
  it('groups by the listed fields: spec paths under params., run fields otherwise', () => {
    const runs = [
      { id: 1, kind: 'carma', spec: { method: 'carma', opt: { lambda: 0.2 }, seed: 1 } },
      { id: 2, kind: 'carma', spec: { method: 'ft', opt: { lambda: 0.2 }, seed: 1 } },
      { id: 3, kind: 'carma', spec: { method: 'carma', opt: { lambda: 0.2 }, seed: 2 } },
      { id: 4, kind: 'carma', spec: { method: 'carma', seed: 3 } },
    ];
    const groups = groupByFields(runs, ['params.opt.lambda', 'kind']);
    expect(groups.map((g) => [g.name, g.runs.map((r) => r.id)])).toEqual([
      ['params.opt.lambda=0.2 kind=carma', [1, 2, 3]],
      ['params.opt.lambda=— kind=carma', [4]],
    ]);
    expect(groupFieldValue(runs[0]!, 'params.opt')).toEqual({ lambda: 0.2 });
  });
});
