// Every report block type, one module each: src/reports/blocks/<type>.tsx exporting `block` (types.ts).
import { buildBlockRegistry } from './registry';
import type { ReportBlockModule } from './types';

// a block type's tests (blocks/<type>.test.tsx) sit beside it and are no block type
const modules = import.meta.glob<ReportBlockModule>(['./blocks/*.tsx', '!./blocks/*.test.tsx'], { eager: true });

export const reportBlocks = buildBlockRegistry(modules);
