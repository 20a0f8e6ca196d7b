import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Pending } from '../../src/pending.js';

/** A promise and the functions that settle it. */
function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Whether `promise` has settled after the queued callbacks have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

test('drain waits for the work tracked when it is called, and only that', async () => {
  const pending = new Pending();
  const first = deferred();
  const second = deferred();
  assert.equal(pending.track(first.promise), first.promise);
  const draining = pending.drain();
  pending.track(second.promise);
  assert.equal(await settled(draining), false);
  first.resolve();
  assert.equal(await settled(draining), true);
  second.resolve();
  await pending.drain();
});

test('work that rejects is forgotten like work that resolves: no unhandled rejection, drain resolves', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    const pending = new Pending();
    const failing = deferred();
    const other = deferred();
    const tracked = pending.track(failing.promise);
    pending.track(other.promise);
    const draining = pending.drain();
    failing.reject(new Error('a write failed'));
    await assert.rejects(tracked, /a write failed/);
    assert.equal(await settled(draining), false, 'drain still waits for the other work');
    other.resolve();
    await draining;
    await pending.drain();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
