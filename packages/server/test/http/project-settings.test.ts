import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { loadConfig } from '../../src/config/index.js';
import { lifetimesOf, serverSettings } from '../../src/modules/projects/project.js';
import {
  authorizedClient,
  basicAuth,
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
} from '../helpers/harness.js';
import { Browser, codeFlowTokens, registerClient } from '../helpers/oidc.js';
import { assertProblem, otpUser } from '../helpers/sign-in-methods.js';

// A project's SMS countries and token lifetimes (issue 33): shown and changed over the operator
// API (the console's settings page), followed by OTP sending and by every token minted after.
const TOKEN = randomBytes(32).toString('base64url');
const ENV = {
  ...RELAXED_LIMITS,
  TESSERA_OPERATOR_TOKEN: TOKEN,
  TESSERA_TRUST_PROXY: '1',
  TESSERA_SMS_COUNTRIES: 'US,CA',
  // Server lifetimes other than the built-in ones, so that a test cannot pass on the defaults.
  TESSERA_ACCESS_TOKEN_TTL: '1800',
  TESSERA_ID_TOKEN_TTL: '2400',
  TESSERA_REFRESH_TOKEN_TTL: String(7 * 86_400),
};
const LONDON = '+442079460958';
const SAN_FRANCISCO = '+14155552671';

const operator = (server: TestServer) => authorizedClient(server, `Bearer ${TOKEN}`, '/v1/operator');

let ip = 0;
/** An OTP start from a new client address each time (the per-IP limits stay out of the way). */
const sendCode = (server: TestServer, identifier: string) =>
  server.request('POST', '/v1/auth/otp/start', {
    body: { identifier },
    headers: { api_key_id: server.project.api_key_id, 'x-forwarded-for': `198.51.100.${(ip++ % 250) + 1}` },
  });

const lifetime = (token: string) => {
  const { exp, iat } = decodeJwt(token);
  return (exp ?? 0) - (iat ?? 0);
};

/** The user's sessions as the integrator API lists them, each with its lifetime in seconds. */
async function sessionLifetimes(server: TestServer, userId: string): Promise<Map<string | null, number>> {
  const listed = await authorizedClient(
    server,
    basicAuth(server.project),
    '/v1',
  )('GET', `/users/${userId}/sessions`);
  assert.equal(listed.status, 200, listed.text);
  return new Map(
    (listed.body.sessions as Array<{ client_id: string | null; created_at: string; expires_at: string }>).map(
      (s) => [s.client_id, (Date.parse(s.expires_at) - Date.parse(s.created_at)) / 1000],
    ),
  );
}

