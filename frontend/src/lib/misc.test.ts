import { describe, expect, it } from 'vitest';
import { canonical, deepMerge, flatten, formatValue, getPath, isJson, jsonObjectOf, setPath } from './dotted';
import { etaSeconds, formatDuration, formatEta, percent } from './eta';
import { countOf, runLabel, varyingParams } from './labels';
import { overlaySeries } from './overlay';
import { parallelData } from './parallel';
import { parseRunIds } from './runIds';

describe('dotted paths', () => {
  it('writes JSON with sorted keys, as JSON.stringify writes a typed object', () => {
    expect(canonical({ b: 1, a: [2, { d: null, c: 'x' }] })).toBe('{"a":[2,{"c":"x","d":null}],"b":1}');
    expect(canonical({ a: 1, b: 2 })).toBe(canonical({ b: 2, a: 1 }));
    // an optional field left undefined is not there, as in the JSON sent; in an array it is null
    const typed: { name: string; family?: string | null } = { name: 'n', family: undefined };
    expect(canonical(typed)).toBe('{"name":"n"}');
    expect(canonical([1, undefined])).toBe(JSON.stringify([1, undefined]));
    expect(canonical(undefined)).toBe('null');
    expect(canonical('a"b')).toBe(JSON.stringify('a"b'));
  });

  it('sets and gets nested values without mutating', () => {
    const a = { train: { lr: 1 } };
    const b = setPath(a, ['train', 'lr'], 2);
    expect(getPath(b, ['train', 'lr'])).toBe(2);
    expect(a.train.lr).toBe(1);
    expect(setPath({}, ['x', 'y'], 3)).toEqual({ x: { y: 3 } });
    expect(setPath({ x: 1, y: 2 }, ['x'], undefined)).toEqual({ y: 2 });
  });
  it('flattens objects, keeping arrays and empty objects as leaves', () => {
    expect(flatten({ a: { b: 1, c: [1] }, d: {} })).toEqual({ 'a.b': 1, 'a.c': [1], d: {} });
  });
  it('formats numbers compactly', () => {
    expect(formatValue(0.000012345)).toBe('1.234e-5');
    expect(formatValue(0.123456789)).toBe('0.12346');
    expect(formatValue(null)).toBe('null');
  });
});

describe('eta', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  it("counts down to the API's estimate", () => {
    expect(etaSeconds('2026-11-25T12:01:30Z', now)).toBe(90);
    expect(etaSeconds('2026-11-25T12:01:30.500Z', now + 60_000)).toBe(30.5);
    expect(formatEta(etaSeconds('2026-11-25T12:01:30Z', now))).toBe('1m 30s');
    expect(formatEta(etaSeconds('2026-11-25T14:00:00Z', now))).toBe('2h 00m');
  });
  it('says so without an estimate, or once the estimate has passed', () => {
    expect(etaSeconds(null, now)).toBeNull();
    expect(etaSeconds(undefined, now)).toBeNull();
    expect(etaSeconds('not a time', now)).toBeNull();
    expect(formatEta(null)).toBe('—');
    expect(formatEta(etaSeconds('2026-11-25T11:59:00Z', now))).toBe('overdue');
  });
  it('formats durations and percentages', () => {
    expect(formatDuration(75)).toBe('1m 15s');
    expect(formatDuration(3700)).toBe('1h 01m');
    expect(formatDuration(3 * 86400 + 7200)).toBe('3d 02h');
    expect(percent(5, 20)).toBe(25);
    expect(percent(5, null)).toBeNull();
  });
});

describe('labels', () => {
  it('names runs by the params that differ', () => {
    const runs = [{ id: 1, params: { lr: 0.1, seed: 1 } }, { id: 2, params: { lr: 0.01, seed: 1 } }];
    const keys = varyingParams(runs);
    expect(keys).toEqual(['lr']);
    expect(runLabel(runs[0]!, keys)).toBe('run 1 lr=0.1');
  });
});

describe('parallelData', () => {
  const r = (id: number, params: Record<string, unknown>, loss?: number) => {
    const summary: Record<string, number> = loss === undefined ? {} : { loss };
    return { id, params, summary };
  };
  it('has one axis per varying param plus the metric, categorical when not numeric', () => {
    const d = parallelData([r(1, { lr: 0.1, opt: 'adam', seed: 1 }, 0.5), r(2, { lr: 0.01, opt: 'sgd', seed: 1 }, 0.3), r(3, { lr: 1, opt: 'sgd' })], 'loss');
    expect(d.axes.map((a) => [a.name, a.type])).toEqual([['lr', 'value'], ['opt', 'category'], ['loss', 'value']]);
    expect(d.axes[1]!.data).toEqual(['adam', 'sgd']);
    expect(d.rows).toEqual([[0.1, 'adam', 0.5, 1], [0.01, 'sgd', 0.3, 2]]);
  });
  it('leaves out runs whose final metric is null (not finite)', () => {
    const d = parallelData([{ id: 1, params: { lr: 1 }, summary: { loss: null } }, r(2, { lr: 2 }, 0.1), r(3, { lr: 3 }, 0.2)], 'loss');
    expect(d.rows.map((row) => row.at(-1))).toEqual([2, 3]);
  });
});

describe('parseRunIds', () => {
  it('reads ids separated by commas or spaces, dropping junk and repeats', () => {
    expect(parseRunIds('1, 2 3,,2,x,-4,0,1.5')).toEqual([1, 2, 3]);
    expect(parseRunIds(null)).toEqual([]);
  });
});

describe('overlaySeries', () => {
  it('draws one line per run, named by the params that differ, empty while a run loads', () => {
    const bucket = (step: number, last: number) => ({ step_start: step, step_end: step, min: last, max: last, last, count: 1, nonfinite: 0 });
    const runs = [{ id: 1, params: { lr: 0.1, seed: 1 } }, { id: 2, params: { lr: 0.01, seed: 1 } }];
    const response = { run_id: 1, series: { loss: { buckets: [bucket(0, 2), bucket(1, 1)], step_min: 0, step_max: 1, total_points: 2 } } };
    expect(overlaySeries(runs, [response, undefined], 'loss')).toEqual([
      { runId: 1, name: 'run 1 lr=0.1', points: [[0, 2], [1, 1]], raw: [], dropped: 0, breaks: [] },
      { runId: 2, name: 'run 2 lr=0.01', points: [], raw: [], dropped: 0, breaks: [] },
    ]);
  });
});

describe('JSON helpers', () => {
  it('tells JSON from what JSON cannot carry', () => {
    expect(isJson({ a: [1, 'x', null, { b: true }] })).toBe(true);
    expect(isJson({ a: undefined })).toBe(false);
    expect(isJson(Number.NaN)).toBe(false);
    expect(isJson(new Date())).toBe(false);
    expect(jsonObjectOf([1])).toEqual({});
  });
  it('merges nested objects and replaces the rest', () => {
    expect(deepMerge({ a: { b: 1, c: 2 }, d: 1, e: { f: 1 } }, { a: { c: 3 }, e: null })).toEqual({ a: { b: 1, c: 3 }, d: 1, e: null });
  });
});

describe('countOf', () => {
  it('says "1 run" and "2 runs", never "1 runs"', () => {
    expect(countOf(1, 'run')).toBe('1 run');
    expect(countOf(0, 'run')).toBe('0 runs');
    expect(countOf(2, 'group')).toBe('2 groups');
    expect(countOf(12345, 'run')).toBe('12,345 runs');
    expect(countOf(1, 'query', 'queries')).toBe('1 query');
    expect(countOf(3, 'query', 'queries')).toBe('3 queries');
  });
});
