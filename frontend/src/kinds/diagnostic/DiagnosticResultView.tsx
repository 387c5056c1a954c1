import { KeyValues } from '../../components/results/KeyValues';
import type { ResultViewProps } from '../types';

/** The self-test's record: how far the loss fell, and whether the run resumed from a checkpoint. */
export function DiagnosticResultView({ payload }: ResultViewProps<'diagnostic'>) {
  const { initial_loss: initial, final_loss: final } = payload;
  const ratio = initial > 0 ? final / initial : undefined;
  return (
    <KeyValues
      rows={[
        ['initial loss', initial],
        ['final loss', final],
        ['final / initial', ratio],
        ['steps', payload.steps],
        ['resumed from step', payload.resumed_from_step ?? '—'],
        ['parameters', payload.parameters],
      ]}
    />
  );
}
