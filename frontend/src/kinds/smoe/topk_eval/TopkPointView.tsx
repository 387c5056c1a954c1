// One topk_eval_point on the run page: the cell's train k, k', score (with its 95% Wilson interval when it
// is a proportion of recorded n problems) and the router facts.
import { Stack } from '@mantine/core';
import { IntervalCaption } from '../../../components/results/IntervalCaption';
import { KeyValues } from '../../../components/results/KeyValues';
import { formatWithInterval, intervalCaption, wilson } from '../../../lib/interval';
import type { ResultViewProps } from '../../types';
import { isProportion, metricSize } from './matrix';

export function TopkPointView({ payload }: ResultViewProps<'topk_eval_point'>) {
  const ci = wilson(payload.value, metricSize(payload, 'value'));
  const oodN = metricSize(payload, 'ood_value');
  const oodCi = typeof payload.ood_value === 'number' ? wilson(payload.ood_value, oodN) : null;
  const proportion = isProportion(payload, 'value');
  const caption = proportion ? intervalCaption({ sizes: [payload.n, oodN], missing: ci === null }) : null;
  return (
    <Stack gap={4}>
      <KeyValues
        rows={[
          ['model', payload.model],
          ['family', payload.family],
          ['train k', payload.train_k ?? '—'],
          ["eval k'", payload.eval_k],
          ['experts', payload.num_experts],
          ['routers', payload.routers],
          ['renormalises', payload.renormalises === null ? 'unknown' : payload.renormalises ? 'yes' : 'no'],
          [payload.score, ci ? formatWithInterval(payload.value, ci, 4) : payload.value],
          ...(payload.ood_value !== null && payload.ood_value !== undefined
            ? [['OOD accuracy', oodCi ? formatWithInterval(payload.ood_value, oodCi, 4) : payload.ood_value] as [string, unknown]]
            : []),
        ]}
      />
      <IntervalCaption text={caption} />
    </Stack>
  );
}
