// @vitest-environment jsdom
// Every result view that shows an accuracy shows its 95% interval in the cell and names it in a caption;
// a result written before sizes were recorded shows the value alone, with a note.
// Expected intervals computed by hand in Python (Wilson 1927), as in lib/interval.test.ts.
import { MantineProvider } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { act, type ReactNode } from 'react';
import { createRoot } from 'react-dom/client';
import { MemoryRouter } from 'react-router';
import { describe, expect, it } from 'vitest';
import type { PayloadOf } from '../api/types';
import { CarmaEvalView, SynonymConsistencyView } from './carma/ResultViews';
import { EvalView, RoutingView } from './reasonformer/ResultViews';
import { SkillmixCellView } from './skillmix/SkillmixCellView';
import { SravenCellView } from './smoe/smoe_sraven/SravenCellView';
import { TopkPointView } from './smoe/topk_eval/TopkPointView';
import { testContainer } from '../test/dom';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const dom = testContainer();

function render(node: ReactNode) {
  act(() => {
    dom.root = createRoot(dom.element);
    dom.root.render(
      <QueryClientProvider client={new QueryClient()}>
        <MantineProvider env="test">
          <MemoryRouter>{node}</MemoryRouter>
        </MantineProvider>
      </QueryClientProvider>,
    );
  });
}

/** The text of the table cell beside the header `key` (KeyValues rows). */
function cellOf(key: string): string | null {
  const th = [...dom.element.querySelectorAll('th')].find((h) => h.textContent === key);
  return th?.nextElementSibling?.textContent ?? null;
}
const caption = () => dom.element.querySelector('[data-testid="ci-caption"]')?.textContent ?? null;

const topk = (over: Partial<PayloadOf<'topk_eval_point'>>): PayloadOf<'topk_eval_point'> => ({
  kind: 'topk_eval_point', target: 'smoe_sraven', model: 'in-run k=2', family: 'smoe', source_run_id: null, train_k: 2, eval_k: 2,
  num_experts: 8, routers: 2, renormalises: true, score: 'test_acc', value: 205 / 256, higher_is_better: true, ood_value: 0.5,
  per_feature: null, M: 2, extra: {}, n: 256, ood_n: 256, ...over,
});

describe('top-k point view', () => {
  it('shows the score and OOD accuracy with their Wilson intervals and names the interval', () => {
    render(<TopkPointView runId={1} payload={topk({})} />);
    expect(cellOf('test_acc')).toBe('0.8008 [0.7476, 0.8451]');
    expect(cellOf('OOD accuracy')).toBe('0.5000 [0.4392, 0.5608]');
    expect(caption()).toBe('[lo, hi]: 95% Wilson score interval over n = 256 problems');
  });

  it('shows an old result without n as before, with the note', () => {
    render(<TopkPointView runId={1} payload={topk({ n: undefined, ood_n: undefined })} />);
    expect(cellOf('test_acc')).toBe('0.80078'); // formatValue's digits, no interval
    expect(caption()).toMatch(/no interval where the result does not record its n/);
  });

  it('gives a perplexity neither interval nor caption', () => {
    render(<TopkPointView runId={1} payload={topk({ score: 'perplexity', higher_is_better: false, value: 12.5, ood_value: null, n: null })} />);
    expect(cellOf('perplexity')).toBe('12.5');
    expect(caption()).toBeNull();
  });
});

describe('SRAVEN cell view', () => {
  it('shows ID and OOD accuracy with their Wilson intervals', () => {
    render(
      <SravenCellView
        runId={1}
        payload={{ kind: 'sraven_cell', M: 2, top_k: 2, num_experts: 8, attention: 'hyla', test_acc: 205 / 256, ood_acc: 0.5,
          per_feature_acc: [], ood_per_feature_acc: null, steps: 10, test_size: 256, ood_size: 256 }}
      />,
    );
    expect(cellOf('ID accuracy')).toBe('0.801 [0.748, 0.845]');
    expect(cellOf('OOD accuracy')).toBe('0.500 [0.439, 0.561]');
    expect(caption()).toBe('[lo, hi]: 95% Wilson score interval over n = 256 problems');
  });
});

describe('CARMA views', () => {
  it('shows validation and test accuracy with their Wilson intervals over the items', () => {
    render(
      <CarmaEvalView
        runId={1}
        payload={{ kind: 'carma_eval', variant: 'carma', model: 'm', task: 'idm', lambda: 0.2, gamma: 0.5, eta: 0.2, layers: [0, 1], num_layers: 2,
          train_size: 80, validation_size: 10, test_size: 256, steps: 3, best_step: 3, validation_acc: 0.2, test_acc: 205 / 256, test_loss: 1,
          step_seconds: null }}
      />,
    );
    expect(cellOf('validation accuracy')).toBe('0.2000 [0.0567, 0.5098]');
    expect(cellOf('test accuracy')).toBe('0.8008 [0.7476, 0.8451]');
    expect(caption()).toBe('[lo, hi]: 95% Wilson score interval over the 10 validation and 256 test items');
  });

  it('shows ConsistSyn with its t interval over the seeds', () => {
    render(
      <SynonymConsistencyView
        runId={1}
        payload={{ kind: 'synonym_consistency', variant: 'carma', model: 'm', task: 'idm', lambda: 0.2, rate: 0.25, source: 'wordnet',
          seeds: [0, 1, 2], consist_syn: [50, 60, 70], mean: 60, std: 8.16, cv: 0.136, correct_before: 20, changed: [5, 5, 5] }}
      />,
    );
    expect(cellOf('ConsistSyn 95% CI')).toBe('[35.16, 84.84]'); // 60 ± t(2)·10/sqrt(3)
    expect(caption()).toMatch(/95% Student-t interval of the mean ConsistSyn over the seeds/);
  });
});

