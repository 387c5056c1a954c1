import type { ResultPayload } from '../../api/types';
import { KeyValues } from './KeyValues';

/** A result with no view of its own (kinds/registry.ts): its fields as key/values, nested ones as JSON. */
export function GenericResultView({ payload }: { payload: ResultPayload }) {
  return <KeyValues rows={Object.entries(payload).filter(([key]) => key !== 'kind')} />;
}
