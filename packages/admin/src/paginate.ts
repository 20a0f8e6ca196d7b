/**
 * A listing that spans pages: iterate it with `for await` for the items, page after page, fetched
 * as the loop needs them (break early and no further page is asked for), or go page by page with
 * `pages()`.
 *
 * @example
 * ```ts
 * for await (const event of admin.audit.list({ user_id: userId })) {
 *   console.log(event.type, event.created_at);
 * }
 * ```
 */
export interface Paginated<Item, Page> extends AsyncIterable<Item> {
  /** The pages themselves, first to last (each as the API answers it, cursor included). */
  pages(): AsyncIterable<Page>;
  /** Every item, or the first `max` of them, in an array. */
  toArray(options?: { max?: number }): Promise<Item[]>;
}

/**
 * A listing from a page fetcher: `fetchPage(cursor)` answers a page, `items` reads its items and
 * `next` its cursor for the following page (none: the last page).
 */
export function paginate<Item, Page>(
  fetchPage: (cursor: string | undefined) => Promise<Page>,
  items: (page: Page) => readonly Item[],
  next: (page: Page) => string | null | undefined,
): Paginated<Item, Page> {
  async function* pages(): AsyncGenerator<Page> {
    let cursor: string | undefined;
    const seen = new Set<string>();
    for (;;) {
      const page = await fetchPage(cursor);
      yield page;
      const following = next(page);
      // A cursor seen before would loop forever: stop instead (the service never sends one).
      if (!following || seen.has(following) || items(page).length === 0) return;
      seen.add(following);
      cursor = following;
    }
  }
  async function* all(): AsyncGenerator<Item> {
    for await (const page of pages()) yield* items(page);
  }
  return {
    pages,
    [Symbol.asyncIterator]: all,
    async toArray(options = {}) {
      const max = options.max ?? Number.POSITIVE_INFINITY;
      const out: Item[] = [];
      if (max <= 0) return out;
      for await (const item of all()) {
        out.push(item);
        if (out.length >= max) break;
      }
      return out;
    },
  };
}

/** A listing the API answers in one page (the same interface, should it paginate one day). */
export function onePage<Item, Page>(
  fetchPage: () => Promise<Page>,
  items: (page: Page) => readonly Item[],
): Paginated<Item, Page> {
  return paginate<Item, Page>(fetchPage, items, () => undefined);
}
