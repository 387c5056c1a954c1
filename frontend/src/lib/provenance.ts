// What the run page's Provenance tab shows of an external run's provenance (GET /runs/{id}/provenance: the
// command line, git commit, dirty flag and diff, Python, packages, host, as its script sent them): the
// diff's size in a line and each of its lines' tone, the package list narrowed by a search.

/** The first 12 hex digits of a commit, as `git log --abbrev=12` writes it. */
export const shortCommit = (commit: string): string => commit.slice(0, 12);

export interface DiffSummary {
  /** files the diff touches (its `diff --git` headers) */
  files: number;
  /** lines added and removed (the `+` and `-` lines, headers left out) */
  added: number;
  removed: number;
  lines: number;
}

/** How a line of a unified diff reads: a file header, a hunk header, an added, removed or context line. */
export type DiffTone = 'file' | 'hunk' | 'add' | 'del' | 'context';

export function diffTone(line: string): DiffTone {
  if (line.startsWith('diff --git') || line.startsWith('+++ ') || line.startsWith('--- ') || line.startsWith('index ')) return 'file';
  if (line.startsWith('@@')) return 'hunk';
  if (line.startsWith('+')) return 'add';
  if (line.startsWith('-')) return 'del';
  return 'context';
}

export function diffSummary(diff: string): DiffSummary {
  const lines = diff.length ? diff.replace(/\n$/, '').split('\n') : [];
  let files = 0;
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    if (line.startsWith('diff --git')) files += 1;
    const tone = diffTone(line);
    if (tone === 'add') added += 1;
    else if (tone === 'del') removed += 1;
  }
  return { files, added, removed, lines: lines.length };
}

/** "3 files, +12 −4" (a diff without `diff --git` headers: its lines). */
export function diffSummaryText(s: DiffSummary): string {
  const files = s.files ? `${s.files} file${s.files === 1 ? '' : 's'}, ` : `${s.lines} line${s.lines === 1 ? '' : 's'}, `;
  return `${files}+${s.added} −${s.removed}`;
}

/**
 * The packages (`name==version`) whose text holds every word of `query`, case-insensitive and with `-`,
 * `_` and `.` alike (`Scikit_learn` finds `scikit-learn==1.5`); an empty query keeps them all.
 */
export function filterPackages(packages: readonly string[], query: string): string[] {
  const fold = (s: string) => s.toLowerCase().replace(/[-_.]+/g, '-');
  const words = fold(query).split(/\s+/).filter(Boolean);
  if (!words.length) return [...packages];
  return packages.filter((p) => {
    const text = fold(p);
    return words.every((w) => text.includes(w));
  });
}
