// One run: status, attempt, worker, live progress and ETA from its event stream, metric charts from
// the downsampled API, results by result kind, error and traceback, logs tail, spec and params, review.
// An external run (a script's, through the SDK: lib/external.ts) is marked so, shows its config and its
// provenance, and has only the tabs that mean something for it (lib/runTabs.ts). The open tab is the URL's
// `tab` (`/runs/7?tab=results`; none: Metrics), so a reload keeps it and a link opens it; the Metrics tab's
// chart options are the URL's `charts` (components/runs/MetricPanels.tsx).
import { Alert, Anchor, Button, Code, Grid, Group, Loader, Paper, Progress, Stack, Tabs, Text, Title } from '@mantine/core';
import { lazy, Suspense, useCallback, useEffect, useRef } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import type { Run } from '../api/types';
import { QueryState } from '../components/common/QueryState';
import { StatusChip } from '../components/common/StatusChip';
import { timeAgo } from '../components/common/time';
import { KeyValues } from '../components/results/KeyValues';
import { Tags } from '../components/review/Tags';
import { RunArtifacts } from '../components/runs/RunArtifacts';
import { AttemptHistory } from '../components/runs/AttemptHistory';
import { ExamplesPanel } from '../components/runs/ExamplesPanel';
import { ExternalBadge } from '../components/runs/ExternalBadge';
import { RunEta, useNow } from '../components/runs/Eta';
import { MetricPanels } from '../components/runs/MetricPanels';
import { RunTitle } from '../components/runs/RunTitle';
import { useMetricKeys } from '../hooks/metrics';
import { useCanWrite } from '../hooks/projects';
import { useRunResults } from '../hooks/results';
import { useExampleTables } from '../hooks/examples';
import { LOG_TAIL_LINES, useRun, useRunAction, useRunAttempts, useRunEvents, useRunLogTail, type LiveState } from '../hooks/runs';
import { errorMessage } from '../api/errors';
import { formatDuration, percent } from '../lib/eta';
import { canRetry, isFinished } from '../lib/runStatus';
import { attemptHelp, attemptLabel, holderNote, isLive, runTimeSeconds } from '../lib/attempts';
import { cancelNote, progressNote } from '../lib/runNotes';
import { useExperimentName } from '../hooks/experiments';
import { useServerConfig } from '../hooks/server';
import { mlflowRunUrl } from '../lib/mlflowLink';
import { isExternal } from '../lib/external';
import { runTabs, type RunTab } from '../lib/runTabs';
import { runTitle } from '../lib/labels';
import { AddToReport } from '../components/reports/AddToReport';
import { formatCount } from '../lib/plainFormat';

// What only the other tabs show comes with the first visit to them, not with the page: the kinds' result
// views (and Markdown), the YAML printer, the comments. The Metrics tab, open first, draws without them.
const ResultView = lazy(() => import('../components/results/ResultView').then((m) => ({ default: m.ResultView })));
const JsonBlock = lazy(() => import('../components/common/JsonBlock').then((m) => ({ default: m.JsonBlock })));
const Comments = lazy(() => import('../components/review/Comments').then((m) => ({ default: m.Comments })));
const ProvenanceTab = lazy(() => import('../components/runs/ProvenanceTab').then((m) => ({ default: m.ProvenanceTab })));

function LiveProgress({ run, live }: { run: Run; live: LiveState }) {
  const p = live.progress ?? run.progress;
  if (!p || (!p.total && !p.done)) return null;
  const pct = percent(p.done, p.total);
  const note = progressNote(run, p.message);
  return (
    <Stack gap={4} data-testid="run-progress">
      <Progress value={pct ?? 0} animated={run.status === 'running' && run.held} size="lg" aria-label="progress" />
      <Group gap="md">
        <Text size="sm">
          {formatCount(p.done)}
          {p.total ? ` / ${formatCount(p.total)}` : ''} {pct !== null ? `(${pct.toFixed(0)}%)` : ''}
        </Text>
        {run.status === 'running' && <RunEta etaAt={p.eta_at} />}
        {note && <Text size="sm" c="dimmed" data-testid="progress-message">{note}</Text>}
        {isLive(run, live.connected) && <Text size="xs" c="green" data-testid="live">● live</Text>}
      </Group>
    </Stack>
  );
}

function LogsTail({ runId, live }: { runId: number; live: boolean }) {
  const { lines, loading, error } = useRunLogTail(runId, live);
  const ref = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (ref.current) ref.current.scrollTop = ref.current.scrollHeight;
  }, [lines]);
  if (error) return <Alert color="red">{errorMessage(error)}</Alert>;
  if (loading) return <Text c="dimmed" size="sm">Loading the log…</Text>;
  if (!lines.length) return <Text c="dimmed" size="sm">No log lines{live ? ' yet' : ''}.</Text>;
  return (
    <Stack gap={4}>
      {lines.length >= LOG_TAIL_LINES && <Text size="xs" c="dimmed">the last {LOG_TAIL_LINES} lines</Text>}
      <Code block ref={ref} style={{ maxHeight: 480, overflow: 'auto' }} data-testid="logs">
        {lines.map((l) => l.line).join('\n')}
      </Code>
    </Stack>
  );
}

