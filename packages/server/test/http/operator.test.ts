import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { VerifyReasons } from '@tessera/core';
import type { Db } from '../../src/db/connect.js';
import type { ProjectCredentials } from '../../src/modules/projects/projects.service.js';
import {
  authorizedClient,
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../helpers/harness.js';
import {
  assertProblem,
  bearer,
  otpUser,
  registerDevice,
  registerPasskey,
  setPin,
} from '../helpers/sign-in-methods.js';

const TOKEN = randomBytes(32).toString('base64url');
const ENV = { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: TOKEN };

const operator = (server: TestServer, token = TOKEN) =>
  authorizedClient(server, `Bearer ${token}`, '/v1/operator');

/** The tables that hold a project's data, each with how to find that project's rows. */
async function rowsOf(db: Db, projectId: string, userIds: string[]): Promise<Record<string, number>> {
  const k = db.kysely;
  const count = async (query: { execute(): Promise<unknown[]> }) => (await query.execute()).length;
  const users = userIds.length > 0 ? userIds : ['none'];
  return {
    projects: await count(k.selectFrom('projects').select('id').where('id', '=', projectId)),
    users: await count(k.selectFrom('users').select('id').where('project_id', '=', projectId)),
    otp_challenges: await count(
      k.selectFrom('otp_challenges').select('id').where('project_id', '=', projectId),
    ),
    sessions: await count(k.selectFrom('sessions').select('id').where('project_id', '=', projectId)),
    refresh_tokens: await count(
      k
        .selectFrom('refresh_tokens')
        .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
        .select('refresh_tokens.id')
        .where('sessions.project_id', '=', projectId),
    ),
    devices: await count(k.selectFrom('devices').select('id').where('project_id', '=', projectId)),
    pins: await count(k.selectFrom('pins').select('user_id').where('user_id', 'in', users)),
    passkeys: await count(k.selectFrom('passkeys').select('id').where('project_id', '=', projectId)),
    challenges: await count(k.selectFrom('challenges').select('id').where('project_id', '=', projectId)),
    user_claims: await count(
      k.selectFrom('user_claims').select('user_id').where('project_id', '=', projectId),
    ),
    audit_events: await count(k.selectFrom('audit_events').select('id').where('project_id', '=', projectId)),
    webhook_endpoints: await count(
      k.selectFrom('webhook_endpoints').select('id').where('project_id', '=', projectId),
    ),
    webhook_deliveries: await count(
      k.selectFrom('webhook_deliveries').select('id').where('project_id', '=', projectId),
    ),
  };
}

eachDialect('operator API', (dialect) => {
  test('without TESSERA_OPERATOR_TOKEN every /v1/operator path answers 404 saying the API is off', async () => {
    const server = await startServer(dialect);
    try {
      for (const [method, path] of [
        ['GET', '/projects'],
        ['POST', '/projects'],
        ['DELETE', `/projects/${server.project.api_key_id}`],
        ['GET', '/anything/else'],
      ] as const) {
        const response = await operator(server)(method, path, method === 'POST' ? { name: 'x' } : undefined);
        assertProblem(response, 404, 'not_found');
        assert.match(response.body.detail, /the operator API is off; set TESSERA_OPERATOR_TOKEN/);
      }
      assert.equal((await server.ctx.projects.list()).length, 1);
    } finally {
      await server.close();
    }
  });

  test('a missing or wrong operator token is a 401 problem before anything else, unknown paths included', async () => {
    const server = await startServer(dialect, { env: ENV });
    try {
      const attempts: Array<[string, Record<string, string>]> = [
        ['/projects', {}],
        ['/projects', { authorization: `Bearer ${TOKEN}x` }],
        ['/projects', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
        ['/projects', { authorization: TOKEN }],
        ['/projects', { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}` }],
        // The integrator's own credentials are no operator token.
        ['/projects', { authorization: basicAuth(server.project) }],
        ['/no/such/path', {}],
      ];
      for (const [path, headers] of attempts) {
        const response = await server.request('GET', `/v1/operator${path}`, { headers });
        assertProblem(response, 401, 'unauthorized');
        assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="operator"');
        assert.ok(!response.text.includes(TOKEN.slice(0, 8)), 'the answer quotes the token');
      }
      // Invalid bodies are not even looked at without the token.
      const unauthenticated = await server.request('POST', '/v1/operator/projects', { body: { bad: true } });
      assertProblem(unauthenticated, 401, 'unauthorized');
      // With the token, an unknown path is a 404 problem.
      assertProblem(await operator(server)('GET', '/no/such/path'), 404, 'not_found');
    } finally {
      await server.close();
    }
  });

  test('create, list, show, update, rotate the secret and delete a project', async () => {
    const server = await startServer(dialect, { env: ENV });
    const call = operator(server);
    try {
      const created = await call('POST', '/projects', {
        name: 'shop',
        origins: ['https://shop.example/', 'http://localhost:5173'],
        numeric_auth_time: true,
      });
      assert.equal(created.status, 201, created.text);
      assert.match(created.headers.get('content-type') ?? '', /^application\/json/);
      const { api_key_secret, ...view } = created.body;
      assert.match(api_key_secret, /^sk_/);
      assert.deepEqual(Object.keys(view).sort(), [
        'access_token_ttl',
        'api_key_id',
        'branding',
        'client_id_metadata_documents',
        'created_at',
        'device_requires_pin',
        'id_token_ttl',
        'message_templates',
        'name',
        'numeric_auth_time',
        'open_registration',
        'origins',
        'project_id',
        'refresh_token_ttl',
        'rp_id',
        'secret_rotated_at',
        'server',
        'sms_countries',
      ]);
      assert.deepEqual(
        [view.name, view.origins, view.rp_id, view.numeric_auth_time, view.device_requires_pin],
        ['shop', ['https://shop.example', 'http://localhost:5173'], 'shop.example', true, false],
      );
      const id = view.api_key_id as string;
      const credentials = { api_key_id: id, api_key_secret };
      // The secret works for the integrator API, and is never shown again.
      assert.equal(
        (await server.request('GET', '/v1/audit', { headers: { authorization: basicAuth(credentials) } }))
          .status,
        200,
      );

      const list = await call('GET', '/projects');
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.projects.map((p: { name: string }) => p.name),
        ['test', 'shop'],
      );
      assert.ok(!list.text.includes('sk_') && !list.text.includes('secret_hash'));
      const shown = await call('GET', `/projects/${id}`);
      assert.deepEqual(shown.body, view);

      const updated = await call('PATCH', `/projects/${id}`, {
        name: 'shop-eu',
        add_origins: ['https://eu.shop.example'],
        remove_origins: ['http://localhost:5173'],
        device_requires_pin: true,
      });
      assert.equal(updated.status, 200, updated.text);
      assert.deepEqual(
        [
          updated.body.name,
          updated.body.origins,
          updated.body.device_requires_pin,
          updated.body.numeric_auth_time,
        ],
        ['shop-eu', ['https://shop.example', 'https://eu.shop.example'], true, true],
      );
      // Origins changed take effect at once on this instance (CORS preflight of the sign-in API).
      const preflight = await server.request('OPTIONS', '/v1/auth/otp/start', {
        headers: { origin: 'https://eu.shop.example', 'access-control-request-method': 'POST' },
      });
      assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://eu.shop.example');

      assertProblem(await call('PATCH', `/projects/${id}`, { name: 'test' }), 409, 'conflict');
      assertProblem(await call('POST', '/projects', { name: 'test' }), 409, 'conflict');
      assertProblem(await call('PATCH', `/projects/${id}`, { nme: 'typo' }), 400, 'invalid_request');
      assertProblem(await call('PATCH', `/projects/${id}`, {}), 400, 'invalid_request');
      assertProblem(await call('PATCH', `/projects/${id}`, { rp_id: 'bad id!' }), 400, 'invalid_request');
      assertProblem(
        await call('PATCH', `/projects/${id}`, { origins: ['https://x.example/path'] }),
        400,
        'invalid_request',
      );
      assertProblem(
        await call('POST', '/projects', { name: 'x', rp_id: '10.0.0.1' }),
        400,
        'invalid_request',
      );
      // Hosts the URL parser takes but no page's Origin header carries.
      for (const origin of [
        'https://a..b',
        'https://-x.example',
        'https://x-.example',
        'https://example.com.',
        'https://.example.com',
        `https://${'a'.repeat(64)}.example`,
        'https://ex%20ample.com',
        'https://user@example.com',
        'https://user:pw@example.com',
        'https://example.com:0',
      ]) {
        assertProblem(
          await call('POST', '/projects', { name: 'odd', origins: [origin] }),
          400,
          'invalid_request',
        );
      }
      assertProblem(await call('POST', '/projects', { name: 'sur\ud800x' }), 400, 'invalid_request');
      // A refusal names the value with its invisible characters escaped, cut at 80 characters.
      const invisible = await call('POST', '/projects', { name: 'x', origins: ['https://a\u200b.example'] });
      assertProblem(invisible, 400, 'invalid_request');
      assert.ok(invisible.body.detail.includes('"https://a\\u{200b}.example"'), invisible.body.detail);
      const long = await call('POST', '/projects', {
        name: 'x',
        origins: [`https://${'a'.repeat(300)}.example`],
      });
      assertProblem(long, 400, 'invalid_request');
      assert.ok(!long.body.detail.includes('a'.repeat(81)), long.body.detail);
      // A relying-party id needs origins it serves: none at all is refused, on creation and update.
      assertProblem(
        await call('POST', '/projects', { name: 'rp-alone', rp_id: 'anything.example' }),
        400,
        'invalid_request',
      );
      const bare = await call('POST', '/projects', { name: 'no-origins' });
      assert.equal(bare.status, 201, bare.text);
      assertProblem(
        await call('PATCH', `/projects/${bare.body.api_key_id}`, { rp_id: 'anything.example' }),
        400,
        'invalid_request',
      );
      const odd = await call('POST', '/projects', {
        name: 'odd-but-real',
        origins: ['https://my_app.example.com', 'https://BÜCHER.example', 'http://localhost:5173'],
      });
      assert.equal(odd.status, 201, odd.text);
      assert.deepEqual(odd.body.origins, [
        'https://my_app.example.com',
        'https://xn--bcher-kva.example',
        'http://localhost:5173',
      ]);
      // An odd origin an earlier version stored can still be removed.
      await server.storage.db.kysely
        .updateTable('projects')
        .set({ origins: JSON.stringify(['https://a..b', 'https://xn--bcher-kva.example']) })
        .where('api_key_id', '=', odd.body.api_key_id)
        .execute();
      const cleaned = await call('PATCH', `/projects/${odd.body.api_key_id}`, {
        remove_origins: ['https://a..b'],
      });
      assert.equal(cleaned.status, 200, cleaned.text);
      assert.deepEqual(cleaned.body.origins, ['https://xn--bcher-kva.example']);
      // An IP-address origin is a fine origin, but no relying-party id: none is derived from it.
      const byIp = await call('POST', '/projects', {
        name: 'by-ip',
        origins: ['http://127.0.0.1:3000', 'http://[::1]:3000'],
      });
      assert.equal(byIp.status, 201, byIp.text);
      assert.equal(byIp.body.rp_id, null);
      const mixed = await call('POST', '/projects', {
        name: 'mixed',
        origins: ['http://10.0.0.1:8080', 'https://app.example.com'],
      });
      assert.equal(mixed.body.rp_id, 'app.example.com', mixed.text);
      assertProblem(await call('GET', '/projects/pk_nobody'), 404, 'unknown_api_key');
      assertProblem(await call('PATCH', '/projects/pk_nobody', { name: 'y' }), 404, 'unknown_api_key');

      const rotated = await call('POST', `/projects/${id}/rotate-secret`);
      assert.equal(rotated.status, 200, rotated.text);
      assert.deepEqual(Object.keys(rotated.body), ['api_key_id', 'api_key_secret']);
      const audit = (secret: string) =>
        server.request('GET', '/v1/audit?type=project.secret_rotated', {
          headers: { authorization: basicAuth({ api_key_id: id, api_key_secret: secret }) },
        });
      assert.equal((await audit(api_key_secret)).status, 401);
      const events = await audit(rotated.body.api_key_secret);
      assert.equal(events.status, 200);
      assert.deepEqual(
        events.body.events.map((e: { data: unknown }) => e.data),
        [{ by: 'operator' }],
      );

      assert.equal((await call('DELETE', `/projects/${id}`)).status, 204);
      assertProblem(await call('GET', `/projects/${id}`), 404, 'unknown_api_key');
      assertProblem(await call('DELETE', `/projects/${id}`), 404, 'unknown_api_key');
      assert.equal((await audit(rotated.body.api_key_secret)).status, 401);
    } finally {
      await server.close();
    }
  });

  test('deleting a project removes all its data, and its tokens stop verifying: here at once, on another instance at once by notice (PostgreSQL) or within 5 s', async () => {
    let now = Date.now();
    const clock = () => now;
    const here = await startServer(dialect, { env: ENV, now: clock });
    let elsewhere: TestServer | undefined;
    try {
      elsewhere = await startServer(dialect, {
        env: { ...ENV, TESSERA_ISSUER: here.url },
        now: clock,
        storage: here.storage,
        masterKey: here.masterKey,
      });
      const created = await operator(here)('POST', '/projects', {
        name: 'doomed',
        origins: ['http://app.test'],
      });
      assert.equal(created.status, 201, created.text);
      const project: ProjectCredentials = {
        project_id: created.body.project_id,
        name: 'doomed',
        api_key_id: created.body.api_key_id,
        api_key_secret: created.body.api_key_secret,
      };
      // A user with a session, a device, a PIN, a passkey, claims; a webhook endpoint with deliveries.
      const user = await otpUser(here, uniqueEmail('doomed'), project);
      await registerDevice(here, user);
      await setPin(here, user, '8264');
      await registerPasskey(here, user);
      const integrator = { authorization: basicAuth(project) };
      const claims = await here.request('PUT', `/v1/users/${user.userId}/claims`, {
        body: { claims: { plan: 'pro' } },
        headers: integrator,
      });
      assert.equal(claims.status, 200, claims.text);
      const hook = await here.request('POST', '/v1/webhooks', {
        body: { url: 'http://127.0.0.1:9/hook' },
        headers: integrator,
      });
      assert.equal(hook.status, 201, hook.text);
      await otpUser(here, user.email, project); // an event after the endpoint exists: a delivery
      const before = await rowsOf(here.storage.db, project.project_id, [user.userId]);
      for (const [table, rows] of Object.entries(before)) assert.ok(rows > 0, `no ${table} rows to delete`);

      const verify = (server: TestServer) =>
        server.request('POST', '/verify', {
          body: { oauth_token: { access_token: user.bundle.access_token } },
          headers: { api_key_id: project.api_key_id },
        });
      for (const server of [here, elsewhere]) {
        const r = await verify(server);
        assert.deepEqual(r.body.success, true, r.text);
      }
      assert.equal((await here.request('GET', '/v1/pin', { headers: bearer(user.bundle) })).status, 200);

      assert.equal((await operator(here)('DELETE', `/projects/${project.api_key_id}`)).status, 204);
      assert.deepEqual(
        Object.values(await rowsOf(here.storage.db, project.project_id, [user.userId])).filter((n) => n > 0),
        [],
      );
      assert.deepEqual((await verify(here)).body, { success: false, reason: VerifyReasons.unknownProject });
      assert.equal((await here.request('GET', '/v1/pin', { headers: bearer(user.bundle) })).status, 401);
      if (dialect === 'postgres') {
        // The deletion's notice reaches the other instance at once (no clock moved).
        for (let tries = 0; (await verify(elsewhere)).body.success !== false; tries++) {
          assert.ok(tries < 100, 'the other instance did not hear of the deletion within a second');
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      } else {
        // SQLite has no notices: the other instance trusts its cache for at most ProjectsService's
        // CACHE_MS (5 s). A write it accepts meanwhile fails on the foreign keys: 409, nothing written.
        now += 4_999;
        assert.equal((await verify(elsewhere)).body.success, true);
        const stale = await elsewhere.request('POST', '/v1/auth/otp/start', {
          body: { identifier: user.email },
          headers: { api_key_id: project.api_key_id },
        });
        assertProblem(stale, 409, 'conflict');
        now += 1;
      }
      assert.deepEqual((await verify(elsewhere)).body, {
        success: false,
        reason: VerifyReasons.unknownProject,
      });
      const signIn = await elsewhere.request('POST', '/v1/auth/otp/start', {
        body: { identifier: user.email },
        headers: { api_key_id: project.api_key_id },
      });
      assertProblem(signIn, 401, 'unknown_api_key');
      // Other projects are untouched.
      assert.equal((await here.signIn(uniqueEmail('survivor'))).token_type, 'Bearer');
    } finally {
      await elsewhere?.close();
      await here.close();
    }
  });
});
