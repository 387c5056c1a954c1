// Result renderers keyed by result kind (worker.specs.RESULTS). A new kind plugs in by adding one entry;
// unknown kinds fall back to their JSON.
import type { ComponentType } from 'react';
import { JsonBlock } from '../common/JsonBlock';
import { DiagnosticResultView } from './DiagnosticResultView';
import { SravenCellView } from './SravenCellView';

export interface ResultViewProps {
  payload: Record<string, unknown>;
  runId: number;
}

export const RESULT_RENDERERS: Record<string, ComponentType<ResultViewProps>> = {
  diagnostic: DiagnosticResultView,
  sraven_cell: SravenCellView,
};

export function ResultView({ kind, payload, runId }: ResultViewProps & { kind: string }) {
  const View = RESULT_RENDERERS[kind];
  return View ? <View payload={payload} runId={runId} /> : <JsonBlock value={payload} />;
}
