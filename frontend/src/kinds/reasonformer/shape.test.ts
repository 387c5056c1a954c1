import { describe, expect, it } from 'vitest';
import {
  ablationTable,
  evalResults,
  pctInterval,
  routingCells,
  routingResults,
  sweepsAblations,
  table1,
  topSkills,
  type EvalPayload,
  type RoutingPayload,
  type Tagged,
} from './shape';

function evalPayload(over: Partial<EvalPayload>, scores: Record<string, number>): EvalPayload {
  const values = Object.values(scores);
  return {
    kind: 'reasonformer_eval',
    stage: 'finetune',
    label: 'Shared (S)',
    variant: 'shared',
    activation: 'sparse',
    top_k: 2,
    num_skills: 6,
    depth: 3,
    adapters: true,
    stop_gate: true,
    pretrained: true,
    modularity: true,
    freeze: 'none',
    parameters: { total: 900, activated: 500, tuned: 900 },
    tasks: Object.entries(scores).map(([task, value]) => ({ task, reasoning: null, metric: 'accuracy', value, value_norm: null, count: 10 })),
    average: values.reduce((a, b) => a + b, 0) / values.length,
    steps: 10,
    ...over,
  };
}

const tag = (runId: number, payload: EvalPayload): Tagged<EvalPayload> => ({ runId, payload });

describe('table1', () => {
  it('puts tasks in rows, models in columns sorted by label, and marks the best of each task', () => {
    const t = table1([
      tag(2, evalPayload({ label: 'T5', variant: 't5', parameters: { total: 300, activated: 300, tuned: 300 } }, { arc: 0.3, csqa: 0.5 })),
      tag(1, evalPayload({}, { arc: 0.4, csqa: 0.5, piqa: 0.6 })),
    ]);
    expect(t.columns.map((c) => c.name)).toEqual(['Shared (S)', 'T5']);
    expect(t.columns.map((c) => c.activated)).toEqual([500, 300]);
    expect(t.rows.map((r) => r.task)).toEqual(['arc', 'csqa', 'piqa']);
    expect(t.rows[0]!.best).toEqual([0]);
    expect(t.rows[1]!.best).toEqual([0, 1]); // a tie marks both
    expect(t.rows[2]!.values).toEqual([0.6, null]); // T5 lacks piqa
    expect(t.bestAverage).toEqual([0]);
  });

  it('names two runs of one label apart', () => {
    const t = table1([tag(4, evalPayload({}, { a: 0.1 })), tag(3, evalPayload({}, { a: 0.2 }))]);
    expect(t.columns.map((c) => c.name)).toEqual(['Shared (S) · run 3', 'Shared (S) · run 4']);
  });
});

describe('ablations (Table 2)', () => {
  const evals = [
    tag(1, evalPayload({}, { arc: 0.35 })),
    tag(2, evalPayload({ pretrained: false, modularity: false, label: 'Shared (S) w/o RPT' }, { arc: 0.24 })),
    tag(3, evalPayload({ adapters: false }, { arc: 0.33 })),
    tag(4, evalPayload({ variant: 'single', adapters: false, depth: 1, label: 'Single (S)' }, { arc: 0.34 })),
    tag(5, evalPayload({ variant: 'single', adapters: false, depth: 1, modularity: false, label: 'Single (S)' }, { arc: 0.3 })),
  ];
  it('names every switch a fresh model lacks', () => {
    const fresh = [
      tag(6, evalPayload({ pretrained: false, modularity: false }, { a: 0.2 })),
      tag(7, evalPayload({ pretrained: false, modularity: false, adapters: false }, { a: 0.1 })),
    ];
    expect(sweepsAblations(fresh)).toBe(true);
    expect(ablationTable(fresh).groups[0]!.rows.map((r) => r.line)).toEqual(['w/o pre-train', 'w/o pre-train, w/o adapter']);
  });
  it('is offered only when a switch varies', () => {
    expect(sweepsAblations(evals)).toBe(true);
    expect(sweepsAblations([evals[0]!, tag(9, evalPayload({ activation: 'full' }, { arc: 0.3 }))])).toBe(false);
  });
  it('groups by module type with the full model first', () => {
    const t = ablationTable(evals);
    expect(t.tasks).toEqual(['arc']);
    expect(t.groups.map((g) => g.modules)).toEqual(['Shared(S)', 'Single(S)']);
    expect(t.groups[0]!.rows.map((r) => r.line)).toEqual(['ReasonFormer', 'w/o adapter', 'w/o pre-train']);
    expect(t.groups[1]!.rows.map((r) => [r.line, r.values[0]])).toEqual([['ReasonFormer', 0.34], ['w/o modularity', 0.3]]);
  });
});

