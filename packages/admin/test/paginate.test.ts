// The pagination helper on its own: pages fetched as the loop needs them, and the ways a listing ends.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { paginate } from '../src/paginate.js';

interface Page {
  items: number[];
  next: string | null;
}

/** A listing of `pages`, recording each cursor it is asked for. */
function listing(pages: Record<string, Page>) {
  const asked: Array<string | undefined> = [];
  const paginated = paginate<number, Page>(
    async (cursor) => {
      asked.push(cursor);
      return pages[cursor ?? 'first']!;
    },
    (page) => page.items,
    (page) => page.next,
  );
  return { paginated, asked };
}

test('items page after page, each page asked for only when the loop reaches it', async () => {
  const { paginated, asked } = listing({
    first: { items: [1, 2], next: 'b' },
    b: { items: [3], next: 'c' },
    c: { items: [4], next: null },
  });
  for await (const item of paginated) if (item === 2) break;
  assert.deepEqual(asked, [undefined]);
  assert.deepEqual(await paginated.toArray(), [1, 2, 3, 4]);
  assert.deepEqual(asked, [undefined, undefined, 'b', 'c']);
  assert.deepEqual(await paginated.toArray({ max: 3 }), [1, 2, 3]);
  assert.deepEqual(await paginated.toArray({ max: 0 }), []);
});

test('a listing ends at a page without a cursor, an empty page, or a cursor seen before', async () => {
  const empty = listing({ first: { items: [1], next: 'b' }, b: { items: [], next: 'c' } });
  assert.deepEqual(await empty.paginated.toArray(), [1]);
  assert.deepEqual(empty.asked, [undefined, 'b']);
  const loop = listing({ first: { items: [1], next: 'b' }, b: { items: [2], next: 'b' } });
  assert.deepEqual(await loop.paginated.toArray(), [1, 2]);
  assert.deepEqual(loop.asked, [undefined, 'b']);
  const pages = [];
  for await (const page of loop.paginated.pages()) pages.push(page.items);
  assert.deepEqual(pages, [[1], [2]]);
});
