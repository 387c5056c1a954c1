// The carma kind's result records on a run's Results tab: the variant's accuracy, one CAP curve, one
// synonym-consistency row with its per-seed values; accuracies with their 95% Wilson intervals over the
// items, ConsistSyn with its Student-t interval over the seeds.
import { Group, Stack } from '@mantine/core';
import { useMemo } from 'react';
import { tableWithBands } from '../../components/charts/ciBand';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { IntervalCaption } from '../../components/results/IntervalCaption';
import { KeyValues } from '../../components/results/KeyValues';
import { bracket, formatWithInterval, intervalCaption, tInterval, wilson } from '../../lib/interval';
import type { ResultViewProps } from '../types';
import { capOption } from './CapCurvesChart';
import { meanStd, SYNONYM_CAPTION, variantLabel } from './shape';

export function CarmaEvalView({ payload: p }: ResultViewProps<'carma_eval'>) {
  return (
    <Stack gap={4}>
      <KeyValues
        rows={[
          ['model', p.model],
          ['variant', variantLabel(p.variant, p.lambda)],
          ['task', p.task],
          ['λ / γ / η', p.lambda === null ? '—' : `${p.lambda} / ${p.gamma ?? '—'} / ${p.eta ?? '—'}`],
          ['CARMA layers', p.layers ? `${p.layers[0]}..${p.layers[1]} of ${p.num_layers}` : '—'],
          ['train / validation / test', `${p.train_size} / ${p.validation_size} / ${p.test_size}`],
          ['steps (best)', `${p.steps} (${p.best_step ?? '—'})`],
          ['validation accuracy', formatWithInterval(p.validation_acc, wilson(p.validation_acc, p.validation_size), 4)],
          ['test accuracy', formatWithInterval(p.test_acc, wilson(p.test_acc, p.test_size), 4)],
          ['test loss', p.test_loss],
          ['seconds per step', p.step_seconds],
        ]}
      />
      <IntervalCaption text={`[lo, hi]: 95% Wilson score interval over the ${p.validation_size} validation and ${p.test_size} test items`} />
    </Stack>
  );
}

export function CapCurveView({ payload: p }: ResultViewProps<'cap_curve'>) {
  const option = useMemo(
    () =>
      capOption(
        [
          {
            label: variantLabel(p.variant, p.lambda),
            variant: p.variant,
            lambda: p.lambda,
            clean: p.clean_acc,
            points: p.points.map((x) => [x.depth, x.accuracy]),
            ci: p.points.map((x) => wilson(x.accuracy, p.items)),
            items: p.items,
          },
        ],
        `${p.protocol} CAP, ${p.items} items`,
      ),
    [p],
  );
  return (
    <div style={{ minWidth: 320 }}>
      <EChart option={option} data={() => tableWithBands(option)} height={300} ariaLabel={`${p.protocol} CAP curve`} />
      <IntervalCaption
        text={`band: ${intervalCaption({ sizes: [p.items], unit: 'items' })}; without CAP ${formatWithInterval(p.clean_acc, wilson(p.clean_acc, p.items), 3)}`}
      />
    </div>
  );
}

const ciText = (ci: ReturnType<typeof tInterval>) => (ci ? bracket(ci, (v) => v.toFixed(2)) : '— (one seed)');

export function SynonymConsistencyView({ payload: p }: ResultViewProps<'synonym_consistency'>) {
  const option: EChartsOption = useMemo(
    () => ({
      animation: false,
      grid: { left: 48, right: 10, top: 20, bottom: 30 },
      tooltip: { trigger: 'axis' },
      xAxis: { type: 'category', data: p.seeds.map((s) => `seed ${s}`) },
      yAxis: { type: 'value', min: 0, max: 100, name: 'ConsistSyn %' },
      series: [{ type: 'bar', data: p.consist_syn, barMaxWidth: 28 }],
    }),
    [p],
  );
  return (
    <Group align="flex-start">
      <KeyValues
        rows={[
          ['variant', variantLabel(p.variant, p.lambda)],
          ['rate', `${Math.round(p.rate * 100)}%`],
          ['ConsistSyn', meanStd(p.mean, p.std)],
          ['ConsistSyn 95% CI', ciText(tInterval(p.consist_syn, [0, 100]))],
          ['CV', p.cv],
          ['correct before', p.correct_before],
          ['source', p.source],
        ]}
      />
      <div style={{ flex: 1, minWidth: 260 }}>
        <EChart option={option} height={200} ariaLabel="ConsistSyn per seed" />
        <IntervalCaption text={SYNONYM_CAPTION} />
      </div>
    </Group>
  );
}
