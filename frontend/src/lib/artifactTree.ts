// A run's artifacts (GET /runs/{id}/artifacts: a flat list of '/'-separated paths) as the rows of a
// folder tree: every folder before its contents, with the size and file count of everything under it.

export interface ArtifactFile {
  path: string;
  size: number;
  modified: string | null;
  kind: 'checkpoint' | 'output' | 'model';
}

export type ArtifactRow =
  | { type: 'folder'; path: string; name: string; depth: number; size: number; files: number }
  | { type: 'file'; path: string; name: string; depth: number; size: number; file: ArtifactFile };

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB'] as const;

/** 1536 -> "1.5 KB" (powers of 1024, three significant digits; whole bytes below 1 KB). */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '—';
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${bytes} B`;
  return `${value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2)} ${UNITS[unit]}`;
}

/**
 * The tree's rows in display order: folders sorted before files at each level, both by name; a folder
 * row carries the total size and count of the files under it. `collapsed` holds folder paths whose
 * contents are hidden (the folder row itself stays).
 */
export function artifactRows(files: readonly ArtifactFile[], collapsed: ReadonlySet<string> = new Set()): ArtifactRow[] {
  interface Folder {
    folders: Map<string, Folder>;
    files: ArtifactFile[];
    size: number;
    count: number;
  }
  const root: Folder = { folders: new Map(), files: [], size: 0, count: 0 };
  for (const file of files) {
    const parts = file.path.split('/');
    let node = root;
    node.size += file.size;
    node.count += 1;
    for (const part of parts.slice(0, -1)) {
      let child = node.folders.get(part);
      if (!child) {
        child = { folders: new Map(), files: [], size: 0, count: 0 };
        node.folders.set(part, child);
      }
      child.size += file.size;
      child.count += 1;
      node = child;
    }
    node.files.push(file);
  }
  const rows: ArtifactRow[] = [];
  const walk = (node: Folder, prefix: string, depth: number) => {
    for (const name of [...node.folders.keys()].sort()) {
      const child = node.folders.get(name)!;
      const path = prefix ? `${prefix}/${name}` : name;
      rows.push({ type: 'folder', path, name, depth, size: child.size, files: child.count });
      if (!collapsed.has(path)) walk(child, path, depth + 1);
    }
    for (const file of [...node.files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
      rows.push({ type: 'file', path: file.path, name: file.path.split('/').pop()!, depth, size: file.size, file });
    }
  };
  walk(root, '', 0);
  return rows;
}

/** The download URL of one file, with a run read ticket (a link cannot send the login header). */
export function artifactUrl(runId: number, path: string, ticket: string): string {
  const encoded = path.split('/').map(encodeURIComponent).join('/');
  return `/api/v1/runs/${runId}/artifacts/${encoded}?ticket=${encodeURIComponent(ticket)}`;
}
