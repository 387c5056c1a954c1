// A claim of the report's project as a report block: drawn with the claims page's card (ClaimSummary), from
// the evaluation the block resolved to (live: as of now; frozen: as kept when it was frozen or published).
// Added from a claim's card ("Add to report"), not from the editor's menu.
import { Stack, Text } from '@mantine/core';
import type { Report, ReportBlockData } from '../../api/types';
import { ClaimSummary } from '../../components/claims/ClaimSummary';
import type { ReportBlockType } from '../types';

type ClaimBlock = Extract<Report['blocks'][number], { type: 'claim' }>;
/** What a claim block's data holds (`detail`): the claim, its deciding definition and its evaluation. */
export type ClaimSnapshot = NonNullable<NonNullable<ClaimBlock['cutoff']>['claim']>;

export const CLAIM_NOT_VISIBLE = 'not visible to you: this claim belongs to another project or no longer exists';

function when(data: ReportBlockData): string {
  const at = new Date(data.as_of).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
  return data.live ? `live, as of ${at}` : `frozen at ${at}`;
}

/** The block's snapshot, or why there is none (the server's words when it refused a frozen evaluation). */
export function claimOf(data: ReportBlockData): { snapshot: ClaimSnapshot } | { problem: string } {
  const detail = data.detail as Partial<ClaimSnapshot> & { problem?: unknown } | null | undefined;
  if (data.visible && detail && detail.evaluation && detail.definition) return { snapshot: detail as ClaimSnapshot };
  return { problem: typeof detail?.problem === 'string' ? detail.problem : CLAIM_NOT_VISIBLE };
}

export const block: ReportBlockType<'claim'> = {
  type: 'claim',
  label: 'Claim',
  View: ({ block, data }) => {
    const shown = data ? claimOf(data) : null;
    const testid = `claim-block-${block.id}`;
    return (
      <Stack gap="xs" data-testid={testid}>
        {block.title ? <Text fw={600}>{block.title}</Text> : null}
        {!data || !shown ? null : 'problem' in shown ? (
          <Text size="sm" fs="italic" c="dimmed" data-testid="block-not-visible">
            {shown.problem}
          </Text>
        ) : (
          <>
            <ClaimSummary name={shown.snapshot.name} definition={shown.snapshot.definition} evaluation={shown.snapshot.evaluation} testid={testid} />
            <Text size="xs" c="dimmed" data-testid="block-caption">
              claim {shown.snapshot.claim_id}, {when(data)}
            </Text>
          </>
        )}
      </Stack>
    );
  },
};
