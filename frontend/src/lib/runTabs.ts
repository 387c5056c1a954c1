// The run page's tabs. A worker's run has them all, whatever it has posted yet (its kind declares results).
// An external run (lib/external.ts) has the tabs that mean something for a script: Metrics, its config,
// Logs (the platform's lines of its attempts: opened, resumed, finished, crashed; and any its script sent),
// Attempts (a resumed script is a new attempt), Artifacts, Provenance and Comments, plus Results and
// Examples only once it has some (the SDK sends neither by itself, a script may through the client): no
// empty tab that a spec kind's run would fill.
import { isExternal } from './external';

export type RunTab = 'metrics' | 'results' | 'examples' | 'spec' | 'logs' | 'attempts' | 'artifacts' | 'provenance' | 'comments';

/** What the run has, as far as it is known yet (undefined: not known yet). */
export interface RunHoldings {
  results?: number;
  exampleTables?: number;
}

const WORKER_TABS: readonly RunTab[] = ['metrics', 'results', 'examples', 'spec', 'logs', 'attempts', 'artifacts', 'comments'];

export function runTabs(kind: string, has: RunHoldings): RunTab[] {
  if (!isExternal(kind)) return [...WORKER_TABS];
  const some = (n: number | undefined) => (n ?? 0) > 0;
  return [
    'metrics',
    ...(some(has.results) ? (['results'] as const) : []),
    ...(some(has.exampleTables) ? (['examples'] as const) : []),
    'spec',
    'logs',
    'attempts',
    'artifacts',
    'provenance',
    'comments',
  ];
}
