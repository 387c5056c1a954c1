// Sweep axes: grid values per dotted path, random distributions (uniform, log-uniform, choice), seeds.
import { ActionIcon, Autocomplete, Button, Group, NativeSelect, NumberInput, Stack, Text, TextInput, Title } from '@mantine/core';
import { parseValueList, type Distribution, type SweepModel } from '../../lib/sweep';

interface Props {
  model: SweepModel;
  onChange: (model: SweepModel) => void;
  /** dotted spec paths offered as axis names */
  paths: readonly string[];
}

const DISTS: Distribution['dist'][] = ['uniform', 'loguniform', 'int_uniform', 'choice'];

function distributionFor(kind: Distribution['dist'], previous: Distribution): Distribution {
  if (kind === 'choice') return { dist: 'choice', values: previous.dist === 'choice' ? previous.values : [] };
  const low = previous.dist !== 'choice' ? previous.low : kind === 'loguniform' ? 1e-4 : 0;
  // int_uniform draws whole numbers: 1..8 (top-k, layers) is a more useful start than 0..1
  const high = previous.dist !== 'choice' ? previous.high : kind === 'int_uniform' ? 8 : 1;
  return { dist: kind, low, high };
}

export function SweepEditor({ model, onChange, paths }: Props) {
  const set = (patch: Partial<SweepModel>) => onChange({ ...model, ...patch });
  const pathData = [...paths];
  return (
    <Stack gap="sm" data-testid="sweep-editor">
      <Title order={5}>Grid</Title>
      {model.grid.map((axis, i) => (
        <Group key={i} align="flex-end" wrap="nowrap">
          <Autocomplete
            label="Parameter"
            aria-label={`grid axis ${i + 1} parameter`}
            placeholder="train.lr"
            data={pathData}
            value={axis.path}
            onChange={(v) => set({ grid: model.grid.map((a, j) => (j === i ? { ...a, path: v } : a)) })}
            w={240}
          />
          <TextInput
            label="Values (comma separated)"
            aria-label={`grid axis ${i + 1} values`}
            placeholder="0.1, 0.01"
            value={axis.text}
            onChange={(e) => set({ grid: model.grid.map((a, j) => (j === i ? { ...a, text: e.currentTarget.value } : a)) })}
            style={{ flex: 1 }}
          />
          <ActionIcon variant="subtle" color="red" aria-label={`remove grid axis ${i + 1}`} onClick={() => set({ grid: model.grid.filter((_, j) => j !== i) })} mb={4}>
            ✕
          </ActionIcon>
        </Group>
      ))}
      <Button variant="light" size="xs" w="fit-content" onClick={() => set({ grid: [...model.grid, { type: 'grid', path: '', text: '' }] })}>
        + grid axis
      </Button>

      <Title order={5}>Random search</Title>
      {model.random.length > 0 && (
        <Group>
          <NumberInput label="Samples (n)" value={model.randomN} min={1} max={10000} allowDecimal={false} onChange={(v) => set({ randomN: Number(v) || 1 })} w={140} />
          <NumberInput label="Sampler seed" value={model.randomSeed} min={0} allowDecimal={false} onChange={(v) => set({ randomSeed: Number(v) || 0 })} w={140} />
        </Group>
      )}
      {model.random.map((axis, i) => {
        const update = (distribution: Distribution, path = axis.path) => set({ random: model.random.map((a, j) => (j === i ? { ...a, path, distribution } : a)) });
        const d = axis.distribution;
        return (
          <Group key={i} align="flex-end" wrap="nowrap">
            <Autocomplete label="Parameter" aria-label={`random axis ${i + 1} parameter`} data={pathData} value={axis.path} onChange={(v) => update(d, v)} w={240} />
            <NativeSelect
              label="Distribution"
              aria-label={`random axis ${i + 1} distribution`}
              data={DISTS}
              value={d.dist}
              onChange={(e) => update(distributionFor(DISTS.find((x) => x === e.currentTarget.value) ?? 'uniform', d))}
            />
            {d.dist === 'choice' ? (
              <TextInput
                label="Values (comma separated)"
                aria-label={`random axis ${i + 1} values`}
                defaultValue={d.values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}
                onChange={(e) => update({ dist: 'choice', values: parseValueList(e.currentTarget.value) })}
                style={{ flex: 1 }}
              />
            ) : (
              <>
                <NumberInput label="Low" aria-label={`random axis ${i + 1} low`} value={d.low} onChange={(v) => update({ ...d, low: Number(v) })} w={120} />
                <NumberInput label="High" aria-label={`random axis ${i + 1} high`} value={d.high} onChange={(v) => update({ ...d, high: Number(v) })} w={120} />
              </>
            )}
            <ActionIcon variant="subtle" color="red" aria-label={`remove random axis ${i + 1}`} onClick={() => set({ random: model.random.filter((_, j) => j !== i) })} mb={4}>
              ✕
            </ActionIcon>
          </Group>
        );
      })}
      <Button
        variant="light"
        size="xs"
        w="fit-content"
        onClick={() => set({ random: [...model.random, { type: 'random', path: '', distribution: { dist: 'uniform', low: 0, high: 1 } }] })}
      >
        + random axis
      </Button>

      <Title order={5}>Seeds</Title>
      <TextInput
        label="Seeds (comma separated)"
        description="each combination runs once per seed"
        placeholder="1, 2, 3"
        value={model.seeds}
        onChange={(e) => set({ seeds: e.currentTarget.value })}
        w={320}
      />
      <Text size="xs" c="dimmed">
        Combined as grid × random samples × seeds.
      </Text>
    </Stack>
  );
}
