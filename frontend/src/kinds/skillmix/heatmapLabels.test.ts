// The heatmap's cell labels and tooltip round as the paper's tables do: an exact tie
// to the even digit, where toFixed rounds it up (0.125 -> "0.13").
import { describe, expect, it } from 'vitest';
import type { ExperimentResult } from '../../api/types';
import { heatmapOption } from './SkillmixHeatmap';
import { skillmixCells, skillmixTables, type SkillmixCell } from './shape';

type Row = Pick<ExperimentResult, 'run_id' | 'payload'>;
const v = (mean: number) => ({ mean, stderr: null });
const cell = (run_id: number, k: number, sf: number): Row => ({
  run_id,
  payload: {
    kind: 'skillmix_cell', model: 'm', student: 'hf', grader: 'rules', k, ept: null, default_ept: null, num_experts: null,
    routers: null, renormalises: null, combinations: 0, generations: 1, gradings: 1, filter_skill_names: false,
    full_marks: v(0.125), all_skills: v(0.375), skill_fraction: v(sf), total_score: v(1), total_skill_score: v(1), rescaled_score: v(1),
    failed_gradings: 0, partial_gradings: 0, total_gradings: 1, failed_generations: 0, cached_replies: 0, new_replies: 1, samples: [],
  } satisfies SkillmixCell,
});

type Formatter = (p: unknown) => string;
function labels(metric: 'full_marks' | 'all_skills') {
  const [table] = skillmixTables(skillmixCells([cell(1, 1, 0.5), cell(2, 2, 0.5)]));
  const option = heatmapOption(table!, metric) as unknown as {
    series: { label: { formatter: Formatter } }[];
    tooltip: { formatter: Formatter };
    visualMap: { text: string[] };
  };
  const label = option.series[0]!.label.formatter({ data: [0, 0, metric === 'full_marks' ? 0.125 : 0.375, 1] });
  const tip = option.tooltip.formatter({ data: [0, 0, 0.0625, 1] });
  return { label, tip, scale: option.visualMap.text };
}

describe('Skill-Mix heatmap rounding', () => {
  it('labels an exact tie with the even digit, as Table 1 prints it', () => {
    expect(labels('full_marks').label.split('\n')[0]).toMatch(/^0\.12\b/);
    expect(labels('all_skills').label.split('\n')[0]).toMatch(/^0\.38\b/);
  });
  it('rounds the tooltip value and the colour scale the same way', () => {
    expect(labels('full_marks').tip).toContain('=0.062');
    expect(labels('full_marks').scale.join(' ')).toContain('0.12');
  });
});
