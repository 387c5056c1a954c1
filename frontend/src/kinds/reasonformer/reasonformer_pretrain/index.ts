// ReasonFormer pre-training (paper 001): the routing analysis of Figure 3 and the Table-1 comparison of the
// experiment's variants. The result views of both ReasonFormer kinds are declared here, once (the
// components both kinds share lie in the family's folder, ../).
import { ComparisonTab } from '../ComparisonTab';
import { EvalView, RoutingView } from '../ResultViews';
import { RoutingTab } from '../RoutingTab';
import type { KindViews } from '../../types';

export const views: KindViews = {
  resultViews: { routing: RoutingView, reasonformer_eval: EvalView },
  experimentTabs: [
    { id: 'routing', label: 'Routing', View: RoutingTab, reportResultKind: 'routing' },
    { id: 'comparison', label: 'Comparison', View: ComparisonTab, reportResultKind: 'reasonformer_eval' },
  ],
};
