// A claim's verdict, pre-registration, deciding version, arms and comparisons, without actions or data
// fetching: the claims page's card (ClaimCard) and a report's claim block (src/reports/blocks/claim.tsx).
import { Badge, Group, Table, Text, Title } from '@mantine/core';
import type { ReactNode } from 'react';
import type { Claim, ClaimEvaluation } from '../../api/types';
import { interval, num, pValue, PREREG_COLOURS, readingText, testText, VERDICT_COLOURS } from '../../lib/claims';

/** What a claim's card shows of it, without the card's actions: the claims page's card and a report's
 *  claim block (src/reports/blocks/claim.tsx) draw a claim's evaluation with it. */
export function ClaimSummary({
  name,
  definition: d,
  evaluation: ev,
  testid,
  review,
  actions,
  notice,
}: {
  name: string;
  definition: Claim['definition'];
  evaluation: ClaimEvaluation;
  testid: string;
  review?: Claim['review'];
  actions?: ReactNode;
  notice?: ReactNode;
}) {
  const pre = ev.preregistration;
  return (
    <>
      <Group justify="space-between" wrap="nowrap">
        <Group gap="xs">
          <Title order={4}>{name}</Title>
          <Badge color={VERDICT_COLOURS[ev.verdict]} data-testid={`${testid}-verdict`}>{ev.verdict}</Badge>
          <Badge color={PREREG_COLOURS[pre.status]} variant="light" data-testid={`${testid}-prereg`}>{pre.status}</Badge>
          {review && <Badge color={review === 'approved' ? 'teal' : 'orange'} variant="outline">{review.replace('_', ' ')}</Badge>}
        </Group>
        {actions}
      </Group>
      <Text size="sm" c="dimmed" data-testid={`${testid}-version`}>
        {d.section} · version {ev.version} decided (sha256 {ev.hash.slice(0, 12)})
        {pre.locked_at ? ` · version ${pre.locked_version} locked by ${pre.locked_by ?? 'someone'} at ${pre.locked_at.slice(0, 19).replace('T', ' ')}` : ''}
      </Text>
      <Text size="sm">
        {d.metric} ({readingText(d.read)}), each arm {d.direction} than {d.arms[0]?.name}
        {d.min_effect ? ` by at least ${d.min_effect}` : ''}; {testText(d.test)}, alpha {d.alpha}, family {ev.family}{' '}
        ({ev.family_size} {ev.family_size === 1 ? 'hypothesis' : 'hypotheses'}, Holm)
      </Text>
      {notice}
      <Table withTableBorder striped aria-label={`arms of ${name}`} data-testid={`${testid}-arms`}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>arm</Table.Th>
            <Table.Th>query</Table.Th>
            <Table.Th>n</Table.Th>
            <Table.Th>mean</Table.Th>
            <Table.Th>{Math.round((1 - d.alpha) * 100)}% CI</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {ev.arms.map((a, i) => (
            <Table.Tr key={a.name}>
              <Table.Td>{a.name}</Table.Td>
              <Table.Td><Text size="xs" ff="monospace">{d.arms[i]?.query}</Text></Table.Td>
              <Table.Td data-testid={`${testid}-n-${i}`}>{a.n}</Table.Td>
              <Table.Td>{num(a.mean)}</Table.Td>
              <Table.Td>{interval(a.ci_low, a.ci_high)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Table withTableBorder aria-label={`comparisons of ${name}`} data-testid={`${testid}-comparisons`}>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>comparison</Table.Th>
            <Table.Th>test</Table.Th>
            <Table.Th>effect</Table.Th>
            <Table.Th>CI</Table.Th>
            <Table.Th>p</Table.Th>
            <Table.Th>p (Holm)</Table.Th>
            <Table.Th>verdict</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {ev.comparisons.map((c) => (
            <Table.Tr key={c.arm}>
              <Table.Td>{c.arm} − {c.reference}</Table.Td>
              <Table.Td>{c.test ?? '-'}{c.test ? ` (n ${c.n})` : ''}</Table.Td>
              <Table.Td>{num(c.effect)}</Table.Td>
              <Table.Td>{interval(c.ci_low, c.ci_high)}</Table.Td>
              <Table.Td>{pValue(c.p_value)}</Table.Td>
              <Table.Td>{pValue(c.p_adjusted)}</Table.Td>
              <Table.Td>
                <Badge size="sm" color={VERDICT_COLOURS[c.verdict]} variant="light">{c.verdict}</Badge>
                <Text size="xs" c="dimmed">
                  {c.reason}
                  {c.needed_n !== null ? ` · about ${c.needed_n} ${c.test === 'paired' || c.test === 'bootstrap_paired' ? 'pairs' : 'runs per arm'} would decide` : ''}
                </Text>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </>
  );
}