eachDialect('a project’s SMS countries and token lifetimes', (dialect) => {
  test('the operator API shows and changes the SMS countries, and OTP sending follows them', async () => {
    const server = await startServer(dialect, { env: ENV });
    const call = operator(server);
    const path = `/projects/${server.project.api_key_id}`;
    try {
      const shown = await call('GET', path);
      assert.equal(shown.status, 200, shown.text);
      assert.equal(shown.body.sms_countries, null);
      assert.deepEqual(shown.body.server, {
        sms_enabled: true,
        sms_countries: ['US', 'CA'],
        access_token_ttl: 1800,
        id_token_ttl: 2400,
        refresh_token_ttl: 7 * 86_400,
      });
      assertProblem(await sendCode(server, LONDON), 403, 'country_not_allowed');

      const changed = await call('PATCH', path, { sms_countries: ['gb', 'ie'] });
      assert.equal(changed.status, 200, changed.text);
      assert.deepEqual(changed.body.sms_countries, ['GB', 'IE']);
      assert.equal((await sendCode(server, LONDON)).status, 200);
      assertProblem(await sendCode(server, SAN_FRANCISCO), 403, 'country_not_allowed');
      // The sign-in UI offers what the project allows.
      const branding = await server.request('GET', `/v1/projects/${server.project.api_key_id}/branding`);
      assert.deepEqual(
        branding.body.sms_countries.map((c: { country: string }) => c.country),
        ['GB', 'IE'],
      );

      // None: codes by e-mail only.
      assert.deepEqual((await call('PATCH', path, { sms_countries: [] })).body.sms_countries, []);
      assertProblem(await sendCode(server, LONDON), 403, 'country_not_allowed');
      assert.equal((await sendCode(server, 'someone@example.com')).status, 200);

      // Null: the server's list again.
      assert.equal((await call('PATCH', path, { sms_countries: null })).body.sms_countries, null);
      assert.equal((await sendCode(server, SAN_FRANCISCO)).status, 200);
      assertProblem(await sendCode(server, LONDON), 403, 'country_not_allowed');

      // Bad lists are refused with a reason, and change nothing.
      for (const bad of [['XX'], ['USA'], ['US,CA'], 'US', [1]]) {
        const refused = await call('PATCH', path, { sms_countries: bad });
        assertProblem(refused, 400, 'invalid_request');
        assert.match(refused.body.detail, /sms_countries|sms countries|country/i);
      }
      assert.equal((await call('GET', path)).body.sms_countries, null);
    } finally {
      await server.close();
    }
  });

  test('token lifetimes: a project shortens them for every token minted after, never past the server’s', async () => {
    const server = await startServer(dialect, { env: ENV });
    const call = operator(server);
    const path = `/projects/${server.project.api_key_id}`;
    try {
      const before = await otpUser(server, 'before@example.com');
      assert.equal(lifetime(before.bundle.access_token), 1800);
      assert.equal(lifetime(before.bundle.id_token), 2400);
      assert.equal(before.bundle.expires_in, 1800);

      const changed = await call('PATCH', path, {
        access_token_ttl: 900,
        id_token_ttl: 600,
        refresh_token_ttl: 7200,
      });
      assert.equal(changed.status, 200, changed.text);
      assert.equal(changed.body.access_token_ttl, 900);
      assert.equal(changed.body.id_token_ttl, 600);
      assert.equal(changed.body.refresh_token_ttl, 7200);
      assert.equal(changed.body.server.access_token_ttl, 1800);

      const after = await otpUser(server, 'after@example.com');
      assert.equal(lifetime(after.bundle.access_token), 900);
      assert.equal(lifetime(after.bundle.id_token), 600);
      assert.equal(after.bundle.expires_in, 900);
      assert.deepEqual([...(await sessionLifetimes(server, after.userId)).values()], [7200]);
      // A session started before keeps its lifetime; its next tokens are the shorter ones.
      assert.deepEqual([...(await sessionLifetimes(server, before.userId)).values()], [7 * 86_400]);
      const refreshed = await server.request('POST', '/oauth/token', {
        body: {
          grant_type: 'refresh_token',
          refresh_token: before.bundle.refresh_token,
          client_id: server.project.api_key_id,
        },
      });
      assert.equal(refreshed.status, 200, refreshed.text);
      assert.equal(lifetime(refreshed.body.access_token), 900);
      assert.equal(refreshed.body.expires_in, 900);

      // An OAuth client's session (the code flow) takes the project's lifetimes too.
      const redirect = 'http://127.0.0.1/callback';
      const client = await registerClient(server, {
        redirect_uris: [redirect],
        token_endpoint_auth_method: 'none',
        first_party: true,
      });
      const tokens = await codeFlowTokens(server, new Browser(server.url), {
        clientId: client.client_id,
        redirectUri: redirect,
        email: 'after@example.com',
        scope: 'openid email offline_access',
      });
      assert.equal(lifetime(tokens.access_token), 900);
      assert.equal(lifetime(tokens.id_token ?? ''), 600);
      assert.equal((await sessionLifetimes(server, after.userId)).get(client.client_id), 7200);

      // Longer than the server's, shorter than the least, or not whole seconds: 400, nothing changed.
      for (const [body, pattern] of [
        [{ access_token_ttl: 1801 }, /access_token_ttl .* from 30 to 1800 .*TESSERA_ACCESS_TOKEN_TTL/],
        [{ id_token_ttl: 29 }, /id_token_ttl .* from 30 to 2400/],
        [{ refresh_token_ttl: 7 * 86_400 + 1 }, /refresh_token_ttl .* from 60 to 604800/],
        [{ access_token_ttl: 90.5 }, /access_token_ttl/],
        [{ access_token_ttl: '900' }, /access_token_ttl/],
      ] as const) {
        const refused = await call('PATCH', path, body);
        assertProblem(refused, 400, 'invalid_request');
        assert.match(refused.body.detail, pattern);
      }
      assert.equal((await call('GET', path)).body.access_token_ttl, 900);

      // Null: the server's again.
      const reset = await call('PATCH', path, { access_token_ttl: null, id_token_ttl: null });
      assert.equal(reset.body.access_token_ttl, null);
      assert.equal(reset.body.refresh_token_ttl, 7200);
      const again = await otpUser(server, 'again@example.com');
      assert.equal(lifetime(again.bundle.access_token), 1800);
      assert.equal(lifetime(again.bundle.id_token), 2400);
    } finally {
      await server.close();
    }
  });

  test('a project is created with its SMS countries and lifetimes', async () => {
    const server = await startServer(dialect, { env: ENV });
    try {
      const created = await operator(server)('POST', '/projects', {
        name: 'short-lived',
        sms_countries: ['FR'],
        access_token_ttl: 300,
        refresh_token_ttl: 3600,
      });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(created.body.sms_countries, ['FR']);
      assert.equal(created.body.access_token_ttl, 300);
      assert.equal(created.body.id_token_ttl, null);
      assert.equal(created.body.refresh_token_ttl, 3600);
      const refused = await operator(server)('POST', '/projects', {
        name: 'too-long',
        access_token_ttl: 3601,
      });
      assertProblem(refused, 400, 'invalid_request');
      assert.equal(await server.ctx.projects.findByName('too-long'), undefined);
    } finally {
      await server.close();
    }
  });
});

test('a lifetime a project set is capped by a server whose lifetime was lowered since', () => {
  const server = { accessTokenTtl: 600, idTokenTtl: 3600, refreshTokenTtl: 86_400 };
  assert.deepEqual(
    lifetimesOf({ access_token_ttl: 900, id_token_ttl: 300, refresh_token_ttl: null }, server),
    {
      access: 600,
      id: 300,
      refresh: 86_400,
    },
  );
});

test('a server with e-mail delivery only says it sends no SMS (the console then says so)', () => {
  const mailOnly = serverSettings(loadConfig({ TESSERA_SMTP_URL: 'smtp://mail.example.com:587' }));
  assert.equal(mailOnly.sms_enabled, false);
  assert.deepEqual(mailOnly.sms_countries, ['*']);
  assert.equal(mailOnly.access_token_ttl, 3600);
});
