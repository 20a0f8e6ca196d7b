import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt } from 'jose';
import { sql } from 'kysely';
import { recordKeyRotation } from '../../src/context.js';
import { TesseraError } from '../../src/errors.js';
import { rotateKeys } from '../../src/keys/rotation.js';
import { createLogger } from '../../src/logger.js';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import { WebhooksService } from '../../src/modules/webhooks/webhooks.service.js';
import {
  basicAuth,
  createStorage,
  eachDialect,
  freePort,
  postgresUrl,
  RELAXED_LIMITS,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import { lowS } from '../helpers/sign-in-methods.js';

const ENV = RELAXED_LIMITS;

const nextEmail = () => uniqueEmail('audit');

const basic = basicAuth;

function integrator(server: TestServer, project: ProjectCredentials = server.project) {
  return (method: string, path: string, body?: unknown): Promise<TestResponse> =>
    server.request(method, path, {
      ...(body !== undefined ? { body } : {}),
      headers: { authorization: basic(project) },
    });
}

/** Polls `check` until it returns something truthy; fails after `timeoutMs` saying what was awaited. */
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

interface Audited {
  event_id: string;
  type: string;
  user_id: string | null;
  data: Record<string, unknown>;
  created_at: string;
}

// ---------------------------------------------------------------------------------------------
// A webhook receiver on loopback.

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Receiver {
  url: string;
  port: number;
  received: Received[];
  close(): Promise<void>;
}

/** Answers each request with `status(n)` for the n-th request (0-based). */
async function startReceiver(status: (n: number) => number, port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const n = received.length;
      received.push({
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      response.statusCode = status(n);
      response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return {
    url: `http://127.0.0.1:${bound}`,
    port: bound,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Standard Webhooks verification as an integrator writes it: HMAC-SHA256 keyed with the
 * base64-decoded part of `whsec_…` over `${webhook-id}.${webhook-timestamp}.${body}`, compared with
 * each `v1,` signature of the header in constant time.
 */
function signatureValid(secret: string, delivery: Received): boolean {
  const id = delivery.headers['webhook-id'];
  const timestamp = delivery.headers['webhook-timestamp'];
  const header = delivery.headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof header !== 'string') return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${delivery.body}`).digest();
  return header.split(' ').some((candidate) => {
    const [version, signature] = candidate.split(',');
    if (version !== 'v1' || !signature) return false;
    const actual = Buffer.from(signature, 'base64');
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  });
}

// ---------------------------------------------------------------------------------------------
// Devices (WebCrypto P-256, raw r‖s signatures), for the PIN and device events.

async function sign(keys: CryptoKeyPair, message: string): Promise<string> {
  const signature = await crypto.subtle.sign(
    { name: 'ECDSA', hash: 'SHA-256' },
    keys.privateKey,
    new TextEncoder().encode(message),
  );
  return lowS(signature).toString('base64url');
}

async function registerDevice(server: TestServer, bundle: OAuthTokenBundle) {
  const keys = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, [
    'sign',
    'verify',
  ]);
  const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', keys.publicKey);
  const authorization = `Bearer ${bundle.access_token}`;
  const start = await server.request('POST', '/v1/devices/register/start', { headers: { authorization } });
  assert.equal(start.status, 200, start.text);
  const { challenge_id, nonce } = start.body;
  const message = `tessera/v1/device-register\n${server.project.api_key_id}\n${challenge_id}\n${nonce}`;
  const registered = await server.request('POST', '/v1/devices', {
    body: { challenge_id, public_key: { kty, crv, x, y }, signature: await sign(keys, message) },
    headers: { authorization },
  });
  assert.equal(registered.status, 201, registered.text);
  return { deviceId: registered.body.device_id as string, keys };
}

async function pinSignIn(server: TestServer, device: { deviceId: string; keys: CryptoKeyPair }, pin: string) {
  const headers = { api_key_id: server.project.api_key_id };
  const start = await server.request('POST', '/v1/auth/pin/start', {
    body: { device_id: device.deviceId },
    headers,
  });
  assert.equal(start.status, 200, start.text);
  const { challenge_id, nonce } = start.body;
  const message = `tessera/v1/pin-signin\n${server.project.api_key_id}\n${challenge_id}\n${nonce}`;
  return server.request('POST', '/v1/auth/pin/complete', {
    body: { challenge_id, signature: await sign(device.keys, message), pin, getOAuthToken: true },
    headers,
  });
}

// ---------------------------------------------------------------------------------------------
// `tessera projects rotate-secret`, the real CLI against the server's database.

const root = fileURLToPath(new URL('../../../../', import.meta.url));

async function databaseUrlOf(server: TestServer): Promise<string> {
  if (server.storage.db.dialect === 'sqlite') return server.storage.url;
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
    server.storage.db.kysely,
  );
  const url = new URL(postgresUrl!);
  url.searchParams.set('options', `-c search_path=${rows[0]!.schema}`);
  return url.toString();
}

async function cli(
  server: TestServer,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.startsWith('TESSERA_') && name !== 'NODE_ENV') env[name] = value;
  const dataDir = mkdtempSync(join(tmpdir(), 'tessera-audit-cli-'));
  Object.assign(env, {
    TESSERA_DATABASE_URL: await databaseUrlOf(server),
    TESSERA_MASTER_KEY: server.masterKey,
    TESSERA_DATA_DIR: dataDir,
    TESSERA_LOG_LEVEL: 'silent',
  });
  const child = spawn(
    process.execPath,
    ['--conditions=tessera-source', '--import', 'tsx', 'packages/server/src/cli.ts', ...args],
    { cwd: root, env, stdio: 'pipe' },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  rmSync(dataDir, { recursive: true, force: true });
  return { code, stdout, stderr };
}

// ---------------------------------------------------------------------------------------------

eachDialect('audit log', (dialect) => {
  let server: TestServer;
  // The server's clock runs well behind the wall clock, so the CLI (which records with the real
  // time) comes last however far the phases below move the server's clock on.
  const clock = { t: Date.now() - 10_000_000, now: () => clock.t };
  before(async () => {
    server = await startServer(dialect, { env: ENV, now: clock.now });
  });
  after(() => server.close());

  test('security events are recorded, queryable by user, type and time, paged, and hold no secret or identifier', async () => {
    const api = integrator(server);
    const secrets: string[] = [];
    const email = nextEmail();
    secrets.push(email);
    const headers = { api_key_id: server.project.api_key_id };
    const phase: Record<string, number> = {};

    // Phase 1: OTP sent, a wrong code, then the right one.
    phase.otp = clock.t;
    const started = await server.request('POST', '/v1/auth/otp/start', {
      body: { identifier: email },
      headers,
    });
    assert.equal(started.status, 200, started.text);
    const code = server.lastCode(email);
    const wrong = code === '000000' ? '000001' : '000000';
    secrets.push(code);
    const failed = await server.request('POST', '/v1/auth/otp/complete', {
      body: { challenge_id: started.body.challenge_id, code: wrong, getOAuthToken: true },
      headers,
    });
    assert.equal(failed.status, 400, failed.text);
    const done = await server.request('POST', '/v1/auth/otp/complete', {
      body: { challenge_id: started.body.challenge_id, code, getOAuthToken: true },
      headers,
    });
    assert.equal(done.status, 200, done.text);
    const bundle = done.body.oauth_token as OAuthTokenBundle;
    const userId = decodeJwt(bundle.access_token).sub!;
    secrets.push(bundle.access_token, bundle.id_token, bundle.refresh_token);

    // Phase 2: refresh, then reuse of the rotated token after the grace window.
    clock.t += 1000_000;
    phase.refresh = clock.t;
    const second = await server.signIn(email);
    secrets.push(second.access_token, second.refresh_token, server.lastCode(email));
    const refreshed = await server.request('POST', '/oauth/token', {
      body: {
        grant_type: 'refresh_token',
        refresh_token: second.refresh_token,
        client_id: server.project.api_key_id,
      },
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    secrets.push(refreshed.body.access_token, refreshed.body.refresh_token);
    clock.t += (server.config.refreshGrace + 1) * 1000;
    const reused = await server.request('POST', '/oauth/token', {
      body: {
        grant_type: 'refresh_token',
        refresh_token: second.refresh_token,
        client_id: server.project.api_key_id,
      },
    });
    assert.equal(reused.status, 400, reused.text);

    // Phase 3: PIN set, a device added, five wrong PINs lock PIN sign-in, the device removed.
    // Enrolment needs a recent OTP or passkey sign-in: the user signs in again first.
    clock.t += 1000_000;
    const fresh = await server.signIn(email);
    secrets.push(fresh.access_token, fresh.refresh_token, server.lastCode(email));
    clock.t += 1;
    phase.device = clock.t;
    const pin = '480213';
    secrets.push(pin);
    const pinSet = await server.request('PUT', '/v1/pin', {
      body: { pin },
      headers: { authorization: `Bearer ${fresh.access_token}` },
    });
    assert.equal(pinSet.status, 200, pinSet.text);
    const device = await registerDevice(server, fresh);
    for (let i = 0; i < 5; i++) {
      const wrongPin = `9${String(1000 + i)}7`;
      secrets.push(wrongPin);
      const response = await pinSignIn(server, device, wrongPin);
      assert.equal(response.status, i < 4 ? 401 : 423, response.text);
    }
    const removed = await api('DELETE', `/v1/users/${userId}/devices/${device.deviceId}`);
    assert.equal(removed.status, 204, removed.text);

    // Phase 4: claims changed; the integrator revokes the remaining session.
    clock.t += 1000_000;
    phase.integrator = clock.t;
    assert.equal(
      (await api('PUT', `/v1/users/${userId}/claims`, { claims: { role: 'admin', tier: 2 } })).status,
      200,
    );
    const revoked = await api('POST', `/v1/users/${userId}/sessions/revoke`, {});
    assert.equal(revoked.status, 200, revoked.text);
    // And the user signs out (RFC 7009). Regression: a sign-out was not recorded.
    const third = await server.signIn(email);
    secrets.push(third.access_token, third.refresh_token, server.lastCode(email));
    const signOut = await server.request('POST', '/oauth/revoke', {
      body: { token: third.refresh_token, client_id: server.project.api_key_id },
    });
    assert.equal(signOut.status, 200, signOut.text);

    // Phase 5: operator actions — a signing-key rotation (as `tessera keys rotate`) and a new API
    // key secret by the real CLI.
    clock.t += 1000_000;
    phase.operator = clock.t;
    const kid = await rotateKeys(server.ctx.keys, server.config, 0, clock.t);
    await recordKeyRotation(server.ctx.audit, await server.ctx.projects.list(), kid, 'cli');
    const rotation = await cli(server, ['projects', 'rotate-secret', server.project.api_key_id, '--json']);
    assert.equal(rotation.code, 0, rotation.stderr);
    const rotated = JSON.parse(rotation.stdout) as { api_key_id: string; api_key_secret: string };
    assert.equal(rotated.api_key_id, server.project.api_key_id);
    assert.notEqual(rotated.api_key_secret, server.project.api_key_secret);
    assert.equal((await api('GET', '/v1/audit')).status, 401, 'the old secret stops working at once');
    const query = integrator(server, { ...server.project, api_key_secret: rotated.api_key_secret });
    secrets.push(server.project.api_key_secret, rotated.api_key_secret);
    server.project.api_key_secret = rotated.api_key_secret;
    phase.end = Date.now() + 60_000;

    const all = async (params = ''): Promise<Audited[]> => {
      const response = await query('GET', `/v1/audit?limit=500${params}`);
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.next_before, null);
      return response.body.events;
    };
    // Some events are recorded after the answer: wait until the last of them is in.
    const events = await waitFor('the audit events', async () => {
      const list = await all();
      return list.some((e) => e.type === 'project.secret_rotated') && list.length >= 20 && list;
    });
    const types = new Set(events.map((e) => e.type));
    for (const type of [
      'otp.sent',
      'signin.failed',
      'signin.succeeded',
      'refresh',
      'refresh.reuse_detected',
      'pin.set',
      'device.added',
      'pin.locked',
      'device.removed',
      'claims.changed',
      'session.revoked',
      'key.rotated',
      'project.secret_rotated',
    ])
      assert.ok(types.has(type), `no ${type} event in ${[...types].join(', ')}`);

    const one = (type: string) => events.filter((e) => e.type === type);
    assert.deepEqual(one('signin.failed').find((e) => e.data.method === 'OTP')?.data, {
      method: 'OTP',
      reason: 'invalid_code',
    });
    assert.equal(one('signin.failed').filter((e) => e.data.method === 'PIN').length, 5);
    assert.equal(one('signin.succeeded')[0]!.user_id, userId);
    assert.deepEqual(one('otp.sent')[0]!.data, { channel: 'email' });
    assert.equal(one('refresh.reuse_detected')[0]!.data.session_id, decodeJwt(second.access_token).sid);
    assert.deepEqual(one('claims.changed')[0]!.data, { names: 'role,tier' });
    assert.deepEqual(one('key.rotated')[0]!.data, { kid, by: 'cli' });
    assert.deepEqual(one('project.secret_rotated')[0]!.data, { by: 'cli' });
    assert.equal(one('device.removed')[0]!.data.device_id, device.deviceId);
    assert.equal(one('pin.locked')[0]!.user_id, userId);
    assert.deepEqual(
      one('session.revoked')
        .map((e) => e.data)
        .sort(
          (x, y) =>
            String(y.by).localeCompare(String(x.by)) ||
            String(x.session_id).localeCompare(String(y.session_id)),
        ),
      [
        { session_id: decodeJwt(third.access_token).sid, by: 'user' },
        ...[bundle, fresh]
          .map((b) => ({ session_id: decodeJwt(b.access_token).sid, by: 'integrator' }))
          .sort((x, y) => String(x.session_id).localeCompare(String(y.session_id))),
      ],
    );
    // Newest first.
    const times = events.map((e) => Date.parse(e.created_at));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
    );

    // No code, token, PIN, secret or identifier anywhere: not in the API's answer, not in the table.
    const stored = await server.storage.db.kysely
      .selectFrom('audit_events')
      .select(['id', 'user_id', 'type', 'data', 'ip'])
      .execute();
    const everything = `${JSON.stringify(events)}\n${JSON.stringify(stored)}`.toLowerCase();
    for (const secret of secrets)
      assert.ok(!everything.includes(secret.toLowerCase()), 'the audit log holds a secret');

    // By user: only that user's events (OTP sends and key rotations name no user).
    const mine = await all(`&user_id=${userId}`);
    assert.ok(mine.length > 10);
    assert.ok(mine.every((e) => e.user_id === userId));
    assert.ok(!mine.some((e) => e.type === 'otp.sent' || e.type === 'key.rotated'));
    assert.deepEqual(await all('&user_id=nobody'), []);

    // By type.
    const pinFailures = await all('&type=signin.failed');
    assert.equal(pinFailures.length, 6);
    assert.ok(pinFailures.every((e) => e.type === 'signin.failed'));

    // By time: [from, to), as ISO 8601 or Unix seconds.
    const iso = (ms: number) => new Date(ms).toISOString();
    const devicePhase = await all(`&from=${iso(phase.device!)}&to=${iso(phase.integrator!)}`);
    assert.deepEqual([...new Set(devicePhase.map((e) => e.type))].sort(), [
      'device.added',
      'device.removed',
      'pin.locked',
      'pin.set',
      'signin.failed',
    ]);
    const seconds = (ms: number) => String(Math.floor(ms / 1000));
    const otpPhase = await all(`&from=${seconds(phase.otp!)}&to=${seconds(phase.refresh!)}`);
    assert.deepEqual([...new Set(otpPhase.map((e) => e.type))].sort(), [
      'otp.sent',
      'signin.failed',
      'signin.succeeded',
      'user.created',
    ]);
    const refreshFailures = await all(`&type=refresh.reuse_detected&from=${iso(phase.refresh!)}`);
    assert.equal(refreshFailures.length, 1);
    assert.deepEqual(await all(`&from=${iso(phase.end!)}`), []);
    const bad = await query('GET', '/v1/audit?from=yesterday');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.code, 'invalid_request');
    // A page size outside 1–500 is refused, not quietly clamped.
    for (const limit of ['0', '501', '9999']) {
      const refused = await query('GET', `/v1/audit?limit=${limit}`);
      assert.equal(refused.status, 400, `limit=${limit}: ${refused.text}`);
      assert.match(refused.body.detail, /from 1 to 500/);
    }

    // Paging with `before`: pages of 4 add up to the whole list, in order, without repeats.
    const paged: Audited[] = [];
    let before: string | null = null;
    for (let page = 0; page < 100; page++) {
      const response: TestResponse = await query(
        'GET',
        `/v1/audit?limit=4${before ? `&before=${before}` : ''}`,
      );
      assert.equal(response.status, 200, response.text);
      assert.ok(response.body.events.length <= 4);
      paged.push(...response.body.events);
      before = response.body.next_before;
      if (before === null) break;
      assert.equal(before, response.body.events.at(-1).event_id);
    }
    assert.equal(before, null);
    assert.deepEqual(
      paged.map((e) => e.event_id),
      events.map((e) => e.event_id),
    );
  });

  test("a project sees only its own events; the audit API needs the project's secret", async () => {
    const projectB = await server.ctx.projects.create({ name: 'b' });
    const email = nextEmail();
    const userA = decodeJwt((await server.signIn(email)).access_token).sub!;
    const userB = decodeJwt((await server.signIn(email, projectB)).access_token).sub!;
    const apiB = integrator(server, projectB);
    const inB = await waitFor('project B events', async () => {
      const response = await apiB('GET', '/v1/audit');
      return response.body.events.some((e: Audited) => e.type === 'signin.succeeded') && response;
    });
    assert.ok(inB.body.events.every((e: Audited) => e.user_id === null || e.user_id === userB));
    assert.deepEqual((await apiB('GET', `/v1/audit?user_id=${userA}`)).body.events, []);
    const inA = await integrator(server)('GET', `/v1/audit?user_id=${userA}`);
    assert.ok(inA.body.events.length > 0);
    assert.deepEqual((await integrator(server)('GET', `/v1/audit?user_id=${userB}`)).body.events, []);
    const anonymous = await server.request('GET', '/v1/audit');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.code, 'invalid_client');
  });
});

eachDialect('webhooks', (dialect) => {
  test('a delivery that fails twice arrives on the third attempt, signed, with the same webhook-id', async () => {
    const receiver = await startReceiver((n) => (n < 2 ? 500 : 204));
    const server = await startServer(dialect, { env: { ...ENV, TESSERA_WEBHOOK_BACKOFF: '0,0,0' } }).catch(
      async (error) => {
        await receiver.close();
        throw error;
      },
    );
    try {
      const api = integrator(server);
      const created = await api('POST', '/v1/webhooks', {
        url: `${receiver.url}/hooks/tessera`,
        event_types: ['signin.succeeded'],
      });
      assert.equal(created.status, 201, created.text);
      const { webhook_id: webhookId, secret } = created.body;
      assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      assert.ok(Buffer.from(secret.slice(6), 'base64').length >= 24);
      assert.deepEqual(created.body.event_types, ['signin.succeeded']);
      assert.equal(created.body.url, `${receiver.url}/hooks/tessera`);
      const listed = await api('GET', '/v1/webhooks');
      assert.equal(listed.body.webhooks.length, 1);
      assert.equal(listed.body.webhooks[0].secret, undefined, 'the secret is shown once');
      assert.ok(!listed.text.includes(secret.slice(6)));

      const email = nextEmail();
      const bundle = await server.signIn(email);
      const userId = decodeJwt(bundle.access_token).sub!;

      await waitFor('three attempts', async () => receiver.received.length >= 3);
      const deliveries = await waitFor('the delivery to be marked delivered', async () => {
        const response = await api('GET', `/v1/webhooks/${webhookId}/deliveries`);
        return response.body.deliveries[0]?.status === 'delivered' && response.body.deliveries;
      });
      assert.equal(receiver.received.length, 3, 'no attempt after the success');

      const [first, secondAttempt, third] = receiver.received as [Received, Received, Received];
      for (const attempt of receiver.received) {
        assert.equal(attempt.path, '/hooks/tessera');
        assert.equal(attempt.headers['content-type'], 'application/json');
        assert.match(String(attempt.headers['webhook-timestamp']), /^\d+$/);
        assert.ok(Math.abs(Number(attempt.headers['webhook-timestamp']) - Date.now() / 1000) < 300);
        assert.ok(signatureValid(secret, attempt), 'the signature verifies with the endpoint secret');
        assert.ok(!signatureValid(`whsec_${randomBytes(24).toString('base64')}`, attempt));
        assert.ok(!signatureValid(secret, { ...attempt, body: attempt.body.replace('OTP', 'PIN') }));
        assert.equal(attempt.body, first.body, 'retries send the same payload');
      }
      assert.equal(secondAttempt.headers['webhook-id'], first.headers['webhook-id']);
      assert.equal(third.headers['webhook-id'], first.headers['webhook-id']);

      const payload = JSON.parse(first.body);
      assert.equal(payload.type, 'signin.succeeded');
      assert.ok(!Number.isNaN(Date.parse(payload.timestamp)));
      assert.equal(payload.data.user_id, userId);
      assert.equal(payload.data.method, 'OTP');
      const audit = await api('GET', '/v1/audit?type=signin.succeeded');
      assert.equal(payload.data.event_id, audit.body.events[0].event_id);
      for (const secretValue of [email, bundle.access_token, bundle.refresh_token, server.lastCode(email)])
        assert.ok(!first.body.includes(secretValue));

      assert.equal(deliveries.length, 1);
      assert.equal(deliveries[0].delivery_id, first.headers['webhook-id']);
      assert.equal(deliveries[0].event_type, 'signin.succeeded');
      assert.equal(deliveries[0].attempts, 3);
      assert.equal(deliveries[0].last_status_code, 204);
      assert.equal(deliveries[0].last_error, null);
      assert.equal(deliveries[0].next_attempt_at, null);
      assert.ok(deliveries[0].delivered_at);
      const endpoint = await api('GET', `/v1/webhooks/${webhookId}`);
      assert.equal(endpoint.body.last_status, 'delivered (204)');
      assert.ok(endpoint.body.last_attempt_at);
    } finally {
      await server.close();
      await receiver.close();
    }
  });

  test('a delivery that keeps failing stops after the last backoff step, marked failed', async () => {
    const receiver = await startReceiver(() => 500);
    const server = await startServer(dialect, { env: { ...ENV, TESSERA_WEBHOOK_BACKOFF: '0,0' } }).catch(
      async (error) => {
        await receiver.close();
        throw error;
      },
    );
    try {
      const api = integrator(server);
      const created = await api('POST', '/v1/webhooks', {
        url: receiver.url,
        event_types: ['signin.succeeded'],
      });
      assert.equal(created.status, 201, created.text);
      await server.signIn(nextEmail());
      const [delivery] = await waitFor('the delivery to fail', async () => {
        const response = await api('GET', `/v1/webhooks/${created.body.webhook_id}/deliveries`);
        return response.body.deliveries[0]?.status === 'failed' && response.body.deliveries;
      });
      assert.equal(receiver.received.length, 3);
      assert.equal(delivery.attempts, 3);
      assert.equal(delivery.last_status_code, 500);
      assert.equal(delivery.last_error, 'endpoint answered 500');
      assert.equal(delivery.next_attempt_at, null);
      assert.equal(delivery.delivered_at, null);
      const endpoint = await api('GET', `/v1/webhooks/${created.body.webhook_id}`);
      assert.equal(endpoint.body.last_status, 'failed: endpoint answered 500');
    } finally {
      await server.close();
      await receiver.close();
    }
  });

  test('an event and its deliveries are stored before the answer goes out, in one transaction', async () => {
    const port = await freePort(); // nothing listens: deliveries stay pending
    const server = await startServer(dialect, { env: { ...ENV, TESSERA_WEBHOOK_BACKOFF: '3600' } });
    try {
      const api = integrator(server);
      const created = await api('POST', '/v1/webhooks', {
        url: `http://127.0.0.1:${port}/hook`,
        event_types: ['refresh', 'session.revoked'],
      });
      assert.equal(created.status, 201, created.text);
      const bundle = await server.signIn(nextEmail());
      const refreshed = await server.request('POST', '/oauth/token', {
        body: {
          grant_type: 'refresh_token',
          refresh_token: bundle.refresh_token,
          client_id: server.project.api_key_id,
        },
      });
      assert.equal(refreshed.status, 200, refreshed.text);
      const revoked = await server.request('POST', '/oauth/revoke', {
        body: { token: refreshed.body.refresh_token, client_id: server.project.api_key_id },
      });
      assert.equal(revoked.status, 200, revoked.text);
      // Read at once, without waiting: both answers came after their events were committed.
      const { kysely } = server.storage.db;
      const events = await kysely.selectFrom('audit_events').select(['id', 'type']).execute();
      const deliveries = await kysely
        .selectFrom('webhook_deliveries')
        .select(['event_type', 'payload'])
        .execute();
      for (const type of ['refresh', 'session.revoked']) {
        const event = events.find((e) => e.type === type);
        assert.ok(event, `the ${type} event is stored`);
        const delivery = deliveries.find((d) => d.event_type === type);
        assert.ok(delivery, `the ${type} delivery is stored`);
        assert.equal(JSON.parse(delivery.payload).data.event_id, event.id);
      }
      assert.ok(
        !deliveries.some((d) => d.event_type === 'signin.succeeded'),
        'unsubscribed types are not queued',
      );
    } finally {
      await server.close();
    }
  });

  test('a pending delivery survives a restart: the next server delivers it once the receiver is up', async () => {
    const clock = { t: Date.now(), now: () => clock.t };
    const storage = await createStorage(dialect);
    const masterKey = randomBytes(32).toString('base64');
    const port = await freePort(); // nothing listens here yet: the receiver is down
    const options = { storage, masterKey, now: clock.now, env: { ...ENV, TESSERA_WEBHOOK_BACKOFF: '1,1,1' } };
    let receiver: Receiver | undefined;
    let second: TestServer | undefined;
    try {
      const first = await startServer(dialect, options);
      const project = first.project;
      let webhookId: string;
      let secret: string;
      let pending: { delivery_id: string };
      try {
        const api = integrator(first);
        const created = await api('POST', '/v1/webhooks', {
          url: `http://127.0.0.1:${port}/hook`,
          event_types: ['signin.succeeded'],
        });
        assert.equal(created.status, 201, created.text);
        ({ webhook_id: webhookId, secret } = created.body);
        await first.signIn(nextEmail());
        [pending] = await waitFor('a failed first attempt', async () => {
          const response = await api('GET', `/v1/webhooks/${webhookId}/deliveries`);
          const [delivery] = response.body.deliveries;
          return delivery?.attempts === 1 && response.body.deliveries;
        });
        const [row] = await waitFor('the delivery to be released', async () => {
          const rows = await storage.db.kysely.selectFrom('webhook_deliveries').selectAll().execute();
          return rows[0]?.locked_until === null && rows;
        });
        assert.equal(row!.status, 'pending');
        assert.equal(row!.last_error, 'connection failed');
        assert.equal(row!.next_attempt_at, clock.t + 1000);
      } finally {
        await first.close();
      }

      second = await startServer(dialect, options);
      receiver = await startReceiver(() => 200, port);
      clock.t += 2000; // the retry is now due
      await waitFor('the delivery after the restart', async () => receiver!.received.length >= 1);
      const [arrived] = receiver.received as [Received];
      assert.equal(arrived.headers['webhook-id'], pending.delivery_id);
      assert.ok(signatureValid(secret, arrived));
      assert.equal(JSON.parse(arrived.body).type, 'signin.succeeded');
      const api = integrator(second, project);
      const [delivery] = await waitFor('the delivery to be marked delivered', async () => {
        const response = await api('GET', `/v1/webhooks/${webhookId}/deliveries`);
        return response.body.deliveries[0]?.status === 'delivered' && response.body.deliveries;
      });
      assert.equal(delivery.attempts, 2);
      assert.equal(delivery.last_status_code, 200);
      assert.equal(receiver.received.length, 1);
    } finally {
      await second?.close();
      await receiver?.close();
      await storage.cleanup();
    }
  });

  test('event_types filters what each endpoint receives; unknown types and bad URLs are refused', async () => {
    const receiver = await startReceiver(() => 204);
    const server = await startServer(dialect, { env: { ...ENV, TESSERA_WEBHOOK_BACKOFF: '0' } }).catch(
      async (error) => {
        await receiver.close();
        throw error;
      },
    );
    try {
      const api = integrator(server);
      const subscribe = async (path: string, eventTypes?: string[]) => {
        const response = await api('POST', '/v1/webhooks', {
          url: `${receiver.url}${path}`,
          ...(eventTypes ? { event_types: eventTypes } : {}),
        });
        assert.equal(response.status, 201, response.text);
        return response.body;
      };
      const refreshOnly = await subscribe('/refresh', ['refresh']);
      const everything = await subscribe('/all');
      assert.deepEqual(everything.event_types, ['*']);
      const signIns = await subscribe('/signins', ['signin.succeeded', 'signin.failed', 'signin.succeeded']);
      assert.deepEqual(signIns.event_types, ['signin.succeeded', 'signin.failed']);

      const bundle = await server.signIn(nextEmail());
      const refreshed = await server.request('POST', '/oauth/token', {
        body: {
          grant_type: 'refresh_token',
          refresh_token: bundle.refresh_token,
          client_id: server.project.api_key_id,
        },
      });
      assert.equal(refreshed.status, 200, refreshed.text);

      const typesAt = (path: string) =>
        receiver.received
          .filter((r) => r.path === path)
          .map((r) => JSON.parse(r.body).type as string)
          .sort();
      await waitFor('every delivery', async () => receiver.received.length >= 6);
      // Whatever else may still come, nothing outside a subscription ever arrives.
      await waitFor('all deliveries to finish', async () => {
        const rows = await server.storage.db.kysely
          .selectFrom('webhook_deliveries')
          .select('status')
          .where('status', '=', 'pending')
          .execute();
        return rows.length === 0;
      });
      assert.deepEqual(typesAt('/refresh'), ['refresh']);
      assert.deepEqual(typesAt('/all'), ['otp.sent', 'refresh', 'signin.succeeded', 'user.created']);
      assert.deepEqual(typesAt('/signins'), ['signin.succeeded']);
      const refreshDeliveries = await api('GET', `/v1/webhooks/${refreshOnly.webhook_id}/deliveries`);
      assert.deepEqual(
        refreshDeliveries.body.deliveries.map((d: { event_type: string }) => d.event_type),
        ['refresh'],
      );
      // Each endpoint has a secret of its own.
      const refreshDelivery = receiver.received.find((r) => r.path === '/refresh')!;
      assert.ok(signatureValid(refreshOnly.secret, refreshDelivery));
      assert.ok(!signatureValid(everything.secret, refreshDelivery));

      const unknown = await api('POST', '/v1/webhooks', { url: receiver.url, event_types: ['signin.maybe'] });
      assert.equal(unknown.status, 400, unknown.text);
      assert.match(unknown.body.detail, /unknown event type "signin\.maybe"/);
      assert.match(unknown.body.detail, /signin\.succeeded/);
      for (const url of ['not a url', 'ftp://example.com/hook', 'http://user:pass@127.0.0.1/hook']) {
        const response = await api('POST', '/v1/webhooks', { url });
        assert.equal(response.status, 400, `${url}: ${response.text}`);
        assert.equal(response.body.code, 'invalid_request');
      }
      assert.equal((await api('GET', '/v1/webhooks')).body.webhooks.length, 3);
    } finally {
      await server.close();
      await receiver.close();
    }
  });

  // Regression: the CLI recorded these events in the audit log only; no webhook ever went out.
  test('key and secret rotations made with the CLI reach the webhooks (sent by a running server)', async () => {
    const receiver = await startReceiver(() => 204);
    const server = await startServer(dialect, { env: ENV }).catch(async (error) => {
      await receiver.close();
      throw error;
    });
    try {
      const created = await integrator(server)('POST', '/v1/webhooks', {
        url: receiver.url,
        event_types: ['key.rotated', 'project.secret_rotated'],
      });
      assert.equal(created.status, 201, created.text);
      const keys = await cli(server, ['keys', 'rotate', '--delay', '3600']);
      assert.equal(keys.code, 0, keys.stderr);
      const secret = await cli(server, ['projects', 'rotate-secret', server.project.api_key_id, '--json']);
      assert.equal(secret.code, 0, secret.stderr);
      assert.equal(JSON.parse(secret.stdout).api_key_id, server.project.api_key_id);

      await waitFor('both deliveries', async () => receiver.received.length >= 2);
      const payloads = receiver.received.map((r) => JSON.parse(r.body));
      assert.deepEqual(payloads.map((p) => p.type).sort(), ['key.rotated', 'project.secret_rotated']);
      for (const payload of payloads) assert.equal(payload.data.by, 'cli');
      const kid = payloads.find((p) => p.type === 'key.rotated').data.kid;
      await server.ctx.keys.reload();
      assert.ok(server.ctx.keys.list().some((k) => k.kid === kid && k.status === 'next'));
      for (const delivery of receiver.received) assert.ok(signatureValid(created.body.secret, delivery));
    } finally {
      await server.close();
      await receiver.close();
    }
  });

  test('https is required when http is not allowed (production)', async () => {
    const server = await startServer(dialect, { env: ENV });
    try {
      const project = (await server.ctx.projects.byApiKeyId(server.project.api_key_id))!;
      const production = new WebhooksService(
        server.storage.db,
        randomBytes(32),
        {
          backoff: [5],
          timeoutMs: 1000,
          allowHttp: false,
          allowPrivate: false,
          maxEndpoints: 10,
          deliveriesPerMinute: 600,
        },
        createLogger('silent'),
      );
      await assert.rejects(
        production.create(project, { url: 'http://hooks.example.com/tessera' }),
        (error) => {
          assert.ok(error instanceof TesseraError);
          assert.equal(error.statusCode, 400);
          assert.equal(error.code, 'invalid_request');
          assert.match(error.message, /https/);
          return true;
        },
      );
      const created = await production.create(project, { url: 'https://hooks.example.com/tessera' });
      assert.equal(created.url, 'https://hooks.example.com/tessera');
      assert.match(created.secret, /^whsec_/);
      // The test server (not production) allows http for local receivers.
      const local = await integrator(server)('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/x' });
      assert.equal(local.status, 201, local.text);
    } finally {
      await server.close();
    }
  });

  test("a second project can neither see nor delete the first project's endpoints", async () => {
    const server = await startServer(dialect, { env: ENV });
    try {
      const projectB = await server.ctx.projects.create({ name: 'b' });
      const apiA = integrator(server);
      const apiB = integrator(server, projectB);
      const created = await apiA('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/a' });
      assert.equal(created.status, 201, created.text);
      const id = created.body.webhook_id;
      const ownB = await apiB('POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/b' });

      const listedB = await apiB('GET', '/v1/webhooks');
      assert.deepEqual(
        listedB.body.webhooks.map((w: { webhook_id: string }) => w.webhook_id),
        [ownB.body.webhook_id],
      );
      for (const [method, path] of [
        ['GET', `/v1/webhooks/${id}`],
        ['GET', `/v1/webhooks/${id}/deliveries`],
        ['DELETE', `/v1/webhooks/${id}`],
      ] as const) {
        const response = await apiB(method, path);
        assert.equal(response.status, 404, `${method} ${path}: ${response.text}`);
        assert.equal(response.body.code, 'not_found');
        const anonymous = await server.request(method, path);
        assert.equal(anonymous.status, 401);
        assert.equal(anonymous.body.code, 'invalid_client');
      }
      assert.equal((await server.request('GET', '/v1/webhooks')).status, 401);
      assert.equal((await apiA('GET', `/v1/webhooks/${id}`)).status, 200);
      assert.equal((await apiA('GET', '/v1/webhooks')).body.webhooks.length, 1);
      // Its owner can.
      assert.equal((await apiA('DELETE', `/v1/webhooks/${id}`)).status, 204);
      assert.equal((await apiA('GET', `/v1/webhooks/${id}`)).status, 404);
      assert.equal((await apiB('GET', '/v1/webhooks')).body.webhooks.length, 1);
    } finally {
      await server.close();
    }
  });
});