function RunView({ run }: { run: Run }) {
  const canWrite = useCanWrite(run.project_id);
  const live = useRunEvents(run);
  const unfinished = !isFinished(run.status);
  const keys = useMetricKeys(run.id, unfinished);
  const results = useRunResults(run.id, unfinished);
  const cancel = useRunAction('cancel');
  const retry = useRunAction('retry');
  const attempts = useRunAttempts(run);
  // the time workers spent on it: the downtime between attempts (and a lost worker's silence) not counted
  const now = useNow(run.held || run.status === 'running');
  const duration = runTimeSeconds(run, now);
  const noHolder = holderNote(run, now);
  const experiment = useExperimentName(run.experiment_id);
  const cancelled = cancelNote(run);
  // "Open in MLflow" only where the API names an MLflow UI (reasonlab up serves one; GET /server)
  const mlflowUrl = mlflowRunUrl(useServerConfig().data?.mlflow_ui_url, run.mlflow_run_id);
  // an external run shows an Examples tab only once it has a table: asked for its runs only
  const external = isExternal(run.kind);
  const exampleTables = useExampleTables(run.id, unfinished, external);
  const tabs = new Set(runTabs(run.kind, { results: results.data?.length, exampleTables: exampleTables.data?.length }));
  // the open tab is the URL's `tab` (left out for Metrics; one the run does not have: Metrics)
  const [params, setParams] = useSearchParams();
  const asked = params.get('tab');
  const tab = asked && tabs.has(asked as RunTab) ? asked : 'metrics';
  const setTab = useCallback(
    (value: string | null) =>
      setParams(
        (current) => {
          const next = new URLSearchParams(current);
          if (value && value !== 'metrics') next.set('tab', value);
          else next.delete('tab');
          return next;
        },
        { replace: true },
      ),
    [setParams],
  );

  return (
    <Stack>
      <Group justify="space-between" align="flex-start">
        <Stack gap={4}>
          <Group gap="sm">
            <RunTitle run={run} canWrite={canWrite} />
            <StatusChip status={run.status} size="md" />
            <ExternalBadge kind={run.kind} size="md" />
            {cancelled && <Text size="sm" c="orange" data-testid="cancel-note">{cancelled}</Text>}
            {noHolder && <Text size="sm" c="orange" data-testid="holder-note">{noHolder}</Text>}
          </Group>
          <Text size="sm" c="dimmed">
            <Anchor component={Link} to={`/experiments/${run.experiment_id}`} data-testid="run-experiment">
              {experiment?.name ?? 'experiment'} (experiment {run.experiment_id})
            </Anchor>{' '}
            · #{run.index + 1}{experiment ? ` of ${experiment.runs}` : ''} · {run.kind} ·{' '}
            <span title={attemptHelp(run)} data-testid="run-attempt">{attemptLabel(run)}</span> ·{' '}
            {external ? <span data-testid="run-driver">{run.worker ?? 'script'}</span> : <>worker {run.worker ?? '—'} · queue {run.queue}</>} · created {timeAgo(run.created_at)}
            {duration !== null && <> · <span title="the time workers spent on it, over all its attempts" data-testid="run-time">ran {formatDuration(duration)}</span></>}
          </Text>
          <Tags target={{ type: 'run', id: run.id }} tags={run.tags} canWrite={canWrite} />
        </Stack>
        <Group>
          {mlflowUrl && (
            <Button component="a" href={mlflowUrl} target="_blank" rel="noreferrer" variant="default" data-testid="open-in-mlflow">
              Open in MLflow
            </Button>
          )}
          {canWrite && unfinished && (
            <Button color="red" variant="light" loading={cancel.isPending} onClick={() => cancel.mutate([run.id])} data-testid="cancel-run">
              Cancel
            </Button>
          )}
          {/* an external run is resumed by its script (rl.init(id=..., resume="must")): the API refuses a retry */}
          {canWrite && canRetry(run.status) && !external && (
            <Button variant="light" loading={retry.isPending} onClick={() => retry.mutate([run.id])} data-testid="retry-run">
              Retry
            </Button>
          )}
        </Group>
      </Group>

      <LiveProgress run={run} live={live} />

      {run.error && (
        <Alert color="red" title="Error" data-testid="run-error">
          <Code block style={{ maxHeight: 360, overflow: 'auto', background: 'transparent' }}>
            {run.error}
          </Code>
        </Alert>
      )}

      <Tabs value={tab} onChange={setTab} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="metrics">Metrics</Tabs.Tab>
          {tabs.has('results') && <Tabs.Tab value="results">Results {results.data?.length ? `(${results.data.length})` : ''}</Tabs.Tab>}
          {tabs.has('examples') && <Tabs.Tab value="examples" data-testid="examples-tab">Examples</Tabs.Tab>}
          <Tabs.Tab value="spec">{external ? 'Config & params' : 'Spec & params'}</Tabs.Tab>
          <Tabs.Tab value="logs">Logs</Tabs.Tab>
          <Tabs.Tab value="attempts" data-testid="attempts-tab">Attempts {attempts.data?.length ? `(${attempts.data.length})` : ''}</Tabs.Tab>
          <Tabs.Tab value="artifacts">Artifacts</Tabs.Tab>
          {tabs.has('provenance') && <Tabs.Tab value="provenance" data-testid="provenance-tab">Provenance</Tabs.Tab>}
          <Tabs.Tab value="comments">Comments</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="metrics" pt="md">
          <QueryState isPending={keys.isPending} error={keys.error}>
            {() =>
              keys.data!.length === 0 ? (
                <Text c="dimmed">No metrics yet.</Text>
              ) : (
                <MetricPanels runId={run.id} keys={keys.data!} steps={live.steps} startedAt={run.started_at} />
              )
            }
          </QueryState>
        </Tabs.Panel>
        <Tabs.Panel value="results" pt="md">
          <Suspense fallback={<Loader size="sm" />}>
          <QueryState isPending={results.isPending} error={results.error}>
            {() =>
              results.data!.length === 0 ? (
                <Text c="dimmed">No results yet.</Text>
              ) : (
                <Stack>
                  {results.data!.map((r) => (
                    <Paper key={r.id} withBorder p="sm" data-testid={`result-${r.kind}`}>
                      <Group justify="space-between" mb="xs">
                        <Text fw={600}>{r.kind}</Text>
                        <AddToReport
                          block={(blockId) => ({
                            id: blockId,
                            type: 'kind_view',
                            title: `${r.kind}: ${runTitle(run)}`,
                            source: { run_ids: [run.id], limit: 1 },
                            result_kind: r.kind,
                            view: '',
                            mode: 'frozen',
                          })}
                        />
                      </Group>
                      <ResultView payload={r.payload} runId={run.id} />
                    </Paper>
                  ))}
                </Stack>
              )
            }
          </QueryState>
          </Suspense>
        </Tabs.Panel>
        <Tabs.Panel value="examples" pt="md">
          <ExamplesPanel runId={run.id} live={unfinished} />
        </Tabs.Panel>
        <Tabs.Panel value="spec" pt="md">
          <Suspense fallback={<Loader size="sm" />}>
          <Grid>
            <Grid.Col span={{ base: 12, md: 4 }}>
              {/* an external run's params are its config, shown whole on the right */}
              {!external && (
                <>
                  <Title order={5} mb="xs">Sweep params</Title>
                  {Object.keys(run.params).length ? <KeyValues rows={Object.entries(run.params)} /> : <Text c="dimmed">none</Text>}
                </>
              )}
              <Title order={5} my="xs">Logged by the run</Title>
              {Object.keys(run.logged_params).length ? (
                <div data-testid="logged-params"><KeyValues rows={Object.entries(run.logged_params)} /></div>
              ) : (
                <Text c="dimmed">none</Text>
              )}
              <Title order={5} my="xs">Final metrics</Title>
              {Object.keys(run.summary).length ? <KeyValues rows={Object.entries(run.summary)} /> : <Text c="dimmed">none</Text>}
            </Grid.Col>
            <Grid.Col span={{ base: 12, md: 8 }}>
              <Title order={5} mb="xs">{external ? 'Config, as the script passed it to init' : 'Resolved spec'}</Title>
              {external && !Object.keys(run.spec).length ? <Text c="dimmed">none</Text> : <JsonBlock value={run.spec} yaml maxHeight={600} />}
            </Grid.Col>
          </Grid>
          </Suspense>
        </Tabs.Panel>
        <Tabs.Panel value="logs" pt="md">
          <LogsTail runId={run.id} live={unfinished} />
        </Tabs.Panel>
        <Tabs.Panel value="attempts" pt="md">
          <QueryState isPending={attempts.isPending} error={attempts.error}>
            {() => <AttemptHistory run={run} attempts={attempts.data ?? []} />}
          </QueryState>
        </Tabs.Panel>
        <Tabs.Panel value="artifacts" pt="md">
          <RunArtifacts runId={run.id} live={unfinished} />
        </Tabs.Panel>
        {tabs.has('provenance') && (
          <Tabs.Panel value="provenance" pt="md">
            <Suspense fallback={<Loader size="sm" />}>
              <ProvenanceTab run={run} />
            </Suspense>
          </Tabs.Panel>
        )}
        <Tabs.Panel value="comments" pt="md">
          <Suspense fallback={<Loader size="sm" />}>
            <Comments target={{ type: 'run', id: run.id }} canWrite={canWrite} />
          </Suspense>
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}

export function RunPage() {
  const id = Number(useParams().id);
  const run = useRun(id);
  useMetricKeys(id, false); // started beside the run's own request, not after it: one round trip less to the first chart
  return (
    <QueryState isPending={run.isPending} error={run.error}>
      {() => <RunView run={run.data!} />}
    </QueryState>
  );
}
