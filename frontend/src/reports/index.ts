// Every report block type, one module each: src/reports/blocks/<type>.tsx exporting `block` (types.ts).
import { buildBlockRegistry } from './registry';
import type { ReportBlockModule } from './types';

const modules = import.meta.glob<ReportBlockModule>('./blocks/*.tsx', { eager: true });

export const reportBlocks = buildBlockRegistry(modules);
