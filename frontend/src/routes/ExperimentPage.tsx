// One experiment: its runs (virtualised table, bulk cancel/retry), overlaid curves of the selected runs,
// parallel coordinates of the sweep, the tabs its kind declares (src/kinds/<family>/<kind>/), and its review.
// An external experiment (its runs logged by scripts through the SDK: lib/external.ts) is marked so, and
// its runs are resumed by their scripts, never retried here.
import { Alert, Button, Grid, Group, Loader, NativeSelect, Paper, Stack, Tabs, Text, Title } from '@mantine/core';
import { useIntersection } from '@mantine/hooks';
import { lazy, Suspense, useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { ExperimentDetail } from '../api/types';
import { ParallelCoords } from '../components/charts/ParallelCoords';
import { QueryState } from '../components/common/QueryState';
import { StatusCounts } from '../components/common/StatusChip';
import { timeAgo } from '../components/common/time';
import { ReviewBadge, ReviewPanel } from '../components/review/ReviewPanel';
import { StarButton } from '../components/review/StarButton';
import { Tags } from '../components/review/Tags';
import { RunsOverlay } from '../components/runs/RunsOverlay';
import { ExternalBadge } from '../components/runs/ExternalBadge';
import { RunsTable } from '../components/runs/RunsTable';
import { useExperiment, useRunningEtas, useRunsTable } from '../hooks/experiments';
import { useCanWrite } from '../hooks/projects';
import { useRunAction } from '../hooks/runs';
import { kindViews } from '../kinds';
import { parallelData } from '../lib/parallel';
import { canCancel, canRetry, isFinished } from '../lib/runStatus';
import { columnsOf, statusCounts, withEtas, type RunRow } from '../lib/runsTable';
import { countOf } from '../lib/labels';
import { isExternal } from '../lib/external';

// the reports' picker loads when a kind tab that offers it is opened: not in the page's own bytes
const AddToReport = lazy(() => import('../components/reports/AddToReport').then((m) => ({ default: m.AddToReport })));

// What only the Review and Spec tabs show comes with the first visit to them, not with the page: the
// comments (and Markdown), the YAML printer (~0.2 MB of JavaScript the runs table does not need).
const JsonBlock = lazy(() => import('../components/common/JsonBlock').then((m) => ({ default: m.JsonBlock })));
const Comments = lazy(() => import('../components/review/Comments').then((m) => ({ default: m.Comments })));

function preferredMetric(metrics: readonly string[]): string | undefined {
  return metrics.find((m) => m === 'loss') ?? metrics.find((m) => m.includes('acc')) ?? metrics[0];
}

/**
 * The overlaid curves under the table: drawn (its runs' series, and ECharts) once a quarter of the panel is
 * on the screen, after the table's first paint: the table is what the page is for, and with more than a
 * dozen runs the panel starts at the bottom edge of the window (drawing it there, unseen, held the table's
 * first frames for ~0.3 s on a loaded machine). Its own component, so that the paint and the
 * panel coming into view re-render this panel, not the page (its header, tabs and table).
 */
function OverlayPanel({ runs, selected, metrics, metric, onMetric }: {
  runs: readonly RunRow[];
  selected: boolean;
  metrics: readonly string[];
  metric: string | undefined;
  onMetric: (metric: string) => void;
}) {
  const [painted, setPainted] = useState(false);
  useEffect(() => {
    const frame = requestAnimationFrame(() => setTimeout(() => setPainted(true), 0));
    return () => cancelAnimationFrame(frame);
  }, []);
  const panel = useIntersection<HTMLDivElement>({ threshold: 0.25 });
  const [shown, setShown] = useState(false);
  useEffect(() => {
    if (painted && panel.entry?.isIntersecting) setShown(true);
  }, [painted, panel.entry]);
  return (
    <Paper withBorder p="sm" ref={panel.ref} data-testid="overlay-panel">
      <Group justify="space-between" mb="xs">
        <Text fw={600}>{selected ? 'Selected runs' : `First ${runs.length} runs`}</Text>
        <NativeSelect label="Metric" size="xs" data={metrics} value={metric ?? ''} onChange={(e) => onMetric(e.currentTarget.value)} />
      </Group>
      {!metric ? <Text c="dimmed">No metrics yet.</Text> : shown ? <RunsOverlay runs={runs} metricKey={metric} /> : null}
    </Paper>
  );
}

function ExperimentView({ experiment, runs }: { experiment: ExperimentDetail; runs: readonly RunRow[] }) {
  const navigate = useNavigate();
  const canWrite = useCanWrite(experiment.project_id);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const { metrics } = useMemo(() => columnsOf(runs), [runs]);
  const [metricChoice, setMetric] = useState<string | undefined>();
  const metric = metricChoice && metrics.includes(metricChoice) ? metricChoice : preferredMetric(metrics);
  const live = runs.some((r) => !isFinished(r.status));
  const kindTabs = kindViews.experimentTabs(experiment.kind);
  const external = isExternal(experiment.kind);
  const cancel = useRunAction('cancel');
  const retry = useRunAction('retry');
  const selectedRuns = useMemo(() => runs.filter((r) => selected.has(r.id)), [runs, selected]);
  const cancellable = selectedRuns.filter((r) => canCancel(r.status)).map((r) => r.id);
  // the API refuses to retry an external run: its script resumes it
  const retryable = external ? [] : selectedRuns.filter((r) => canRetry(r.status)).map((r) => r.id);
  const counts = useMemo(() => statusCounts(runs), [runs]);
  const etas = useRunningEtas(experiment.id, counts.running ?? 0);
  const tableRuns = useMemo(() => withEtas(runs, etas.data), [runs, etas.data]);
  const openRun = useCallback((id: number) => navigate(`/runs/${id}`), [navigate]);
  const overlayRuns = useMemo(() => (selectedRuns.length ? selectedRuns : runs.slice(0, 10)), [selectedRuns, runs]);
  const [tab, setTab] = useState<string | null>('runs');
  // the sweep's parallel coordinates only while their tab is open (10,000 runs: not on every render)
  const parallel = useMemo(() => (metric && tab === 'sweep' ? parallelData(runs, metric) : null), [runs, metric, tab]);

  return (
    <Stack>
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Group gap="xs">
            <Title order={2} data-testid="experiment-name">{experiment.name}</Title>
            <StarButton experimentId={experiment.id} starred={experiment.starred} />
            <ReviewBadge state={experiment.review_state} />
            <ExternalBadge kind={experiment.kind} size="md" />
          </Group>
          <Text size="sm" c="dimmed">
            {experiment.kind} · {countOf(experiment.run_count, 'run')} · by {experiment.author ?? '—'} · {timeAgo(experiment.created_at)} · project {experiment.project}
          </Text>
          <Group gap="xs">
            <StatusCounts counts={counts} />
          </Group>
          <Tags target={{ type: 'experiment', id: experiment.id }} tags={experiment.tags} canWrite={canWrite} />
        </Stack>
        <Group>
          <Button variant="default" component={Link} to={`/compare?runs=${[...selected].join(',')}`} disabled={selected.size < 2}>
            Compare {selected.size >= 2 ? selected.size : ''} runs
          </Button>
          {canWrite && (
            <>
              <Button color="red" variant="light" disabled={!cancellable.length} loading={cancel.isPending} onClick={() => cancel.mutate(cancellable)} data-testid="bulk-cancel">
                Cancel {cancellable.length || ''}
              </Button>
              <Button variant="light" disabled={!retryable.length} loading={retry.isPending} onClick={() => retry.mutate(retryable)} data-testid="bulk-retry">
                Retry {retryable.length || ''}
              </Button>
            </>
          )}
        </Group>
      </Group>
      {experiment.description && <Text>{experiment.description}</Text>}

      <Tabs value={tab} onChange={setTab} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="runs">Runs</Tabs.Tab>
          <Tabs.Tab value="sweep">Sweep analysis</Tabs.Tab>
          {kindTabs.map((t) => (
            <Tabs.Tab key={t.id} value={`kind:${t.id}`} data-testid={`kind-tab-${t.id}`}>
              {t.label}
            </Tabs.Tab>
          ))}
          <Tabs.Tab value="review">Review</Tabs.Tab>
          <Tabs.Tab value="spec">Spec</Tabs.Tab>
        </Tabs.List>

        <Tabs.Panel value="runs" pt="md">
          <Grid>
            <Grid.Col span={12}>
              <RunsTable runs={tableRuns} selected={selected} onSelect={setSelected} experimentId={experiment.id} kind={experiment.kind} />
            </Grid.Col>
            <Grid.Col span={12}>
              <OverlayPanel runs={overlayRuns} selected={selectedRuns.length > 0} metrics={metrics} metric={metric} onMetric={setMetric} />
            </Grid.Col>
          </Grid>
        </Tabs.Panel>

        <Tabs.Panel value="sweep" pt="md">
          <Stack>
            <NativeSelect label="Colour by final metric" w={260} data={metrics} value={metric ?? ''} onChange={(e) => setMetric(e.currentTarget.value)} />
            {metric && parallel ? <ParallelCoords data={parallel} metric={metric} onOpenRun={openRun} /> : <Text c="dimmed">No metrics yet.</Text>}
          </Stack>
        </Tabs.Panel>

        {kindTabs.map(({ id, View, label, reportResultKind }) => (
          <Tabs.Panel key={id} value={`kind:${id}`} pt="md">
            {reportResultKind && (
              <Group justify="flex-end" mb="xs">
                <Suspense fallback={null}>
                  <AddToReport
                    block={(blockId) => ({
                      id: blockId,
                      type: 'kind_view',
                      title: `${label}: ${experiment.name}`,
                      source: { query: `experiment = ${experiment.id}`, limit: 50 },
                      result_kind: reportResultKind,
                      view: id,
                      mode: 'frozen',
                    })}
                  />
                </Suspense>
              </Group>
            )}
            <View experiment={experiment} live={live} />
          </Tabs.Panel>
        ))}

        <Tabs.Panel value="review" pt="md">
          <Grid>
            <Grid.Col span={{ base: 12, md: 5 }}>
              <Title order={4} mb="xs">Review</Title>
              <ReviewPanel experimentId={experiment.id} canWrite={canWrite} />
            </Grid.Col>
            <Grid.Col span={{ base: 12, md: 7 }}>
              <Title order={4} mb="xs">Comments</Title>
              <Suspense fallback={<Loader size="sm" />}>
                <Comments target={{ type: 'experiment', id: experiment.id }} canWrite={canWrite} />
              </Suspense>
            </Grid.Col>
          </Grid>
        </Tabs.Panel>

        <Tabs.Panel value="spec" pt="md">
          {external ? (
            <Alert color="gray" data-testid="external-spec-note">
              Scripts log this experiment's runs through the SDK (reasonlab_sdk.init): there is no spec or sweep. Each run's config and
              provenance are on its page.
            </Alert>
          ) : (
            <Suspense fallback={<Loader size="sm" />}>
              <Grid>
                <Grid.Col span={{ base: 12, md: 6 }}>
                  <Title order={5}>Spec</Title>
                  <JsonBlock value={experiment.spec} yaml />
                </Grid.Col>
                <Grid.Col span={{ base: 12, md: 6 }}>
                  <Title order={5}>Sweep</Title>
                  {experiment.sweep ? <JsonBlock value={experiment.sweep} yaml /> : <Alert color="gray">A single run, no sweep.</Alert>}
                </Grid.Col>
              </Grid>
            </Suspense>
          )}
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}

export function ExperimentPage() {
  const id = Number(useParams().id);
  // the experiment's fields and its runs (as table columns) in two requests, side by side
  const experiment = useExperiment(id);
  const runs = useRunsTable(id);
  return (
    <QueryState isPending={experiment.isPending || runs.isPending} error={experiment.error ?? runs.error}>
      {() => <ExperimentView experiment={experiment.data!} runs={runs.data!} />}
    </QueryState>
  );
}
