// What a data block shows and as of when: "frozen at ..." or "live, as of ...", its runs, and the runs
// it names that the reader may not see (never drawn).
import { Text } from '@mantine/core';
import type { ReportBlockData } from '../api/types';

export const NOT_VISIBLE = 'not visible to you: the runs of this block belong to another project';

export function caption(data: ReportBlockData): string {
  const when = new Date(data.as_of).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
  const state = data.live ? `live, as of ${when}` : `frozen at ${when}`;
  const runs = (data.runs ?? []).map((r) => `run ${r.run_id}${r.name ? ` (${r.name})` : ''}`).join(', ') || 'no runs';
  const hidden = data.hidden_runs ? `; ${data.hidden_runs} run(s) not visible to you` : '';
  return `${state}; ${runs}${hidden}`;
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
