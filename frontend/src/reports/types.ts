// What a report block type's module (src/reports/blocks/<type>.tsx) declares: the block type it draws and
// how. A new block type (a claim, a sweep) is a new module there; no shared file changes (registry.ts).
import type { ComponentType } from 'react';
import type { ReportBlock, ReportBlockData, ReportBlockKind } from '../api/types';

export type BlockOf<T extends ReportBlockKind> = Extract<ReportBlock, { type: T }>;

export interface BlockViewProps<T extends ReportBlockKind> {
  block: BlockOf<T>;
  /** the block's data (a block over runs); undefined for a text block */
  data?: ReportBlockData;
}

export interface ReportBlockType<T extends ReportBlockKind> {
  type: T;
  /** what the editor's "add block" menu calls it */
  label: string;
  View: ComponentType<BlockViewProps<T>>;
  /** a new block of this type with the given id (the editor's "add"); absent: added from elsewhere ("add to report") */
  create?: (id: string) => BlockOf<T>;
}

/** The module shape of `src/reports/blocks/<type>.tsx`. */
export interface ReportBlockModule {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  block: ReportBlockType<any>;
}
