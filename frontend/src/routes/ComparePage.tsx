// 2..N runs side by side: status and final metrics, the spec diff (differing rows first, highlighted),
// and each shared metric overlaid.
import { Alert, Anchor, Checkbox, Group, NativeSelect, Paper, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import type { Run } from '../api/types';
import { StatusChip } from '../components/common/StatusChip';
import { RunsOverlay } from '../components/runs/RunsOverlay';
import { useRunsById } from '../hooks/runs';
import { formatValue } from '../lib/dotted';
import { runTitle } from '../lib/labels';
import { diffParams } from '../lib/paramDiff';
import { parseRunIds } from '../lib/runIds';

function CompareView({ runs }: { runs: Run[] }) {
  const [onlyDiff, setOnlyDiff] = useState(false);
  const rows = useMemo(() => diffParams(runs.map((r) => r.spec), { onlyDiffering: onlyDiff }), [runs, onlyDiff]);
  const metrics = useMemo(() => [...new Set(runs.flatMap((r) => Object.keys(r.summary)))].sort(), [runs]);
  const [metric, setMetric] = useState<string | undefined>();
  const shown = metric && metrics.includes(metric) ? metric : (metrics.find((m) => m === 'loss') ?? metrics[0]);
  return (
    <Stack>
      <Paper withBorder p="sm">
        <Group justify="space-between" mb="xs">
          <Title order={4}>Curves</Title>
          <NativeSelect label="Metric" size="xs" data={metrics} value={shown ?? ''} onChange={(e) => setMetric(e.currentTarget.value)} />
        </Group>
        {shown ? <RunsOverlay runs={runs} metricKey={shown} /> : <Text c="dimmed">No metrics.</Text>}
      </Paper>
      <Group justify="space-between">
        <Title order={4}>Parameters</Title>
        <Checkbox label="Only differing" checked={onlyDiff} onChange={(e) => setOnlyDiff(e.currentTarget.checked)} />
      </Group>
      <Table withTableBorder withColumnBorders fz="sm" aria-label="parameter diff" data-testid="param-diff">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>field</Table.Th>
            {runs.map((r) => (
              <Table.Th key={r.id}>
                <Anchor component={Link} to={`/runs/${r.id}`} data-testid={`compare-run-${r.id}`}>{runTitle(r)}</Anchor> <StatusChip status={r.status} size="xs" />
              </Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {metrics.map((m) => (
            <Table.Tr key={`metric:${m}`} bg="gray.0">
              <Table.Td fw={600}>{m} (last value)</Table.Td>
              {runs.map((r) => <Table.Td key={r.id} ff="monospace">{formatValue(r.summary[m])}</Table.Td>)}
            </Table.Tr>
          ))}
          {rows.map((row) => (
            <Table.Tr key={row.key} data-differs={row.differs} bg={row.differs ? 'yellow.1' : undefined}>
              <Table.Td fw={row.differs ? 700 : 400}>{row.key}</Table.Td>
              {row.values.map((v, i) => <Table.Td key={i} ff="monospace">{v === undefined ? '—' : formatValue(v)}</Table.Td>)}
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}

export function ComparePage() {
  const [params, setParams] = useSearchParams();
  const ids = parseRunIds(params.get('runs'));
  const queries = useRunsById(ids);
  const runs = queries.map((q) => q.data).filter((r): r is Run => !!r);
  const [text, setText] = useState(ids.join(', '));
  return (
    <Stack>
      <Title order={2}>Compare runs</Title>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setParams({ runs: parseRunIds(text).join(',') });
        }}
      >
        <TextInput label="Run ids" description="comma separated; or select runs on an experiment page" value={text} onChange={(e) => setText(e.currentTarget.value)} w={400} />
      </form>
      {ids.length < 2 ? (
        <Alert color="gray">Choose at least two runs.</Alert>
      ) : runs.length < ids.length ? (
        <Text c="dimmed">Loading {ids.length - runs.length} runs…</Text>
      ) : (
        <CompareView runs={runs} />
      )}
    </Stack>
  );
}
