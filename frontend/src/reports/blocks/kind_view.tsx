// A kind's result view as a report block: each result record drawn by the view its kind's folder
// contributes (src/kinds, the same seam as the run page's Results tab), so a kind's views are report
// blocks without an edit here.
import { Stack, Text } from '@mantine/core';
import { kindViews } from '../../kinds';
import { Caption, NotVisible } from '../Caption';
import type { ReportBlockType } from '../types';

export const block: ReportBlockType<'kind_view'> = {
  type: 'kind_view',
  label: 'Result view',
  View: ({ block, data }) => (
    <Stack gap={4}>
      <Text fw={600}>{block.title || block.result_kind}</Text>
      {!data ? null : !data.visible ? (
        <NotVisible />
      ) : (
        <>
          {(data.results ?? []).map((r, i) => {
            const View = kindViews.viewFor(r.kind);
            return <View key={i} payload={r.payload as never} runId={r.run_id} />;
          })}
          <Caption data={data} />
        </>
      )}
    </Stack>
  ),
};
