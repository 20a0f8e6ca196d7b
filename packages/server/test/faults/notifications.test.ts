import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { VerifyReasons } from '@tessera/core';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { sql } from 'kysely';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/index.js';
import type { AppContext } from '../../src/context.js';
import { runHousekeeping } from '../../src/context.js';
import { MasterKey } from '../../src/crypto/master-key.js';
import { KeyStore } from '../../src/keys/key-store.js';
import { advanceKeys, rotateKeys } from '../../src/keys/rotation.js';
import { createLogger } from '../../src/logger.js';
import { DevOutbox } from '../../src/modules/otp/delivery/dev-outbox.js';
import {
  RELAXED_LIMITS,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import { FreezableProxy, postgresOnly, terminateBackends } from './helpers.js';

/**
 * The second instance of these tests re-reads revocations only once a minute (and its
 * housekeeping, which reloads keys, never runs within a test): only a notice can bring another
 * instance's change to it within the bounds asserted here.
 */
const POLL_ONCE_A_MINUTE_MS = 120_000;

interface Peer {
  ctx: AppContext;
  verify(accessToken: string): Promise<{ success: boolean; reason?: string }>;
  jwksKids(): Promise<string[]>;
  close(): Promise<void>;
}

/** Another instance of `a`'s deployment (same storage, master key and issuer), answering through inject. */
async function startPeer(a: TestServer, url: string, env: Record<string, string> = {}): Promise<Peer> {
  const config = loadConfig({
    TESSERA_ENV: 'test',
    TESSERA_ISSUER: a.url,
    TESSERA_MASTER_KEY: a.masterKey,
    TESSERA_DATA_DIR: tmpdir(),
    TESSERA_DELIVERY: 'dev',
    TESSERA_DATABASE_URL: url,
    TESSERA_LOG_LEVEL: process.env.TESSERA_TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
  const logger = createLogger(config.logLevel);
  const master = MasterKey.parse(a.masterKey);
  const db = await a.storage.reopen();
  const keys = new KeyStore(db, master.derive('signing-key-encryption'));
  await keys.init();
  const { app, ctx } = await buildApp(config, {
    db,
    keys,
    masterKey: master,
    delivery: new DevOutbox({}, logger),
    logger,
    revocationMaxStaleMs: POLL_ONCE_A_MINUTE_MS,
  });
  await app.ready();
  return {
    ctx,
    async verify(accessToken) {
      const answer = await app.inject({
        method: 'POST',
        url: '/verify',
        payload: { oauth_token: { access_token: accessToken } },
      });
      return answer.json();
    },
    async jwksKids() {
      const answer = await app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
      return (answer.json() as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid);
    },
    close: () => app.close(),
  };
}

/** Waits for `condition`, checking every 10 ms; returns the milliseconds it took, or fails after `limitMs`. */
async function within(limitMs: number, what: string, condition: () => boolean | Promise<boolean>) {
  const started = performance.now();
  for (;;) {
    if (await condition()) return performance.now() - started;
    const elapsed = performance.now() - started;
    assert.ok(elapsed < limitMs, `${what}: not within ${limitMs} ms`);
    await sleep(10);
  }
}

function revoke(a: TestServer, refreshToken: string): Promise<TestResponse> {
  return a.request('POST', '/oauth/revoke', {
    body: { token: refreshToken, client_id: a.project.api_key_id },
  });
}

const schemaOf = async (a: TestServer) =>
  (await sql<{ schema: string }>`select current_schema() as schema`.execute(a.storage.db.kysely)).rows[0]!
    .schema;

postgresOnly('change notices between two instances', (url) => {
  let a: TestServer;
  let b: Peer;
  before(async () => {
    a = await startServer('postgres', { env: RELAXED_LIMITS });
    b = await startPeer(a, url);
    await within(5_000, 'B listening', () => b.ctx.notices?.listening === true);
  });
  after(async () => {
    await b?.close();
    await a?.close();
  });

  test('a revoke on A is refused by /verify on B within 100 ms', async (t) => {
    for (let round = 0; round < 5; round++) {
      const bundle = await a.signIn(uniqueEmail('notify'));
      assert.deepEqual(await b.verify(bundle.access_token), { success: true });
      const revoked = await revoke(a, bundle.refresh_token);
      assert.equal(revoked.status, 200);
      const ms = await within(100, 'B refuses the revoked token', async () => {
        const answer = await b.verify(bundle.access_token);
        return answer.success === false && answer.reason === VerifyReasons.revoked;
      });
      t.diagnostic(`round ${round}: B refused the token ${ms.toFixed(1)} ms after A answered the revoke`);
    }
  });

  test('a key rotation, a promotion and an automatic rotation on A reach B within 1 s', async () => {
    const now = Date.now();
    const immediate = await rotateKeys(a.ctx.keys, a.config, 0, now);
    await within(1_000, 'B publishes the key rotated with --delay 0', async () =>
      (await b.jwksKids()).includes(immediate),
    );
    assert.equal(b.ctx.keys.signingKey().kid, immediate);
    const bundle = await a.signIn(uniqueEmail('notify'));
    assert.equal(decodeProtectedHeader(bundle.access_token).kid, immediate);
    assert.deepEqual(await b.verify(bundle.access_token), { success: true });

    const delayed = await rotateKeys(a.ctx.keys, a.config, 3600, now + 1);
    await within(1_000, 'B publishes the delayed key', async () => (await b.jwksKids()).includes(delayed));
    assert.equal(b.ctx.keys.get(delayed)?.status, 'next');
    assert.ok(await advanceKeys(a.ctx.db, a.config, now + 3_601_000), 'the delayed key was promoted');
    await within(1_000, 'B sees the promotion', () => b.ctx.keys.get(delayed)?.status === 'active');
    assert.equal(b.ctx.keys.get(immediate)?.status, 'retiring');

    // Housekeeping on A starts a rotation once the active key is older than the period.
    const before = new Set(await b.jwksKids());
    const periodic = { ...a.ctx, config: { ...a.config, keys: { ...a.config.keys, rotationPeriod: 1 } } };
    await runHousekeeping(periodic, now + 3_602_000);
    const added = a.ctx.keys.list().find((k) => !before.has(k.kid));
    assert.ok(added, 'housekeeping rotated the key');
    await within(1_000, 'B publishes the automatically rotated key', async () =>
      (await b.jwksKids()).includes(added.kid),
    );
  });

  test('a project deleted on A stops working on B at once, not when its cache expires', async (t) => {
    const other = await a.ctx.projects.create({ name: `notify-${Date.now()}`, origins: [] });
    const bundle = await a.signIn(uniqueEmail('notify'), other);
    // B caches the project (for 5 s) by verifying one of its tokens.
    assert.deepEqual(await b.verify(bundle.access_token), { success: true });
    await a.ctx.projects.delete(other.api_key_id);
    const ms = await within(1_000, 'B refuses the deleted project', async () => {
      const answer = await b.verify(bundle.access_token);
      return answer.success === false && answer.reason === VerifyReasons.unknownProject;
    });
    t.diagnostic(`B refused the deleted project's token ${ms.toFixed(1)} ms after A deleted it`);
  });

  test('notices of another schema are ignored', async () => {
    const bundle = await a.signIn(uniqueEmail('notify'));
    assert.deepEqual(await b.verify(bundle.access_token), { success: true });
    const sid = decodeJwt(bundle.access_token).sid as string;
    // What an instance of another deployment on the same database would send.
    await sql`select pg_notify('tessera_revocations', ${JSON.stringify({ schema: 'another', sessions: [sid] })})`.execute(
      a.storage.db.kysely,
    );
    await sleep(200);
    assert.deepEqual(await b.verify(bundle.access_token), { success: true });
  });

  test('refreshes of one token racing over both instances rotate it exactly once', async () => {
    const peer = await startServer('postgres', {
      env: { ...RELAXED_LIMITS, TESSERA_ISSUER: a.url },
      storage: a.storage,
      masterKey: a.masterKey,
    });
    try {
      for (let round = 0; round < 4; round++) {
        const bundle = await a.signIn(uniqueEmail('race'));
        const answers = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            (i % 2 === 0 ? a : peer).request('POST', '/oauth/token', {
              body: {
                grant_type: 'refresh_token',
                refresh_token: bundle.refresh_token,
                client_id: a.project.api_key_id,
              },
            }),
          ),
        );
        const statuses = answers.map((r) => (r.status === 200 ? 200 : `${r.status} ${r.body?.error}`));
        for (const status of statuses)
          assert.ok(status === 200 || status === '400 invalid_grant', String(status));
        const successors = new Set(answers.filter((r) => r.status === 200).map((r) => r.body.refresh_token));
        assert.equal(successors.size, 1, `one successor for every 200 (${statuses.join(', ')})`);
        const rows = await a.storage.db.kysely
          .selectFrom('refresh_tokens')
          .select(['rotated_at'])
          .where('session_id', '=', decodeJwt(bundle.access_token).sid as string)
          .execute();
        assert.equal(rows.length, 2, 'the original and exactly one successor');
        const [successor] = successors;
        const next = await peer.request('POST', '/oauth/token', {
          body: { grant_type: 'refresh_token', refresh_token: successor, client_id: a.project.api_key_id },
        });
        assert.equal(next.status, 200, 'the successor rotates on: the race was not taken for reuse');
      }
    } finally {
      await peer.close();
    }
  });
});

postgresOnly('the notice listener after its connection is terminated', (url) => {
  let a: TestServer;
  let b: Peer;
  let proxy: FreezableProxy;
  let listenerName: string;
  before(async () => {
    a = await startServer('postgres', { env: RELAXED_LIMITS });
    // B listens through a proxy (TESSERA_DATABASE_LISTEN_URL), which can hold its reconnection back.
    proxy = await FreezableProxy.start(url);
    b = await startPeer(a, url, { TESSERA_DATABASE_LISTEN_URL: proxy.urlFor(url) });
    listenerName = `tessera/${await schemaOf(a)}/listen`;
    await within(5_000, 'B listening', () => b.ctx.notices?.listening === true);
  });
  after(async () => {
    await b?.close();
    await a?.close();
    await proxy?.close();
  });

  test('B re-reads what it missed when it listens again, and notices work again', async () => {
    const missed = await a.signIn(uniqueEmail('notify'));
    assert.deepEqual(await b.verify(missed.access_token), { success: true });

    proxy.freeze();
    // A's own listener has the same name (without the proxy): both go, as in a database restart.
    assert.ok((await terminateBackends(url, listenerName)) >= 1);
    await within(2_000, 'B notices the loss', () => b.ctx.notices?.listening === false);
    assert.equal((await revoke(a, missed.refresh_token)).status, 200);
    // B cannot hear of it now, and does not poll within the test: the token still passes there.
    await sleep(300);
    assert.deepEqual(await b.verify(missed.access_token), { success: true });

    proxy.thaw();
    await within(3_000, 'B listens again', () => b.ctx.notices?.listening === true);
    await within(1_000, 'B refuses the token revoked while it was not listening', async () => {
      const answer = await b.verify(missed.access_token);
      return answer.success === false && answer.reason === VerifyReasons.revoked;
    });

    const later = await a.signIn(uniqueEmail('notify'));
    assert.deepEqual(await b.verify(later.access_token), { success: true });
    assert.equal((await revoke(a, later.refresh_token)).status, 200);
    await within(100, 'B refuses a token revoked after it listens again', async () => {
      const answer = await b.verify(later.access_token);
      return answer.success === false && answer.reason === VerifyReasons.revoked;
    });
  });
});
