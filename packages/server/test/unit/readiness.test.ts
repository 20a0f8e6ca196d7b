import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import type { Db } from '../../src/db/connect.js';
import type { KeyStore } from '../../src/keys/key-store.js';
import { healthRoutes } from '../../src/modules/health/health.routes.js';

/** A database that is reachable but never answers: each query waits until released. */
function stalledDatabase() {
  const calls = { ping: 0, refresh: 0 };
  const waiting: Array<() => void> = [];
  const stall = () => new Promise<void>((resolve) => waiting.push(resolve));
  const db = {
    ping: () => {
      calls.ping++;
      return stall();
    },
  } as unknown as Db;
  const revocations = {
    refresh: () => {
      calls.refresh++;
      return stall();
    },
  };
  const release = () => {
    for (const resolve of waiting.splice(0)) resolve();
  };
  return { db, revocations, calls, release };
}

test('/readyz during a database stall: probes share one check, never pile up queries', async () => {
  const { db, revocations, calls, release } = stalledDatabase();
  const keys = { signingKey: () => ({}) } as unknown as KeyStore;
  const app = Fastify();
  await app.register(healthRoutes({ db, keys, revocations, timeoutMs: 20 }));
  try {
    const probe = () => app.inject({ method: 'GET', url: '/readyz' });
    const concurrent = await Promise.all(Array.from({ length: 10 }, probe));
    for (let i = 0; i < 10; i++) concurrent.push(await probe());
    assert.ok(concurrent.every((r) => r.statusCode === 503));
    assert.deepEqual(calls, { ping: 1, refresh: 1 }, 'one check in flight for all 20 probes');

    // The database answers again: the stalled check ends, and the next probe starts a new one.
    release();
    await new Promise((resolve) => setImmediate(resolve));
    const ready = probe();
    await new Promise((resolve) => setImmediate(resolve));
    release();
    assert.equal((await ready).statusCode, 200);
    assert.deepEqual(calls, { ping: 2, refresh: 2 });
  } finally {
    await app.close();
  }
});

test('/readyz names no failing delivery channel; the log does', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const app = Fastify({
    logger: { level: 'warn', stream: { write: (line: string) => lines.push(JSON.parse(line)) } },
  });
  const db = { ping: async () => {} } as unknown as Db;
  const keys = { signingKey: () => ({}) } as unknown as KeyStore;
  await app.register(
    healthRoutes({
      db,
      keys,
      revocations: { refresh: async () => {} },
      delivery: { failing: () => ['sms'] },
    }),
  );
  try {
    for (let i = 0; i < 3; i++) {
      const answer = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(answer.statusCode, 503);
      assert.doesNotMatch(answer.body, /sms|twilio|vonage|smtp|email/i);
    }
    const warnings = lines.filter((l) => l.msg === 'not ready: OTP delivery is failing');
    assert.equal(warnings.length, 1, 'logged once per change, not per probe');
    assert.equal(warnings[0]!.channels, 'sms');
  } finally {
    await app.close();
  }
});
