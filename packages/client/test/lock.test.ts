import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, it } from 'node:test';
import { broadcastChannelLock, processLock, type TokenLock, webLocks } from '@tessera/client';
import { codeOf } from './helpers/setup.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `n` critical sections through the given locks and reports the most ever inside at once. */
async function maxConcurrency(locks: TokenLock[], rounds: number): Promise<number> {
  let inside = 0;
  let max = 0;
  await Promise.all(
    locks.flatMap((lock) =>
      Array.from({ length: rounds }, () =>
        lock.run('refresh', async () => {
          inside++;
          max = Math.max(max, inside);
          await sleep(5);
          inside--;
        }),
      ),
    ),
  );
  return max;
}

describe('broadcastChannelLock', () => {
  const opened: BroadcastChannel[] = [];
  const channel = (name: string) => {
    const c = new BroadcastChannel(name);
    opened.push(c);
    return c;
  };
  afterEach(() => {
    for (const c of opened.splice(0)) c.close();
  });

  it('lets one holder in at a time across tabs', async () => {
    const name = randomUUID();
    // The lock is exclusive when messages arrive within settleMs (broadcast-lock.ts): 20 ms let a
    // full run on two loaded cores see two holders once, so the test gives delivery 200 ms.
    const locks = [1, 2, 3].map(() => broadcastChannelLock({ channel: channel(name), settleMs: 200 }));
    assert.equal(await maxConcurrency(locks, 3), 1);
  });

  it('a live holder keeps the lock past staleMs (heartbeats)', async () => {
    const name = randomUUID();
    const a = broadcastChannelLock({ channel: channel(name), staleMs: 150, settleMs: 20 });
    const b = broadcastChannelLock({ channel: channel(name), staleMs: 150, settleMs: 20 });
    const order: string[] = [];
    let entered!: () => void;
    const aInside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const first = a.run('x', async () => {
      entered();
      order.push('a in');
      await sleep(500);
      order.push('a out');
    });
    await aInside;
    await b.run('x', async () => {
      order.push('b in');
    });
    await first;
    assert.deepEqual(order, ['a in', 'a out', 'b in']);
  });

  it('a holder that dies without releasing delays the others by staleMs, no more', {
    timeout: 10_000,
  }, async () => {
    const name = randomUUID();
    const dying = channel(name);
    const a = broadcastChannelLock({ channel: dying, staleMs: 300, settleMs: 20 });
    const b = broadcastChannelLock({ channel: channel(name), staleMs: 300, settleMs: 20, timeoutMs: 5_000 });
    let entered!: () => void;
    const aInside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    void a.run('x', () => {
      entered();
      return new Promise<void>(() => {}); // never released
    });
    await aInside;
    dying.close(); // the tab is gone: no heartbeat, no release, ever
    const started = Date.now();
    let ran = false;
    await b.run('x', async () => {
      ran = true;
    });
    const waited = Date.now() - started;
    assert.ok(ran);
    assert.ok(waited >= 200, `acquired after ${waited} ms, before the holder went stale`);
  });

  it('gives up with lock_timeout while a live holder keeps it too long', async () => {
    const name = randomUUID();
    const a = broadcastChannelLock({ channel: channel(name), staleMs: 100, settleMs: 20 });
    const b = broadcastChannelLock({ channel: channel(name), staleMs: 100, settleMs: 20, timeoutMs: 400 });
    let release!: () => void;
    let entered!: () => void;
    const aInside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const held = a.run(
      'x',
      () =>
        new Promise<void>((resolve) => {
          entered();
          release = resolve;
        }),
    );
    await aInside;
    assert.equal(await codeOf(b.run('x', async () => {})), 'lock_timeout');
    release();
    await held;
    await b.run('x', async () => {});
  });

  it('different names do not block each other', async () => {
    const name = randomUUID();
    const a = broadcastChannelLock({ channel: channel(name), settleMs: 20 });
    const b = broadcastChannelLock({ channel: channel(name), settleMs: 20, timeoutMs: 3_000 });
    let release!: () => void;
    let entered!: () => void;
    const aInside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const held = a.run(
      'one',
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
          entered();
        }),
    );
    await aInside;
    await b.run('two', async () => {});
    release();
    await held;
  });
});

describe('processLock', () => {
  it('serialises callers and times out behind a hung one', async () => {
    const lock = processLock({ timeoutMs: 200 });
    assert.equal(await maxConcurrency([lock], 5), 1);
    void lock.run('x', () => new Promise<void>(() => {}));
    assert.equal(await codeOf(lock.run('x', async () => {})), 'lock_timeout');
  });

  it('passes results and errors through', async () => {
    const lock = processLock();
    assert.equal(await lock.run('x', async () => 42), 42);
    await assert.rejects(
      lock.run('x', async () => {
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await lock.run('x', async () => 'after'), 'after');
  });
});

/** A LockManager with one exclusive queue per name that honours `signal`, like the browser's. */
function fakeLockManager(): LockManager {
  const queues = new Map<string, Promise<void>>();
  const request = (name: string, options: LockOptions, callback: LockGrantedCallback<unknown>) =>
    new Promise((resolve, reject) => {
      const previous = queues.get(name) ?? Promise.resolve();
      let abandoned = false;
      const signal = options.signal;
      signal?.addEventListener('abort', () => {
        abandoned = true;
        reject(new DOMException('aborted', 'AbortError'));
      });
      const mine = previous.then(async () => {
        if (abandoned) return;
        try {
          resolve(await callback(null as unknown as Lock));
        } catch (error) {
          reject(error);
        }
      });
      queues.set(name, mine);
    });
  return { request, query: async () => ({}) } as unknown as LockManager;
}

describe('webLocks', () => {
  it('serialises through navigator.locks and maps a timeout to lock_timeout', async () => {
    const locks = fakeLockManager();
    const a = webLocks({ locks });
    const b = webLocks({ locks, timeoutMs: 100 });
    assert.equal(await maxConcurrency([a, webLocks({ locks })], 3), 1);
    let release!: () => void;
    let entered!: () => void;
    const aInside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const held = a.run(
      'x',
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
          entered();
        }),
    );
    await aInside;
    assert.equal(await codeOf(b.run('x', async () => {})), 'lock_timeout');
    release();
    await held;
    assert.equal(await b.run('x', async () => 'free again'), 'free again');
  });
});
