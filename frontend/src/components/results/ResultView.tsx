// One result record, drawn by the view its kind's folder declares (src/kinds/<family>/<kind>/), else generically.
import type { ResultPayload } from '../../api/types';
import { kindViews } from '../../kinds';

export function ResultView({ payload, runId }: { payload: ResultPayload; runId: number }) {
  const View = kindViews.viewFor(payload.kind);
  return <View payload={payload} runId={runId} />;
}
