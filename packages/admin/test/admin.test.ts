// @tessera/admin against a real server, on SQLite and PostgreSQL: every integrator and operator
// operation of the server's live OpenAPI document is called through the client's resources (a
// recording fetch checks it at the end), with what each call changed checked over HTTP.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import {
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../../server/test/helpers/harness.js';
import {
  authorizeUrl,
  Browser,
  exchangeCode,
  formFields,
  pkce,
  redirectParams,
  signInOnHostedPages,
} from '../../server/test/helpers/oidc.js';
import {
  deviceSignIn,
  otpUser,
  refreshGrant,
  registerDevice,
  registerPasskey,
  type SignedInUser,
  setPin,
} from '../../server/test/helpers/sign-in-methods.js';
import { adminOperations, type Operation } from '../scripts/generate.js';
import {
  createTesseraAdmin,
  isTesseraAdminError,
  type TesseraAdmin,
  type TesseraAdminError,
} from '../src/index.js';
import { recordingFetch, rejection } from './support.js';

const OPERATOR_TOKEN = 'operator-token-of-the-admin-client-test-0123456789';
const REDIRECT = 'https://rp.example/callback';

/** Rejects with a TesseraAdminError of this code and status. */
async function refused(call: Promise<unknown>, code: string, status: number): Promise<TesseraAdminError> {
  const error = await rejection(call);
  assert.equal(error.code, code, error.detail);
  assert.equal(error.status, status);
  return error;
}

