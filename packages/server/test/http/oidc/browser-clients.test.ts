/**
 * CORS of the OAuth endpoints browsers call (issue 31): SPAs and browser-based MCP clients of any
 * origin read discovery, JWKS, token, revocation, userinfo and registration answers, without
 * credentials (`*`, never Allow-Credentials); whether the request's client may call from its
 * Origin is the route's decision. The integrator API (HTTP Basic, server to server) has no CORS.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../../helpers/harness.js';
import { Browser, codeFlowTokens, registerClient } from '../../helpers/oidc.js';

const SPA = 'https://spa.example';
const EVIL = 'https://evil.example';

eachDialect('OAuth endpoints from browsers of other origins (CORS, no credentials)', (dialect) => {
  let server: TestServer;
  let clientId: string;
  let tokens: { access_token: string; refresh_token?: string };
  before(async () => {
    server = await startServer(dialect, { env: RELAXED_LIMITS });
    clientId = (
      await registerClient(server, {
        redirect_uris: [`${SPA}/callback`],
        token_endpoint_auth_method: 'none',
        first_party: true,
      })
    ).client_id;
    tokens = await codeFlowTokens(server, new Browser(server.url), {
      clientId,
      redirectUri: `${SPA}/callback`,
      email: 'spa@example.com',
      scope: 'openid email offline_access',
    });
  });
  after(() => server.close());

  const form = (path: string, fields: Record<string, string>, origin: string) =>
    server.request('POST', path, {
      raw: new URLSearchParams(fields).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
    });
  const noCredentials = (answer: { headers: Headers }, what: string) => {
    assert.equal(answer.headers.get('access-control-allow-origin'), '*', what);
    assert.equal(answer.headers.get('access-control-allow-credentials'), null, what);
  };

  test('preflights: token, revocation, userinfo, registration answer any origin, without credentials', async () => {
    for (const path of [
      '/oauth/token',
      `/oauth/token/${server.project.api_key_id}`,
      '/oauth/revoke',
      '/oauth/userinfo',
      `/oauth/register/${server.project.api_key_id}`,
    ]) {
      const answer = await server.request('OPTIONS', path, {
        headers: {
          origin: SPA,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type, authorization',
        },
      });
      assert.equal(answer.status, 204, path);
      noCredentials(answer, path);
      assert.match(answer.headers.get('access-control-allow-headers') ?? '', /Content-Type/);
      assert.match(answer.headers.get('access-control-allow-headers') ?? '', /Authorization/);
    }
  });

  test('the token endpoint: the client’s own origin (of its redirect URIs) is served; another is refused readably', async () => {
    const refreshed = await form(
      '/oauth/token',
      { grant_type: 'refresh_token', client_id: clientId, refresh_token: tokens.refresh_token! },
      SPA,
    );
    assert.equal(refreshed.status, 200, refreshed.text);
    noCredentials(refreshed, 'token');
    tokens = refreshed.body;
    const evil = await form(
      '/oauth/token',
      { grant_type: 'refresh_token', client_id: clientId, refresh_token: tokens.refresh_token! },
      EVIL,
    );
    assert.equal(evil.status, 403, evil.text);
    assert.equal(evil.body.error, 'invalid_client');
    noCredentials(evil, 'refused token request');
  });

  test('userinfo: from the client’s origin, not from another', async () => {
    const from = (origin: string) =>
      server.request('GET', '/oauth/userinfo', {
        headers: { authorization: `Bearer ${tokens.access_token}`, origin },
      });
    const ok = await from(SPA);
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.email, 'spa@example.com');
    noCredentials(ok, 'userinfo');
    const evil = await from(EVIL);
    assert.equal(evil.status, 403, evil.text);
    noCredentials(evil, 'refused userinfo');
  });

  test('registration, discovery and JWKS answer a browser; revocation too', async () => {
    const opened = await server.request('PUT', '/v1/project/client-registration', {
      body: { open_registration: true },
      headers: { authorization: basicAuth(server.project) },
    });
    assert.equal(opened.status, 200, opened.text);
    const registered = await server.request('POST', `/oauth/register/${server.project.api_key_id}`, {
      body: {
        client_name: 'Browser MCP',
        redirect_uris: ['https://mcp-client.example/cb'],
        token_endpoint_auth_method: 'none',
      },
      headers: { origin: 'https://mcp-client.example' },
    });
    assert.equal(registered.status, 201, registered.text);
    noCredentials(registered, 'registration');
    for (const path of [
      '/.well-known/openid-configuration',
      '/.well-known/jwks.json',
      `/.well-known/oauth-authorization-server/projects/${server.project.api_key_id}`,
    ]) {
      const answer = await server.request('GET', path, { headers: { origin: SPA } });
      assert.equal(answer.status, 200, path);
      noCredentials(answer, path);
    }
    const revoked = await form('/oauth/revoke', { token: tokens.refresh_token!, client_id: clientId }, SPA);
    assert.equal(revoked.status, 200, revoked.text);
    noCredentials(revoked, 'revocation');
  });

  test('the integrator API (HTTP Basic) stays without CORS', async () => {
    const answer = await server.request('GET', '/v1/clients', {
      headers: { authorization: basicAuth(server.project), origin: SPA },
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.headers.get('access-control-allow-origin'), null);
    const preflight = await server.request('OPTIONS', '/v1/clients', {
      headers: { origin: SPA, 'access-control-request-method': 'POST' },
    });
    assert.equal(preflight.status, 404);
    assert.equal(preflight.headers.get('access-control-allow-origin'), null);
  });
});
