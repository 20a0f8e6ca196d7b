/**
 * The OpenID Provider's audit events (issue 31): clients created, registered (DCR), updated,
 * secret-rotated and deleted; consents granted and withdrawn, by the user and by the integrator.
 * They are in `GET /v1/audit` and go to the project's webhooks like every other event.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { DYNAMIC_CLIENT_IDLE_MS } from '../../../src/modules/clients/clients.service.js';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../../helpers/harness.js';
import {
  authorizeUrl,
  Browser,
  formFields,
  pkce,
  redirectParams,
  registerClient,
  signInOnHostedPages,
} from '../../helpers/oidc.js';

const OPERATOR = randomBytes(32).toString('base64url');
const REDIRECT = 'http://127.0.0.1/callback';

interface Event {
  type: string;
  user_id: string | null;
  data: Record<string, unknown> & { by?: string };
}

async function waitFor<T>(what: string, probe: () => Promise<T | false | undefined>): Promise<T> {
  const until = Date.now() + 10_000;
  for (;;) {
    const found = await probe();
    if (found) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

eachDialect('OpenID Provider audit events', (dialect) => {
  let server: TestServer;
  let clock = Date.now();
  const received: Array<{ type: string; data: Record<string, unknown> }> = [];
  let receiver: Server;
  before(async () => {
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (c) => {
        body += c;
      });
      request.on('end', () => {
        received.push(JSON.parse(body));
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    server = await startServer(dialect, {
      env: { ...RELAXED_LIMITS, TESSERA_OPERATOR_TOKEN: OPERATOR, TESSERA_TRUST_PROXY: '1' },
      now: () => clock,
    });
  });
  after(async () => {
    await server.close();
    receiver.closeAllConnections();
    await new Promise((done) => receiver.close(done));
  });

  const basic = () => ({ authorization: basicAuth(server.project) });
  const events = async (type: string): Promise<Event[]> => {
    const answer = await server.request('GET', `/v1/audit?type=${encodeURIComponent(type)}`, {
      headers: basic(),
    });
    assert.equal(answer.status, 200, answer.text);
    return answer.body.events;
  };

  test('clients: created, updated, secret rotated, deleted — by the integrator and the operator; sent to webhooks', async () => {
    const hook = await server.request('POST', '/v1/webhooks', {
      body: {
        url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
        event_types: ['client.created', 'client.deleted'],
      },
      headers: basic(),
    });
    assert.equal(hook.status, 201, hook.text);
    const created = await registerClient(server, { redirect_uris: [REDIRECT] });
    const id = created.client_id;
    const replaced = await server.request('PUT', `/v1/clients/${id}`, {
      body: { client_name: 'Renamed', redirect_uris: [REDIRECT] },
      headers: basic(),
    });
    assert.equal(replaced.status, 200, replaced.text);
    const rotated = await server.request('POST', `/v1/clients/${id}/secret`, { headers: basic() });
    assert.equal(rotated.status, 200, rotated.text);
    assert.match(rotated.body.client_secret, /^tcs_/);
    assert.notEqual(rotated.body.client_secret, created.client_secret);
    // The old secret stops working at once; the new one works.
    const revokeWith = (secret: string) =>
      server.request('POST', '/oauth/revoke', {
        raw: new URLSearchParams({ token: 'x' }).toString(),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`,
        },
      });
    assert.equal((await revokeWith(created.client_secret!)).status, 401);
    assert.equal((await revokeWith(rotated.body.client_secret)).status, 200);
    const operatorMade = await server.request(
      'POST',
      `/v1/operator/projects/${server.project.api_key_id}/clients`,
      {
        body: { client_name: 'Ops', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
        headers: { authorization: `Bearer ${OPERATOR}` },
      },
    );
    assert.equal(operatorMade.status, 201, operatorMade.text);
    const publicRotate = await server.request(
      'POST',
      `/v1/operator/projects/${server.project.api_key_id}/clients/${operatorMade.body.client_id}/secret`,
      { headers: { authorization: `Bearer ${OPERATOR}` } },
    );
    assert.equal(publicRotate.status, 400, publicRotate.text);
    assert.match(publicRotate.text, /public client has no secret/);
    assert.equal((await server.request('DELETE', `/v1/clients/${id}`, { headers: basic() })).status, 204);

    // Newest first, but the injected clock stands still: compared in a fixed order.
    const of = (list: Event[]) =>
      list
        .map((e): Record<string, unknown> => ({ user_id: e.user_id, ...e.data }))
        .sort((a, b) => String(a.by).localeCompare(String(b.by)));
    assert.deepEqual(of(await events('client.created')), [
      { user_id: null, client_id: id, by: 'integrator' },
      { user_id: null, client_id: operatorMade.body.client_id, by: 'operator' },
    ]);
    assert.deepEqual(of(await events('client.updated')), [
      { user_id: null, client_id: id, by: 'integrator' },
    ]);
    assert.deepEqual(of(await events('client.secret_rotated')), [
      { user_id: null, client_id: id, by: 'integrator' },
    ]);
    assert.deepEqual(of(await events('client.deleted')), [
      { user_id: null, client_id: id, by: 'integrator' },
    ]);
    // No secret in any event.
    const all = await server.request('GET', '/v1/audit?limit=500', { headers: basic() });
    assert.doesNotMatch(all.text, /tcs_/);

    const delivered = await waitFor('the webhook deliveries', async () =>
      received.filter((r) => r.type.startsWith('client.')).length >= 3 ? received : false,
    );
    assert.deepEqual(delivered.map((r) => r.type).sort(), [
      'client.created',
      'client.created',
      'client.deleted',
    ]);
  });

  test('Dynamic Client Registration: client.registered; housekeeping: client.deleted by expired', async () => {
    const open = await server.request('PUT', '/v1/project/client-registration', {
      body: { open_registration: true },
      headers: basic(),
    });
    assert.equal(open.status, 200, open.text);
    const registered = await server.request('POST', `/oauth/register/${server.project.api_key_id}`, {
      body: { client_name: 'MCP', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
      headers: { 'x-forwarded-for': '198.51.100.7' },
    });
    assert.equal(registered.status, 201, registered.text);
    const id = registered.body.client_id;
    assert.deepEqual(
      (await events('client.registered')).map((e) => e.data),
      [{ client_id: id, token_endpoint_auth_method: 'none' }],
    );
    clock += DYNAMIC_CLIENT_IDLE_MS + 86_400_000;
    assert.ok((await server.ctx.clients.expireUnused()) >= 1);
    const deleted = await events('client.deleted');
    assert.deepEqual(deleted[0]!.data, { client_id: id, by: 'expired' });
  });

  test('consent: granted on the consent screen, withdrawn by the user and by the integrator', async () => {
    const client = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    });
    const email = uniqueEmail('consent');
    const browser = new Browser(server.url);
    const consentOnce = async (login: boolean) => {
      const { challenge } = pkce();
      const start = await browser.go(
        authorizeUrl({
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT,
          scope: 'openid email',
          code_challenge: challenge,
          code_challenge_method: 'S256',
          prompt: 'consent',
        }),
      );
      assert.equal(start.status, 303, start.text);
      const next = login ? await signInOnHostedPages(server, browser, start.location!, email) : start;
      const consent = await browser.go(next.location!);
      assert.equal(consent.status, 200, consent.text);
      const allowed = await browser.go('/oauth/consent', {
        form: { ...formFields(consent.text, '/oauth/consent'), decision: 'allow' },
      });
      assert.ok(redirectParams(allowed.location).code);
    };
    await consentOnce(true);
    const granted = await events('consent.granted');
    assert.equal(granted.length, 1);
    assert.deepEqual(granted[0]!.data, { client_id: client.client_id, scope: 'openid email' });
    const userId = granted[0]!.user_id!;
    assert.ok(userId);

    const bundle = await server.signIn(email);
    const byUser = await server.request('DELETE', `/v1/me/grants/${client.client_id}`, {
      headers: { authorization: `Bearer ${bundle.access_token}`, api_key_id: server.project.api_key_id },
    });
    assert.equal(byUser.status, 204, byUser.text);
    await consentOnce(false);
    const byIntegrator = await server.request('DELETE', `/v1/users/${userId}/grants/${client.client_id}`, {
      headers: basic(),
    });
    assert.equal(byIntegrator.status, 204, byIntegrator.text);
    const revoked = await events('consent.revoked');
    assert.deepEqual(
      revoked
        .map((e): Record<string, unknown> => ({ user_id: e.user_id, ...e.data }))
        .sort((a, b) => String(a.by).localeCompare(String(b.by))),
      [
        { user_id: userId, client_id: client.client_id, by: 'integrator' },
        { user_id: userId, client_id: client.client_id, by: 'user' },
      ],
    );
  });
});
