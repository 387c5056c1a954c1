// The editor's block operations, pure: add, move, delete, replace; and what a 409 says changed.
import type { ReportBlock } from '../api/types';
import type { ErrorItem } from '../lib/apiErrors';

export function newBlockId(): string {
  return `b${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
}

export function moveBlock(blocks: readonly ReportBlock[], index: number, by: -1 | 1): ReportBlock[] {
  const to = index + by;
  if (index < 0 || index >= blocks.length || to < 0 || to >= blocks.length) return [...blocks];
  const out = [...blocks];
  [out[index], out[to]] = [out[to]!, out[index]!];
  return out;
}

export function removeBlock(blocks: readonly ReportBlock[], id: string): ReportBlock[] {
  return blocks.filter((b) => b.id !== id);
}

export function replaceBlock(blocks: readonly ReportBlock[], next: ReportBlock): ReportBlock[] {
  return blocks.map((b) => (b.id === next.id ? next : b));
}

/** The blocks a stale save's 409 names (`loc: ["blocks", id]`) and what it says of each. */
export function staleChanges(errors: readonly ErrorItem[]): { block: string; msg: string }[] {
  return errors
    .filter((e) => e.loc.length === 2 && e.loc[0] === 'blocks')
    .map((e) => ({ block: String(e.loc[1]), msg: e.msg }));
}
