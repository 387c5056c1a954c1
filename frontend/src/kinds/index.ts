// Every kind's dashboard views, found by convention: one folder per paper family (reasonformer, carma,
// smoe, skillmix, diagnostic) holding the family's shared components, and in it a folder per kind,
// src/kinds/<family>/<kind>/, with an index.ts or index.tsx exporting `views` (kinds/types.ts). Adding a
// kind's views is a new folder; no shared file changes. docs/frontend.md, "Kinds".
import { buildRegistry } from './registry';
import type { KindModule } from './types';

const modules = import.meta.glob<KindModule>('./*/*/index.{ts,tsx}', { eager: true });

export const kindViews = buildRegistry(modules);
