// The runs of an experiment: virtualised rows (only the visible ones are in the DOM, so 10,000 runs
// scroll like 10), sortable and filterable by any column, status chips, row selection for bulk actions
// and overlays. Sorting and filtering are the pure functions of lib/runsTable. The runs of an external
// experiment (scripts' runs, through the SDK) carry the "external" badge beside their link.
import { Checkbox, Chip, Group, Text, TextInput, UnstyledButton } from '@mantine/core';
import { elementScroll, useVirtualizer, type Rect, type Virtualizer } from '@tanstack/react-virtual';
import { memo, useCallback, useMemo, useRef, useState, type CSSProperties, type MouseEvent } from 'react';
import { useNavigate } from 'react-router';
import { formatValue } from '../../lib/dotted';
import { formatDuration } from '../../lib/eta';
import { attemptCell, cellValue, columnsOf, filterAndSort, statusCounts, type ColumnId, type RunRow, type Sort } from '../../lib/runsTable';
import { isRunStatus, RUN_STATUSES, type RunStatus } from '../../lib/runStatus';
import { StatusTag } from '../common/StatusChip';
import { EtaCell } from './Eta';
import { ExternalBadge } from './ExternalBadge';
import { RunsExportMenu } from './RunsExportMenu';
import { countOf } from '../../lib/labels';
import { isExternal } from '../../lib/external';

export const ROW_HEIGHT = 34;
/** The rows drawn are keyed by their index modulo how many are drawn: a window of consecutive indices
 *  gives every key once, so a scroll that brings in other runs updates the rows already in the DOM
 *  instead of removing them and making new ones (each new element's style is computed again, most of a
 *  scroll frame's cost), and a scroll by one row changes one row. */
const slotOf = (index: number, drawn: number) => index % drawn;
/** Rows drawn beyond each edge of the window: the rows are drawn in the scroll event itself (the
 *  virtualiser renders synchronously), so a few are enough, and a jump of the scrollbar draws each row
 *  of the window anew (at 12 a side the 16 visible rows cost 40 rows' work). */
const OVERSCAN = 4;
/** The table grows with its rows up to this height, then scrolls (virtualised). */
const MAX_TABLE_HEIGHT = 560;
const HEADER_HEIGHT = 74;

/**
 * The scroller's size as the virtualiser learns it: from a ResizeObserver only, whose first report comes
 * after the browser's own layout of the frame. The virtualiser's default reads the element's size when
 * the table mounts, which makes the browser lay out the whole page there and then (~80 ms of a 4x-slowed
 * load of 10,000 runs, perf/profile.mjs) and draws the rows in a second render; with `initialRect` the
 * table's known height (its style sets it) gives the first render its rows, and the observer corrects it
 * if the box differs.
 */
function observeRectAfterLayout(instance: Virtualizer<HTMLDivElement, Element>, cb: (rect: Rect) => void) {
  const element = instance.scrollElement;
  const view = instance.targetWindow;
  if (!element || !view?.ResizeObserver) return;
  const observer = new view.ResizeObserver(() => cb({ width: element.clientWidth, height: element.clientHeight }));
  observer.observe(element, { box: 'content-box' });
  return () => observer.disconnect();
}

const started = new WeakSet<Element>();

/**
 * The virtualiser's scroll writes, less its first one: when it takes a scroller it scrolls it to its
 * offset, the top for a table just made, where a new element already is; the write would make the
 * browser lay out the whole page before the rows are painted (~95 ms of a 4x-slowed load).
 */
function scrollExceptToStart(
  offset: number,
  options: { adjustments?: number; behavior?: ScrollBehavior },
  instance: Virtualizer<HTMLDivElement, Element>,
) {
  const element = instance.scrollElement;
  if (element && !started.has(element)) {
    started.add(element);
    if (offset + (options.adjustments ?? 0) === 0) return;
  }
  elementScroll(offset, options, instance);
}

interface Column {
  id: ColumnId;
  label: string;
  width: number;
  numeric?: boolean;
  /** the header's tooltip (default: "sort by <label>") */
  hint?: string;
}

