// The runs of an experiment: virtualised rows (only the visible ones are in the DOM, so 10,000 runs
// scroll like 10), sortable and filterable by any column, status chips, row selection for bulk actions
// and overlays. Sorting and filtering are the pure functions of lib/runsTable.
import { Checkbox, Chip, Group, Text, TextInput, UnstyledButton } from '@mantine/core';
import { useVirtualizer } from '@tanstack/react-virtual';
import { memo, useMemo, useRef, useState } from 'react';
import { Link } from 'react-router';
import { formatValue } from '../../lib/dotted';
import { formatDuration } from '../../lib/eta';
import { cellValue, columnsOf, filterAndSort, RUN_STATUSES, statusCounts, type ColumnId, type RunRow, type Sort } from '../../lib/runsTable';
import { StatusChip } from '../common/StatusChip';

export const ROW_HEIGHT = 34;
/** The table grows with its rows up to this height, then scrolls (virtualised). */
const MAX_TABLE_HEIGHT = 560;
const HEADER_HEIGHT = 74;

interface Column {
  id: ColumnId;
  label: string;
  width: number;
  numeric?: boolean;
}

function render(run: RunRow, c: Column) {
  if (c.id === 'status') return <StatusChip status={run.status} size="xs" />;
  if (c.id === 'id')
    return (
      <Link to={`/runs/${run.id}`} data-testid="run-link">
        #{run.id}
      </Link>
    );
  const v = cellValue(run, c.id);
  if (c.id === 'duration') return formatDuration(v as number | null);
  return formatValue(v);
}

interface Props {
  runs: readonly RunRow[];
  selected: ReadonlySet<number>;
  onSelect: (ids: Set<number>) => void;
}

function RunsTableImpl({ runs, selected, onSelect }: Props) {
  const [statuses, setStatuses] = useState<string[]>([]);
  const [filters, setFilters] = useState<Partial<Record<ColumnId, string>>>({});
  const [sort, setSort] = useState<Sort | null>({ column: 'index', desc: false });
  const { params, metrics } = useMemo(() => columnsOf(runs), [runs]);
  const columns: Column[] = useMemo(
    () => [
      { id: 'id', label: 'run', width: 80 },
      { id: 'index', label: '#', width: 56, numeric: true },
      { id: 'status', label: 'status', width: 104 },
      { id: 'attempt', label: 'att.', width: 56, numeric: true },
      { id: 'duration', label: 'time', width: 80, numeric: true },
      ...params.map((p): Column => ({ id: `param:${p}`, label: p, width: 120 })),
      ...metrics.map((m): Column => ({ id: `metric:${m}`, label: m, width: 110, numeric: true })),
    ],
    [params, metrics],
  );
  const counts = useMemo(() => statusCounts(runs), [runs]);
  const rows = useMemo(() => filterAndSort(runs, { statuses: new Set(statuses), columns: filters }, sort), [runs, statuses, filters, sort]);
  const template = `36px ${columns.map((c) => `${c.width}px`).join(' ')}`;
  const width = 36 + columns.reduce((s, c) => s + c.width, 0);

  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({ count: rows.length, getScrollElement: () => scrollRef.current, estimateSize: () => ROW_HEIGHT, overscan: 12 });
  const allShownSelected = rows.length > 0 && rows.every((r) => selected.has(r.id));

  const toggleSort = (id: ColumnId) =>
    setSort((s) => (s?.column !== id ? { column: id, desc: false } : s.desc ? null : { column: id, desc: true }));

  return (
    <div>
      <Group gap="xs" mb="xs">
        <Chip.Group multiple value={statuses} onChange={setStatuses}>
          {RUN_STATUSES.map((s) => (
            <Chip key={s} value={s} size="xs" variant="outline">
              {s} {counts[s] ?? 0}
            </Chip>
          ))}
        </Chip.Group>
        <Text size="xs" c="dimmed" ml="auto" data-testid="runs-shown">
          {rows.length} of {runs.length} runs · {selected.size} selected
        </Text>
      </Group>
      <div ref={scrollRef} style={{ height: Math.min(MAX_TABLE_HEIGHT, HEADER_HEIGHT + Math.max(rows.length, 3) * ROW_HEIGHT + 16), overflow: 'auto', border: '1px solid var(--mantine-color-gray-3)', borderRadius: 4 }} role="table" aria-label="runs" aria-rowcount={rows.length + 1} data-testid="runs-table">
        <div style={{ position: 'sticky', top: 0, zIndex: 2, background: 'var(--mantine-color-gray-0)', width, borderBottom: '1px solid var(--mantine-color-gray-3)' }} role="rowgroup">
          <div role="row" style={{ display: 'grid', gridTemplateColumns: template, alignItems: 'center', height: ROW_HEIGHT }}>
            <div role="columnheader" style={{ paddingLeft: 8 }}>
              <Checkbox
                size="xs"
                aria-label="select all shown runs"
                checked={allShownSelected}
                indeterminate={!allShownSelected && rows.some((r) => selected.has(r.id))}
                onChange={() => {
                  const next = new Set(selected);
                  rows.forEach((r) => (allShownSelected ? next.delete(r.id) : next.add(r.id)));
                  onSelect(next);
                }}
              />
            </div>
            {columns.map((c) => (
              <div key={c.id} role="columnheader" aria-sort={sort?.column === c.id ? (sort.desc ? 'descending' : 'ascending') : 'none'} style={{ padding: '0 6px', overflow: 'hidden' }}>
                <UnstyledButton onClick={() => toggleSort(c.id)} title={`sort by ${c.label}`} style={{ fontSize: 12, fontWeight: 600, whiteSpace: 'nowrap', textOverflow: 'ellipsis', overflow: 'hidden', maxWidth: '100%' }}>
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
                    onChange={(e) => {
                      const v = e.currentTarget.value;
                      setFilters((f) => ({ ...f, [c.id]: v }));
                    }}
                  />
                </div>
              ),
            )}
          </div>
        </div>
        <div role="rowgroup" style={{ height: virtualizer.getTotalSize(), width, position: 'relative' }}>
          {virtualizer.getVirtualItems().map((item) => {
            const run = rows[item.index]!;
            const isSelected = selected.has(run.id);
            return (
              <div
                key={run.id}
                role="row"
                aria-rowindex={item.index + 2}
                aria-selected={isSelected}
                data-run-id={run.id}
                data-status={run.status}
                style={{
                  position: 'absolute', top: 0, left: 0, width, height: ROW_HEIGHT, transform: `translateY(${item.start}px)`,
                  display: 'grid', gridTemplateColumns: template, alignItems: 'center', fontSize: 13,
                  background: isSelected ? 'var(--mantine-color-blue-0)' : item.index % 2 ? 'var(--mantine-color-gray-0)' : undefined,
                }}
              >
                <div role="cell" style={{ paddingLeft: 8 }}>
                  <Checkbox
                    size="xs"
                    aria-label={`select run ${run.id}`}
                    checked={isSelected}
                    onChange={() => {
                      const next = new Set(selected);
                      if (isSelected) next.delete(run.id);
                      else next.add(run.id);
                      onSelect(next);
                    }}
                  />
                </div>
                {columns.map((c) => (
                  <div key={c.id} role="cell" style={{ padding: '0 6px', overflow: 'hidden', textOverflow: 'ellipsis', whiteSpace: 'nowrap', textAlign: c.numeric ? 'right' : undefined }}>
                    {render(run, c)}
                  </div>
                ))}
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}

export const RunsTable = memo(RunsTableImpl);
