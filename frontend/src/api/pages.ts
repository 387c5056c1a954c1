// A list the API answers a page at a time ({items, next_cursor}, a keyset cursor: every item exactly once),
// read to its end: the claims and reports lists, whose projects hold a bounded number of items
// (backend/claims/service.py MAX_CLAIMS, backend/reports/service.py MAX_REPORTS), so the whole list is
// small and the pages, asked with the largest limit, are few (one up to the cap).

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** Every item of the list: `fetchPage(null)` first, then each page's `next_cursor` until the last page. */
export async function allPages<T>(fetchPage: (cursor: string | null) => Promise<Page<T>>): Promise<T[]> {
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  for (;;) {
    const page: Page<T> = await fetchPage(cursor);
    items.push(...page.items);
    cursor = page.next_cursor;
    // a cursor never comes back twice from the API; one that did would loop forever here
    if (!cursor || seen.has(cursor)) return items;
    seen.add(cursor);
  }
}