eachDialect('@tessera/admin against a real server', (dialect) => {
  let server: TestServer;
  let operations: Operation[];
  let recorder: ReturnType<typeof recordingFetch>;
  let admin: TesseraAdmin;
  let operator: TesseraAdmin;
  let user: SignedInUser;

  const verify = async (accessToken: string) =>
    (await server.request('POST', '/verify', { body: { oauth_token: { access_token: accessToken } } })).body;

  before(async () => {
    server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: OPERATOR_TOKEN, TESSERA_CONSOLE: 'true' },
    });
    const doc = (await server.request('GET', '/openapi.json')).body;
    operations = adminOperations(doc);
    recorder = recordingFetch(operations);
    admin = createTesseraAdmin({
      issuer: server.url,
      apiKeyId: server.project.api_key_id,
      apiKeySecret: server.project.api_key_secret,
      fetch: recorder.fetch,
    });
    operator = createTesseraAdmin({
      issuer: server.url,
      operatorToken: OPERATOR_TOKEN,
      fetch: recorder.fetch,
    });
    user = await otpUser(server, uniqueEmail('admin'));
  });
  after(() => server?.close());

  test('the admin operations of the document are the integrator and operator APIs', () => {
    const ids = new Set(operations.map((o) => o.id));
    for (const id of ['getUser', 'searchAudit', 'registerClient', 'listProjects', 'operatorGetClient'])
      assert.ok(ids.has(id), id);
    for (const id of ['startOtp', 'listDevices', 'introspectToken', 'refreshTokens', 'getSignInBranding'])
      assert.ok(!ids.has(id), id);
  });

  test('users: find, get, update, and a typed refusal for an unknown one', async () => {
    const found = await admin.users.find(user.email);
    assert.equal(found?.user_id, user.userId);
    assert.equal(await admin.users.find(uniqueEmail('nobody')), undefined);
    const got = await admin.users.get(user.userId);
    assert.equal(got.identifier, user.email);
    const prefix = user.email.slice(0, 8);
    assert.deepEqual(
      (await admin.users.list({ query: prefix }).toArray()).map((u) => u.user_id),
      [user.userId],
    );
    assert.deepEqual(await admin.users.list({ query: 'zz-nobody' }).toArray(), []);
    assert.equal(
      (await admin.users.update(user.userId, { client_user_id: 'crm-42' })).client_user_id,
      'crm-42',
    );
    assert.equal(
      (await admin.users.update(user.userId, { client_user_id: null })).client_user_id,
      user.userId,
    );
    const error = await refused(admin.users.get('no-such-user'), 'user_not_found', 404);
    assert.equal(error.operation, 'getUser');
    assert.ok(isTesseraAdminError(error, 'user_not_found'));
    await assert.rejects(admin.users.get(''), TypeError, 'an empty id is refused before any request');
  });

  test('claims: set, read, carried by the next refreshed token, cleared', async () => {
    assert.deepEqual(await admin.claims.get(user.userId), {});
    assert.deepEqual(await admin.claims.set(user.userId, { roles: ['editor'] }), { roles: ['editor'] });
    assert.deepEqual(await admin.claims.get(user.userId), { roles: ['editor'] });
    const refreshed = await refreshGrant(server, user.bundle.refresh_token);
    assert.equal(refreshed.status, 200, refreshed.text);
    user.bundle = refreshed.body;
    assert.deepEqual(decodeJwt(user.bundle.access_token).roles, ['editor']);
    await refused(admin.claims.set(user.userId, { sub: 'someone-else' }), 'reserved_claim', 400);
    await admin.claims.clear(user.userId);
    assert.deepEqual(await admin.claims.get(user.userId), {});
  });

  test('sessions: listed, one revoked, then every one (its access token fails /verify)', async () => {
    const second = await server.signIn(user.email);
    const sessions = await admin.sessions.list(user.userId).toArray();
    assert.equal(sessions.length, 2);
    const secondSid = decodeJwt(second.access_token).sid;
    await admin.sessions.revoke(user.userId, String(secondSid));
    assert.equal((await verify(second.access_token)).success, false);
    assert.equal((await verify(user.bundle.access_token)).success, true);
    const live = await admin.sessions.list(user.userId).toArray();
    assert.equal(live.length, 1);
    const all = await admin.sessions.list(user.userId, { include_revoked: 'true' }).toArray();
    assert.equal(all.length, 2);
    const { revoked } = await admin.users.revokeSessions(user.userId);
    assert.equal(revoked, 1);
    assert.deepEqual(await verify(user.bundle.access_token), {
      success: false,
      reason: 'JWT token has been revoked',
    });
    user.bundle = await server.signIn(user.email);
  });

  test('devices and passkeys: listed, renamed, removed', async () => {
    const { deviceId } = await registerDevice(server, user, 'Phone');
    const devices = await admin.devices.list(user.userId).toArray();
    assert.deepEqual(
      devices.map((d) => [d.device_id, d.name]),
      [[deviceId, 'Phone']],
    );
    assert.equal((await admin.devices.rename(user.userId, deviceId, 'Old phone')).name, 'Old phone');
    await admin.devices.remove(user.userId, deviceId);
    assert.deepEqual(await admin.devices.list(user.userId).toArray(), []);

    await registerPasskey(server, user);
    const [passkey, ...more] = await admin.passkeys.list(user.userId).toArray();
    assert.ok(passkey);
    assert.equal(more.length, 0);
    await admin.passkeys.remove(user.userId, passkey.passkey_id);
    assert.deepEqual(await admin.passkeys.list(user.userId).toArray(), []);
    await refused(admin.passkeys.remove(user.userId, passkey.passkey_id), 'passkey_not_found', 404);
  });

  test('pin: set, locked by five wrong PINs, unlocked', async () => {
    assert.deepEqual(await admin.pin.get(user.userId), { set: false, locked: false });
    const device = await registerDevice(server, user, 'Tablet');
    await setPin(server, user, '482916');
    for (let i = 0; i < 5; i++) await deviceSignIn(server, device, { pin: '000000' });
    assert.deepEqual(await admin.pin.get(user.userId), { set: true, locked: true });
    assert.deepEqual(await admin.pin.unlock(user.userId), { unlocked: true });
    assert.deepEqual(await admin.pin.get(user.userId), { set: true, locked: false });
    assert.deepEqual(await admin.pin.unlock(user.userId), { unlocked: false });
    const signedIn = await deviceSignIn(server, device, { pin: '482916' });
    assert.equal(signedIn.status, 200, signedIn.text);
    await admin.devices.remove(user.userId, device.deviceId);
  });

  test('clients (RFC 7591 names): register with the secret shown once, list, get, replace, delete; RFC 7591 errors', async () => {
    const created = await admin.clients.register({ client_name: 'Shop', redirect_uris: [REDIRECT] });
    assert.equal(typeof created.client_secret, 'string', 'a confidential client gets its secret');
    const got = await admin.clients.get(created.client_id);
    assert.equal(got.client_name, 'Shop');
    assert.equal(got.client_secret, undefined, 'shown once');
    const listed = await admin.clients.list().toArray();
    assert.deepEqual(
      listed.map((c) => c.client_id),
      [created.client_id],
    );
    const replaced = await admin.clients.replace(created.client_id, {
      client_name: 'Shop 2',
      redirect_uris: [REDIRECT, 'https://rp.example/other'],
    });
    assert.deepEqual(replaced.redirect_uris, [REDIRECT, 'https://rp.example/other']);
    const rotated = await admin.clients.rotateSecret(created.client_id);
    assert.equal(typeof rotated.client_secret, 'string');
    assert.notEqual(rotated.client_secret, created.client_secret, 'a new secret, shown once');
    const bad = await refused(
      admin.clients.register({ client_name: 'Bad', redirect_uris: ['http://rp.example/cb'] }),
      'invalid_redirect_uri',
      400,
    );
    assert.equal(bad.oauthError, 'invalid_redirect_uri');
    assert.match(bad.detail, /redirect_uris/);
    await admin.clients.delete(created.client_id);
    await refused(admin.clients.get(created.client_id), 'invalid_client', 404);
  });

  test('grants: a consent given on the hosted pages is listed, and withdrawn', async () => {
    const client = await admin.clients.register({
      client_name: 'Other Co',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    });
    const browser = new Browser(server.url);
    const { verifier, challenge } = pkce();
    const start = await browser.go(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        scope: 'openid email',
        state: 's',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    const signedIn = await signInOnHostedPages(server, browser, start.location!, user.email);
    const page = await browser.go(signedIn.location!);
    const allowed = await browser.go('/oauth/consent', {
      form: { ...formFields(page.text, '/oauth/consent'), decision: 'allow' },
    });
    const tokens = await exchangeCode(
      server,
      client.client_id,
      REDIRECT,
      redirectParams(allowed.location).code!,
      verifier,
    );
    assert.equal(tokens.status, 200, tokens.text);
    const grants = await admin.grants.list(user.userId).toArray();
    assert.deepEqual(
      grants.map((g) => [g.client_id, g.client_name]),
      [[client.client_id, 'Other Co']],
    );
    await admin.grants.revoke(user.userId, client.client_id);
    assert.deepEqual(await admin.grants.list(user.userId).toArray(), []);
    await admin.clients.delete(client.client_id);
  });

  test('webhooks: create with the secret shown once, list, get, deliveries, delete', async () => {
    const created = await admin.webhooks.create({
      url: 'https://hooks.example/tessera',
      event_types: ['user.deleted'],
    });
    assert.equal(typeof created.secret, 'string');
    assert.deepEqual(
      (await admin.webhooks.list().toArray()).map((w) => w.webhook_id),
      [created.webhook_id],
    );
    const got = await admin.webhooks.get(created.webhook_id);
    assert.deepEqual(got.event_types, ['user.deleted']);
    assert.ok(!('secret' in got), 'shown once');
    assert.deepEqual(await admin.webhooks.deliveries(created.webhook_id).toArray(), []);
    await refused(admin.webhooks.create({ url: 'not a url' }), 'invalid_request', 400);
    await admin.webhooks.delete(created.webhook_id);
    await refused(admin.webhooks.get(created.webhook_id), 'not_found', 404);
  });

  test('webhooks: a test event and a redelivery reach the endpoint', async () => {
    const received: string[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      req.on('end', () => {
        received.push(body);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = receiver.address() as AddressInfo;
      const hook = await admin.webhooks.create({ url: `http://127.0.0.1:${port}/hook` });
      const sent = await admin.webhooks.test(hook.webhook_id);
      assert.equal(sent.event_type, 'webhook.test');
      const again = await admin.webhooks.redeliver(hook.webhook_id, sent.delivery_id);
      assert.notEqual(again.delivery_id, sent.delivery_id);
      assert.equal(again.event_type, 'webhook.test');
      for (let i = 0; i < 100 && received.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(received.length, 2);
      assert.equal(received[0], received[1], 'the same body, sent again');
      const deliveries = await admin.webhooks.deliveries(hook.webhook_id).toArray();
      assert.deepEqual(
        deliveries.map((d) => d.delivery_id).sort(),
        [sent.delivery_id, again.delivery_id].sort(),
      );
      await admin.webhooks.delete(hook.webhook_id);
    } finally {
      receiver.close();
    }
  });

  test('audit: filtered, paginated page after page; a loop that breaks asks for no further page', async () => {
    const filter = { user_id: user.userId, type: 'signin.succeeded' as const, limit: '1' };
    const pages = [];
    for await (const page of admin.audit.list(filter).pages()) pages.push(page);
    // Five sign-ins so far: by OTP the first, a second session, after the revocation, on the hosted
    // pages; then by PIN.
    assert.deepEqual(
      pages.map((p) => p.events.length),
      [1, 1, 1, 1, 1],
    );
    assert.equal(pages.at(-1)!.next_before, null);
    const events = await admin.audit.list(filter).toArray();
    assert.equal(events.length, 5);
    assert.ok(events.every((e) => e.user_id === user.userId && e.type === 'signin.succeeded'));
    assert.equal(new Set(events.map((e) => e.event_id)).size, 5, 'no event twice');
    const before = recorder.requests.length;
    for await (const _event of admin.audit.list(filter)) break;
    assert.equal(recorder.requests.length - before, 1, 'one page asked for');
    assert.deepEqual(await admin.audit.list(filter).toArray({ max: 2 }), events.slice(0, 2));
    const first = await admin.audit.page({ ...filter, limit: '2' });
    assert.equal(first.events.length, 2);
    assert.equal(typeof first.next_before, 'string');
    await refused(admin.audit.page({ limit: '0' }), 'invalid_request', 400);
  });

  test('audit export as CSV, and the overview’s stats', async () => {
    const csv = await admin.audit.export({ user_id: user.userId, type: 'signin.succeeded' });
    const rows = csv.trim().split(/\r?\n/);
    assert.match(rows[0]!, /event_id/);
    assert.equal(rows.length, 1 + 5, 'a header and the five sign-ins');
    assert.ok(rows.slice(1).every((row) => row.includes('signin.succeeded') && row.includes(user.userId)));
    const stats = await admin.stats.get({ bucket: 'day' });
    assert.equal(stats.bucket, 'day');
    const otp = stats.buckets.reduce((sum, b) => sum + (b.sign_ins['OTP'] ?? 0), 0);
    assert.ok(otp >= 4, `${otp} OTP sign-ins counted`);
    await refused(admin.stats.get({ bucket: 'week' as 'day' }), 'invalid_request', 400);
  });

  test('branding and client registration: set and read back', async () => {
    const branding = await admin.branding.set({ display_name: 'Shop', primary_color: '#0b5cff' });
    assert.deepEqual(branding, { display_name: 'Shop', primary_color: '#0b5cff' });
    assert.deepEqual(await admin.branding.get(), branding);
    await refused(admin.branding.set({ primary_color: 'blue' }), 'invalid_request', 400);
    const off = { open_registration: false, client_id_metadata_documents: false };
    assert.deepEqual(await admin.clientRegistration.get(), off);
    assert.deepEqual(await admin.clientRegistration.set({ open_registration: true }), {
      ...off,
      open_registration: true,
    });
    assert.deepEqual(await admin.clientRegistration.get(), { ...off, open_registration: true });
  });

  test('operator: projects created, listed, changed, secret rotated, their clients, deleted', async () => {
    const created = await operator.projects.create({ name: 'shop', origins: ['https://shop.example'] });
    assert.equal(typeof created.api_key_secret, 'string');
    const names = (await operator.projects.list().toArray()).map((p) => p.name).sort();
    assert.deepEqual(names, ['console', 'shop', 'test']);
    assert.equal((await operator.projects.get(created.api_key_id)).name, 'shop');
    const updated = await operator.projects.update(created.api_key_id, {
      add_origins: ['https://www.shop.example'],
    });
    assert.deepEqual(updated.origins, ['https://shop.example', 'https://www.shop.example']);
    const rotated = await operator.projects.rotateSecret(created.api_key_id);
    assert.notEqual(rotated.api_key_secret, created.api_key_secret);
    // The old secret stops working at once; the new one works.
    const old = createTesseraAdmin({
      issuer: server.url,
      apiKeyId: created.api_key_id,
      apiKeySecret: created.api_key_secret,
    });
    await refused(old.webhooks.list().toArray(), 'invalid_client', 401);
    const shop = createTesseraAdmin({
      issuer: server.url,
      apiKeyId: created.api_key_id,
      apiKeySecret: rotated.api_key_secret,
    });
    assert.deepEqual(await shop.webhooks.list().toArray(), []);

    const clients = operator.projects.clients(created.api_key_id);
    const client = await clients.register({ client_name: 'Ops', redirect_uris: [REDIRECT] });
    assert.equal(typeof client.client_secret, 'string');
    assert.deepEqual(
      (await clients.list().toArray()).map((c) => c.client_id),
      [client.client_id],
    );
    assert.equal((await clients.get(client.client_id)).client_name, 'Ops');
    assert.equal(
      (await clients.replace(client.client_id, { client_name: 'Ops 2', redirect_uris: [REDIRECT] }))
        .client_name,
      'Ops 2',
    );
    const newSecret = (await clients.rotateSecret(client.client_id)).client_secret;
    assert.equal(typeof newSecret, 'string');
    assert.notEqual(newSecret, client.client_secret);
    await clients.delete(client.client_id);
    assert.deepEqual(await clients.list().toArray(), []);
    assert.deepEqual(
      await admin.clients.list().toArray(),
      [],
      'another project’s clients are not this one’s',
    );

    await operator.projects.delete(created.api_key_id);
    await refused(operator.projects.get(created.api_key_id), 'unknown_api_key', 404);
    // The operator token is not an API key, and an API key is not the operator token.
    await refused(operator.users.get(user.userId), 'invalid_token', 401);
    await refused(admin.projects.list().toArray(), 'invalid_token', 401);
  });

  test('operator: signing keys listed, one rotated with the pre-publication delay', async () => {
    const before = await operator.keys.list().toArray();
    assert.ok(before.some((k) => k.state === 'active'));
    const rotated = await operator.keys.rotate({ delay_seconds: 3600 });
    const after = await operator.keys.list().toArray();
    const next = after.find((k) => k.kid === rotated.kid);
    assert.equal(next?.state, 'next', 'published, not yet signing');
    assert.equal(next?.activate_at, rotated.activate_at);
    const jwks = await server.request('GET', '/.well-known/jwks.json');
    assert.ok(
      jwks.body.keys.some((k: { kid: string }) => k.kid === rotated.kid),
      'in the JWKS already',
    );
    await refused(admin.keys.list().toArray(), 'invalid_token', 401);
  });

  test('console members: their own token with Tessera-Project; roles decide, other projects are unknown', async () => {
    const made = await server.ctx.console.project();
    assert.ok(made);
    const consoleProject = { ...made, project_id: made.id, api_key_secret: '' };
    const other = await server.ctx.projects.create({ name: 'other', origins: ['http://other.test'] });
    const people = { operator: uniqueEmail('op'), support: uniqueEmail('support') };
    await server.ctx.console.grant(people.operator, 'operator');
    await server.ctx.console.grant(people.support, 'support', server.project.api_key_id);
    const tokens = {
      operator: (await server.signIn(people.operator, consoleProject)).access_token,
      support: (await server.signIn(people.support, consoleProject)).access_token,
    };
    const member = (who: keyof typeof tokens, project?: string) =>
      createTesseraAdmin({
        issuer: server.url,
        accessToken: async () => tokens[who],
        ...(project !== undefined && { project }),
        fetch: recorder.fetch,
      });

    const op = await member('operator').console.me();
    assert.equal(op.operator, true);
    assert.equal(op.identifier, people.operator);
    const support = await member('support').console.me();
    assert.deepEqual(support.projects, [
      { api_key_id: server.project.api_key_id, name: 'test', role: 'support' },
    ]);

    const asSupport = member('support', server.project.api_key_id);
    assert.equal((await asSupport.users.get(user.userId)).user_id, user.userId);
    const forbidden = await refused(asSupport.users.delete(user.userId), 'forbidden', 403);
    assert.match(forbidden.detail, /users\.delete|delete/);
    await refused(asSupport.forProject(other.api_key_id).users.get(user.userId), 'not_found', 404);
    await refused(asSupport.keys.list().toArray(), 'forbidden', 403);

    const asOperator = member('operator', other.api_key_id);
    assert.deepEqual(
      await asOperator.users.list({ query: 'a' }).toArray(),
      [],
      'another project’s users are not these',
    );
    assert.equal(
      (await asOperator.forProject(server.project.api_key_id).users.get(user.userId)).user_id,
      user.userId,
    );
    assert.ok((await asOperator.keys.list().toArray()).length >= 2);
    assert.ok((await asOperator.projects.list().toArray()).some((p) => p.name === 'other'));

    // Every action taken with a console token names its actor in the audit event.
    await asOperator.forProject(server.project.api_key_id).claims.set(user.userId, { by: 'console' });
    const [changed] = await admin.audit
      .list({ user_id: user.userId, type: 'claims.changed', limit: '1' })
      .toArray({ max: 1 });
    assert.deepEqual(changed?.data['actor'], {
      user_id: op.user_id,
      identifier: people.operator,
      role: 'operator',
    });
    await admin.claims.clear(user.userId);
  });

  test('users: delete (the user is gone, their tokens fail /verify)', async () => {
    await admin.users.delete(user.userId);
    await refused(admin.users.get(user.userId), 'user_not_found', 404);
    assert.equal((await verify(user.bundle.access_token)).success, false);
  });

  describe('coverage', () => {
    test('every admin operation of the live document was called through the client', () => {
      const all = operations.map((o) => `${o.method} ${o.path}`);
      assert.deepEqual(
        all.filter((route) => !recorder.reached.has(route)),
        [],
        'operations no method of the client reached',
      );
      assert.deepEqual(recorder.unmatched, [], 'requests to routes outside the admin operations');
    });
  });
});
