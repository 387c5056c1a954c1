// 2..N runs side by side: status and final metrics, the spec diff (differing rows first, highlighted),
// and each shared metric overlaid. "Group seeds" (the view state's `group=*`, lib/viewState.ts) groups the
// runs by their spec without seeds (lib/groupSeries.ts, the API's group_key rule): a table of the groups
// with n and, per metric, the mean ± 95% Student-t interval of the final values, and the chart draws each
// group by the view state's chart mode (mean line with its CI band, min/max envelope, or every member).
// The chart's metric and mode live in the URL (`chart=metric:mode:step`), so a grouped comparison is a link;
// so do each metric's chart options (`charts`: log scale, smoothing), which a saved view keeps too. The
// worker's system metrics (`system/...`: CPU, memory, GPU) are kept apart from the run's results: tables of
// their own under the results', and a group of their own in the metric list. The compared runs are the
// view's `runs`: "Save view" keeps them with the rest.
import { Alert, Anchor, Checkbox, Group, NativeSelect, Paper, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import type { Run } from '../api/types';
import { MODE_LABELS } from '../components/charts/GroupChart';
import { StatusChip } from '../components/common/StatusChip';
import { ExternalBadge } from '../components/runs/ExternalBadge';
import { AddToReport } from '../components/reports/AddToReport';
import { GroupsOverlay } from '../components/runs/GroupsOverlay';
import { RunsOverlay } from '../components/runs/RunsOverlay';
import { SaveViewButton } from '../components/views/SaveViewButton';
import { useRunsById } from '../hooks/runs';
import { useUrlViewState } from '../hooks/views';
import { formatValue } from '../lib/dotted';
import { formatMeanCi, groupByFields, groupBySeed, groupLabels, groupStats } from '../lib/groupSeries';
import { summaryNumber } from '../lib/nonfinite';
import { countOf, runTitle } from '../lib/labels';
import { isSystemKey } from '../lib/metricPanels';
import { diffParams } from '../lib/paramDiff';
import { parseRunIds } from '../lib/runIds';
import { CHART_MODES, DEFAULT_GROUP, writeViewState, type ChartMode, type ViewState } from '../lib/viewState';

/** The groups of the compared runs: members, label and per-metric statistics of the final values. */
function GroupsTable({ groups, metrics, system = false }: { groups: { name: string; runs: Run[] }[]; metrics: string[]; system?: boolean }) {
  return (
    <Table
      withTableBorder
      withColumnBorders
      fz="sm"
      aria-label={system ? 'groups, system (CPU, memory, GPU)' : 'groups'}
      data-testid={system ? 'compare-groups-system' : 'compare-groups'}
    >
      <Table.Thead>
        <Table.Tr>
          <Table.Th>group</Table.Th>
          <Table.Th>n</Table.Th>
          {metrics.map((m) => <Table.Th key={m}>{m} (last value, mean ± 95% CI)</Table.Th>)}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {groups.map((g) => (
          <Table.Tr key={g.runs[0]!.id} data-testid={system ? 'group-row-system' : 'group-row'} data-group={g.name} data-n={g.runs.length}>
            <Table.Td>
              <Text size="sm" fw={600}>{g.name}</Text>
              <Text size="xs" c="dimmed">
                {g.runs.map((r, i) => (
                  <span key={r.id}>{i ? ', ' : ''}<Anchor component={Link} to={`/runs/${r.id}`} size="xs">{runTitle(r)}</Anchor></span>
                ))}
              </Text>
            </Table.Td>
            <Table.Td ff="monospace">{g.runs.length}</Table.Td>
            {metrics.map((m) => {
              const stats = groupStats(g.runs.map((r) => summaryNumber(r.summary[m])));
              return (
                <Table.Td
                  key={m}
                  ff="monospace"
                  data-testid="group-metric"
                  data-metric={m}
                  data-n={stats?.n ?? 0}
                  data-mean={stats?.mean ?? ''}
                  data-lo={stats?.ci?.lo ?? ''}
                  data-hi={stats?.ci?.hi ?? ''}
                  title={stats?.ci ? `95% CI [${formatValue(stats.ci.lo)}, ${formatValue(stats.ci.hi)}], n = ${stats.n}` : stats ? `n = ${stats.n}` : undefined}
                >
                  {formatMeanCi(stats)}
                  {stats && stats.n !== g.runs.length ? <Text span size="xs" c="dimmed"> (n={stats.n})</Text> : null}
                </Table.Td>
              );
            })}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

function CompareView({ runs, view, setView }: { runs: Run[]; view: ViewState; setView: (v: ViewState) => void }) {
  const [onlyDiff, setOnlyDiff] = useState(false);
  const rows = useMemo(() => diffParams(runs.map((r) => r.spec), { onlyDiffering: onlyDiff }), [runs, onlyDiff]);
  const metrics = useMemo(() => [...new Set(runs.flatMap((r) => Object.keys(r.summary)))].sort(), [runs]);
  const results = useMemo(() => metrics.filter((m) => !isSystemKey(m)), [metrics]);
  const system = useMemo(() => metrics.filter(isSystemKey), [metrics]);
  const metricChoices = useMemo(
    () => [...(results.length ? [{ group: 'results', items: results }] : []), ...(system.length ? [{ group: 'system', items: system }] : [])],
    [results, system],
  );
  const metric = view.chart?.metric;
  const shown = metric && metrics.includes(metric) ? metric : (results.find((m) => m === 'loss') ?? results[0] ?? metrics[0]);
  const mode: ChartMode = view.chart?.mode ?? 'mean_ci';
  const groupBy = view.group_by;
  const grouped = groupBy !== null;
  const groups = useMemo(() => {
    if (groupBy === null) return [];
    if (groupBy !== DEFAULT_GROUP) return groupByFields(runs, groupBy);
    const found = groupBySeed(runs);
    const names = groupLabels(found);
    return found.map((g, i) => ({ name: names[i]!, runs: g.runs }));
  }, [runs, groupBy]);
  const setChart = (next: { metric?: string; mode?: ChartMode }) =>
    setView({ ...view, chart: { metric: next.metric ?? shown ?? '', mode: next.mode ?? mode, x: 'step' } });
  return (
    <Stack>
      <Group>
        <Checkbox
          label="Group seeds"
          description={Array.isArray(groupBy) ? `grouped by ${groupBy.join(', ')} (from the URL)` : 'runs whose specs differ only in seeds form one group'}
          data-testid="group-seeds"
          checked={grouped}
          onChange={(e) => setView({ ...view, group_by: e.currentTarget.checked ? DEFAULT_GROUP : null })}
        />
        {grouped && (
          <Text size="sm" c="dimmed" data-testid="group-count">
            {countOf(groups.length, 'group')} of {countOf(runs.length, 'run')}
          </Text>
        )}
      </Group>
      {grouped && <GroupsTable groups={groups} metrics={results} />}
      <Paper withBorder p="sm">
        <Group justify="space-between" mb="xs">
          <Title order={4}>Curves</Title>
          <Group gap="sm" align="flex-end">
            {grouped && (
              <SegmentedControl
                size="xs"
                aria-label="group chart mode"
                data-testid="group-chart-mode"
                value={mode}
                onChange={(v) => setChart({ mode: CHART_MODES.find((m) => m === v) ?? 'mean_ci' })}
                data={CHART_MODES.map((m) => ({ value: m, label: MODE_LABELS[m] }))}
              />
            )}
            <NativeSelect label="Metric" size="xs" data={metricChoices} value={shown ?? ''} onChange={(e) => setChart({ metric: e.currentTarget.value })} />
            {shown && (
              <AddToReport
                block={(blockId) => ({
                  id: blockId,
                  type: 'figure',
                  title: shown,
                  source: { run_ids: runs.map((r) => r.id), limit: 50 },
                  metrics: [shown],
                  group_by: Array.isArray(groupBy) ? groupBy : [],
                  log_scale: false,
                  mode: 'frozen',
                })}
              />
            )}
          </Group>
        </Group>
        {!shown ? (
          <Text c="dimmed">No metrics.</Text>
        ) : grouped ? (
          <GroupsOverlay groups={groups} metricKey={shown} mode={mode} />
        ) : (
          <RunsOverlay runs={runs} metricKey={shown} />
        )}
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
                <Anchor component={Link} to={`/runs/${r.id}`} data-testid={`compare-run-${r.id}`}>{runTitle(r)}</Anchor> <StatusChip status={r.status} size="xs" />{' '}
                <ExternalBadge kind={r.kind} />
              </Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {results.map((m) => (
            <Table.Tr key={`metric:${m}`} bg="gray.0" data-testid="compare-metric-row" data-metric={m}>
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
      {system.length > 0 && (
        <>
          <Title order={4}>System metrics (CPU, memory, GPU)</Title>
          <Text size="sm" c="dimmed">
            What the worker measured while each run ran (last value), not results of the runs.
          </Text>
          {grouped && <GroupsTable groups={groups} metrics={system} system />}
          <Table withTableBorder withColumnBorders fz="sm" aria-label="system (CPU, memory, GPU) of each run" data-testid="compare-system">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>metric</Table.Th>
                {runs.map((r) => <Table.Th key={r.id}>{runTitle(r)}</Table.Th>)}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {system.map((m) => (
                <Table.Tr key={m} data-testid="compare-system-row" data-metric={m}>
                  <Table.Td fw={600}>{m} (last value)</Table.Td>
                  {runs.map((r) => <Table.Td key={r.id} ff="monospace">{formatValue(r.summary[m])}</Table.Td>)}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </>
      )}
    </Stack>
  );
}

export function ComparePage() {
  const [params, setParams] = useSearchParams();
  const [view, setView] = useUrlViewState();
  const ids = view.runs;
  const queries = useRunsById(ids);
  const runs = queries.map((q) => q.data).filter((r): r is Run => !!r);
  const [text, setText] = useState(ids.join(', '));
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Compare runs</Title>
        <SaveViewButton page="compare" />
      </Group>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          // a new set of runs is a new history entry (the other state replaces its own)
          setParams(writeViewState(params, { ...view, runs: parseRunIds(text) }));
        }}
      >
        <TextInput label="Run ids" description="comma separated; or select runs on an experiment page" value={text} onChange={(e) => setText(e.currentTarget.value)} w={400} />
      </form>
      {ids.length < 2 ? (
        <Alert color="gray">Choose at least two runs.</Alert>
      ) : runs.length < ids.length ? (
        <Text c="dimmed">Loading {countOf(ids.length - runs.length, 'run')}…</Text>
      ) : (
        <CompareView runs={runs} view={view} setView={setView} />
      )}
    </Stack>
  );
}
