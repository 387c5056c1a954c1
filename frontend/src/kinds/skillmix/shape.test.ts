import { describe, expect, it } from 'vitest';
import type { ExperimentResult } from '../../api/types';
import { TIED_TEXT } from '../../lib/interval';
import {
  bestEptPerK,
  formatValue,
  formatWithCi,
  heatmapCells,
  metricBounds,
  metricInterval,
  rowLabel,
  skillmixCaption,
  skillmixCells,
  skillmixTables,
  toFixedHalfEven,
  type SkillmixCell,
} from './shape';

type Row = Pick<ExperimentResult, 'run_id' | 'payload'>;
const v = (mean: number, stderr: number | null = 0) => ({ mean, stderr });

// headline metrics of a cell: full marks, all skills, skill fraction
const cell = (run_id: number, ept: number | null, k: number, [fm, as, sf]: [number, number, number], model = 'mixtral'): Row => ({
  run_id,
  payload: {
    kind: 'skillmix_cell', model, student: 'hf', grader: 'rules', k, ept, default_ept: ept === null ? null : 2, num_experts: ept === null ? null : 8,
    routers: ept === null ? null : 32, renormalises: ept === null ? null : true, combinations: 5, generations: 3, gradings: 3, filter_skill_names: false,
    full_marks: v(fm, 0.2), all_skills: v(as, 0.2), skill_fraction: v(sf, 0.1), total_score: v(k + 3 * sf), total_skill_score: v(k * sf), rescaled_score: v(sf ** 2),
    failed_gradings: run_id === 3 ? 2 : 0, partial_gradings: 0, total_gradings: 45, failed_generations: 0, cached_replies: 0, new_replies: 75, samples: [],
  } satisfies SkillmixCell,
});

// a slice of paper 004's Table 1: ept 1..3 x k 1..2 (k=2, ept 3 missing), plus an unrelated result
const RESULTS: Row[] = [
  cell(1, 1, 1, [0, 0, 0]),
  cell(2, 2, 1, [1, 1, 1]),
  cell(3, 3, 1, [0, 0.4, 0]),
  cell(4, 1, 2, [0, 0, 0.2]),
  cell(5, 2, 2, [0, 0, 0.2]),
  { run_id: 9, payload: { kind: 'routing' } } as unknown as Row,
];

describe('skillmixTables', () => {
  const [table] = skillmixTables(skillmixCells(RESULTS));

  it('lays the cells out as Table 1: rows ept, columns k, missing cells null', () => {
    expect(skillmixCells(RESULTS)).toHaveLength(5);
    expect(table!.rows).toEqual([1, 2, 3]);
    expect(table!.cols).toEqual([1, 2]);
    expect(table!.cells[2]![1]).toBeNull();
    expect(table!.cells[1]![0]!.values.full_marks).toEqual({ mean: 1, stderr: 0.2 });
    expect(table!.cells[2]![0]!.failedGradings).toBe(2);
    expect(table!.defaultEpt).toBe(2);
    expect(table!.renormalises).toBe(true);
  });

  it('marks the best ept of each column per metric, ties included, none when all are 0', () => {
    expect(table!.best.full_marks).toEqual([[1], []]);
    expect(table!.best.all_skills).toEqual([[1], []]);
    expect(table!.best.skill_fraction).toEqual([[1], [0, 1]]);
  });

  it('gives the best ept per k and the heatmap cells', () => {
    expect(bestEptPerK(table!, 'skill_fraction')).toEqual([
      { k: 1, epts: [2], value: 1 },
      { k: 2, epts: [1, 2], value: 0.2 },
    ]);
    expect(bestEptPerK(table!, 'full_marks')[1]).toEqual({ k: 2, epts: [], value: 0 });
    expect(heatmapCells(table!, 'all_skills')).toMatchObject([
      { x: 0, y: 0, value: 0, runId: 1 },
      { x: 1, y: 0, value: 0, runId: 4 },
      { x: 0, y: 1, value: 1, runId: 2 },
      { x: 1, y: 1, value: 0, runId: 5 },
      { x: 0, y: 2, value: 0.4, runId: 3 },
    ]);
  });

  it('averages runs of one cell (seeds) without a ±, and splits models', () => {
    const tables = skillmixTables(skillmixCells([cell(1, 2, 1, [1, 1, 1]), cell(2, 2, 1, [0, 0, 0.5]), cell(3, null, 1, [0, 0, 0], 'dense')]));
    expect(tables.map((t) => t.model)).toEqual(['dense', 'mixtral']);
    expect(tables[1]!.cells[0]![0]!.values.skill_fraction).toEqual({ mean: 0.75, stderr: null });
    expect(tables[1]!.cells[0]![0]!.runIds).toEqual([1, 2]);
    expect(tables[0]!.rows).toEqual([null]);
    expect(tables[0]!.renormalises).toBeNull();
  });
});

