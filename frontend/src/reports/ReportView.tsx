// A report's blocks, each drawn by its type's module (src/reports/blocks), with its data.
import { Code, Paper, Stack } from '@mantine/core';
import type { ReactNode } from 'react';
import type { ReportBlock, ReportBlockData } from '../api/types';
import { reportBlocks } from '.';

/** A data answer as the blocks read it: openapi-fetch's answer types widen the series' [step, value]
 *  tuples to arrays; the JSON is the tuples the schema names. */
export function blockData(data: Record<string, unknown> | undefined): Record<string, ReportBlockData> {
  return (data ?? {}) as Record<string, ReportBlockData>;
}

export function BlockView({ block, data }: { block: ReportBlock; data?: ReportBlockData }) {
  const type = reportBlocks.get(block.type);
  if (!type) return <Code block>{JSON.stringify(block, null, 2)}</Code>;
  const View = type.View;
  return <View block={block} data={data} />;
}

export function ReportView({
  blocks,
  data,
  aside,
}: {
  blocks: readonly ReportBlock[];
  data: Record<string, ReportBlockData>;
  /** what goes beside each block (its comments, the editor's controls) */
  aside?: (block: ReportBlock) => ReactNode;
}) {
  return (
    <Stack gap="md">
      {blocks.map((b) => (
        <Paper key={b.id} p="sm" withBorder data-block={b.id} data-testid="report-block">
          <BlockView block={b} data={data[b.id]} />
          {aside?.(b)}
        </Paper>
      ))}
    </Stack>
  );
}
