// ReasonFormer pre-training (paper 001): the routing analysis of Figure 3 and the Table-1 comparison of the
// experiment's variants. The result views of both ReasonFormer kinds are declared here, once (shared
// components in ../reasonformer/, a folder without index.ts, so it is no kind).
import { ComparisonTab } from '../reasonformer/ComparisonTab';
import { EvalView, RoutingView } from '../reasonformer/ResultViews';
import { RoutingTab } from '../reasonformer/RoutingTab';
import type { KindViews } from '../types';

export const views: KindViews = {
  resultViews: { routing: RoutingView, reasonformer_eval: EvalView },
  experimentTabs: [
    { id: 'routing', label: 'Routing', View: RoutingTab },
    { id: 'comparison', label: 'Comparison', View: ComparisonTab },
  ],
};
