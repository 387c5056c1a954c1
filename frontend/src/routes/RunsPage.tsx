// The project's runs, all of them: paged on the server (cursor pages fetched as the table
// scrolls, rows virtualised as in the experiment page's runs table), filtered with the query language,
// sorted on the server by any column, with a column chooser (run fields, params.<path> of the loaded
// specs, metric columns with last / min / max / best) and grouping (none, every spec field but seed, or
// chosen fields): a group row shows n and each metric column's mean ± half of its 95% Student-t interval,
// and expands to its runs. The whole state is the URL's (lib/viewState.ts): a reload or a shared link
// reproduces it, and Save view saves it. An external run (a script's, through the SDK) carries the
// "external" badge beside its link.
import { Group, MultiSelect, Select, Stack, Text, Title, UnstyledButton } from '@mantine/core';
import { useQueries, type UseQueryResult } from '@tanstack/react-query';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Link } from 'react-router';
import { api, unwrap } from '../api/client';
import type { Run } from '../api/types';
import { StatusChip } from '../components/common/StatusChip';
import { timeAgo } from '../components/common/time';
import { ExternalBadge } from '../components/runs/ExternalBadge';
import { QueryBox, useDebouncedQuery } from '../components/runs/QueryBox';
import { SaveViewButton } from '../components/views/SaveViewButton';
import { useCurrentProject } from '../hooks/projects';
import { useLastGood, useProjectRuns, useRunAggregates } from '../hooks/projectRuns';
import { useUrlViewState } from '../hooks/views';
import { formatValue } from '../lib/dotted';
import {
  columnLabel,
  columnsOf,
  groupByParam,
  groupCell,
  groupLabels,
  groupSortParam,
  isMetricField,
  metricExpr,
  metricKeyOf,
  metricsParam,
  nextSort,
  numberText,
  paramPaths,
  RUN_FIELDS,
  runFieldValue,
  runSortParam,
  sortMatches,
  type RunGroup,
} from '../lib/runsQuery';
import { AGGREGATES, DEFAULT_GROUP, type Aggregate, type ViewColumn, type ViewState } from '../lib/viewState';
import { countOf } from '../lib/labels';
import { isExternal } from '../lib/external';
import { summaryNumber } from '../lib/nonfinite';

const ROW_HEIGHT = 34;
const MAX_TABLE_HEIGHT = 620;
/** fetch the next page when the window is this close to the last loaded row */
const PREFETCH_ROWS = 30;
const KEY_WIDTH = 280;

type Row =
  | { type: 'run'; run: Run; member: boolean }
  | { type: 'group'; group: RunGroup; label: string; id: string };

/** The run column's width: wider once an external run's badge is beside a link. */
const ID_WIDTH = 80;
const ID_WIDTH_BADGED = 150;
const defaultWidth = (c: ViewColumn, idWidth = ID_WIDTH) =>
  c.width ?? (c.field === 'id' ? idWidth : c.field === 'name' ? 170 : c.field === 'status' ? 110 : isMetricField(c.field) ? 150 : 120);
/** A column as the chooser's value: `field` or `field:aggregate`. */
const chooserValue = (c: ViewColumn) => (isMetricField(c.field) ? `${c.field}:${c.aggregate ?? 'last'}` : c.field);
function fromChooser(value: string, widths: ReadonlyMap<string, number | null>): ViewColumn {
  const m = /^(metrics\..+):(last|min|max|best)$/.exec(value);
  const field = m ? m[1]! : value;
  const aggregate = m ? (m[2] as Aggregate) : null;
  return { field, aggregate, width: widths.get(value) ?? null };
}

/** Expanded groups' members by group id: a module-level combine, so the map stays the same object while no answer changes. */
function combineMembers(results: UseQueryResult<readonly [string, Run[]]>[]): Map<string, Run[]> {
  return new Map(results.flatMap((r) => (r.data ? [r.data] : [])));
}

