// The experiment page's "Skill-Mix table" tab: paper 004's Table 1 layout (rows ept, columns k, each cell
// Ratio of Full Marks / Ratio of All Skills / Skill Fraction with their ±; the best ept of each column
// starred per metric; the model's default ept labelled), a heatmap of one metric instead, and the best ept
// per k. One table per model.
import { Anchor, Badge, Group, SegmentedControl, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useMemo, useState } from 'react';
import { Link } from 'react-router';
import { QueryState } from '../../components/common/QueryState';
import { IntervalCaption } from '../../components/results/IntervalCaption';
import { useExperimentResults } from '../../hooks/experiments';
import type { ExperimentViewProps } from '../types';
import {
  bestEptPerK,
  formatWithCi,
  HEADLINE,
  METRIC_LABELS,
  METRICS,
  rowLabel,
  skillmixCaption,
  skillmixCells,
  skillmixTables,
  toFixedHalfEven,
  type Metric,
  type SkillmixTable,
} from './shape';
import { SkillmixHeatmap } from './SkillmixHeatmap';

function Table1({ table }: { table: SkillmixTable }) {
  return (
    <Table withTableBorder striped fz="sm" w="auto" data-testid="skillmix-table">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>{table.model}</Table.Th>
          {table.cols.map((k) => (
            <Table.Th key={k}>Skill-Mix (k={k})</Table.Th>
          ))}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {table.rows.map((ept, i) => (
          <Table.Tr key={String(ept)} data-testid="skillmix-row">
            <Table.Td fw={ept !== null && ept === table.defaultEpt ? 700 : 400}>{rowLabel(ept, table.defaultEpt)}</Table.Td>
            {table.cols.map((k, j) => {
              const cell = table.cells[i]![j] ?? null;
              return (
                <Table.Td key={k}>
                  {cell === null ? (
                    <Text c="dimmed" fz="sm">—</Text>
                  ) : (
                    <Stack gap={0}>
                      {HEADLINE.map((m) => {
                        const best = table.best[m][j]!.includes(i);
                        return (
                          <Text key={m} span fz="sm" ff="monospace" fw={best ? 700 : 400} title={METRIC_LABELS[m]}>
                            {`${formatWithCi(cell.values[m], cell.intervals[m])}${best ? ' ★' : ''}`}
                          </Text>
                        );
                      })}
                      <Anchor component={Link} to={`/runs/${cell.runIds[0]}`} fz="xs">
                        run {cell.runIds[0]}
                        {cell.failedGradings ? ` · ${cell.failedGradings}/${cell.totalGradings} gradings failed` : ''}
                      </Anchor>
                    </Stack>
                  )}
                </Table.Td>
              );
            })}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

function tableCaption(table: SkillmixTable): string {
  const cells = table.cells.flat().filter((c) => c !== null);
  return skillmixCaption(cells.flatMap((c) => c.combinations), cells.some((c) => c.runIds.length > 1));
}

function BestEpt({ table, metric }: { table: SkillmixTable; metric: Metric }) {
  const best = useMemo(() => bestEptPerK(table, metric), [table, metric]);
  return (
    <Group gap="xs" data-testid="skillmix-best-ept">
      <Text size="sm">Best ept per k ({METRIC_LABELS[metric]}):</Text>
      {best.map((b) => (
        <Badge key={b.k} variant="light" color={b.epts.length ? 'teal' : 'gray'}>
          {`k=${b.k}: ${b.epts.length ? `${b.epts.map((e) => (e === null ? 'default' : e)).join(', ')} (${toFixedHalfEven(b.value, 2)})` : 'all 0'}`}
        </Badge>
      ))}
    </Group>
  );
}

export function SkillmixTableTab({ experiment, live }: ExperimentViewProps) {
  const results = useExperimentResults(experiment.id, 'skillmix_cell', live);
  const tables = useMemo(() => skillmixTables(skillmixCells(results.data ?? [])), [results.data]);
  const [view, setView] = useState<'table' | 'heatmap'>('table');
  const [metric, setMetric] = useState<Metric>('skill_fraction');
  return (
    <QueryState isPending={results.isPending} error={results.error}>
      {() =>
        tables.length === 0 ? (
          <Text c="dimmed">No skillmix_cell results yet{live ? ': cells appear as their runs finish' : ''}.</Text>
        ) : (
          <Stack gap="md">
            <Group>
              <SegmentedControl
                size="xs"
                aria-label="table or heatmap"
                value={view}
                onChange={(v) => setView(v === 'heatmap' ? 'heatmap' : 'table')}
                data={[
                  { value: 'table', label: 'Table 1' },
                  { value: 'heatmap', label: 'Heatmap' },
                ]}
              />
              <Select
                size="xs"
                aria-label="metric"
                value={metric}
                onChange={(v) => setMetric((METRICS as readonly string[]).includes(v ?? '') ? (v as Metric) : 'skill_fraction')}
                data={METRICS.map((m) => ({ value: m, label: METRIC_LABELS[m] }))}
                allowDeselect={false}
                w={200}
              />
              {view === 'table' ? (
                <Text size="xs" c="dimmed">
                  each cell: {HEADLINE.map((m) => METRIC_LABELS[m]).join(' / ')}, mean ± stderr over combinations [95% interval]; ★ best ept of the column
                </Text>
              ) : null}
            </Group>
            {tables.map((t) => (
              <Stack key={t.model} gap="xs">
                <Group gap="xs">
                  <Title order={5}>{t.model}</Title>
                  <Text size="xs" c="dimmed">
                    {t.renormalises === null
                      ? 'router normalisation: n/a'
                      : t.renormalises
                        ? 'routers renormalise their top-k weights'
                        : 'routers do not renormalise their top-k weights (raising ept raises the total expert weight)'}
                  </Text>
                </Group>
                {view === 'table' ? <Table1 table={t} /> : <SkillmixHeatmap table={t} metric={metric} />}
                <IntervalCaption text={tableCaption(t)} />
                <BestEpt table={t} metric={metric} />
              </Stack>
            ))}
          </Stack>
        )
      }
    </QueryState>
  );
}
