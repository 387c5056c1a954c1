// The carma kind's result records on a run's Results tab: the variant's accuracy, one CAP curve, one
// synonym-consistency row with its per-seed values.
import { Group } from '@mantine/core';
import { useMemo } from 'react';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { KeyValues } from '../../components/results/KeyValues';
import type { ResultViewProps } from '../types';
import { capOption } from './CapCurvesChart';
import { meanStd, variantLabel } from './shape';

export function CarmaEvalView({ payload: p }: ResultViewProps<'carma_eval'>) {
  return (
    <KeyValues
      rows={[
        ['model', p.model],
        ['variant', variantLabel(p.variant, p.lambda)],
        ['task', p.task],
        ['λ / γ / η', p.lambda === null ? '—' : `${p.lambda} / ${p.gamma ?? '—'} / ${p.eta ?? '—'}`],
        ['CARMA layers', p.layers ? `${p.layers[0]}..${p.layers[1]} of ${p.num_layers}` : '—'],
        ['train / validation / test', `${p.train_size} / ${p.validation_size} / ${p.test_size}`],
        ['steps (best)', `${p.steps} (${p.best_step ?? '—'})`],
        ['validation accuracy', p.validation_acc],
        ['test accuracy', p.test_acc],
        ['test loss', p.test_loss],
        ['seconds per step', p.step_seconds],
      ]}
    />
  );
}

export function CapCurveView({ payload: p }: ResultViewProps<'cap_curve'>) {
  const option = useMemo(
    () =>
      capOption(
        [{ label: variantLabel(p.variant, p.lambda), variant: p.variant, lambda: p.lambda, clean: p.clean_acc, points: p.points.map((x) => [x.depth, x.accuracy]) }],
        `${p.protocol} CAP, ${p.items} items`,
      ),
    [p],
  );
  return (
    <div style={{ minWidth: 320 }}>
      <EChart option={option} height={300} ariaLabel={`${p.protocol} CAP curve`} />
    </div>
  );
}

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
          ['CV', p.cv],
          ['correct before', p.correct_before],
          ['source', p.source],
        ]}
      />
      <div style={{ flex: 1, minWidth: 260 }}>
        <EChart option={option} height={200} ariaLabel="ConsistSyn per seed" />
      </div>
    </Group>
  );
}
