// The report block types collected from their modules (src/reports/blocks/*.tsx, found by convention in
// index.ts): each declares the type it draws; two modules for one type is an error, and a type no module
// draws is shown as its JSON (a newer server's block on an older dashboard).
import type { ReportBlockKind } from '../api/types';
import type { ReportBlockModule, ReportBlockType } from './types';

export interface BlockRegistry {
  types: readonly string[];
  get(type: string): ReportBlockType<ReportBlockKind> | undefined;
  /** the types the editor can add from scratch, by label */
  creatable(): readonly ReportBlockType<ReportBlockKind>[];
}

export function buildBlockRegistry(modules: Record<string, ReportBlockModule>): BlockRegistry {
  const byType = new Map<string, ReportBlockType<ReportBlockKind>>();
  const owner = new Map<string, string>();
  for (const [path, mod] of Object.entries(modules)) {
    const { type } = mod.block;
    const other = owner.get(type);
    if (other) throw new Error(`report block type ${type} is drawn by both ${other} and ${path}`);
    owner.set(type, path);
    byType.set(type, mod.block);
  }
  return {
    types: [...byType.keys()].sort(),
    get: (type) => byType.get(type),
    creatable: () => [...byType.values()].filter((t) => t.create).sort((a, b) => a.label.localeCompare(b.label)),
  };
}