function render(run: RunRow, c: Column, kind: string | undefined) {
  if (c.id === 'status') return <StatusTag status={run.status} />;
  if (c.id === 'id')
    return (
      <>
        {/* a plain link, followed by the table's click handler (followLink): react-router's Link is
            several hooks a row */}
        <a href={`/runs/${run.id}`} data-testid="run-link">
          run {run.id}
        </a>{' '}
        <ExternalBadge kind={kind} />
      </>
    );
  if (c.id === 'name') return run.name ? <span title={run.name} data-testid="run-name-cell">{run.name}</span> : null;
  if (c.id === 'eta') return run.status === 'running' ? <EtaCell etaAt={run.eta_at} /> : null;
  if (c.id === 'attempt' && run.released)
    return (
      <span title={`resumed ${run.released}× after a worker's shutdown (not counted)`} data-testid="attempt-cell">
        {attemptCell(run)}
      </span>
    );
  const v = cellValue(run, c.id);
  if (c.id === 'duration') return formatDuration(v as number | null);
  return formatValue(v);
}

interface RowProps {
  run: RunRow;
  columns: readonly Column[];
  template: string;
  width: number;
  top: number;
  rowIndex: number;
  isSelected: boolean;
  onToggle: (id: number) => void;
  kind: string | undefined;
}

