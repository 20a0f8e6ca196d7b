import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TurnBatch } from '../../src/db/turn-batch.js';

interface Item {
  key: string;
  value: number;
}

/** A TurnBatch over `Item`s that records what it ran; `many` and `alone` double the value. */
function recorder(
  options: { max?: number; keyed?: boolean; failMany?: unknown; failAlone?: (item: Item) => unknown } = {},
) {
  const runs: Array<{ kind: 'many' | 'alone'; keys: string[] }> = [];
  const failedBatches: Array<{ error: unknown; size: number }> = [];
  const batch = new TurnBatch<Item, number>({
    max: options.max ?? 32,
    onBatchFailed: (error, size) => failedBatches.push({ error, size }),
    ...(options.keyed === false ? {} : { key: (item: Item) => item.key }),
    many: async (items) => {
      runs.push({ kind: 'many', keys: items.map((i) => i.key) });
      if (options.failMany) throw options.failMany;
      return items.map((i) => i.value * 2);
    },
    alone: async (item) => {
      runs.push({ kind: 'alone', keys: [item.key] });
      const failure = options.failAlone?.(item);
      if (failure) throw failure;
      return item.value * 2;
    },
  });
  return { batch, runs, failedBatches };
}

test('an item alone in its turn runs alone; the items of one turn run together, sorted by key', async () => {
  const { batch, runs } = recorder();
  assert.equal(await batch.add({ key: 'a', value: 1 }), 2);
  const results = await Promise.all(['c', 'a', 'b'].map((key, i) => batch.add({ key, value: i })));
  assert.deepEqual(results, [0, 2, 4], 'each caller gets its own result');
  assert.deepEqual(runs, [
    { kind: 'alone', keys: ['a'] },
    { kind: 'many', keys: ['a', 'b', 'c'] },
  ]);
});

test('a repeated key and items past the maximum wait for the next batch', async () => {
  const { batch, runs } = recorder({ max: 3 });
  const keys = ['a', 'b', 'a', 'c', 'd', 'e', 'f'];
  const results = await Promise.all(keys.map((key, i) => batch.add({ key, value: i })));
  assert.deepEqual(results, [0, 2, 4, 6, 8, 10, 12]);
  assert.deepEqual(runs, [
    { kind: 'many', keys: ['a', 'b', 'c'] },
    { kind: 'many', keys: ['a', 'd', 'e'] },
    { kind: 'alone', keys: ['f'] },
  ]);
});

test('without a key, repeats share a batch and the order is kept', async () => {
  const { batch, runs } = recorder({ keyed: false });
  await Promise.all(['b', 'b', 'a'].map((key, i) => batch.add({ key, value: i })));
  assert.deepEqual(runs, [{ kind: 'many', keys: ['b', 'b', 'a'] }]);
});

test('a batch that fails is run item by item: only the item at fault fails', async () => {
  const failure = new Error('duplicate key value violates unique constraint');
  const { batch, runs, failedBatches } = recorder({
    failMany: failure,
    failAlone: (item) => (item.key === 'b' ? new Error('b is at fault') : undefined),
  });
  const settled = await Promise.allSettled(['a', 'b', 'c'].map((key, i) => batch.add({ key, value: i })));
  assert.deepEqual(
    settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message)),
    [0, 'b is at fault', 4],
  );
  assert.deepEqual(
    runs.map((r) => `${r.kind}:${r.keys.join('')}`),
    ['many:abc', 'alone:a', 'alone:b', 'alone:c'],
  );
  assert.deepEqual(failedBatches, [{ error: failure, size: 3 }], 'the batch failure is told once');
});

test('a batch whose items all succeed alone still tells of its failure', async () => {
  const { batch, failedBatches } = recorder({ failMany: new Error('syntax error at or near "lateral"') });
  assert.deepEqual(await Promise.all(['a', 'b'].map((key, i) => batch.add({ key, value: i }))), [0, 2]);
  assert.equal(failedBatches.length, 1);
  assert.equal(failedBatches[0]!.size, 2);
});

test('the database away: every item of the batch gets the error at once, nothing is retried', async () => {
  const away = Object.assign(new Error('Connection terminated unexpectedly'), {});
  const { batch, runs, failedBatches } = recorder({ failMany: away });
  const settled = await Promise.allSettled(['a', 'b'].map((key, i) => batch.add({ key, value: i })));
  assert.ok(settled.every((s) => s.status === 'rejected' && s.reason === away));
  assert.deepEqual(runs, [{ kind: 'many', keys: ['a', 'b'] }]);
  assert.deepEqual(failedBatches, [], 'each request answers 503 and is logged on its own');
});

for (const [code, what] of [
  ['57014', 'statement_timeout'],
  ['55P03', 'lock_timeout'],
] as const) {
  test(`a batch ended by ${what} (${code}) fails every item at once: no statement per item on a database already too slow`, async () => {
    const timedOut = Object.assign(new Error('canceling statement due to timeout'), { code });
    const { batch, runs } = recorder({ failMany: timedOut });
    const settled = await Promise.allSettled(['a', 'b', 'c'].map((key, i) => batch.add({ key, value: i })));
    assert.ok(settled.every((s) => s.status === 'rejected' && s.reason === timedOut));
    assert.deepEqual(runs, [{ kind: 'many', keys: ['a', 'b', 'c'] }]);
  });
}

test('an `alone` that throws at once rejects its item', async () => {
  const batch = new TurnBatch<Item, number>({
    max: 4,
    many: async (items) => items.map(() => 0),
    alone: () => {
      throw new Error('cannot even start');
    },
  });
  await assert.rejects(batch.add({ key: 'a', value: 1 }), /cannot even start/);
});

test('a listener that throws does not keep the items of a failed batch waiting', async () => {
  const batch = new TurnBatch<Item, number>({
    max: 32,
    onBatchFailed: () => {
      throw new Error('the logger is broken');
    },
    many: async () => {
      throw new Error('deadlock detected');
    },
    alone: async (item) => item.value * 2,
  });
  assert.deepEqual(await Promise.all([1, 2].map((value) => batch.add({ key: `${value}`, value }))), [2, 4]);
});

test('a `many` that throws before returning a promise is a failed batch: its items run alone', async () => {
  const failures: number[] = [];
  const batch = new TurnBatch<Item, number>({
    max: 32,
    onBatchFailed: (_error, size) => failures.push(size),
    many: () => {
      throw new Error('could not build the statement');
    },
    alone: async (item) => item.value * 2,
  });
  assert.deepEqual(await Promise.all([1, 2].map((value) => batch.add({ key: `${value}`, value }))), [2, 4]);
  assert.deepEqual(failures, [2]);
});
