// The self-test kind: its `diagnostic` result as a table; no experiment tabs (the generic runs table,
// overlays and parallel coordinates cover a sweep of it).
import type { KindViews } from '../../types';
import { DiagnosticResultView } from '../DiagnosticResultView';

export const views: KindViews = {
  resultViews: { diagnostic: DiagnosticResultView },
};