describe('routing', () => {
  const payload: RoutingPayload = {
    kind: 'routing',
    stage: 'pretrain',
    label: 'Shared (S)',
    variant: 'shared',
    skills: ['sort', 'shift', 'general'],
    depth: 2,
    top_k: 2,
    general_skill: 'general',
    tasks: [
      {
        task: 'sort>shift',
        count: 4,
        weights: [
          [0.6, 0.1, 0.3],
          [0.1, 0.5, 0.4],
        ],
        stop_gates: [0.9, 0.4],
        expected: ['sort', 'shift'],
        step_match: [1, 0.75],
        cases: [],
      },
    ],
  };
  it('flags the expected skill of each step and reads the top skills', () => {
    const cells = routingCells(payload.tasks[0]!, payload.skills);
    expect(cells).toHaveLength(6);
    expect(cells.filter((c) => c.expected).map((c) => [c.y, c.x])).toEqual([
      [0, 0],
      [1, 1],
    ]);
    expect(topSkills(payload.tasks[0]!, payload.skills)).toEqual(['sort', 'shift']);
  });
  it('picks its records out of an experiment', () => {
    const results = [
      { run_id: 1, payload },
      { run_id: 2, payload: evalPayload({}, { a: 1 }) },
    ];
    expect(routingResults(results).map((r) => r.runId)).toEqual([1]);
    expect(evalResults(results).map((r) => r.runId)).toEqual([2]);
  });
});

describe('95% intervals of the scores', () => {
  it("gives each task the Wilson interval over its examples and the average the Wilson interval over the pooled examples", () => {
    const t = table1([tag(1, evalPayload({}, { arc: 0.2, csqa: 0.5 }))]);
    // 2 of 10: Wilson [0.056682, 0.509838] (by hand, as lib/interval.test.ts)
    expect(t.rows[0]!.cis[0]!.lo).toBeCloseTo(0.056682, 5);
    expect(t.rows[0]!.cis[0]!.hi).toBeCloseTo(0.509838, 5);
    // mean 0.35 over 2 tasks of 10 examples: Wilson at 0.35 over the 20 pooled examples, by hand
    const avg = t.columns[0]!.averageCi!;
    expect(avg.method).toBe('wilson');
    const z2 = 1.959964 ** 2;
    const centre = (0.35 + z2 / 40) / (1 + z2 / 20);
    const half = (1.959964 / (1 + z2 / 20)) * Math.sqrt((0.35 * 0.65) / 20 + z2 / 1600);
    expect(avg.lo).toBeCloseTo(centre - half, 5);
    expect(avg.hi).toBeCloseTo(centre + half, 5);
    expect(pctInterval(t.rows[0]!.cis[0])).toBe(' [5.7, 51.0]');
    expect(pctInterval(null)).toBe('');
    const ab = ablationTable([tag(1, evalPayload({}, { arc: 0.2 })), tag(2, evalPayload({ adapters: false }, { arc: 0.5 }))]);
    expect(ab.groups[0]!.rows[0]!.cis[0]!.lo).toBeCloseTo(0.056682, 5);
    expect(ab.groups[0]!.rows[0]!.averageCi!.method).toBe('wilson');
  });

  it('gives an average of zero accuracies the width its pooled examples allow, never [0.0, 0.0]', () => {
    const t = table1([tag(1, evalPayload({}, { arc: 0, csqa: 0 }))]);
    expect(pctInterval(t.rows[0]!.cis[0])).toBe(' [0.0, 27.8]'); // 0 of 10: Wilson's upper end 0.2775
    expect(pctInterval(t.columns[0]!.averageCi)).toBe(' [0.0, 16.1]'); // 0 of the 20 pooled: 0.1611
  });
});
