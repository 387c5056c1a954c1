// The ReasonFormer kinds' result records on a run's Results tab: the routing analysis (Figure 3) and the
// model's scores per task with its parameter counts (a column of Table 1).
import { Stack, Table } from '@mantine/core';
import { IntervalCaption } from '../../components/results/IntervalCaption';
import { KeyValues } from '../../components/results/KeyValues';
import type { ResultViewProps } from '../types';
import { RoutingPanel } from './RoutingPanel';
import { averageInterval, EVAL_CAPTION, millions, pct, pctInterval, taskInterval } from './shape';

export function RoutingView({ payload }: ResultViewProps<'routing'>) {
  return <RoutingPanel payload={payload} />;
}

export function EvalView({ payload: p }: ResultViewProps<'reasonformer_eval'>) {
  return (
    <Stack gap="xs">
      <KeyValues
        rows={[
          ['model', `${p.label} (${p.stage})`],
          ['variant', p.variant],
          ['activation', p.activation === null ? '—' : `${p.activation}, top-${p.top_k} of ${p.num_skills}`],
          ['depth / adapters / stop gate', `${p.depth ?? '—'} / ${p.adapters ? 'yes' : 'no'} / ${p.stop_gate ? 'yes' : 'no'}`],
          ['reasoning pre-training / modularity', `${p.pretrained ? 'yes' : 'no'} / ${p.modularity ? 'yes' : 'no'}`],
          ['frozen', p.freeze],
          ['few-shot', p.few_shot ?? '—'],
          ['parameters total / activated / tuned', `${millions(p.parameters.total)} / ${millions(p.parameters.activated)} / ${millions(p.parameters.tuned)}`],
          ['average', `${pct(p.average)}${pctInterval(averageInterval(p))}`],
          ['steps', p.steps],
        ]}
      />
      <Table withTableBorder fz="xs" w="auto" data-testid="reasonformer-eval-tasks">
        <Table.Thead>
          <Table.Tr>
            {['task', 'reasoning', 'metric', 'value', '95% CI', 'length-normalised', 'n'].map((h) => (
              <Table.Th key={h}>{h}</Table.Th>
            ))}
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {p.tasks.map((t) => (
            <Table.Tr key={t.task}>
              <Table.Td>{t.task}</Table.Td>
              <Table.Td>{t.reasoning ?? '—'}</Table.Td>
              <Table.Td>{t.metric}</Table.Td>
              <Table.Td ff="monospace">{pct(t.value)}</Table.Td>
              <Table.Td ff="monospace">{pctInterval(taskInterval(t)).trim() || '—'}</Table.Td>
              <Table.Td ff="monospace">{pct(t.value_norm)}</Table.Td>
              <Table.Td>{t.count}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <IntervalCaption text={EVAL_CAPTION} />
    </Stack>
  );
}
