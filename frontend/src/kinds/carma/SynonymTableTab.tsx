// The experiment page's "Synonym table" tab, in the layout of the CARMA paper's Tables 1, 4 and 5: Model,
// Ver., Task, Int. (rate), CS (ConsistSyn, mean ± std over seeds, %) with its 95% Student-t interval over
// the seeds, CV, and NI against a chosen baseline.
import { Anchor, Group, SegmentedControl, Stack, Table, Text } from '@mantine/core';
import { useMemo, useState } from 'react';
import { Link } from 'react-router';
import { QueryState } from '../../components/common/QueryState';
import { IntervalCaption } from '../../components/results/IntervalCaption';
import { useExperimentResults } from '../../hooks/experiments';
import type { ExperimentViewProps } from '../types';
import { meanStd, SYNONYM_CAPTION, synonymRows, type Baseline } from './shape';
import { bracket } from '../../lib/interval';

export function SynonymTableTab({ experiment, live }: ExperimentViewProps) {
  const results = useExperimentResults(experiment.id, 'synonym_consistency', live);
  const [baseline, setBaseline] = useState<Baseline>('ft');
  const rows = useMemo(() => synonymRows(results.data ?? [], baseline), [results.data, baseline]);
  return (
    <QueryState isPending={results.isPending} error={results.error}>
      {() =>
        rows.length === 0 ? (
          <Text c="dimmed">No synonym_consistency results yet{live ? ': rows appear as their runs finish' : ''}.</Text>
        ) : (
          <Stack gap="xs">
            <Group>
              <Text size="sm">NI against</Text>
              <SegmentedControl
                size="xs"
                aria-label="NI baseline"
                value={baseline}
                onChange={(v) => setBaseline(v === 'original' ? 'original' : 'ft')}
                data={[
                  { value: 'ft', label: 'FT' },
                  { value: 'original', label: 'Org' },
                ]}
              />
              <Text size="xs" c="dimmed">CS: ConsistSyn (%), mean ± std over seeds [95% CI]; CV = std / mean; NI = (CS − CS_base) / CS_base (%)</Text>
            </Group>
            <Table withTableBorder striped fz="sm" w="auto" data-testid="synonym-table">
              <Table.Thead>
                <Table.Tr>
                  {['Model', 'Ver.', 'Task', 'Int.', 'CS', 'CV', 'NI', 'seeds', 'run'].map((h) => (
                    <Table.Th key={h}>{h}</Table.Th>
                  ))}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {rows.map((r, i) => (
                  <Table.Tr key={`${r.runId}-${r.rate}`} data-variant={r.variant}>
                    <Table.Td>{i === 0 || rows[i - 1]!.model !== r.model ? r.model : ''}</Table.Td>
                    <Table.Td>{r.label}</Table.Td>
                    <Table.Td>{r.task.toUpperCase()}</Table.Td>
                    <Table.Td>{`${Math.round(r.rate * 100)}%`}</Table.Td>
                    <Table.Td ff="monospace">{`${meanStd(r.mean, r.std)}${r.ci ? ` ${bracket(r.ci, (v) => v.toFixed(2))}` : ''}`}</Table.Td>
                    <Table.Td ff="monospace">{r.cv.toFixed(4)}</Table.Td>
                    <Table.Td ff="monospace">{r.ni === null ? '—' : `${r.ni >= 0 ? '+' : ''}${r.ni.toFixed(2)}`}</Table.Td>
                    <Table.Td>{r.seeds}</Table.Td>
                    <Table.Td>
                      <Anchor component={Link} to={`/runs/${r.runId}`} size="sm">
                        run {r.runId}
                      </Anchor>
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
            <IntervalCaption text={SYNONYM_CAPTION} />
          </Stack>
        )
      }
    </QueryState>
  );
}
