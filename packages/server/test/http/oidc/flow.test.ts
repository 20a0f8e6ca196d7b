import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import {
  eachDialect,
  RELAXED_LIMITS,
  startServer,
  type TestServer,
  uniqueEmail,
} from '../../helpers/harness.js';
import {
  authorizeUrl,
  Browser,
  exchangeCode,
  formFields,
  pkce,
  redirectParams,
  registerClient,
  signInOnHostedPages,
} from '../../helpers/oidc.js';

const REDIRECT = 'https://rp.example/callback';

const tokenIntrospection = (server: TestServer, token: string) =>
  server.request('POST', '/oauth/introspect', {
    raw: new URLSearchParams({ token }).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${server.project.api_key_id}:${server.project.api_key_secret}`).toString('base64')}`,
    },
  });

eachDialect('authorization code flow with PKCE (issue 31)', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect, { env: RELAXED_LIMITS });
  });
  after(() => server.close());

  const jwks = async () => createLocalJWKSet((await server.request('GET', '/.well-known/jwks.json')).body);

  async function codeFor(
    clientId: string,
    browser: Browser,
    email: string,
    extra: Record<string, string> = {},
  ) {
    const { verifier, challenge } = pkce();
    const start = await browser.go(
      authorizeUrl({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        scope: 'openid email offline_access',
        state: 'st-1',
        nonce: 'n-1',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...extra,
      }),
    );
    assert.ok(start.status === 303 || start.status === 200, start.text);
    const done = start.location?.startsWith('/oauth/sign-in')
      ? await signInOnHostedPages(server, browser, start.location!, email)
      : start;
    return { done, verifier };
  }

  const exchange = (clientId: string, code: string, verifier: string, extra: Record<string, string> = {}) =>
    exchangeCode(server, clientId, REDIRECT, code, verifier, extra);

  test('sign-in on the hosted pages, code, tokens verified against the JWKS, refresh, userinfo, SSO for a second client', async () => {
    const client = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const browser = new Browser(server.url);
    const email = uniqueEmail('flow');
    const { done, verifier } = await codeFor(client.client_id, browser, email);
    assert.equal(done.status, 303, done.text);
    const answer = redirectParams(done.location);
    assert.equal(answer.state, 'st-1');
    assert.equal(answer.iss, server.url);
    assert.ok(answer.code);
    const tokens = await exchange(client.client_id, answer.code!, verifier);
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal(tokens.headers.get('cache-control'), 'no-store');
    assert.equal(tokens.body.scope, 'openid email offline_access');
    assert.match(tokens.body.refresh_token, /^tsr_/);
    const keys = await jwks();
    const id = await jwtVerify(tokens.body.id_token, keys, {
      issuer: server.url,
      audience: client.client_id,
    });
    assert.equal(id.payload.nonce, 'n-1');
    assert.equal(id.payload.azp, client.client_id);
    assert.deepEqual(id.payload.amr, ['otp']);
    assert.equal(typeof id.payload.auth_time, 'number');
    const access = await jwtVerify(tokens.body.access_token, keys, {
      issuer: server.url,
      audience: server.project.api_key_id,
    });
    assert.equal(access.payload.client_id, client.client_id);
    assert.equal(access.payload.identifier, email);

    const info = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${tokens.body.access_token}` },
    });
    assert.equal(info.status, 200, info.text);
    assert.equal(info.body.email, email);

    // Introspection (the project's credentials) names the client, for access and refresh tokens.
    for (const token of [tokens.body.access_token, tokens.body.refresh_token]) {
      const seen = await tokenIntrospection(server, token);
      assert.equal(seen.body.active, true, seen.text);
      assert.equal(seen.body.client_id, client.client_id);
    }
    const refreshed = await server.request('POST', '/oauth/token', {
      raw: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: client.client_id,
        refresh_token: tokens.body.refresh_token,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(refreshed.body.scope, 'openid email offline_access');
    assert.notEqual(refreshed.body.refresh_token, tokens.body.refresh_token);
    assert.equal(
      (await jwtVerify(refreshed.body.id_token, keys, { audience: client.client_id })).payload.azp,
      client.client_id,
    );

    // A refresh token is bound to its client: the project's API key cannot use it.
    const stolen = await server.request('POST', '/oauth/token', {
      body: {
        grant_type: 'refresh_token',
        client_id: server.project.api_key_id,
        refresh_token: refreshed.body.refresh_token,
      },
    });
    assert.equal(stolen.status, 400, stolen.text);
    assert.equal(stolen.body.error, 'invalid_grant');

    // SSO: a second client of the project gets a code without a new sign-in.
    const second = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const sent = server.outbox.list().length;
    const again = await codeFor(second.client_id, browser, email);
    assert.equal(again.done.status, 303);
    assert.ok(redirectParams(again.done.location).code);
    assert.equal(server.outbox.list().length, sent, 'no new code was sent');
    const secondTokens = await exchange(
      second.client_id,
      redirectParams(again.done.location).code!,
      again.verifier,
    );
    assert.equal(secondTokens.status, 200, secondTokens.text);
  });

  test('no offline_access: no refresh token; no openid: no ID token', async () => {
    const client = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const browser = new Browser(server.url);
    const { done, verifier } = await codeFor(client.client_id, browser, uniqueEmail('scopes'), {
      scope: 'openid',
    });
    const tokens = await exchange(client.client_id, redirectParams(done.location).code!, verifier);
    assert.equal(tokens.status, 200, tokens.text);
    assert.equal(tokens.body.refresh_token, undefined);
    assert.ok(tokens.body.id_token);
    const bare = await codeFor(client.client_id, browser, '', { scope: 'email' });
    const plain = await exchange(client.client_id, redirectParams(bare.done.location).code!, bare.verifier);
    assert.equal(plain.status, 200, plain.text);
    assert.equal(plain.body.id_token, undefined);
    assert.equal(plain.body.refresh_token, undefined);
  });

  test('a confidential client authenticates with client_secret_basic; resource sets the audience', async () => {
    const client = await registerClient(server, { redirect_uris: [REDIRECT], first_party: true });
    const browser = new Browser(server.url);
    const { done, verifier } = await codeFor(client.client_id, browser, uniqueEmail('conf'), {
      resource: 'https://api.example.com/',
    });
    const code = redirectParams(done.location).code!;
    const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
    const refused = await exchange(client.client_id, code, verifier);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'invalid_client');
    // The refused request did not spend the code (client authentication comes first).
    const tokens = await server.request('POST', '/oauth/token', {
      raw: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        code_verifier: verifier,
      }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
    });
    assert.equal(tokens.status, 200, tokens.text);
    const access = await jwtVerify(tokens.body.access_token, await jwks(), {
      audience: 'https://api.example.com/',
    });
    assert.equal(access.payload.client_id, client.client_id);
    // A resource-bound token names its project, which a resource server checks (@tessera/verify).
    assert.equal(access.payload.api_key_id, server.project.api_key_id);
    const introspected = await server.request('POST', '/oauth/introspect', {
      raw: new URLSearchParams({ token: tokens.body.access_token }).toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${server.project.api_key_id}:${server.project.api_key_secret}`).toString('base64')}`,
      },
    });
    assert.equal(introspected.status, 200, introspected.text);
    assert.equal(introspected.body.active, true);
    assert.equal(introspected.body.client_id, client.client_id);
  });

  test('third-party client: consent shown, remembered, listed and revocable; refusal is access_denied', async () => {
    const client = await registerClient(server, {
      client_name: 'Other Co',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    });
    const browser = new Browser(server.url);
    const email = uniqueEmail('consent');
    const first = await codeFor(client.client_id, browser, email);
    assert.equal(first.done.status, 303);
    assert.match(first.done.location!, /^\/oauth\/consent\?request_id=/);
    const page = await browser.go(first.done.location!);
    assert.equal(page.status, 200);
    assert.match(page.text, /Other Co/);
    assert.match(page.text, /rp\.example/);
    assert.match(page.text, /Your e-mail address/);
    const allowed = await browser.go('/oauth/consent', {
      form: { ...formFields(page.text, '/oauth/consent'), decision: 'allow' },
    });
    assert.equal(allowed.status, 303);
    const tokens = await exchange(client.client_id, redirectParams(allowed.location).code!, first.verifier);
    assert.equal(tokens.status, 200, tokens.text);
    // Remembered: the next authorization goes straight to the code.
    const second = await codeFor(client.client_id, browser, email);
    assert.ok(redirectParams(second.done.location).code);
    // Listed and revoked by the user.
    const mine = await server.request('GET', '/v1/me/grants', {
      headers: { authorization: `Bearer ${tokens.body.access_token}`, api_key_id: server.project.api_key_id },
    });
    assert.equal(mine.status, 200, mine.text);
    assert.deepEqual(
      mine.body.grants.map((g: { client_id: string }) => g.client_id),
      [client.client_id],
    );
    const revoked = await server.request('DELETE', `/v1/me/grants/${client.client_id}`, {
      headers: { authorization: `Bearer ${tokens.body.access_token}`, api_key_id: server.project.api_key_id },
    });
    assert.equal(revoked.status, 204, revoked.text);
    // The client's tokens of the user ended with the grant.
    const after = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${tokens.body.access_token}` },
    });
    assert.equal(after.status, 401);
    const third = await codeFor(client.client_id, browser, email);
    assert.match(third.done.location!, /^\/oauth\/consent/);
    const denyPage = await browser.go(third.done.location!);
    const denied = await browser.go('/oauth/consent', {
      form: { ...formFields(denyPage.text, '/oauth/consent'), decision: 'deny' },
    });
    assert.equal(redirectParams(denied.location).error, 'access_denied');
    assert.equal(redirectParams(denied.location).iss, server.url);
  });

  test('the integrator lists and withdraws a user’s grants', async () => {
    const client = await registerClient(server, {
      client_name: 'Partner',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    });
    const browser = new Browser(server.url);
    const first = await codeFor(client.client_id, browser, uniqueEmail('integrator-grants'));
    const page = await browser.go(first.done.location!);
    const allowed = await browser.go('/oauth/consent', {
      form: { ...formFields(page.text, '/oauth/consent'), decision: 'allow' },
    });
    const tokens = await exchange(client.client_id, redirectParams(allowed.location).code!, first.verifier);
    const sub = JSON.parse(Buffer.from(tokens.body.access_token.split('.')[1], 'base64url').toString()).sub;
    const basic = {
      authorization: `Basic ${Buffer.from(`${server.project.api_key_id}:${server.project.api_key_secret}`).toString('base64')}`,
    };
    const listed = await server.request('GET', `/v1/users/${sub}/grants`, { headers: basic });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.grants.map((g: { client_name: string; scope: string }) => [g.client_name, g.scope]),
      [['Partner', 'openid email offline_access']],
    );
    assert.equal(
      (await server.request('DELETE', `/v1/users/${sub}/grants/${client.client_id}`, { headers: basic }))
        .status,
      204,
    );
    assert.equal(
      (await server.request('GET', `/v1/users/${sub}/grants`, { headers: basic })).body.grants.length,
      0,
    );
    const refresh = await server.request('POST', '/oauth/token', {
      body: {
        grant_type: 'refresh_token',
        client_id: client.client_id,
        refresh_token: tokens.body.refresh_token,
      },
    });
    assert.equal(refresh.body.error, 'invalid_grant');
    assert.equal((await server.request('GET', '/v1/users/nobody/grants', { headers: basic })).status, 404);
  });

  test('prompt=none without a session: login_required; max_age=0 forces a new sign-in; prompt=login too', async () => {
    const client = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const browser = new Browser(server.url);
    const none = await codeFor(client.client_id, browser, '', { prompt: 'none' });
    assert.equal(redirectParams(none.done.location).error, 'login_required');
    assert.equal(redirectParams(none.done.location).state, 'st-1');
    const email = uniqueEmail('maxage');
    await codeFor(client.client_id, browser, email);
    const silent = await codeFor(client.client_id, browser, email, { prompt: 'none' });
    assert.ok(redirectParams(silent.done.location).code);
    const { challenge } = pkce();
    for (const extra of [{ max_age: '0' }, { prompt: 'login' }] as Array<Record<string, string>>) {
      const forced = await browser.go(
        authorizeUrl({
          response_type: 'code',
          client_id: client.client_id,
          redirect_uri: REDIRECT,
          scope: 'openid',
          code_challenge: challenge,
          code_challenge_method: 'S256',
          ...extra,
        }),
      );
      assert.match(forced.location ?? '', /^\/oauth\/sign-in/, JSON.stringify(extra));
    }
  });

  test('the hosted session is a Tessera session: signing out everywhere ends it; prompt=consent asks again', async () => {
    const client = await registerClient(server, {
      client_name: 'Third',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    });
    const browser = new Browser(server.url);
    const email = uniqueEmail('sso-revoked');
    const first = await codeFor(client.client_id, browser, email);
    const page = await browser.go(first.done.location!);
    const allowed = await browser.go('/oauth/consent', {
      form: { ...formFields(page.text, '/oauth/consent'), decision: 'allow' },
    });
    const tokens = await exchange(client.client_id, redirectParams(allowed.location).code!, first.verifier);
    // Consented already: prompt=consent still shows the screen.
    const again = await codeFor(client.client_id, browser, email, { prompt: 'consent' });
    assert.match(again.done.location!, /^\/oauth\/consent\?/);
    const silent = await codeFor(client.client_id, browser, email, { prompt: 'none' });
    assert.ok(redirectParams(silent.done.location).code);
    const out = await server.request('POST', '/v1/me/sessions/revoke', {
      body: { scope: 'global' },
      headers: { authorization: `Bearer ${tokens.body.access_token}`, api_key_id: server.project.api_key_id },
    });
    assert.equal(out.status, 200, out.text);
    const after = await codeFor(client.client_id, browser, email, { prompt: 'none' });
    assert.equal(redirectParams(after.done.location).error, 'login_required');
  });

  test('response_mode=form_post answers with an auto-submitted form to the redirect URI', async () => {
    const client = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const browser = new Browser(server.url);
    const email = uniqueEmail('formpost');
    await codeFor(client.client_id, browser, email);
    const { done } = await codeFor(client.client_id, browser, email, { response_mode: 'form_post' });
    assert.equal(done.status, 200);
    const fields = formFields(done.text, REDIRECT);
    assert.ok(fields.code);
    assert.equal(fields.state, 'st-1');
    assert.equal(fields.iss, server.url);
    assert.match(done.headers.get('content-security-policy')!, /form-action 'self' https:\/\/rp\.example/);
  });

  test('RP-initiated logout: id_token_hint, exact post_logout_redirect_uri, state; ends SSO and the client session', async () => {
    const client = await registerClient(server, {
      redirect_uris: [REDIRECT],
      post_logout_redirect_uris: ['https://rp.example/bye'],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const browser = new Browser(server.url);
    const email = uniqueEmail('logout');
    const { done, verifier } = await codeFor(client.client_id, browser, email);
    const tokens = await exchange(client.client_id, redirectParams(done.location).code!, verifier);
    const wrong = await browser.go(
      `/oauth/logout?${new URLSearchParams({ id_token_hint: tokens.body.id_token, post_logout_redirect_uri: 'https://rp.example/bye/' })}`,
    );
    assert.equal(wrong.status, 400);
    const out = await browser.go(
      `/oauth/logout?${new URLSearchParams({ id_token_hint: tokens.body.id_token, post_logout_redirect_uri: 'https://rp.example/bye', state: 's2' })}`,
    );
    assert.equal(out.status, 303);
    assert.equal(out.location, 'https://rp.example/bye?state=s2');
    const none = await codeFor(client.client_id, browser, email, { prompt: 'none' });
    assert.equal(redirectParams(none.done.location).error, 'login_required');
    const info = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${tokens.body.access_token}` },
    });
    assert.equal(info.status, 401);
  });

  test('RP-initiated logout of a native app: a loopback post_logout_redirect_uri matches on any port, nothing else is loosened', async () => {
    const client = await registerClient(server, {
      redirect_uris: ['http://127.0.0.1/callback'],
      post_logout_redirect_uris: ['http://127.0.0.1/signed-out'],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    const logoutTo = async (target: string) => {
      const browser = new Browser(server.url);
      const { done, verifier } = await codeFor(client.client_id, browser, uniqueEmail('native-logout'), {
        redirect_uri: 'http://127.0.0.1:50123/callback',
      });
      const tokens = await exchange(client.client_id, redirectParams(done.location).code!, verifier, {
        redirect_uri: 'http://127.0.0.1:50123/callback',
      });
      return browser.go(
        `/oauth/logout?${new URLSearchParams({ id_token_hint: tokens.body.id_token, post_logout_redirect_uri: target, state: 'n1' })}`,
      );
    };
    const out = await logoutTo('http://127.0.0.1:61234/signed-out');
    assert.equal(out.status, 303);
    assert.equal(out.location, 'http://127.0.0.1:61234/signed-out?state=n1');
    for (const refused of [
      'http://127.0.0.1:61234/signed-out/',
      'http://localhost:61234/signed-out',
      'http://[::1]:61234/signed-out',
      'http://127.0.0.1:61234/other',
    ])
      assert.equal((await logoutTo(refused)).status, 400, refused);
  });
});

eachDialect('hosted pages show the project’s branding (issue 31, migration 017)', (dialect) => {
  let server: TestServer;
  before(async () => {
    server = await startServer(dialect, { env: RELAXED_LIMITS });
  });
  after(() => server.close());

  test('display name and button colours (a stylesheet of Tessera’s, no inline style)', async () => {
    await server.ctx.projects.update(server.project.api_key_id, {
      branding: { display_name: 'Acme Accounts', primary_color: '#123456', primary_color_dark: '#abcdef' },
    });
    const client = await registerClient(server, {
      client_name: 'Notes',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    });
    const browser = new Browser(server.url);
    const start = await browser.go(
      authorizeUrl({
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        scope: 'openid',
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      }),
    );
    const page = await browser.go(start.location!);
    assert.match(page.text, /Acme Accounts signs you in/);
    const href = /<link rel="stylesheet" href="([^"]*\/oauth\/assets\/brand\/[^"]+)">/.exec(page.text)?.[1];
    assert.ok(href, page.text);
    const css = await browser.go(href!.replace(/&amp;/g, '&'));
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type')!, /^text\/css/);
    assert.match(css.text, /--accent:#123456/);
    assert.match(css.text, /prefers-color-scheme:dark\)\{:root\{--accent:#abcdef/);
  });
});

eachDialect('the hosted pages’ storage is pruned by housekeeping (issue 31)', (dialect) => {
  test('expired pending requests and hosted sessions go; codes stay an hour past expiry (replay detection)', async () => {
    let now = Date.now();
    const server = await startServer(dialect, { env: RELAXED_LIMITS, now: () => now });
    try {
      const client = await registerClient(server, {
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: 'none',
        first_party: true,
      });
      const browser = new Browser(server.url);
      const { challenge } = pkce();
      const params = {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      };
      const start = await browser.go(authorizeUrl(params));
      await signInOnHostedPages(server, browser, start.location!, uniqueEmail('prune'));
      await browser.go(authorizeUrl(params)); // the hosted session gives a second code at once
      await browser.go(authorizeUrl({ ...params, prompt: 'login' })); // a pending request, never finished
      const count = async (table: 'oauth_requests' | 'oauth_codes' | 'oauth_browser_sessions') =>
        (await server.storage.db.kysely.selectFrom(table).select('id').execute()).length;
      assert.equal(await count('oauth_codes'), 2);
      assert.equal(await count('oauth_requests'), 1);
      assert.equal(await count('oauth_browser_sessions'), 1);
      const { runHousekeeping } = await import('../../../src/context.js');
      now += 30 * 60_000; // past the pending request's 15 minutes, within the codes' hour
      await runHousekeeping(server.ctx, now);
      assert.equal(await count('oauth_requests'), 0);
      assert.equal(await count('oauth_codes'), 2);
      now += 32 * 60_000; // past the codes' hour (they expired a minute after they were issued)
      await runHousekeeping(server.ctx, now);
      assert.equal(await count('oauth_codes'), 0);
      assert.equal(
        await count('oauth_browser_sessions'),
        1,
        'the hosted session lives as long as its session',
      );
    } finally {
      await server.close();
    }
  });
});

eachDialect('the issuer’s own origin signs in for every project (the hosted pages, issue 31)', (dialect) => {
  test('/v1/auth/* accepts Origin: <issuer> for a project that does not list it; other origins stay refused', async () => {
    const server = await startServer(dialect, { env: RELAXED_LIMITS });
    try {
      const start = (origin: string) =>
        server.request('POST', '/v1/auth/otp/start', {
          body: { identifier: uniqueEmail('origin') },
          headers: { api_key_id: server.project.api_key_id, origin },
        });
      assert.equal((await start(server.url)).status, 200);
      assert.equal((await start('http://app.test')).status, 200);
      const other = await start('https://evil.example');
      assert.equal(other.status, 403);
      assert.equal(other.body.code, 'origin_not_allowed');
    } finally {
      await server.close();
    }
  });
});
