import { describe, expect, it } from 'vitest';
import { columnsOf, rowsOfTable } from '../lib/runsTable';
import { shareRows } from './experiments';

const table = (statuses: string[]) => ({
  experiment_id: 1,
  id: [1, 2],
  index: [0, 1],
  name: [null, null],
  status: statuses,
  attempt: [1, 1],
  released: [0, 0],
  created_at: ['2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z'],
  started_at: ['2026-01-01T00:01:00Z', null],
  finished_at: [null, null],
  ended_seconds: [null, null],
  attempt_started_at: ['2026-01-01T00:01:00Z', null],
  params: { lr: [0.1, 0.01] },
  summary: { loss: [0.5, null] },
});

describe("the runs table's structural sharing", () => {
  it('keeps an unchanged run\'s row object and the columns read off the table in the merged rows', () => {
    const before = rowsOfTable(table(['running', 'queued']) as never);
    const next = rowsOfTable(table(['succeeded', 'queued']) as never);
    const out = shareRows(before, next) as typeof next;
    expect(out).not.toBe(before);
    expect(out).not.toBe(next);
    expect(out[1]).toBe(before[1]); // the queued run did not change
    expect(out[0]!.status).toBe('succeeded');
    expect(columnsOf(out)).toBe(columnsOf(next)); // read off the table, not counted again
    // a poll that changed nothing keeps the previous rows as they were
    expect(shareRows(next, rowsOfTable(table(['succeeded', 'queued']) as never))).toBe(next);
  });
});
