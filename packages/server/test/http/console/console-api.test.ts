import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';
import type { OAuthTokenBundle } from '@tessera/core';
import { decodeJwt } from 'jose';
import type { ProjectCredentials } from '../../../src/modules/projects/projects.service.js';
import {
  assertProblem,
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestResponse,
  type TestServer,
  uniqueEmail,
} from '../../helpers/harness.js';
import { registerDevice } from '../../helpers/sign-in-methods.js';

const OPERATOR_TOKEN = 'op_console_test_token_0123456789abcdef';

/** The console API (issue 33) over real HTTP: console tokens, roles, the actor in the audit log. */
eachDialect('console API', (dialect) => {
  let server: TestServer;
  let consoleProject: ProjectCredentials;
  let projectB: ProjectCredentials;
  const people = {
    operator: uniqueEmail('operator'),
    admin: uniqueEmail('admin'),
    support: uniqueEmail('support'),
    viewer: uniqueEmail('viewer'),
    stranger: uniqueEmail('stranger'),
  };
  const tokens: Record<keyof typeof people, OAuthTokenBundle> = {} as never;

  before(async () => {
    server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_CONSOLE: 'true', TESSERA_OPERATOR_TOKEN: OPERATOR_TOKEN },
    });
    const made = await server.ctx.console.project();
    assert.ok(made, 'the console project is made at start');
    assert.equal(made.name, 'console');
    assert.deepEqual(made.origins, [server.url]);
    consoleProject = { ...made, project_id: made.id, api_key_secret: '' };
    projectB = await server.ctx.projects.create({ name: 'project-b', origins: ['http://b.test'] });
    await server.ctx.console.grant(people.operator, 'operator');
    await server.ctx.console.grant(people.admin, 'admin', server.project.name);
    await server.ctx.console.grant(people.support, 'support', server.project.api_key_id);
    await server.ctx.console.grant(people.viewer.toUpperCase(), 'viewer', 'test');
    for (const who of Object.keys(people) as Array<keyof typeof people>)
      tokens[who] = await server.signIn(people[who], consoleProject);
  });
  after(() => server?.close());

  const as = (
    who: keyof typeof people,
    method: string,
    path: string,
    options: { project?: string; body?: unknown; token?: string } = {},
  ): Promise<TestResponse> =>
    server.request(method, path, {
      headers: {
        authorization: `Bearer ${options.token ?? tokens[who].access_token}`,
        ...(options.project !== undefined && { 'tessera-project': options.project }),
      },
      ...(options.body !== undefined && { body: options.body }),
    });
  const A = () => server.project.api_key_id;
  const verify = (token: string) =>
    server.request('POST', '/verify', { body: { oauth_token: { access_token: token } } });

  test('a second start finds the console project and makes no other', async () => {
    const again = await server.ctx.console.ensureProject();
    assert.equal(again.api_key_id, consoleProject.api_key_id);
    const all = await server.ctx.projects.list();
    assert.equal(all.filter((p) => p.console === 1).length, 1);
    const config = await server.request('GET', '/console/config.json');
    assert.equal(config.status, 200, config.text);
    assert.deepEqual(config.body, { api_key_id: consoleProject.api_key_id, issuer: server.url });
  });

  test('a project renamed `console` is not the console project', async () => {
    const renamed = await server.ctx.projects.update(consoleProject.api_key_id, { name: 'console-renamed' });
    try {
      const impostor = await server.ctx.projects.create({ name: 'console', origins: ['http://evil.test'] });
      const found = await server.ctx.console.project();
      assert.equal(found?.api_key_id, consoleProject.api_key_id);
      // A token of the impostor is no console token.
      const bundle = await server.signIn(people.operator, impostor);
      const refused = await as('operator', 'GET', '/v1/console/me', { token: bundle.access_token });
      assertProblem(refused, 401, 'invalid_token');
      await server.ctx.projects.delete(impostor.api_key_id);
    } finally {
      await server.ctx.projects.update(renamed.api_key_id, { name: 'console' });
    }
  });

  test('GET /v1/console/me: the member, their roles and projects', async () => {
    const op = await as('operator', 'GET', '/v1/console/me');
    assert.equal(op.status, 200, op.text);
    assert.equal(op.body.operator, true);
    assert.equal(op.body.identifier, people.operator);
    const names = op.body.projects.map((p: { name: string }) => p.name).sort();
    assert.deepEqual(names, ['console', 'project-b', 'test']);
    const viewer = await as('viewer', 'GET', '/v1/console/me');
    assert.equal(viewer.status, 200, viewer.text);
    assert.equal(viewer.body.operator, false);
    assert.deepEqual(viewer.body.projects, [{ api_key_id: A(), name: 'test', role: 'viewer' }]);
    assertProblem(await as('stranger', 'GET', '/v1/console/me'), 403, 'forbidden');
    assertProblem(await server.request('GET', '/v1/console/me'), 401, 'invalid_token');
    assertProblem(
      await as('viewer', 'GET', '/v1/console/me', { token: 'not.a.token' }),
      401,
      'invalid_token',
    );
  });

  test('an operator sees every project; a viewer only theirs; keys are operators’ alone', async () => {
    const all = await as('operator', 'GET', '/v1/operator/projects');
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.projects.length, 3);
    const viewer = await as('viewer', 'GET', '/v1/operator/projects');
    assert.equal(viewer.status, 200, viewer.text);
    assert.deepEqual(
      viewer.body.projects.map((p: { api_key_id: string }) => p.api_key_id),
      [A()],
    );
    assertProblem(
      await as('viewer', 'GET', `/v1/operator/projects/${projectB.api_key_id}`),
      404,
      'not_found',
    );
    assert.equal((await as('viewer', 'GET', `/v1/operator/projects/${A()}`)).status, 200);
    const patch = await as('viewer', 'PATCH', `/v1/operator/projects/${A()}`, {
      body: { device_requires_pin: false },
    });
    assertProblem(patch, 403, 'forbidden');
    assert.match(patch.body.detail, /project\.write/);
    const keys = await as('admin', 'GET', '/v1/operator/keys');
    assertProblem(keys, 403, 'forbidden');
    assert.match(keys.body.detail, /keys\.read/);
    assertProblem(
      await as('admin', 'POST', '/v1/operator/projects', { body: { name: 'x' } }),
      403,
      'forbidden',
    );
    // The operator token still works as before.
    const byToken = await server.request('GET', '/v1/operator/projects', {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    assert.equal(byToken.status, 200);
  });

  test('a viewer of A reads A’s users, gets 404 on B’s, 403 on writes', async () => {
    const userA = await server.signIn(uniqueEmail('user-a'));
    const userB = await server.signIn(uniqueEmail('user-b'), projectB);
    const subA = decodeJwt(userA.access_token).sub!;
    const subB = decodeJwt(userB.access_token).sub!;
    assert.equal((await as('viewer', 'GET', `/v1/users/${subA}`, { project: A() })).status, 200);
    assertProblem(
      await as('viewer', 'GET', `/v1/users/${subB}`, { project: projectB.api_key_id }),
      404,
      'not_found',
    );
    // Same answer as a project that does not exist.
    assertProblem(
      await as('viewer', 'GET', `/v1/users/${subB}`, { project: 'pk_nothing' }),
      404,
      'not_found',
    );
    const del = await as('viewer', 'DELETE', `/v1/users/${subA}`, { project: A() });
    assertProblem(del, 403, 'forbidden');
    assert.match(del.body.detail, /users\.delete/);
    assertProblem(
      await as('viewer', 'POST', `/v1/users/${subA}/sessions/revoke`, { project: A() }),
      403,
      'forbidden',
    );
    assertProblem(await as('viewer', 'GET', `/v1/users/${subA}`), 400, 'invalid_request');
    // Basic credentials of A still reach only A.
    const basic = await server.request('GET', `/v1/users/${subA}`, {
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(basic.status, 200);
  });

  test('support revokes sessions and removes a device, never deletes a user or makes secrets', async () => {
    const user = await server.signIn(uniqueEmail('support-case'));
    const sub = decodeJwt(user.access_token).sub!;
    const del = await as('support', 'DELETE', `/v1/users/${sub}`, { project: A() });
    assertProblem(del, 403, 'forbidden');
    const client = await as('support', 'POST', '/v1/clients', {
      project: A(),
      body: { redirect_uris: ['https://app.test/cb'], client_name: 'x' },
    });
    assert.equal(client.status, 403, client.text);
    const rotate = await as('support', 'POST', `/v1/operator/projects/${A()}/rotate-secret`);
    assertProblem(rotate, 403, 'forbidden');

    const { deviceId: device } = await registerDevice(
      server,
      { email: '', userId: sub, bundle: user, project: server.project },
      'Test phone',
    );
    const removed = await as('support', 'DELETE', `/v1/users/${sub}/devices/${device}`, { project: A() });
    assert.equal(removed.status, 204, removed.text);
    const other = await server.signIn(uniqueEmail('support-case-2'));
    const otherSub = decodeJwt(other.access_token).sub!;
    assert.equal((await verify(other.access_token)).body.success, true);
    const revoked = await as('support', 'POST', `/v1/users/${otherSub}/sessions/revoke`, { project: A() });
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal((await verify(other.access_token)).body.success, false);

    // The audit log names who did it.
    const audit = await server.request('GET', `/v1/audit?user_id=${otherSub}&type=session.revoked`, {
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(audit.status, 200, audit.text);
    const event = audit.body.events[0];
    assert.ok(event, audit.text);
    assert.deepEqual(event.data.actor, {
      user_id: decodeJwt(tokens.support.access_token).sub,
      identifier: people.support,
      role: 'support',
    });
  });

  test('an admin of A edits claims (the next token carries them) and creates a client (secret once)', async () => {
    const user = await server.signIn(uniqueEmail('admin-case'));
    const sub = decodeJwt(user.access_token).sub!;
    const put = await as('admin', 'PUT', `/v1/users/${sub}/claims`, {
      project: A(),
      body: { claims: { plan: 'gold' } },
    });
    assert.equal(put.status, 200, put.text);
    const refreshed = await server.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: user.refresh_token, client_id: A() },
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(decodeJwt(refreshed.body.access_token).plan, 'gold');
    const created = await as('admin', 'POST', '/v1/clients', {
      project: A(),
      body: { redirect_uris: ['https://app.test/cb'], client_name: 'Console-made' },
    });
    assert.equal(created.status, 201, created.text);
    assert.ok(created.body.client_secret);
    const read = await as('viewer', 'GET', `/v1/clients/${created.body.client_id}`, { project: A() });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.client_secret, undefined);
    // Not in B.
    assertProblem(
      await as('admin', 'GET', '/v1/webhooks', { project: projectB.api_key_id }),
      404,
      'not_found',
    );
  });

  test('an operator rotates a signing key with the pre-publication delay', async () => {
    const before = await as('operator', 'GET', '/v1/operator/keys');
    assert.equal(before.status, 200, before.text);
    const rotated = await as('operator', 'POST', '/v1/operator/keys/rotate', {
      body: { delay_seconds: 600 },
    });
    assert.equal(rotated.status, 200, rotated.text);
    const keys = await as('operator', 'GET', '/v1/operator/keys');
    const fresh = keys.body.keys.find((k: { kid: string }) => k.kid === rotated.body.kid);
    assert.equal(fresh.state, 'next');
    assert.equal(fresh.activate_at, rotated.body.activate_at);
    const at = Date.parse(rotated.body.activate_at) - Date.now();
    assert.ok(at > 590_000 && at <= 600_000, `activates in ${at} ms`);
    const audit = await server.request('GET', '/v1/audit?type=key.rotated', {
      headers: { authorization: basicAuth(server.project) },
    });
    // Without a body: the configured delay.
    const plain = await as('operator', 'POST', '/v1/operator/keys/rotate');
    assert.equal(plain.status, 200, plain.text);
    const event = audit.body.events.find((e: { data: { kid: string } }) => e.data.kid === rotated.body.kid);
    assert.equal(event.data.by, 'console');
    assert.equal(event.data.actor.identifier, people.operator);
    assert.equal(event.data.actor.role, 'operator');
  });

  test('made-up console tokens are refused without a database read', async () => {
    assert.equal((await as('viewer', 'GET', '/v1/console/me')).status, 200);
    // Every query the flood could cause goes through the projects' and users' lookups.
    const { projects } = server.ctx;
    const counted = { findConsole: 0 };
    const original = projects.findConsole.bind(projects);
    projects.findConsole = () => {
      counted.findConsole++;
      return original();
    };
    try {
      for (let i = 0; i < 20; i++) {
        const forged = `eyJhbGciOiJFUzI1NiJ9.${Buffer.from(`{"sub":"${i}"}`).toString('base64url')}.c2ln`;
        for (const path of ['/v1/console/me', '/v1/operator/projects', '/v1/audit'])
          assertProblem(
            await as('viewer', 'GET', path, { token: forged, project: A() }),
            401,
            'invalid_token',
          );
      }
    } finally {
      projects.findConsole = original;
    }
    assert.equal(counted.findConsole, 0);
  });

  test('a revoked console session is refused at once', async () => {
    const bundle = await server.signIn(people.viewer, consoleProject);
    assert.equal((await as('viewer', 'GET', '/v1/console/me', { token: bundle.access_token })).status, 200);
    const sub = decodeJwt(bundle.access_token).sub!;
    const revoked = await as('operator', 'POST', `/v1/users/${sub}/sessions/revoke`, {
      project: consoleProject.api_key_id,
    });
    assert.equal(revoked.status, 200, revoked.text);
    assertProblem(
      await as('viewer', 'GET', '/v1/console/me', { token: bundle.access_token }),
      401,
      'invalid_token',
    );
    assertProblem(
      await as('viewer', 'GET', `/v1/audit`, { token: bundle.access_token, project: A() }),
      401,
      'invalid_token',
    );
    tokens.viewer = await server.signIn(people.viewer, consoleProject);
  });

  test('user search by identifier prefix or id; sessions name their client; PIN state and unlock', async () => {
    const prefix = `search${Date.now()}`;
    const one = await server.signIn(`${prefix}.one@example.com`);
    await server.signIn(`${prefix}.two@example.com`);
    await server.signIn(`${prefix}.x@example.com`, projectB);
    const found = await as('viewer', 'GET', `/v1/users/search?query=${prefix.toUpperCase()}`, {
      project: A(),
    });
    assert.equal(found.status, 200, found.text);
    assert.deepEqual(
      found.body.users.map((u: { identifier: string }) => u.identifier),
      [`${prefix}.one@example.com`, `${prefix}.two@example.com`],
    );
    const sub = decodeJwt(one.access_token).sub!;
    const byId = await as('viewer', 'GET', `/v1/users/search?query=${sub}`, { project: A() });
    assert.deepEqual(
      byId.body.users.map((u: { user_id: string }) => u.user_id),
      [sub],
    );
    // LIKE's own characters match themselves only.
    const wild = await as('viewer', 'GET', '/v1/users/search?query=%25', { project: A() });
    assert.deepEqual(wild.body.users, []);
    assertProblem(
      await as('viewer', 'GET', '/v1/users/search?query=a&limit=500', { project: A() }),
      400,
      'invalid_request',
    );

    const sessions = await as('viewer', 'GET', `/v1/users/${sub}/sessions`, { project: A() });
    assert.equal(sessions.status, 200, sessions.text);
    assert.equal(sessions.body.sessions[0].client_id, null);
    assert.equal(sessions.body.sessions[0].auth_method, 'OTP');

    assert.deepEqual((await as('viewer', 'GET', `/v1/users/${sub}/pin`, { project: A() })).body, {
      set: false,
      locked: false,
    });
    await server.ctx.db.kysely
      .insertInto('pins')
      .values({ user_id: sub, hash: 'x', failed_attempts: 5, locked_at: Date.now(), updated_at: Date.now() })
      .execute();
    assert.deepEqual((await as('viewer', 'GET', `/v1/users/${sub}/pin`, { project: A() })).body, {
      set: true,
      locked: true,
    });
    assertProblem(
      await as('viewer', 'POST', `/v1/users/${sub}/pin/unlock`, { project: A() }),
      403,
      'forbidden',
    );
    const unlocked = await as('support', 'POST', `/v1/users/${sub}/pin/unlock`, { project: A() });
    assert.equal(unlocked.status, 200, unlocked.text);
    assert.deepEqual(unlocked.body, { unlocked: true });
    assert.deepEqual((await as('viewer', 'GET', `/v1/users/${sub}/pin`, { project: A() })).body, {
      set: true,
      locked: false,
    });
    const again = await as('support', 'POST', `/v1/users/${sub}/pin/unlock`, { project: A() });
    assert.deepEqual(again.body, { unlocked: false });
  });

  test('audit: filters and CSV export (format=csv or Accept: text/csv), the actor named', async () => {
    const user = await server.signIn(uniqueEmail('csv'));
    const sub = decodeJwt(user.access_token).sub!;
    const put = await as('admin', 'PUT', `/v1/users/${sub}/claims`, {
      project: A(),
      body: { claims: { note: '=1+2, "q"' } },
    });
    assert.equal(put.status, 200, put.text);
    const byQuery = await as('viewer', 'GET', `/v1/audit?format=csv&user_id=${sub}`, { project: A() });
    assert.equal(byQuery.status, 200, byQuery.text);
    assert.match(byQuery.headers.get('content-type') ?? '', /^text\/csv/);
    const lines = byQuery.text.trimEnd().split('\r\n');
    assert.equal(lines[0], 'event_id,created_at,type,user_id,actor,data');
    const claimsLine = lines.find((line) => line.includes(',claims.changed,'));
    assert.ok(claimsLine, byQuery.text);
    assert.match(claimsLine, new RegExp(`,${sub},${people.admin.replace(/[.+]/g, '\\$&')} \\(admin\\),`));
    assert.ok(lines.some((line) => line.includes(',signin.succeeded,')));
    const byAccept = await server.request('GET', `/v1/audit?user_id=${sub}&type=claims.changed`, {
      headers: {
        authorization: `Bearer ${tokens.viewer.access_token}`,
        'tessera-project': A(),
        accept: 'text/csv',
      },
    });
    assert.equal(byAccept.text.trimEnd().split('\r\n').length, 2, byAccept.text);
    const json = await as(
      'viewer',
      'GET',
      `/v1/audit?user_id=${sub}&type=claims.changed&from=2020-01-01T00:00:00Z`,
      {
        project: A(),
      },
    );
    assert.equal(json.body.events.length, 1);
    assert.equal(json.body.events[0].data.actor.role, 'admin');
  });

  test('GET /v1/stats: sign-ins per method, failures, OTP sends, reuse detections per bucket', async () => {
    const start = Date.now();
    const user = await server.signIn(uniqueEmail('stats'));
    // A rotated refresh token presented again after its successor was used: reuse detected.
    const first = await server.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: user.refresh_token, client_id: A() },
    });
    assert.equal(first.status, 200, first.text);
    const second = await server.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: first.body.refresh_token, client_id: A() },
    });
    assert.equal(second.status, 200, second.text);
    await server.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: user.refresh_token, client_id: A() },
    });
    await server.ctx.audit.drain();
    const from = new Date(start - 3_600_000).toISOString();
    const to = new Date(Date.now() + 1000).toISOString();
    const stats = await as('viewer', 'GET', `/v1/stats?bucket=hour&from=${from}&to=${to}`, { project: A() });
    assert.equal(stats.status, 200, stats.text);
    assert.equal(stats.body.bucket, 'hour');
    assert.ok(stats.body.buckets.length >= 2 && stats.body.buckets.length <= 3, stats.text);
    interface Bucket {
      sign_ins: { OTP?: number };
      otp_sends: number;
      reuse_detections: number;
    }
    const sum = (pick: (b: Bucket) => number) =>
      (stats.body.buckets as Bucket[]).reduce((total, b) => total + pick(b), 0);
    const otpSignIns = sum((b) => b.sign_ins.OTP ?? 0);
    const events = await as('viewer', 'GET', `/v1/audit?type=signin.succeeded&from=${from}&limit=500`, {
      project: A(),
    });
    assert.equal(otpSignIns, events.body.events.length);
    assert.ok(otpSignIns >= 1);
    assert.ok(sum((b) => b.otp_sends) >= 1);
    assert.ok(sum((b) => b.reuse_detections) >= 1, stats.text);
    // Nothing of B's.
    const b = await as('operator', 'GET', `/v1/stats?from=${from}&to=${to}`, {
      project: projectB.api_key_id,
    });
    assert.equal(b.status, 200, b.text);
    assertProblem(
      await as('viewer', 'GET', `/v1/stats?from=${to}&to=${from}`, { project: A() }),
      400,
      'invalid_request',
    );
    assertProblem(
      await as('viewer', 'GET', '/v1/stats?bucket=hour&from=2020-01-01T00:00:00Z', { project: A() }),
      400,
      'invalid_request',
    );
    assertProblem(await as('viewer', 'GET', '/v1/stats?from=soon', { project: A() }), 400, 'invalid_request');
  });

  test('webhooks: a test event and a redelivery, sent at once; support may not, admin may', async () => {
    const received: Array<{ id: string; body: string }> = [];
    const receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      request.on('end', () => {
        received.push({ id: String(request.headers['webhook-id']), body });
        response.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as { port: number }).port;
    try {
      const hook = await as('admin', 'POST', '/v1/webhooks', {
        project: A(),
        body: { url: `http://127.0.0.1:${port}/hook`, event_types: ['user.deleted'] },
      });
      assert.equal(hook.status, 201, hook.text);
      const id = hook.body.webhook_id;
      assertProblem(
        await as('support', 'POST', `/v1/webhooks/${id}/test`, { project: A() }),
        403,
        'forbidden',
      );
      const sent = await as('admin', 'POST', `/v1/webhooks/${id}/test`, { project: A() });
      assert.equal(sent.status, 201, sent.text);
      assert.equal(sent.body.event_type, 'webhook.test');
      const waitFor = async (n: number) => {
        for (let i = 0; i < 100 && received.length < n; i++) await new Promise((r) => setTimeout(r, 50));
        assert.equal(received.length, n, 'delivered');
      };
      await waitFor(1);
      assert.equal(received[0]!.id, sent.body.delivery_id);
      assert.equal(JSON.parse(received[0]!.body).type, 'webhook.test');
      const again = await as(
        'admin',
        'POST',
        `/v1/webhooks/${id}/deliveries/${sent.body.delivery_id}/redeliver`,
        {
          project: A(),
        },
      );
      assert.equal(again.status, 201, again.text);
      assert.notEqual(again.body.delivery_id, sent.body.delivery_id);
      await waitFor(2);
      assert.equal(received[1]!.body, received[0]!.body);
      assertProblem(
        await as('admin', 'POST', `/v1/webhooks/${id}/deliveries/msg_nothing/redeliver`, { project: A() }),
        404,
        'not_found',
      );
      const deliveries = await as('viewer', 'GET', `/v1/webhooks/${id}/deliveries`, { project: A() });
      assert.equal(deliveries.body.deliveries.length, 2);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  test('the console project cannot be deleted', async () => {
    const refused = await as('operator', 'DELETE', `/v1/operator/projects/${consoleProject.api_key_id}`);
    assertProblem(refused, 409, 'conflict');
  });
});
