// What a data block shows and as of when: "frozen at ..." or "live, as of ...", its runs, the runs it
// names that the reader may not see (never drawn), and, for a frozen block read again up to its cut-off
// instead of the data kept when it was frozen, "not exact" and why.
import { Text } from '@mantine/core';
import type { ReportBlockData } from '../api/types';

export const NOT_VISIBLE = 'not visible to you: the runs of this block belong to another project';

export function caption(data: ReportBlockData): string {
  const when = new Date(data.as_of).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
  const state = data.live ? `live, as of ${when}` : `frozen at ${when}`;
  const runs = (data.runs ?? []).map((r) => `run ${r.run_id}${r.name ? ` (${r.name})` : ''}`).join(', ') || 'no runs';
  const hidden = data.hidden_runs ? `; ${data.hidden_runs} run(s) not visible to you` : '';
  const inexact = data.exact === false ? `; not exact: ${data.exact_note ?? 'read again up to its cut-off'}` : '';
  return `${state}; ${runs}${hidden}${inexact}`;
}

export function Caption({ data }: { data: ReportBlockData }) {
  return (
    <Text size="xs" c="dimmed" data-testid="block-caption">
      {caption(data)}
    </Text>
  );
}

export function NotVisible() {
  return (
    <Text size="sm" fs="italic" c="dimmed" data-testid="block-not-visible">
      {NOT_VISIBLE}
    </Text>
  );
}