// one object each, made once: a row that renders again for another run sets no style property again
const CHECK_CELL: CSSProperties = { paddingLeft: 10 };
const CELL: CSSProperties = { padding: '0 6px', overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap' };
const NUMERIC_CELL: CSSProperties = { ...CELL, textAlign: 'right' };

/** One row; memoised so scrolling re-renders only the rows that enter the window. */
const Row = memo(function Row({ run, columns, template, width, top, rowIndex, isSelected, onToggle, kind }: RowProps) {
  return (
    <div
      role="row"
      aria-rowindex={rowIndex + 2}
      aria-selected={isSelected}
      data-run-id={run.id}
      data-status={run.status}
      style={{
        position: 'absolute', top: 0, left: 0, width, height: ROW_HEIGHT, transform: `translateY(${top}px)`,
        // a row's size is its own: the browser lays out and paints each row alone, not the table around it
        contain: 'strict',
        display: 'grid', gridTemplateColumns: template, alignItems: 'center', fontSize: 13,
        background: isSelected ? 'var(--mantine-color-blue-0)' : rowIndex % 2 ? 'var(--mantine-color-gray-0)' : undefined,
      }}
    >
      <div role="cell" style={CHECK_CELL}>
        {/* a native checkbox: thousands of rows scroll past, each must be cheap to mount */}
        <input type="checkbox" aria-label={`select run ${run.id}`} checked={isSelected} onChange={() => onToggle(run.id)} />
      </div>
      {columns.map((c) => (
        <div key={c.id} role="cell" style={c.numeric ? NUMERIC_CELL : CELL}>
          {render(run, c, kind)}
        </div>
      ))}
    </div>
  );
});

interface HeaderProps {
  columns: readonly Column[];
  template: string;
  width: number;
  sort: Sort | null;
  onSort: (id: ColumnId) => void;
  filters: Partial<Record<ColumnId, string>>;
  onFilter: (id: ColumnId, value: string) => void;
  allSelected: boolean;
  someSelected: boolean;
  onSelectAll: () => void;
}

/** Sort buttons and per-column filters; memoised so scrolling does not re-render the inputs. */
const TableHeader = memo(function TableHeader({ columns, template, width, sort, onSort, filters, onFilter, allSelected, someSelected, onSelectAll }: HeaderProps) {
  return (
    <div style={{ position: 'sticky', top: 0, zIndex: 2, background: 'var(--mantine-color-gray-0)', width, borderBottom: '1px solid var(--mantine-color-gray-3)' }} role="rowgroup">
      <div role="row" style={{ display: 'grid', gridTemplateColumns: template, alignItems: 'center', height: ROW_HEIGHT }}>
        <div role="columnheader" style={{ paddingLeft: 8 }}>
          <Checkbox size="xs" aria-label="select all shown runs" checked={allSelected} indeterminate={someSelected} onChange={onSelectAll} />
        </div>
        {columns.map((c) => (
          <div key={c.id} role="columnheader" aria-sort={sort?.column === c.id ? (sort.desc ? 'descending' : 'ascending') : 'none'} style={{ padding: '0 6px', overflow: 'hidden' }}>
            <UnstyledButton onClick={() => onSort(c.id)} title={c.hint ?? `sort by ${c.label}`} style={{ fontSize: 12, fontWeight: 600, whiteSpace: 'nowrap', textOverflow: 'ellipsis', overflow: 'hidden', maxWidth: '100%' }}>
              {c.label}
              {sort?.column === c.id ? (sort.desc ? ' ▼' : ' ▲') : ''}
            </UnstyledButton>
          </div>
        ))}
      </div>
      <div role="row" style={{ display: 'grid', gridTemplateColumns: template, alignItems: 'center', paddingBottom: 4 }}>
        <div />
        {columns.map((c) =>
          c.id === 'status' ? (
            <div key={c.id} />
          ) : (
            <div key={c.id} style={{ padding: '0 4px' }}>
              <TextInput
                size="xs"
                aria-label={`filter ${c.label}`}
                placeholder={c.numeric ? '> 0.5' : 'filter'}
                value={filters[c.id] ?? ''}
                onChange={(e) => onFilter(c.id, e.currentTarget.value)}
              />
            </div>
          ),
        )}
      </div>
    </div>
  );
});

interface ToolbarProps {
  statuses: RunStatus[];
  onStatuses: (statuses: RunStatus[]) => void;
  counts: Partial<Record<RunStatus, number>>;
  shown: number;
  total: number;
  selectedCount: number;
  experimentId?: number;
  columnFiltered: boolean;
}

/** The status chips, the counts and the export menu; memoised: the table renders again at every scroll
 *  step (the virtualiser's window moves) and Mantine's chips and menu would with it. */
const Toolbar = memo(function Toolbar({ statuses, onStatuses, counts, shown, total, selectedCount, experimentId, columnFiltered }: ToolbarProps) {
  return (
    <Group gap="xs" mb="xs">
      <Chip.Group multiple value={statuses} onChange={(v) => onStatuses(v.filter(isRunStatus))}>
        {RUN_STATUSES.map((s) => (
          <Chip key={s} value={s} size="xs" variant="outline">
            {s} {counts[s] ?? 0}
          </Chip>
        ))}
      </Chip.Group>
      <Text size="xs" c="dimmed" ml="auto" data-testid="runs-shown">
        {shown} of {countOf(total, 'run')} · {selectedCount} selected
      </Text>
      {experimentId !== undefined && <RunsExportMenu experimentId={experimentId} statuses={statuses} columnFiltered={columnFiltered} />}
    </Group>
  );
});

interface Props {
  runs: readonly RunRow[];
  selected: ReadonlySet<number>;
  onSelect: (ids: Set<number>) => void;
  /** the experiment whose runs these are: an "Export" menu (CSV, Parquet) beside the counts */
  experimentId?: number;
  /** the runs' kind (an experiment's runs share it): an external experiment's runs are badged */
  kind?: string;
}

function RunsTableImpl({ runs, selected, onSelect, experimentId, kind }: Props) {
  const [statuses, setStatuses] = useState<RunStatus[]>([]);
  const [filters, setFilters] = useState<Partial<Record<ColumnId, string>>>({});
  const [sort, setSort] = useState<Sort | null>({ column: 'index', desc: false });
  const { params, metrics } = useMemo(() => columnsOf(runs), [runs]);
  const named = useMemo(() => runs.some((r) => r.name), [runs]);
  const columns: Column[] = useMemo(
    () => [
      { id: 'id', label: 'run', width: isExternal(kind) ? 150 : 80 },
      // a name column once any run has a name (PATCH /runs/{id}): most sweeps name none
      ...(named ? [{ id: 'name', label: 'name', width: 160 } satisfies Column] : []),
      { id: 'index', label: '#', width: 56, numeric: true },
      { id: 'status', label: 'status', width: 104 },
      {
        id: 'attempt',
        label: 'att.',
        width: 64,
        numeric: true,
        hint: "attempts counted against the run's allowance; +2r: two more handed back at a worker's shutdown and resumed, not counted (sort by att.)",
      },
      {
        id: 'duration',
        label: 'time',
        width: 80,
        numeric: true,
        hint: "run time, as the run page's: the attempts' time without the downtime between them; a requeued run shows its work so far (sort by time)",
      },
      { id: 'eta', label: 'ETA', width: 80, numeric: true },
      ...params.map((p): Column => ({ id: `param:${p}`, label: p, width: 120 })),
      ...metrics.map((m): Column => ({ id: `metric:${m}`, label: m, width: 110, numeric: true })),
    ],
    [params, metrics, named, kind],
  );
  const counts = useMemo(() => statusCounts(runs), [runs]);
  const rows = useMemo(() => filterAndSort(runs, { statuses: new Set(statuses), columns: filters }, sort), [runs, statuses, filters, sort]);
  const template = `36px ${columns.map((c) => `${c.width}px`).join(' ')}`;
  const width = 36 + columns.reduce((s, c) => s + c.width, 0);

  const scrollRef = useRef<HTMLDivElement>(null);
  const tableHeight = Math.min(MAX_TABLE_HEIGHT, HEADER_HEIGHT + Math.max(rows.length, 3) * ROW_HEIGHT + 16);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: OVERSCAN,
    // the scroller's client box: its set height less its two 1 px borders
    initialRect: { width: 0, height: tableHeight - 2 }, // rows are virtualised vertically only
    observeElementRect: observeRectAfterLayout,
    scrollToFn: scrollExceptToStart,
  });
  const items = virtualizer.getVirtualItems();
  // once per change of the rows or the selection, not at every scroll step (10,000 rows each)
  const { allShownSelected, someShownSelected } = useMemo(() => {
    const all = rows.length > 0 && rows.every((r) => selected.has(r.id));
    return { allShownSelected: all, someShownSelected: !all && rows.some((r) => selected.has(r.id)) };
  }, [rows, selected]);
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  const toggle = useCallback(
    (id: number) => {
      const next = new Set(selectedRef.current);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      onSelect(next);
    },
    [onSelect],
  );

  const navigate = useNavigate();
  // a run's link in the dashboard, as react-router's Link follows it: a plain left click; with a modifier
  // (a new tab or window) or another button the browser follows it itself
  const followLink = useCallback(
    (e: MouseEvent<HTMLDivElement>) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const link = (e.target as Element).closest('a[data-testid="run-link"]');
      const to = link?.getAttribute('href');
      if (!to) return;
      e.preventDefault();
      void navigate(to);
    },
    [navigate],
  );
  const columnFiltered = Object.values(filters).some((f) => f?.trim());
  const toggleSort = useCallback(
    (id: ColumnId) => setSort((s) => (s?.column !== id ? { column: id, desc: false } : s.desc ? null : { column: id, desc: true })),
    [],
  );
  const setFilter = useCallback((id: ColumnId, value: string) => setFilters((f) => ({ ...f, [id]: value })), []);
  const selectAllShown = useCallback(() => {
    const next = new Set(selectedRef.current);
    const all = rows.every((r) => next.has(r.id));
    rows.forEach((r) => (all ? next.delete(r.id) : next.add(r.id)));
    onSelect(next);
  }, [rows, onSelect]);

  return (
    <div>
      <Toolbar
        statuses={statuses}
        onStatuses={setStatuses}
        counts={counts}
        shown={rows.length}
        total={runs.length}
        selectedCount={selected.size}
        experimentId={experimentId}
        columnFiltered={columnFiltered}
      />
      <div ref={scrollRef} style={{ height: tableHeight, overflow: 'auto', border: '1px solid var(--mantine-color-gray-3)', borderRadius: 4 }} role="table" aria-label="runs" aria-rowcount={rows.length + 1} data-testid="runs-table">
        <TableHeader
          columns={columns}
          template={template}
          width={width}
          sort={sort}
          onSort={toggleSort}
          filters={filters}
          onFilter={setFilter}
          allSelected={allShownSelected}
          someSelected={someShownSelected}
          onSelectAll={selectAllShown}
        />
        <div role="rowgroup" style={{ height: virtualizer.getTotalSize(), width, position: 'relative' }} onClick={followLink}>
          {items.map((item) => {
            const run = rows[item.index]!;
            return (
              <Row
                key={slotOf(item.index, items.length)}
                run={run}
                columns={columns}
                template={template}
                width={width}
                top={item.start}
                rowIndex={item.index}
                isSelected={selected.has(run.id)}
                onToggle={toggle}
                kind={kind}
              />
            );
          })}
        </div>
      </div>
    </div>
  );
}

export const RunsTable = memo(RunsTableImpl);
