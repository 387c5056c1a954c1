// A run's `skillmix_cell` on its Results tab: the cell's six metrics with their ± and 95% interval, the
// routing it ran with, and every combination's texts with their voted points.
import { Stack, Table, Text } from '@mantine/core';
import { IntervalCaption } from '../../components/results/IntervalCaption';
import { KeyValues } from '../../components/results/KeyValues';
import type { ResultViewProps } from '../types';
import { formatWithCi, metricInterval, METRIC_LABELS, METRICS, skillmixCaption } from './shape';

export function SkillmixCellView({ payload: p }: ResultViewProps<'skillmix_cell'>) {
  return (
    <Stack gap="sm">
      <KeyValues
        rows={[
          ['model', `${p.model} (${p.student})`],
          ['grader', p.grader],
          ['k', p.k],
          ['experts per token', p.ept === null ? '— (no router)' : `${p.ept}${p.ept === p.default_ept ? ' (default)' : ` (default ${p.default_ept ?? '—'})`}`],
          ['experts (E) / routers', `${p.num_experts ?? '—'} / ${p.routers ?? '—'}`],
          ['renormalises top-k', p.renormalises === null ? '—' : p.renormalises ? 'yes' : 'no'],
          ['combinations × generations × gradings', `${p.combinations} × ${p.generations} × ${p.gradings}`],
          ['failed gradings', `${p.failed_gradings} of ${p.total_gradings}`],
          ['failed generations', p.failed_generations],
          ['replies cached / new', `${p.cached_replies} / ${p.new_replies}`],
          ...METRICS.map((m): [string, string] => {
            const v = { mean: p[m].mean, stderr: p[m].stderr ?? null };
            return [METRIC_LABELS[m], formatWithCi(v, metricInterval(m, p.k, [v], [p.combinations]))];
          }),
        ]}
      />
      <IntervalCaption text={skillmixCaption([p.combinations], false)} />
      <Table withTableBorder fz="xs" data-testid="skillmix-samples">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>#</Table.Th>
            <Table.Th>skills · topic</Table.Th>
            <Table.Th>text (points: skills, topic, sense, sentences)</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {p.samples.map((s) => (
            <Table.Tr key={s.index}>
              <Table.Td>{s.index}</Table.Td>
              <Table.Td>{`${s.skills.join(', ')} · ${s.topic}`}</Table.Td>
              <Table.Td>
                {s.texts.map((t, g) => (
                  <Text key={g} fz="xs">
                    <Text span ff="monospace" fz="xs">{`[${(s.points[g] ?? []).join('')}] `}</Text>
                    {t ?? '(generation failed)'}
                  </Text>
                ))}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
