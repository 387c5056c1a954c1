// One topk_eval_point on the run page: the cell's train k, k', score and the router facts.
import { KeyValues } from '../../components/results/KeyValues';
import type { ResultViewProps } from '../types';

export function TopkPointView({ payload }: ResultViewProps<'topk_eval_point'>) {
  return (
    <KeyValues
      rows={[
        ['model', payload.model],
        ['family', payload.family],
        ['train k', payload.train_k ?? '—'],
        ["eval k'", payload.eval_k],
        ['experts', payload.num_experts],
        ['routers', payload.routers],
        ['renormalises', payload.renormalises === null ? 'unknown' : payload.renormalises ? 'yes' : 'no'],
        [payload.score, payload.value],
        ...(payload.ood_value !== null && payload.ood_value !== undefined ? [['OOD accuracy', payload.ood_value] as [string, number]] : []),
      ]}
    />
  );
}
