// What a kind's folder (src/kinds/<family>/<kind>/index.ts or index.tsx) declares for the dashboard: a view per
// result kind it posts, typed by that result's payload schema, and tabs for the experiment page.
import type { ComponentType } from 'react';
import type { ExperimentDetail, PayloadOf, ResultKind } from '../api/types';

export interface ResultViewProps<K extends ResultKind> {
  /** exactly the generated schema of result kind K: reading a field it lacks is a type error */
  payload: PayloadOf<K>;
  runId: number;
}

/** Draws one result record of kind K (on the run page's Results tab). */
export type ResultView<K extends ResultKind> = ComponentType<ResultViewProps<K>>;

/** Result views by result kind; the key types the view (`{ sraven_cell: ResultView<'sraven_cell'> }`). */
export type ResultViews = { [K in ResultKind]?: ResultView<K> };

export interface ExperimentViewProps {
  experiment: ExperimentDetail;
  /** some run is queued or running: views that fetch should refresh */
  live: boolean;
}

/** A tab of the experiment page, shown for experiments of the declaring kind. */
export interface ExperimentTab {
  /** unique within the kind; the tab's value is `kind:<id>` */
  id: string;
  label: string;
  View: ComponentType<ExperimentViewProps>;
  /** the result kind the tab draws: "Add to report" makes it a report block of the experiment's records of
   *  that kind (drawn in the report by the result kind's view); absent: the tab offers no report block */
  reportResultKind?: ResultKind;
}

/** A kind's dashboard views: everything optional (a kind without views gets the generic ones). */
export interface KindViews {
  resultViews?: ResultViews;
  experimentTabs?: readonly ExperimentTab[];
}

/** The module shape of `src/kinds/<family>/<kind>/index.ts(x)`: the folder names the kind, `views` its views. */
export interface KindModule {
  views: KindViews;
}
