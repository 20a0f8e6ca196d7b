import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeProtectedHeader,
  type JSONWebKeySet,
  jwtVerify,
} from 'jose';
import { runHousekeeping } from '../../src/context.js';
import { KEY_SWITCH_ALLOWANCE_MS, rotateKeys } from '../../src/keys/rotation.js';
import {
  basicAuth,
  createStorage,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';

const ENV = RELAXED_LIMITS;

const nextEmail = () => uniqueEmail('ops');

const basic = basicAuth;

async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The value of one sample in Prometheus text format: `name{a="1",b="2"} 3`. Labels not given are
 * not compared; several matching samples are summed; no sample is undefined.
 */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = new Map<string, string>();
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      found.set(pair[1]!, pair[2]!);
    if (Object.entries(labels).every(([k, v]) => found.get(k) === v)) total = (total ?? 0) + Number(match[3]);
  }
  return total;
}

async function metrics(server: TestServer, authorization?: string): Promise<string> {
  const response = await server.request(
    'GET',
    '/metrics',
    authorization ? { headers: { authorization } } : {},
  );
  assert.equal(response.status, 200, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
  return response.text;
}

function refresh(server: TestServer, refreshToken: string) {
  return server.request('POST', '/oauth/token', {
    body: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: server.project.api_key_id },
  });
}

