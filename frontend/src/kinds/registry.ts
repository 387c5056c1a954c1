// The kinds' dashboard views collected from their folders (one per kind, in its paper family's folder) (src/kinds/index.ts feeds this the modules
// found by convention), with the generic fallbacks: a kind with no folder, or a folder with no views,
// gets no extra experiment tabs, and a result kind with no view is drawn as key/values.
import type { ComponentType } from 'react';
import type { ResultKind, ResultPayload } from '../api/types';
import { GenericResultView } from '../components/results/GenericResultView';
import type { ExperimentTab, KindModule, ResultView, ResultViews } from './types';

export interface KindRegistry {
  /** kinds with a folder, sorted */
  kinds: readonly string[];
  experimentTabs(kind: string): readonly ExperimentTab[];
  /** the view of result kind K, or undefined when no kind declares one */
  resultView<K extends ResultKind>(kind: K): ResultView<K> | undefined;
  /** what draws a payload: its kind's view, else the generic key/values */
  viewFor(kind: string): ComponentType<{ payload: ResultPayload; runId: number }>;
}

const NO_TABS: readonly ExperimentTab[] = [];

/** The kind a module path names, under its paper family: './smoe/smoe_sraven/index.ts' -> 'smoe_sraven'. */
export function kindOfPath(path: string): string {
  const m = /^\.\/([^/]+)\/([^/]+)\/index\.tsx?$/.exec(path);
  if (!m) throw new Error(`a kind's views live in src/kinds/<family>/<kind>/index.ts(x), not ${path}`);
  return m[2]!;
}

function isResultKind(kind: string, views: ResultViews): kind is ResultKind {
  return Object.prototype.hasOwnProperty.call(views, kind);
}

export function buildRegistry(modules: Record<string, KindModule>): KindRegistry {
  const tabs = new Map<string, readonly ExperimentTab[]>();
  const results: ResultViews = {};
  const owner = new Map<string, string>();
  for (const [path, mod] of Object.entries(modules)) {
    const kind = kindOfPath(path);
    const { resultViews = {}, experimentTabs = NO_TABS } = mod.views;
    const ids = experimentTabs.map((t) => t.id);
    const dup = ids.find((id, i) => ids.indexOf(id) !== i);
    if (dup) throw new Error(`kind ${kind} declares the experiment tab "${dup}" twice`);
    for (const resultKind of Object.keys(resultViews)) {
      const other = owner.get(resultKind);
      if (other) throw new Error(`result kind ${resultKind} has a view in both ${other} and ${kind}`);
      owner.set(resultKind, kind);
    }
    Object.assign(results, resultViews);
    tabs.set(kind, experimentTabs);
  }
  const resultView = <K extends ResultKind>(kind: K): ResultView<K> | undefined => results[kind];
  return {
    kinds: [...tabs.keys()].sort(),
    experimentTabs: (kind) => tabs.get(kind) ?? NO_TABS,
    resultView,
    viewFor: (kind) => (isResultKind(kind, results) ? (resultView(kind) ?? GenericResultView) : GenericResultView),
  };
}
