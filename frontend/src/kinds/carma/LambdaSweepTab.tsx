// The experiment page's "Lambda sweep" tab: test accuracy and the CV of ConsistSyn against CARMA's lambda
// (lambda 0 is FT); the original model's accuracy is a dashed reference.
import { Text } from '@mantine/core';
import { useMemo } from 'react';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { QueryState } from '../../components/common/QueryState';
import { useExperimentResults } from '../../hooks/experiments';
import type { ExperimentViewProps } from '../types';
import { lambdaSweep, type LambdaSweep } from './shape';

export function lambdaOption(sweep: LambdaSweep): EChartsOption {
  const lambdas = sweep.points.map((p) => p.lambda);
  return {
    animation: false,
    grid: { left: 56, right: 64, top: 40, bottom: 48 },
    legend: { top: 0 },
    tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => (typeof v === 'number' ? v.toFixed(4) : String(v)) },
    xAxis: { type: 'category', data: lambdas.map(String), name: 'λ (0 = FT)', nameLocation: 'middle', nameGap: 28 },
    yAxis: [
      { type: 'value', min: 0, name: 'test accuracy', nameLocation: 'middle', nameGap: 40 },
      { type: 'value', min: 0, name: 'CV', nameLocation: 'middle', nameGap: 44 },
    ],
    series: [
      {
        name: 'test accuracy',
        type: 'line',
        data: sweep.points.map((p) => p.testAcc),
        yAxisIndex: 0,
        symbolSize: 7,
        lineStyle: { width: 2 },
        ...(sweep.original === null
          ? {}
          : {
              markLine: {
                silent: true,
                symbol: 'none',
                label: { formatter: 'original', position: 'insideEndTop' as const },
                lineStyle: { type: 'dashed' as const },
                data: [{ yAxis: sweep.original }],
              },
            }),
      },
      ...sweep.rates.map((rate) => ({
        name: `CV at ${Math.round(rate * 100)}%`,
        type: 'bar' as const,
        yAxisIndex: 1,
        barMaxWidth: 24,
        data: sweep.points.map((p) => p.cv[String(rate)] ?? null),
      })),
    ],
  };
}

export function LambdaSweepTab({ experiment, live }: ExperimentViewProps) {
  const evals = useExperimentResults(experiment.id, 'carma_eval', live);
  const synonyms = useExperimentResults(experiment.id, 'synonym_consistency', live);
  const sweep = useMemo(() => lambdaSweep([...(evals.data ?? []), ...(synonyms.data ?? [])]), [evals.data, synonyms.data]);
  const option = useMemo(() => lambdaOption(sweep), [sweep]);
  return (
    <QueryState isPending={evals.isPending || synonyms.isPending} error={evals.error ?? synonyms.error}>
      {() =>
        sweep.points.length === 0 ? (
          <Text c="dimmed">No trained runs yet{live ? ': points appear as their runs finish' : ''}.</Text>
        ) : (
          <EChart option={option} height={360} ariaLabel="accuracy and CV against lambda" testId="lambda-sweep-chart" />
        )
      }
    </QueryState>
  );
}
