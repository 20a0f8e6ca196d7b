import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SessionRepository } from '../../src/modules/session/session.repository.js';
import { RevocationList } from '../../src/modules/verify/revocation-list.js';

type Read = () => Promise<Array<{ id: string; revoked_at: number }>>;

/** A list over a fake repository whose next read is whatever `read` does. */
function listWith(clock: { now: number }, maxStaleMs = 1000, graceMs = 30_000) {
  const state: { read: Read; reads: number } = { read: async () => [], reads: 0 };
  const sessions = {
    revokedSince: () => {
      state.reads++;
      return state.read();
    },
  } as unknown as SessionRepository;
  const list = new RevocationList(sessions, 3_600_000, maxStaleMs, () => clock.now, graceMs);
  return { list, state };
}

const refused = () =>
  Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));

describe('RevocationList while the database is away', () => {
  test('a healthy list goes stale after maxStaleMs: /verify then waits for a read', async () => {
    const clock = { now: 1_000_000 };
    const { list } = listWith(clock);
    assert.equal(list.fresh(), false);
    await list.refresh();
    assert.equal(list.fresh(), true);
    clock.now += 999;
    assert.equal(list.fresh(), true);
    clock.now += 1;
    // No failure seen: stale at once, as before (a revocation elsewhere is picked up within 1 s).
    assert.equal(list.fresh(), false);
  });

  test('ready(): a stale list waits for a healthy re-read, but not for one that hangs', async () => {
    const clock = { now: 1_000_000 };
    const { list, state } = listWith(clock);
    state.read = async () => [{ id: 'known', revoked_at: clock.now }];
    await list.ready();
    assert.equal(list.fresh(), true);
    // Stale: a re-read that answers at once is waited for (a revocation elsewhere shows).
    clock.now += 1200;
    state.read = async () => [
      { id: 'known', revoked_at: clock.now },
      { id: 'new', revoked_at: clock.now },
    ];
    await list.ready();
    assert.equal(list.has('new'), true);
    // The database stops answering as the list goes stale: the read hangs (until its statement
    // timeout), and ready() answers from memory after STALE_READ_PATIENCE_MS, not after it.
    clock.now += 1200;
    let release: (rows: Array<{ id: string; revoked_at: number }>) => void = () => {};
    state.read = () => new Promise((resolve) => (release = resolve));
    const started = performance.now();
    await list.ready();
    const waited = performance.now() - started;
    assert.ok(waited >= 90 && waited < 1000, `ready() waited ${waited} ms`);
    assert.equal(list.has('new'), true);
    release([{ id: 'later', revoked_at: clock.now }]);
    await list.refresh();
    assert.equal(list.has('later'), true);
  });

  test('ready() past the outage grace fails closed: the error of the re-read, or at once when it hangs', async () => {
    const clock = { now: 1_000_000 };
    const { list, state } = listWith(clock, 1000, 5000);
    await list.ready();
    clock.now += 7000;
    state.read = refused;
    await assert.rejects(list.ready(), /ECONNREFUSED/);
    // A read that has hung for longer than maxStaleMs: no new wait, a 503 at once.
    state.read = () => new Promise(() => {});
    list.refresh().catch(() => {});
    await sleep(1050);
    const started = performance.now();
    await assert.rejects(list.ready(), { name: 'DatabaseUnavailableError' });
    assert.ok(performance.now() - started < 50);
  });

  test('after a failed read it stays trusted for the outage grace, then fails closed', async () => {
    const clock = { now: 1_000_000 };
    const { list, state } = listWith(clock, 1000, 30_000);
    state.read = async () => [{ id: 'revoked-session', revoked_at: clock.now }];
    await list.refresh();
    state.read = refused;
    clock.now += 1500;
    await assert.rejects(list.refresh(), /ECONNREFUSED/);
    assert.equal(list.fresh(), true);
    assert.equal(list.has('revoked-session'), true);
    clock.now = 1_000_000 + 1000 + 30_000 - 1;
    assert.equal(list.fresh(), true);
    clock.now += 1;
    assert.equal(list.fresh(), false);
    // The database is back: the next read makes it fresh again, and failures are forgotten.
    state.read = async () => [];
    await list.refresh();
    assert.equal(list.fresh(), true);
    clock.now += 1000;
    assert.equal(list.fresh(), false);
  });

  test('a read stalled for longer than maxStaleMs counts as an outage too', async () => {
    const clock = { now: 1_000_000 };
    const { list, state } = listWith(clock, 50, 30_000);
    await list.refresh();
    let release = () => {};
    state.read = () =>
      new Promise((resolve) => {
        release = () => resolve([]);
      });
    clock.now += 60;
    const stalled = list.refresh();
    // Just started: not yet a stall, so the list is stale as usual.
    assert.equal(list.fresh(), false);
    await sleep(80);
    assert.equal(list.fresh(), true, 'a read hanging past maxStaleMs (real time) starts the grace');
    assert.equal(list.refresh(), stalled, 'callers share the read in flight');
    release();
    await stalled;
    assert.equal(list.fresh(), true);
    assert.equal(state.reads, 2);
  });

  test('a grace of 0 fails closed as soon as the list is stale', async () => {
    const clock = { now: 1_000_000 };
    const { list, state } = listWith(clock, 1000, 0);
    await list.refresh();
    state.read = refused;
    clock.now += 1000;
    await assert.rejects(list.refresh());
    assert.equal(list.fresh(), false);
  });
});