function RunCell({ run, column, aggregates }: { run: Run; column: ViewColumn; aggregates: Map<number, RunGroup['metrics']> | undefined }) {
  if (isMetricField(column.field)) {
    const agg = column.aggregate ?? 'last';
    const v = agg === 'last' ? summaryNumber(run.summary[metricKeyOf(column.field)]) : aggregates?.get(run.id)?.[metricExpr(column.field, agg)]?.mean;
    return <span data-value={v ?? ''}>{numberText(v)}</span>;
  }
  if (column.field === 'id')
    return (
      <>
        <Link to={`/runs/${run.id}`} data-testid="run-link">
          run {run.id}
        </Link>{' '}
        <ExternalBadge kind={run.kind} />
      </>
    );
  if (column.field === 'status') return <StatusChip status={run.status} size="xs" />;
  if (column.field === 'experiment') return <Link to={`/experiments/${run.experiment_id}`}>#{run.experiment_id}</Link>;
  if (column.field === 'created') return <span title={run.created_at}>{timeAgo(run.created_at)}</span>;
  const v = runFieldValue(run, column.field);
  return <>{v === undefined || v === null ? '' : formatValue(v)}</>;
}

export function RunsPage() {
  const project = useCurrentProject();
  const [view, setView] = useUrlViewState();
  const columns = columnsOf(view);
  const q = useDebouncedQuery(view.query);
  const grouped = view.group_by !== null;
  const groupFields = Array.isArray(view.group_by) ? view.group_by : null;
  const metrics = metricsParam(columns);

  const runsReq = useMemo(() => ({ project: project.name, q, ...runSortParam(view.sort) }), [project.name, q, view.sort]);
  const groupsReq = useMemo(
    () => ({ project: project.name, q, group_by: groupByParam(view.group_by), metrics, ...groupSortParam(view.sort, groupFields) }),
    [project.name, q, view.group_by, metrics, view.sort, groupFields],
  );
  // the runs (also in group mode: their first page names the params and metrics the chooser offers)
  const runs = useProjectRuns(runsReq);
  const groups = useProjectRuns(groupsReq, grouped);
  const active = grouped ? groups : runs;
  const good = useLastGood(active.isError ? undefined : active.data);
  const pages = active.isError ? good : active.data;

  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const groupList = useMemo(() => (grouped ? (pages?.pages ?? []).flatMap((p) => p.groups ?? []) : []), [grouped, pages]);
  const labels = useMemo(() => groupLabels(groupList), [groupList]);
  const members = useQueries({
    queries: groupList
      .map((g) => JSON.stringify(g.key))
      .filter((id) => expanded.has(id))
      .map((id) => {
        const g = groupList.find((x) => JSON.stringify(x.key) === id)!;
        return {
          queryKey: ['runs', 'project', project.name, 'ids', g.run_ids],
          queryFn: () =>
            unwrap(api.GET('/api/v1/runs', { params: { query: { project: project.name, q: `id in (${g.run_ids.join(', ')})`, sort: 'id', order: 'asc', limit: Math.max(1, g.run_ids.length) } } })).then(
              (p) => [id, p.items] as const,
            ),
        };
      }),
    combine: combineMembers,
  });

  const rows: Row[] = useMemo(() => {
    if (!grouped) return (pages?.pages ?? []).flatMap((p) => p.items.map((run): Row => ({ type: 'run', run, member: false })));
    return groupList.flatMap((group, i): Row[] => {
      const id = JSON.stringify(group.key);
      const head: Row = { type: 'group', group, label: labels[i] ?? '', id };
      return expanded.has(id) ? [head, ...(members.get(id) ?? []).map((run): Row => ({ type: 'run', run, member: true }))] : [head];
    });
  }, [grouped, pages, groupList, labels, expanded, members]);

  const loadedRuns = useMemo(() => rows.flatMap((r) => (r.type === 'run' ? [r.run] : [])), [rows]);
  const discovery = useMemo(() => (runs.data?.pages ?? []).flatMap((p) => p.items), [runs.data]);
  const params = useMemo(() => paramPaths([...discovery, ...loadedRuns].map((r) => r.spec)), [discovery, loadedRuns]);
  const metricKeys = useMemo(() => [...new Set([...discovery, ...loadedRuns].flatMap((r) => Object.keys(r.summary)))].sort(), [discovery, loadedRuns]);
  const nonLast = useMemo(() => metricsParam(columns.filter((c) => isMetricField(c.field) && c.aggregate && c.aggregate !== 'last')), [columns]);
  const aggregates = useRunAggregates(project.name, loadedRuns.map((r) => r.id), nonLast);

  const set = (patch: Partial<ViewState>) => setView({ ...view, ...patch });
  const shownColumns = grouped ? columns.filter((c) => isMetricField(c.field) || groupFields?.includes(c.field)) : columns;
  const idWidth = loadedRuns.some((r) => isExternal(r.kind)) ? ID_WIDTH_BADGED : ID_WIDTH;
  const template = `${grouped ? `${KEY_WIDTH}px 60px ` : ''}${shownColumns.map((c) => `${defaultWidth(c, idWidth)}px`).join(' ')}`;
  const width = (grouped ? KEY_WIDTH + 60 : 0) + shownColumns.reduce((s, c) => s + defaultWidth(c, idWidth), 0);

  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({ count: rows.length, getScrollElement: () => scrollRef.current, estimateSize: () => ROW_HEIGHT, overscan: 12 });
  const items = virtualizer.getVirtualItems();
  const lastShown = items.length ? items[items.length - 1]!.index : -1;
  useEffect(() => {
    if (active.hasNextPage && !active.isFetchingNextPage && lastShown >= rows.length - PREFETCH_ROWS) void active.fetchNextPage();
  }, [active, lastShown, rows.length]);

  const chooserData = useMemo(() => {
    const chosen = columns.map(chooserValue);
    const all = [
      ...RUN_FIELDS,
      ...params.map((p) => `params.${p}`),
      ...metricKeys.flatMap((k) => AGGREGATES.map((a) => `metrics.${k}:${a}`)),
    ];
    return [...new Set([...chosen, ...all])].map((value) => ({ value, label: columnLabel(fromChooser(value, new Map())) }));
  }, [columns, params, metricKeys]);
  const widths = new Map(columns.map((c) => [chooserValue(c), c.width]));
  const groupChoice = view.group_by === null ? 'none' : view.group_by === DEFAULT_GROUP ? 'default' : 'fields';

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Runs in {project.name}</Title>
        <SaveViewButton page="runs" />
      </Group>
      <QueryBox value={view.query} onChange={(query) => set({ query })} error={active.error} sent={q} testId="runs-query" />
      <Group gap="sm" align="flex-end">
        <MultiSelect
          label="Columns"
          data={chooserData}
          value={columns.map(chooserValue)}
          onChange={(values) => set({ columns: values.map((v) => fromChooser(v, widths)) })}
          searchable
          w={520}
          data-testid="runs-columns"
        />
        <Select
          label="Group by"
          data={[
            { value: 'none', label: 'none' },
            { value: 'default', label: 'every spec field but seed' },
            { value: 'fields', label: 'chosen fields' },
          ]}
          value={groupChoice}
          allowDeselect={false}
          onChange={(v) => set({ group_by: v === 'default' ? DEFAULT_GROUP : v === 'fields' ? groupFields ?? ['kind'] : null, sort: null })}
          w={230}
          data-testid="runs-group"
        />
        {groupChoice === 'fields' && (
          <MultiSelect
            label="Group fields"
            data={[...new Set([...(groupFields ?? []), 'kind', 'status', 'experiment', 'name', ...params.map((p) => `params.${p}`)])]}
            value={groupFields ?? []}
            onChange={(fields) => set({ group_by: fields.length ? fields : ['kind'] })}
            searchable
            w={360}
            data-testid="runs-group-fields"
          />
        )}
        <Text size="xs" c="dimmed" ml="auto" data-testid="runs-loaded">
          {grouped ? countOf(groupList.length, 'group') : countOf(rows.length, 'run')}
          {active.hasNextPage ? ' loaded, more on scroll' : ''}
          {active.isFetching ? ' · loading' : ''}
        </Text>
      </Group>
      <div
        ref={scrollRef}
        role="table"
        aria-label={grouped ? 'run groups' : 'project runs'}
        aria-rowcount={rows.length + 1}
        data-testid="project-runs"
        style={{ height: Math.min(MAX_TABLE_HEIGHT, ROW_HEIGHT * (Math.max(rows.length, 3) + 1) + 16), overflow: 'auto', border: '1px solid var(--mantine-color-gray-3)', borderRadius: 4 }}
      >
        <div role="row" style={{ position: 'sticky', top: 0, zIndex: 2, display: 'grid', gridTemplateColumns: template, width, height: ROW_HEIGHT, alignItems: 'center', background: 'var(--mantine-color-gray-0)', borderBottom: '1px solid var(--mantine-color-gray-3)' }}>
          {grouped && (
            <>
              <div role="columnheader" style={{ padding: '0 8px', fontSize: 12, fontWeight: 600 }}>group</div>
              <div role="columnheader" style={{ padding: '0 6px', fontSize: 12, fontWeight: 600, textAlign: 'right' }}>n</div>
            </>
          )}
          {shownColumns.map((c) => {
            const s = sortMatches(view.sort, c);
            return (
              <div key={chooserValue(c)} role="columnheader" aria-sort={s === 'asc' ? 'ascending' : s === 'desc' ? 'descending' : 'none'} style={{ padding: '0 6px', overflow: 'hidden' }}>
                <UnstyledButton onClick={() => set({ sort: nextSort(view.sort, c) })} title={`sort by ${columnLabel(c)} (on the server)`} style={{ fontSize: 12, fontWeight: 600, whiteSpace: 'nowrap' }} data-testid={`sort-${chooserValue(c)}`}>
                  {columnLabel(c)}
                  {s === 'asc' ? ' ▲' : s === 'desc' ? ' ▼' : ''}
                </UnstyledButton>
              </div>
            );
          })}
        </div>
        <div role="rowgroup" style={{ height: virtualizer.getTotalSize(), width, position: 'relative' }}>
          {items.map((item) => {
            const row = rows[item.index]!;
            const style = { position: 'absolute', top: 0, left: 0, width, height: ROW_HEIGHT, transform: `translateY(${item.start}px)`, display: 'grid', gridTemplateColumns: template, alignItems: 'center', fontSize: 13, background: item.index % 2 ? 'var(--mantine-color-gray-0)' : undefined } as const;
            const cell = { padding: '0 6px', overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' } as const;
            if (row.type === 'group') {
              const open = expanded.has(row.id);
              return (
                <div key={`g${row.id}`} role="row" data-group-row={row.label} data-n={row.group.n} style={{ ...style, fontWeight: 500 }}>
                  <div role="cell" style={cell}>
                    <UnstyledButton
                      onClick={() => setExpanded((e) => { const next = new Set(e); if (open) next.delete(row.id); else next.add(row.id); return next; })}
                      aria-expanded={open}
                      title={JSON.stringify(row.group.key)}
                      style={{ fontSize: 13 }}
                      data-testid="group-toggle"
                    >
                      {open ? '▾' : '▸'} {row.label}
                    </UnstyledButton>
                  </div>
                  <div role="cell" style={{ ...cell, textAlign: 'right' }} data-testid="group-n">
                    {row.group.n}
                  </div>
                  {shownColumns.map((c) => {
                    if (!isMetricField(c.field)) return <div key={chooserValue(c)} role="cell" style={cell}>{formatValue(row.group.key[c.field])}</div>;
                    const stats = row.group.metrics[metricExpr(c.field, c.aggregate)];
                    const gc = groupCell(stats);
                    return (
                      <div key={chooserValue(c)} role="cell" style={{ ...cell, textAlign: 'right' }} title={gc.title} data-column={metricExpr(c.field, c.aggregate)} data-mean={stats?.mean ?? ''} data-ci-low={stats?.ci_low ?? ''} data-ci-high={stats?.ci_high ?? ''} data-testid="group-metric">
                        {gc.text}
                      </div>
                    );
                  })}
                </div>
              );
            }
            return (
              <div key={`r${row.run.id}${row.member ? 'm' : ''}`} role="row" data-run-id={row.run.id} style={style}>
                {grouped && (
                  <>
                    <div role="cell" style={{ ...cell, paddingLeft: 28 }}>
                      <Link to={`/runs/${row.run.id}`} data-testid="member-link">
                        run {row.run.id}
                        {row.run.name ? ` · ${row.run.name}` : ''}
                      </Link>{' '}
                      <ExternalBadge kind={row.run.kind} />
                    </div>
                    <div role="cell" />
                  </>
                )}
                {shownColumns.map((c) => (
                  <div key={chooserValue(c)} role="cell" style={{ ...cell, textAlign: isMetricField(c.field) ? 'right' : undefined }}>
                    <RunCell run={row.run} column={c} aggregates={aggregates.data} />
                  </div>
                ))}
              </div>
            );
          })}
        </div>
      </div>
      {pages && rows.length === 0 && <Text c="dimmed">No run matches.</Text>}
    </Stack>
  );
}
