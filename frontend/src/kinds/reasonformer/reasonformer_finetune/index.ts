// ReasonFormer fine-tuning (paper 001): Tables 1-2 of the experiment's variants and the per-step routing
// (Figure 3). The result views are declared by ../reasonformer_pretrain (a result kind has one view).
import { ComparisonTab } from '../ComparisonTab';
import { RoutingTab } from '../RoutingTab';
import type { KindViews } from '../../types';

export const views: KindViews = {
  experimentTabs: [
    { id: 'comparison', label: 'Comparison', View: ComparisonTab, reportResultKind: 'reasonformer_eval' },
    { id: 'routing', label: 'Routing', View: RoutingTab, reportResultKind: 'routing' },
  ],
};
