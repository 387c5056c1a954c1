import type { ResultViewProps } from './registry';
import { KeyValues } from './KeyValues';

/** The self-test's record: how far the loss fell, and whether the run resumed from a checkpoint. */
export function DiagnosticResultView({ payload }: ResultViewProps) {
  const initial = payload.initial_loss as number | undefined;
  const final = payload.final_loss as number | undefined;
  const ratio = typeof initial === 'number' && typeof final === 'number' && initial > 0 ? final / initial : undefined;
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