describe('labels', () => {
  it('labels the default ept and prints values as the paper does', () => {
    expect([rowLabel(2, 2), rowLabel(3, 2), rowLabel(null, null)]).toEqual(['ept=2 (default)', 'ept=3', 'model default']);
    expect(formatValue({ mean: 0.2, stderr: 0.2 })).toBe('0.20 ± 0.200');
    expect(formatValue({ mean: 0.4666, stderr: null })).toBe('0.47');
  });

  it('rounds an exact tie half to even as the paper\'s tables (Python\'s format) do', () => {
    // expected strings written by hand, each checked against Python's format(v, '.Nf')
    expect(formatValue({ mean: 0.125, stderr: 0.0625 })).toBe('0.12 ± 0.062');
    expect(formatValue({ mean: 0.375, stderr: 0.1875 })).toBe('0.38 ± 0.188');
    expect(['0.625', '0.875'].map((v) => toFixedHalfEven(Number(v), 2))).toEqual(['0.62', '0.88']);
    // not exact ties in binary: the nearest decimal, as toFixed and Python both give
    expect([0.245, 0.135, 1 / 3, 0.2].map((v) => toFixedHalfEven(v, 2))).toEqual(['0.24', '0.14', '0.33', '0.20']);
    expect([0.5, 1.5, 2.5].map((v) => toFixedHalfEven(v, 0))).toEqual(['0', '2', '2']);
    expect([toFixedHalfEven(-0.125, 2), toFixedHalfEven(0.5, 3), toFixedHalfEven(0, 2)]).toEqual(['-0.12', '0.500', '0.00']);
  });
});

describe('95% intervals of the Skill-Mix metrics', () => {
  const [table] = skillmixTables(skillmixCells(RESULTS));

  it('gives the 0/1 ratios a Wilson interval over the combinations, even at 0 and 1', () => {
    const ci = table!.cells[1]![0]!.intervals.full_marks!; // 5 of 5 combinations full marks
    expect(ci.method).toBe('wilson');
    expect(ci.lo).toBeCloseTo(0.565518, 5); // Wilson by hand (lib/interval.test.ts)
    expect(ci.hi).toBe(1);
    expect(table!.cells[0]![0]!.intervals.all_skills!.hi).toBeCloseTo(1 - 0.565518, 5); // 0 of 5
  });

  it('gives the graded metrics the t interval from their standard error, clipped to the metric range', () => {
    const ci = table!.cells[0]![1]!.intervals.skill_fraction!; // 0.2 ± 0.1 over 5 combinations
    expect(ci.method).toBe('t');
    expect(ci.lo).toBe(0); // 0.2 - 2.776·0.1 < 0
    expect(ci.hi).toBeCloseTo(0.2 + 2.776445 * 0.1, 5);
    expect(metricBounds('total_score', 2)).toEqual([0, 5]);
  });

  it('gives a cell of several runs the t interval over their means', () => {
    const runs = [cell(1, 2, 1, [0.2, 0.3, 0.5]), cell(2, 2, 1, [0.4, 0.5, 0.6]), cell(3, 2, 1, [0.4, 0.5, 0.7])];
    const merged = skillmixTables(skillmixCells(runs))[0]!.cells[0]![0]!;
    expect(merged.intervals.skill_fraction!.method).toBe('t');
    expect(merged.intervals.skill_fraction!.lo).toBeCloseTo(0.351586, 5); // mean of 0.5, 0.6, 0.7 ± t(2)·s/sqrt(3)
    expect(merged.intervals.skill_fraction!.hi).toBeCloseTo(0.848414, 5);
    expect(merged.intervals.full_marks!.method).toBe('t'); // a mean over runs is no longer a plain proportion
  });

  it('writes value ± stderr [lo, hi] and names the intervals in the caption', () => {
    expect(formatWithCi({ mean: 1, stderr: 0 }, table!.cells[1]![0]!.intervals.full_marks)).toBe('1.00 ± 0.000 [0.57, 1.00]');
    expect(formatWithCi({ mean: 0.47, stderr: null }, null)).toBe('0.47');
    // two combinations that scored alike: a zero standard error says n is too small, not [0.00, 0.00]
    const tied = metricInterval('skill_fraction', 2, [{ mean: 0, stderr: 0 }], [2]);
    expect(formatWithCi({ mean: 0, stderr: 0 }, tied)).toBe(`0.00 ± 0.000 [${TIED_TEXT}]`);
    expect(skillmixCaption([5, 5], false)).toBe(
      '[lo, hi]: 95% interval over n = 5 combinations: Wilson score interval for Ratio of Full Marks and Ratio of All Skills ' +
        '(0 or 1 per combination), Student-t from the standard error for the graded metrics',
    );
  });
});
