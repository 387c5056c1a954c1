import { Stack, Text } from '@mantine/core';
import { Caption, NotVisible } from '../Caption';
import { DataTable } from '../DataTable';
import type { ReportBlockType } from '../types';

export const block: ReportBlockType<'examples_table'> = {
  type: 'examples_table',
  label: 'Per-example table',
  View: ({ block, data }) => (
    <Stack gap={4}>
      <Text fw={600}>{block.title || block.table}</Text>
      {!data ? null : !data.visible ? (
        <NotVisible />
      ) : (
        <>
          <DataTable columns={data.columns ?? []} rows={data.rows ?? []} />
          <Caption data={data} />
        </>
      )}
    </Stack>
  ),
};
