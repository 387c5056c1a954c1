// One routing record (Figure 3 of paper 001): pick a task, see its steps x skills heatmap with the stop
// gate beside it, how often the router's top skill was the expected one, and the case studies (the top-2
// skills of each step for sampled instances).
import { Badge, Group, Select, Stack, Table, Text } from '@mantine/core';
import { useMemo, useState } from 'react';
import { IntervalCaption } from '../../components/results/IntervalCaption';
import { RoutingHeatmap } from './RoutingHeatmap';
import { pct, rateText, ROUTING_CAPTION, topSkills, type RoutingPayload } from './shape';

export function RoutingPanel({ payload: p }: { payload: RoutingPayload }) {
  const [taskName, setTaskName] = useState<string | null>(null);
  const task = useMemo(() => p.tasks.find((t) => t.task === taskName) ?? p.tasks[0], [p.tasks, taskName]);
  if (!task) return <Text c="dimmed">No routed task.</Text>;
  const cases = task.cases ?? [];
  return (
    <Stack gap="xs" data-testid="routing-panel">
      <Group gap="xs">
        <Select
          size="xs"
          label="Task"
          aria-label="routing task"
          data={p.tasks.map((t) => ({ value: t.task, label: `${t.task} (${t.count})` }))}
          value={task.task}
          onChange={setTaskName}
          allowDeselect={false}
          searchable
          w={260}
        />
        <Text size="xs" c="dimmed">
          {p.label} · {p.variant}, top-{p.top_k} of {p.skills.length} skills, depth {p.depth} · {p.stage}
        </Text>
      </Group>
      <Group gap="xs">
        {p.skill_match !== null && p.skill_match !== undefined && <Badge variant="light">skill match {rateText(p.skill_match, p.skill_match_n)}</Badge>}
        {p.order_match_trained !== null && p.order_match_trained !== undefined && (
          <Badge variant="light">order match, trained programs {rateText(p.order_match_trained, p.order_match_trained_n)}</Badge>
        )}
        {p.order_match_heldout !== null && p.order_match_heldout !== undefined && (
          <Badge variant="light" color="grape">
            order match, held-out programs {rateText(p.order_match_heldout, p.order_match_heldout_n)}
          </Badge>
        )}
        {p.chance !== null && p.chance !== undefined && <Badge variant="outline" color="gray">chance per step {pct(p.chance)}%</Badge>}
      </Group>
      <IntervalCaption text={ROUTING_CAPTION} />
      <RoutingHeatmap task={task} skills={p.skills} />
      <Text size="sm">
        Top skill per step: {topSkills(task, p.skills).join(' → ')}
        {task.expected && <> · expected: {task.expected.map((s) => s ?? '—').join(' → ')}</>}
        {task.step_match.some((m) => m !== null) && (
          <> · step match {task.step_match.map((m) => (m === null ? '—' : rateText(m, task.count, 0))).join(' / ')}</>
        )}
      </Text>
      {cases.length > 0 && (
        <Table withTableBorder fz="xs" data-testid="routing-cases">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>case</Table.Th>
              {task.weights.map((_, i) => (
                <Table.Th key={i}>step {i + 1}: top-2 skills (weight){cases[0]?.steps[i]?.stop_gate != null ? ', gate' : ''}</Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {cases.map((c, k) => (
              <Table.Tr key={k}>
                <Table.Td>
                  <Text size="xs" ff="monospace">{c.input}</Text>
                  <Text size="xs" c="dimmed">
                    target {c.target}
                    {c.prediction !== null && c.prediction !== undefined ? ` · predicted ${c.prediction}` : ''}
                  </Text>
                </Table.Td>
                {c.steps.map((s, i) => (
                  <Table.Td key={i}>
                    {s.skills.map((skill, j) => (
                      <Text key={skill} size="xs" fw={c.expected[i] === skill ? 700 : 400}>
                        {skill} ({s.weights[j]!.toFixed(2)})
                      </Text>
                    ))}
                    {s.stop_gate !== null && s.stop_gate !== undefined && <Text size="xs" c="dimmed">gate {s.stop_gate.toFixed(2)}</Text>}
                  </Table.Td>
                ))}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}
