// CARMA: each run's accuracy, CAP curves and synonym consistency, and the experiment's CAP curves
// (Figure 2), synonym table (Tables 1, 4, 5) and lambda sweep (CARMA paper, sections 5.1-5.3).
import type { KindViews } from '../../types';
import { CapCurvesTab } from '../CapCurvesTab';
import { LambdaSweepTab } from '../LambdaSweepTab';
import { CapCurveView, CarmaEvalView, SynonymConsistencyView } from '../ResultViews';
import { SynonymTableTab } from '../SynonymTableTab';

export const views: KindViews = {
  resultViews: { carma_eval: CarmaEvalView, cap_curve: CapCurveView, synonym_consistency: SynonymConsistencyView },
  experimentTabs: [
    { id: 'cap', label: 'CAP curves', View: CapCurvesTab, reportResultKind: 'cap_curve' },
    { id: 'synonyms', label: 'Synonym table', View: SynonymTableTab, reportResultKind: 'synonym_consistency' },
    { id: 'lambda', label: 'Lambda sweep', View: LambdaSweepTab, reportResultKind: 'carma_eval' },
  ],
};