eachDialect('metrics', (dialect) => {
  test('/metrics counts requests, sign-ins by method and outcome, refreshes, reuse and webhook deliveries', async () => {
    const receiver = createServer((_request, response) => {
      response.statusCode = 204;
      response.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve()));
    const address = receiver.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const server = await startServer(dialect, {
      env: { ...ENV, TESSERA_REFRESH_GRACE: '0', TESSERA_WEBHOOK_BACKOFF: '0' },
    }).catch(async (error) => {
      await new Promise((resolve) => receiver.close(resolve));
      throw error;
    });
    try {
      const before = await metrics(server);
      assert.match(before, /# TYPE tessera_http_requests_total counter/);
      assert.match(before, /# TYPE tessera_signins_total counter/);
      assert.equal(sample(before, 'tessera_signins_total'), undefined);
      assert.equal(sample(before, 'tessera_refreshes_total'), 0);
      assert.equal(sample(before, 'tessera_refresh_reuse_detections_total'), 0);

      const hook = await server.request('POST', '/v1/webhooks', {
        body: { url: `http://127.0.0.1:${port}/hook`, event_types: ['signin.succeeded'] },
        headers: { authorization: basic(server.project) },
      });
      assert.equal(hook.status, 201, hook.text);

      // One failed OTP guess, one sign-in, one refresh, then the rotated token again (reuse).
      const email = nextEmail();
      const headers = { api_key_id: server.project.api_key_id };
      const started = await server.request('POST', '/v1/auth/otp/start', {
        body: { identifier: email },
        headers,
      });
      const code = server.lastCode(email);
      const wrong = await server.request('POST', '/v1/auth/otp/complete', {
        body: { challenge_id: started.body.challenge_id, code: code === '111111' ? '222222' : '111111' },
        headers,
      });
      assert.equal(wrong.status, 400);
      const done = await server.request('POST', '/v1/auth/otp/complete', {
        body: { challenge_id: started.body.challenge_id, code, getOAuthToken: true },
        headers,
      });
      assert.equal(done.status, 200, done.text);
      const bundle = done.body.oauth_token as OAuthTokenBundle;
      assert.equal((await refresh(server, bundle.refresh_token)).status, 200);
      assert.equal((await refresh(server, bundle.refresh_token)).status, 400);

      const text = await waitFor('the webhook delivery to be counted', async () => {
        const current = await metrics(server);
        return (
          (sample(current, 'tessera_webhook_deliveries_total', { outcome: 'delivered' }) ?? 0) >= 1 && current
        );
      });
      const requests = (route: string, status: string) =>
        sample(text, 'tessera_http_requests_total', { method: 'POST', route, status });
      assert.equal(requests('/v1/auth/otp/start', '200'), 1);
      assert.equal(requests('/v1/auth/otp/complete', '400'), 1);
      assert.equal(requests('/v1/auth/otp/complete', '200'), 1);
      assert.equal(requests('/oauth/token', '200'), 1);
      assert.equal(requests('/oauth/token', '400'), 1);
      assert.ok(
        (sample(text, 'tessera_http_requests_total', { method: 'GET', route: '/metrics', status: '200' }) ??
          0) >= 1,
      );
      assert.equal(sample(text, 'tessera_signins_total', { method: 'otp', outcome: 'success' }), 1);
      assert.equal(sample(text, 'tessera_signins_total', { method: 'otp', outcome: 'failure' }), 1);
      assert.equal(sample(text, 'tessera_refreshes_total'), 1);
      assert.equal(sample(text, 'tessera_refresh_reuse_detections_total'), 1);
      assert.equal(sample(text, 'tessera_webhook_deliveries_total', { outcome: 'delivered' }), 1);
      assert.equal(sample(text, 'tessera_webhook_deliveries_total', { outcome: 'retry' }), undefined);
      assert.ok(
        (sample(text, 'tessera_http_request_duration_seconds_count', { route: '/v1/auth/otp/start' }) ?? 0) >=
          1,
      );
      // Labels are route patterns: no identifier, token or id ever becomes a label value.
      for (const secret of [email, code, bundle.refresh_token, bundle.access_token])
        assert.ok(!text.includes(secret));
    } finally {
      await server.close();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  test('TESSERA_METRICS_TOKEN: /metrics needs that Bearer token', async () => {
    const token = 'metrics-7c1f0a9e52b3';
    const server = await startServer(dialect, { env: { ...ENV, TESSERA_METRICS_TOKEN: token } });
    try {
      for (const authorization of [
        undefined,
        'Bearer wrong',
        `Bearer ${token}x`,
        `Basic ${Buffer.from(`:${token}`).toString('base64')}`,
        token,
      ]) {
        const response = await server.request(
          'GET',
          '/metrics',
          authorization ? { headers: { authorization } } : {},
        );
        assert.equal(response.status, 401, `${authorization}: ${response.text}`);
        assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer /);
        assert.ok(!response.text.includes('tessera_'));
        assert.ok(!response.text.includes(token));
      }
      assert.match(await metrics(server, `Bearer ${token}`), /tessera_http_requests_total/);
    } finally {
      await server.close();
    }
  });
});

eachDialect('API description', (dialect) => {
  test('/openapi.json is OpenAPI 3 with the sign-in, verify and token paths; /docs is an HTML page', async () => {
    const server = await startServer(dialect, { env: ENV });
    try {
      const doc = await server.request('GET', '/openapi.json');
      assert.equal(doc.status, 200, doc.text);
      assert.match(doc.headers.get('content-type') ?? '', /^application\/json/);
      assert.match(doc.body.openapi, /^3\.\d+\.\d+$/);
      assert.equal(typeof doc.body.info.title, 'string');
      assert.equal(typeof doc.body.info.version, 'string');
      for (const path of ['/v1/auth/otp/start', '/v1/auth/otp/complete', '/verify', '/oauth/token']) {
        assert.ok(doc.body.paths[path], `${path} is described`);
        assert.ok(doc.body.paths[path].post, `POST ${path} is described`);
      }
      const start = doc.body.paths['/v1/auth/otp/start'].post;
      assert.ok(JSON.stringify(start.requestBody).includes('identifier'));
      // The document describes itself; the page and the Prometheus text are not API operations.
      assert.equal(doc.body.paths['/openapi.json'].get.operationId, 'getOpenApiDocument');
      for (const hidden of ['/metrics', '/docs', '/docs/js/scalar.js'])
        assert.equal(doc.body.paths[hidden], undefined);

      const page = await server.request('GET', '/docs');
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(page.text, /^<!doctype html>/i);
      assert.ok(page.text.includes('/openapi.json'));
    } finally {
      await server.close();
    }
  });
});

eachDialect('signing-key rotation', (dialect) => {
  test('tokens signed before, during and after a rotation verify with jose until they expire; the old key then leaves the JWKS', async () => {
    const clock = { t: Date.now(), now: () => clock.t };
    const server = await startServer(dialect, { env: ENV, now: clock.now });
    try {
      const t0 = clock.t;
      const jwksUrl = new URL(`${server.url}/.well-known/jwks.json`);
      const kidsPublished = async () => {
        const response = await server.request('GET', '/.well-known/jwks.json');
        return (response.body as JSONWebKeySet).keys.map((k) => k.kid);
      };
      /** An integrator that caches the JWKS for the whole test (it will not refetch). */
      const cachedFor = () =>
        createRemoteJWKSet(jwksUrl, { cooldownDuration: 86_400_000, cacheMaxAge: 86_400_000 });
      const check = async (
        jwks: ReturnType<typeof createRemoteJWKSet> | ReturnType<typeof createLocalJWKSet>,
        bundle: OAuthTokenBundle,
      ) => {
        const options = {
          issuer: server.url,
          audience: server.project.api_key_id,
          algorithms: ['ES256'],
          currentDate: new Date(clock.t),
        };
        await jwtVerify(bundle.access_token, jwks, { ...options, typ: 'at+jwt' });
        await jwtVerify(bundle.id_token, jwks, { ...options, typ: 'JWT' });
      };
      const fresh = () => createRemoteJWKSet(jwksUrl);
      const verifyEndpoint = async (bundle: OAuthTokenBundle) =>
        (
          await server.request('POST', '/verify', {
            body: { oauth_token: bundle },
            headers: { api_key_id: server.project.api_key_id },
          })
        ).body;

      // Before: one key.
      const a = await server.signIn(nextEmail());
      const kid1 = decodeProtectedHeader(a.access_token).kid!;
      assert.deepEqual(await kidsPublished(), [kid1]);
      const cacheBefore = cachedFor();
      await check(cacheBefore, a);

      // During: the next key is published at once but does not sign yet.
      clock.t = t0 + 10_000;
      const kid2 = await rotateKeys(server.ctx.keys, server.config, 600, clock.t);
      assert.notEqual(kid2, kid1);
      assert.deepEqual(await kidsPublished(), [kid1, kid2]);
      const b = await server.signIn(nextEmail());
      assert.equal(decodeProtectedHeader(b.access_token).kid, kid1);
      assert.equal(decodeProtectedHeader(b.id_token).kid, kid1);
      // An integrator whose cache refreshed in this window …
      const cacheDuring = cachedFor();
      await check(cacheDuring, b);
      const snapshot = createLocalJWKSet((await server.request('GET', '/.well-known/jwks.json')).body);
      clock.t = t0 + 310_000;
      await runHousekeeping(server.ctx, clock.t);
      assert.equal(decodeProtectedHeader((await server.signIn(nextEmail())).access_token).kid, kid1);

      // After: the delay has passed; the new key signs, the old one is still published.
      clock.t = t0 + 610_000;
      await runHousekeeping(server.ctx, clock.t);
      const c = await server.signIn(nextEmail());
      assert.equal(decodeProtectedHeader(c.access_token).kid, kid2);
      assert.equal(decodeProtectedHeader(c.id_token).kid, kid2);
      assert.deepEqual(await kidsPublished(), [kid1, kid2]);
      for (const bundle of [a, b, c]) {
        await check(fresh(), bundle);
        await check(snapshot, bundle);
        await check(cacheDuring, bundle); // … verifies the new key's tokens without refetching,
        assert.deepEqual(await verifyEndpoint(bundle), { success: true });
      }
      // … whereas a cache last filled before the rotation does not know the new key.
      await check(cacheBefore, a);
      await assert.rejects(check(cacheBefore, c), { code: 'ERR_JWKS_NO_MATCHING_KEY' });

      // Each token verifies until it expires, and the old key stays published meanwhile.
      clock.t = t0 + 3_599_000;
      await runHousekeeping(server.ctx, clock.t);
      for (const bundle of [a, b, c]) await check(fresh(), bundle);
      clock.t = t0 + 3_601_000;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(await kidsPublished(), [kid1, kid2]);
      await assert.rejects(check(fresh(), a), { code: 'ERR_JWT_EXPIRED' });
      await check(fresh(), b);
      await check(fresh(), c);
      clock.t = t0 + 3_611_000;
      await assert.rejects(check(fresh(), b), { code: 'ERR_JWT_EXPIRED' });
      await check(fresh(), c);

      // The old key retires once the last token it signed has expired (plus leeway).
      const retireAt = t0 + 610_000 + KEY_SWITCH_ALLOWANCE_MS + (3600 + server.config.clockLeeway) * 1000;
      clock.t = retireAt - 1000;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(await kidsPublished(), [kid1, kid2]);
      clock.t = retireAt;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(await kidsPublished(), [kid2]);
      await assert.rejects(jwtVerify(b.access_token, fresh(), { currentDate: new Date(t0 + 20_000) }), {
        code: 'ERR_JWKS_NO_MATCHING_KEY',
      });
      const row = await server.storage.db.kysely
        .selectFrom('signing_keys')
        .select('status')
        .where('kid', '=', kid1)
        .executeTakeFirstOrThrow();
      assert.equal(row.status, 'retired');
      const verdict = await verifyEndpoint(b);
      assert.equal(verdict.success, false);
      // New tokens keep verifying with the new key.
      const d = await server.signIn(nextEmail());
      assert.equal(decodeProtectedHeader(d.access_token).kid, kid2);
      await check(fresh(), d);
      assert.deepEqual(await verifyEndpoint(d), { success: true });
    } finally {
      await server.close();
    }
  });

  test('TESSERA_KEY_ROTATION_PERIOD starts a rotation in housekeeping when due, one at a time', async () => {
    const clock = { t: Date.now(), now: () => clock.t };
    const day = 86_400_000;
    const server = await startServer(dialect, {
      env: { ...ENV, TESSERA_KEY_ROTATION_PERIOD: '86400', TESSERA_KEY_ROTATION_DELAY: '600' },
      now: clock.now,
    });
    try {
      const t0 = clock.t;
      const projectB = await server.ctx.projects.create({ name: 'b' });
      const statuses = () => server.ctx.keys.list().map((k) => k.status);
      const [first] = server.ctx.keys.list();
      assert.deepEqual(statuses(), ['active']);

      clock.t = t0 + day - 1000;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(statuses(), ['active'], 'not due yet');

      clock.t = t0 + day;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(statuses(), ['active', 'next']);
      const next = server.ctx.keys.list()[1]!;
      assert.equal(next.publicJwk.kid, next.kid);
      const jwks = await server.request('GET', '/.well-known/jwks.json');
      assert.deepEqual(
        jwks.body.keys.map((k: { kid: string }) => k.kid),
        [first!.kid, next.kid],
      );
      // Every project hears about it.
      for (const project of [server.project, projectB]) {
        const events = await waitFor('the key.rotated event', async () => {
          const response = await server.request('GET', '/v1/audit?type=key.rotated', {
            headers: { authorization: basic(project) },
          });
          return response.body.events.length > 0 && response.body.events;
        });
        assert.deepEqual(events[0].data, { kid: next.kid, by: 'automatic' });
      }

      // While one is pending, no other starts.
      clock.t = t0 + day + 300_000;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(statuses(), ['active', 'next']);

      clock.t = t0 + day + 600_000;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(statuses(), ['retiring', 'active']);
      const signed = await server.signIn(nextEmail());
      assert.equal(decodeProtectedHeader(signed.access_token).kid, next.kid);

      // The next rotation is a period after the new key began to sign.
      const activated = t0 + day + 600_000;
      clock.t = activated + day - 1000;
      await runHousekeeping(server.ctx, clock.t);
      assert.equal(statuses().filter((s) => s === 'next').length, 0);
      assert.ok(!statuses().includes('retiring'), 'the old key has retired by now');
      clock.t = activated + day;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(statuses(), ['active', 'next']);
    } finally {
      await server.close();
    }
  });

  test('without TESSERA_KEY_ROTATION_PERIOD housekeeping never rotates', async () => {
    const clock = { t: Date.now(), now: () => clock.t };
    const server = await startServer(dialect, { env: ENV, now: clock.now });
    try {
      clock.t += 400 * 86_400_000;
      await runHousekeeping(server.ctx, clock.t);
      assert.deepEqual(
        server.ctx.keys.list().map((k) => k.status),
        ['active'],
      );
    } finally {
      await server.close();
    }
  });
});

eachDialect('storage', (dialect) => {
  // Regression: on PostgreSQL, migrating a fresh schema failed ("relation kysely_migration_lock
  // does not exist") once another schema of the same database had been migrated.
  test('a second database (PostgreSQL: schema) migrates while another is in use', async () => {
    const first = await createStorage(dialect);
    try {
      const second = await createStorage(dialect);
      try {
        const tables = await second.db.kysely.selectFrom('users').select('id').execute();
        assert.deepEqual(tables, []);
      } finally {
        await second.cleanup();
      }
    } finally {
      await first.cleanup();
    }
  });
});