describe('Skill-Mix cell view', () => {
  it('shows each metric as mean ± stderr [95% interval]', () => {
    const v = (mean: number, stderr: number | null) => ({ mean, stderr });
    render(
      <SkillmixCellView
        runId={1}
        payload={{ kind: 'skillmix_cell', model: 'tiny', student: 'hf', grader: 'rules', k: 2, ept: 2, default_ept: 2, num_experts: 4, routers: 2,
          renormalises: true, combinations: 5, generations: 1, gradings: 1, filter_skill_names: false, full_marks: v(1, 0),
          all_skills: v(0, 0), skill_fraction: v(0.5, 0.1), total_score: v(3, 0.5), total_skill_score: v(1, 0.2), rescaled_score: v(0.1, 0.05),
          failed_gradings: 0, partial_gradings: 0, total_gradings: 5, failed_generations: 0, cached_replies: 0, new_replies: 10, samples: [] }}
      />,
    );
    expect(cellOf('Ratio of Full Marks')).toBe('1.00 ± 0.000 [0.57, 1.00]'); // Wilson, 5 of 5
    expect(cellOf('Ratio of All Skills')).toBe('0.00 ± 0.000 [0.00, 0.43]'); // Wilson, 0 of 5
    expect(cellOf('Skill Fraction')).toBe('0.50 ± 0.100 [0.22, 0.78]'); // 0.5 ± t(4)·0.1
    expect(caption()).toMatch(/^\[lo, hi\]: 95% interval over n = 5 combinations/);
  });
});

describe('ReasonFormer eval view', () => {
  it("shows each task's Wilson interval and the average's Wilson interval over the pooled examples, in percent", () => {
    render(
      <EvalView
        runId={1}
        payload={{ kind: 'reasonformer_eval', stage: 'finetune', label: 'Shared (S)', variant: 'shared', activation: 'sparse', top_k: 2, num_skills: 6,
          depth: 3, adapters: true, stop_gate: true, pretrained: true, modularity: true, freeze: 'none', parameters: { total: 1, activated: 1, tuned: 1 },
          tasks: [
            { task: 'arc', reasoning: null, metric: 'accuracy', value: 0.2, value_norm: null, count: 10 },
            { task: 'csqa', reasoning: null, metric: 'accuracy', value: 0.5, value_norm: null, count: 10 },
          ],
          average: 0.35, steps: 1 }}
      />,
    );
    const arc = [...dom.element.querySelectorAll('[data-testid="reasonformer-eval-tasks"] tbody tr')][0]!;
    expect([...arc.querySelectorAll('td')].map((td) => td.textContent)).toEqual(['arc', '—', 'accuracy', '20.0', '[5.7, 51.0]', '—', '10']);
    expect(cellOf('average')).toBe('35.0 [18.1, 56.7]'); // Wilson at 7 of 20 pooled examples, by hand
    expect(caption()).toMatch(/Wilson score interval over each task's n examples/);
  });
});

describe('ReasonFormer routing view', () => {
  it('shows each routing rate with its Wilson interval over the instances it counts', () => {
    render(
      <RoutingView
        runId={1}
        payload={{ kind: 'routing', stage: 'pretrain', label: 'Shared (S)', variant: 'shared', skills: ['sort', 'general'], depth: 1, top_k: 1,
          general_skill: 'general', chance: 1, skill_match: 0.2, skill_match_n: 10, order_match_trained: 0.5, order_match_trained_n: 256,
          order_match_heldout: 0.5, order_match_heldout_n: null,
          tasks: [{ task: 'sort', count: 10, weights: [[0.8, 0.2]], stop_gates: null, expected: ['sort'], step_match: [0.2], match: 0.2, order_match: 0.2, cases: [] }] }}
      />,
    );
    const badges = [...dom.element.querySelectorAll('.mantine-Badge-label')].map((b) => b.textContent);
    expect(badges).toContain('skill match 20.0% [5.7, 51.0]'); // Wilson, 2 of 10
    expect(badges).toContain('order match, trained programs 50.0% [43.9, 56.1]');
    expect(badges).toContain('order match, held-out programs 50.0%'); // an old record: no n, no interval
    expect(dom.element.textContent).toContain('step match 20% [6, 51]');
    expect(caption()).toMatch(/95% Wilson score interval over the instances each rate counts/);
  });
});
