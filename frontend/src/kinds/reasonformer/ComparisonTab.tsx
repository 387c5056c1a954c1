// The experiment page's "Comparison" tab: the variants of the experiment in the layout of Table 1 of paper
// 001 (tasks x models with activated parameters and the average; the best of each task marked ★), and,
// when the experiment sweeps the ablation switches (pre-training, adapter, modularity), Table 2's layout.
import { Anchor, Group, SegmentedControl, Stack, Table, Text } from '@mantine/core';
import { useMemo, useState } from 'react';
import { Link } from 'react-router';
import { QueryState } from '../../components/common/QueryState';
import { IntervalCaption } from '../../components/results/IntervalCaption';
import { useExperimentResults } from '../../hooks/experiments';
import type { ExperimentViewProps } from '../types';
import { ablationTable, EVAL_CAPTION, evalResults, millions, pct, pctInterval, sweepsAblations, table1, type EvalPayload, type Tagged } from './shape';

type Layout = 'table1' | 'transposed' | 'table2';

function Best({ on, children }: { on: boolean; children: string }) {
  return <Text span fz="sm" ff="monospace" fw={on ? 700 : 400}>{`${children}${on ? ' ★' : ''}`}</Text>;
}

function Table1View({ evals, transposed }: { evals: Tagged<EvalPayload>[]; transposed: boolean }) {
  const t = useMemo(() => table1(evals), [evals]);
  const runLink = (runId: number, name: string) => (
    <Anchor component={Link} to={`/runs/${runId}`} size="sm">
      {name}
    </Anchor>
  );
  if (transposed)
    return (
      <Table withTableBorder striped fz="sm" w="auto" data-testid="table1">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Model</Table.Th>
            <Table.Th>Activated</Table.Th>
            {t.rows.map((r) => (
              <Table.Th key={r.task}>{r.task}</Table.Th>
            ))}
            <Table.Th>Avg.</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {t.columns.map((c, j) => (
            <Table.Tr key={c.runId}>
              <Table.Td>{runLink(c.runId, c.name)}</Table.Td>
              <Table.Td>{millions(c.activated)}</Table.Td>
              {t.rows.map((r) => (
                <Table.Td key={r.task}>
                  <Best on={r.best.includes(j)}>{`${pct(r.values[j])}${pctInterval(r.cis[j])}`}</Best>
                </Table.Td>
              ))}
              <Table.Td>
                <Best on={t.bestAverage.includes(j)}>{`${pct(c.average)}${pctInterval(c.averageCi)}`}</Best>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    );
  return (
    <Table withTableBorder striped fz="sm" w="auto" data-testid="table1">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Datasets</Table.Th>
          <Table.Th>Reasoning</Table.Th>
          {t.columns.map((c) => (
            <Table.Th key={c.runId}>{runLink(c.runId, c.name)}</Table.Th>
          ))}
        </Table.Tr>
        <Table.Tr>
          <Table.Th colSpan={2}>Activated Parameters</Table.Th>
          {t.columns.map((c) => (
            <Table.Th key={c.runId}>{millions(c.activated)}</Table.Th>
          ))}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {t.rows.map((r) => (
          <Table.Tr key={r.task}>
            <Table.Td>{r.task}</Table.Td>
            <Table.Td>{r.reasoning ?? '—'}</Table.Td>
            {r.values.map((v, j) => (
              <Table.Td key={t.columns[j]!.runId}>
                <Best on={r.best.includes(j)}>{`${pct(v)}${pctInterval(r.cis[j])}`}</Best>
              </Table.Td>
            ))}
          </Table.Tr>
        ))}
        <Table.Tr>
          <Table.Td colSpan={2} fw={600}>
            Avg.
          </Table.Td>
          {t.columns.map((c, j) => (
            <Table.Td key={c.runId}>
              <Best on={t.bestAverage.includes(j)}>{`${pct(c.average)}${pctInterval(c.averageCi)}`}</Best>
            </Table.Td>
          ))}
        </Table.Tr>
      </Table.Tbody>
    </Table>
  );
}

function Table2View({ evals }: { evals: Tagged<EvalPayload>[] }) {
  const t = useMemo(() => ablationTable(evals), [evals]);
  return (
    <Table withTableBorder striped fz="sm" w="auto" data-testid="table2">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Modules</Table.Th>
          <Table.Th>Models/Dataset</Table.Th>
          {t.tasks.map((task) => (
            <Table.Th key={task}>{task}</Table.Th>
          ))}
          <Table.Th>Avg.</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {t.groups.flatMap((g) =>
          g.rows.map((r, i) => (
            <Table.Tr key={r.runId}>
              <Table.Td fw={600}>{i === 0 ? g.modules : ''}</Table.Td>
              <Table.Td>
                <Anchor component={Link} to={`/runs/${r.runId}`} size="sm">
                  {r.line}
                </Anchor>
              </Table.Td>
              {r.values.map((v, j) => (
                <Table.Td key={t.tasks[j]} ff="monospace">
                  {`${pct(v)}${pctInterval(r.cis[j])}`}
                </Table.Td>
              ))}
              <Table.Td ff="monospace">{`${pct(r.average)}${pctInterval(r.averageCi)}`}</Table.Td>
            </Table.Tr>
          )),
        )}
      </Table.Tbody>
    </Table>
  );
}

export function ComparisonTab({ experiment, live }: ExperimentViewProps) {
  const results = useExperimentResults(experiment.id, 'reasonformer_eval', live);
  const evals = useMemo(() => evalResults(results.data ?? []), [results.data]);
  const ablations = useMemo(() => sweepsAblations(evals), [evals]);
  const [layout, setLayout] = useState<Layout>('table1');
  const shown: Layout = layout === 'table2' && !ablations ? 'table1' : layout;
  return (
    <QueryState isPending={results.isPending} error={results.error}>
      {() =>
        evals.length === 0 ? (
          <Text c="dimmed">No reasonformer_eval results yet{live ? ': columns appear as runs finish' : ''}.</Text>
        ) : (
          <Stack gap="xs">
            <Group>
              <SegmentedControl
                size="xs"
                aria-label="comparison layout"
                value={shown}
                onChange={(v) => setLayout(v === 'table2' ? 'table2' : v === 'transposed' ? 'transposed' : 'table1')}
                data={[
                  { value: 'table1', label: 'Table 1: tasks × models' },
                  { value: 'transposed', label: 'models × tasks' },
                  ...(ablations ? [{ value: 'table2', label: 'Table 2: ablations' }] : []),
                ]}
              />
              <Text size="xs" c="dimmed">
                accuracy or exact match, % [95% interval]; ★ the best model of each task{shown === 'table2' ? '' : ' and of the average'}
              </Text>
            </Group>
            {shown === 'table2' ? <Table2View evals={evals} /> : <Table1View evals={evals} transposed={shown === 'transposed'} />}
            <IntervalCaption text={EVAL_CAPTION} />
          </Stack>
        )
      }
    </QueryState>
  );
}
