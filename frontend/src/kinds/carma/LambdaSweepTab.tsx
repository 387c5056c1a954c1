// The experiment page's "Lambda sweep" tab: test accuracy and the CV of ConsistSyn against CARMA's lambda
// (lambda 0 is FT); the original model's accuracy is a dashed reference; the accuracy's 95% intervals are a
// band and are in the tooltip.
import { Stack, Text } from '@mantine/core';
import { useMemo } from 'react';
import { ciBandSeries, tableWithBands } from '../../components/charts/ciBand';
import { EChart } from '../../components/charts/EChart';
import type { EChartsOption } from '../../components/charts/echarts';
import { QueryState } from '../../components/common/QueryState';
import { IntervalCaption } from '../../components/results/IntervalCaption';
import { formatWithInterval, intervalCaption } from '../../lib/interval';
import { useExperimentResults } from '../../hooks/experiments';
import type { ExperimentViewProps } from '../types';
import { lambdaSweep, type LambdaSweep } from './shape';

export function lambdaOption(sweep: LambdaSweep): EChartsOption {
  const lambdas = sweep.points.map((p) => p.lambda);
  return {
    animation: false,
    grid: { left: 56, right: 64, top: 40, bottom: 48 },
    legend: { top: 0 },
    tooltip: {
      trigger: 'axis',
      formatter: (params: unknown) => {
        const shown = (params as { seriesId: string; seriesName: string; value: unknown; dataIndex: number; marker: string }[]).filter(
          (p) => !p.seriesId.startsWith('band-'),
        );
        const rows = shown.map((p) => {
          const v = Array.isArray(p.value) ? (p.value[1] as unknown) : p.value;
          if (typeof v !== 'number') return `${p.marker}${p.seriesName}: —`;
          const ci = p.seriesId === 'test-accuracy' ? (sweep.points[p.dataIndex]?.testCi ?? null) : null;
          return `${p.marker}${p.seriesName}: ${formatWithInterval(v, ci, 4)}`;
        });
        return [`λ=${lambdas[shown[0]?.dataIndex ?? 0] ?? ''}`, ...rows].join('<br/>');
      },
    },
    xAxis: { type: 'category', data: lambdas.map(String), name: 'λ (0 = FT)', nameLocation: 'middle', nameGap: 28 },
    yAxis: [
      { type: 'value', min: 0, name: 'test accuracy', nameLocation: 'middle', nameGap: 40 },
      { type: 'value', min: 0, name: 'CV', nameLocation: 'middle', nameGap: 44 },
    ],
    series: [
      {
        id: 'test-accuracy',
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
      ...ciBandSeries({
        name: 'test accuracy',
        key: 'test-accuracy',
        data: sweep.points.flatMap((p) => (p.testAcc === null ? [] : [[String(p.lambda), p.testAcc] as [string, number]])),
        ci: sweep.points.flatMap((p) => (p.testAcc === null ? [] : [p.testCi])),
        yAxisIndex: 0,
      }),
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
  const data = useMemo(() => () => tableWithBands(option), [option]);
  return (
    <QueryState isPending={evals.isPending || synonyms.isPending} error={evals.error ?? synonyms.error}>
      {() =>
        sweep.points.length === 0 ? (
          <Text c="dimmed">No trained runs yet{live ? ': points appear as their runs finish' : ''}.</Text>
        ) : (
          <Stack gap={4}>
            <EChart option={option} data={data} height={360} ariaLabel="accuracy and CV against lambda" testId="lambda-sweep-chart" />
            <IntervalCaption
              text={intervalCaption({ sizes: sweep.testSizes, unit: 'test items', seeds: sweep.points.some((p) => p.testCi?.method === 't') })}
            />
          </Stack>
        )
      }
    </QueryState>
  );
}
