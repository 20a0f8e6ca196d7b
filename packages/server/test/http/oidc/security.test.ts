import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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

/** Security of the authorization code flow over real HTTP (issue 31, "Security"). */
eachDialect('OpenID Provider security (issue 31)', (dialect) => {
  let server: TestServer;
  let client: { client_id: string };
  let thirdParty: { client_id: string };
  before(async () => {
    server = await startServer(dialect, { env: RELAXED_LIMITS });
    client = await registerClient(server, {
      redirect_uris: [REDIRECT, 'http://127.0.0.1/native', 'com.example.app:/callback'],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    thirdParty = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
    });
  });
  after(() => server.close());

  const params = (extra: Record<string, string> = {}) => {
    const { challenge } = pkce();
    return {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      scope: 'openid offline_access',
      state: 'xyz',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    };
  };

  async function signedInCode(browser: Browser, email: string, clientId = client.client_id) {
    const { verifier, challenge } = pkce();
    const start = await browser.go(authorizeUrl(params({ client_id: clientId, code_challenge: challenge })));
    const done = start.location?.startsWith('/oauth/sign-in')
      ? await signInOnHostedPages(server, browser, start.location, email)
      : start;
    return { code: redirectParams(done.location).code!, verifier };
  }

  const exchange = (code: string, verifier: string, extra: Record<string, string> = {}) =>
    exchangeCode(server, client.client_id, REDIRECT, code, verifier, extra);

  test('open redirect: an unknown client or redirect URI gets an error page, never a Location', async () => {
    const browser = new Browser(server.url);
    const tricks: Array<Record<string, string>> = [
      { client_id: 'tc_AAAAAAAAAAAAAAAAAAAAAA' },
      { client_id: 'pk_not-a-client' },
      { redirect_uri: 'https://evil.example/callback' },
      { redirect_uri: `${REDIRECT}#frag` },
      { redirect_uri: 'https://rp.example@evil.example/callback' },
      { redirect_uri: 'https://evil.example@rp.example/callback' },
      { redirect_uri: 'HTTPS://RP.EXAMPLE/callback' },
      { redirect_uri: 'https://rp.example/Callback' },
      { redirect_uri: `${REDIRECT}/` },
      { redirect_uri: 'https://rp.example/callback/../evil' },
      { redirect_uri: 'https://rp.example/callback?x=1' },
      { redirect_uri: 'http://localhost/native' },
      { redirect_uri: 'http://127.0.0.1.evil.example/native' },
      { redirect_uri: 'http://127.0.0.1:8080/native/../x' },
      { redirect_uri: 'http://127.0.0.1:8080@evil.example/native' },
      { redirect_uri: 'com.example.app:/callback/x' },
      { redirect_uri: '' },
    ];
    for (const trick of tricks) {
      const answer = await browser.go(authorizeUrl(params(trick)));
      assert.equal(answer.status, 400, `${JSON.stringify(trick)}: ${answer.status}`);
      assert.equal(answer.location, undefined, JSON.stringify(trick));
      assert.match(answer.headers.get('content-type')!, /^text\/html/);
    }
    // Loopback redirects of native apps match on any port (RFC 8252 §7.3); private-use schemes exactly.
    for (const uri of [
      'http://127.0.0.1:53124/native',
      'http://127.0.0.1/native',
      'com.example.app:/callback',
    ]) {
      const answer = await browser.go(authorizeUrl(params({ redirect_uri: uri, prompt: 'none' })));
      assert.equal(answer.status, 303, uri);
      assert.ok(answer.location!.startsWith(uri), answer.location);
      assert.equal(redirectParams(answer.location).error, 'login_required');
    }
  });

  test('errors that may be redirected carry error, error_description, state and iss (mix-up, RFC 9207)', async () => {
    const browser = new Browser(server.url);
    const cases: Array<[Record<string, string>, string]> = [
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ code_challenge: '' }, 'invalid_request'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge_method: '' }, 'invalid_request'],
      [{ scope: 'openid admin' }, 'invalid_scope'],
      [{ prompt: 'none login' }, 'invalid_request'],
      [{ resource: 'https://api.example/#x' }, 'invalid_target'],
      [{ request: 'eyJ' }, 'request_not_supported'],
      [{ response_mode: 'fragment' }, 'invalid_request'],
    ];
    for (const [extra, error] of cases) {
      const answer = await browser.go(authorizeUrl(params(extra)));
      assert.equal(answer.status, 303, JSON.stringify(extra));
      const got = redirectParams(answer.location);
      assert.equal(got.error, error, JSON.stringify(extra));
      assert.ok(got.error_description);
      assert.equal(got.state, 'xyz');
      assert.equal(got.iss, server.url);
      assert.ok(answer.location!.startsWith(`${REDIRECT}?`));
    }
  });

  test('code replay: the second exchange fails and revokes the tokens of the first', async () => {
    const browser = new Browser(server.url);
    const { code, verifier } = await signedInCode(browser, uniqueEmail('replay'));
    const first = await exchange(code, verifier);
    assert.equal(first.status, 200, first.text);
    const second = await exchange(code, verifier);
    assert.equal(second.status, 400);
    assert.equal(second.body.error, 'invalid_grant');
    const refresh = await server.request('POST', '/oauth/token', {
      body: {
        grant_type: 'refresh_token',
        client_id: client.client_id,
        refresh_token: first.body.refresh_token,
      },
    });
    assert.equal(refresh.body.error, 'invalid_grant', refresh.text);
    const info = await server.request('GET', '/oauth/userinfo', {
      headers: { authorization: `Bearer ${first.body.access_token}` },
    });
    assert.equal(info.status, 401);
  });

  test('code injection: another client, another redirect URI, a wrong or missing verifier are refused', async () => {
    const browser = new Browser(server.url);
    const email = uniqueEmail('inject');
    const other = await registerClient(server, {
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      first_party: true,
    });
    let { code, verifier } = await signedInCode(browser, email);
    const stolen = await exchange(code, verifier, { client_id: other.client_id });
    assert.equal(stolen.body.error, 'invalid_grant', stolen.text);
    ({ code, verifier } = await signedInCode(browser, email));
    assert.equal(
      (await exchange(code, verifier, { redirect_uri: `${REDIRECT}/` })).body.error,
      'invalid_grant',
    );
    ({ code, verifier } = await signedInCode(browser, email));
    assert.equal((await exchange(code, pkce().verifier)).body.error, 'invalid_grant');
    ({ code, verifier } = await signedInCode(browser, email));
    const noVerifier = await server.request('POST', '/oauth/token', {
      body: { grant_type: 'authorization_code', client_id: client.client_id, code, redirect_uri: REDIRECT },
    });
    assert.equal(noVerifier.body.error, 'invalid_request');
    // The API key cannot redeem a client's code.
    ({ code, verifier } = await signedInCode(browser, email));
    const apiKey = await exchange(code, verifier, { client_id: server.project.api_key_id });
    assert.equal(apiKey.body.error, 'unauthorized_client');
  });

  test('a code expires after 60 s', async () => {
    let now = Date.now();
    const timed = await startServer(dialect, { env: RELAXED_LIMITS, now: () => now });
    try {
      const c = await registerClient(timed, {
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: 'none',
        first_party: true,
      });
      const browser = new Browser(timed.url);
      const { verifier, challenge } = pkce();
      const start = await browser.go(
        authorizeUrl({ ...params(), client_id: c.client_id, code_challenge: challenge }),
      );
      const done = await signInOnHostedPages(timed, browser, start.location!, uniqueEmail('expiry'));
      now += 61_000;
      const late = await timed.request('POST', '/oauth/token', {
        body: {
          grant_type: 'authorization_code',
          client_id: c.client_id,
          code: redirectParams(done.location).code,
          redirect_uri: REDIRECT,
          code_verifier: verifier,
        },
      });
      assert.equal(late.body.error, 'invalid_grant');
      assert.match(late.body.error_description, /expired/);
    } finally {
      await timed.close();
    }
  });

  test('clickjacking and CSP: every hosted page is never framed and loads nothing from elsewhere', async () => {
    const browser = new Browser(server.url);
    const start = await browser.go(authorizeUrl(params()));
    const pages = [
      await browser.go(start.location!),
      await browser.go(authorizeUrl(params({ client_id: 'tc_AAAAAAAAAAAAAAAAAAAAAA' }))),
    ];
    for (const page of pages) {
      const csp = page.headers.get('content-security-policy')!;
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /default-src 'none'/);
      // Scripts: same-origin files only. The one inline allowance is styles, for the element's
      // shadow root, on the page that renders it.
      assert.match(csp, /script-src 'self'(;|$)/);
      assert.doesNotMatch(csp, /unsafe-eval|\*/);
      // Only forms may go elsewhere: to the client's redirect URI (its answer redirects there).
      assert.doesNotMatch(csp.replace(/form-action [^;]*/, ''), /https?:/);
      assert.match(csp, /form-action 'self'( https:\/\/rp\.example)?(;|$)/);
      assert.doesNotMatch(csp.replace(/style-src [^;]*/, ''), /unsafe-inline/);
      assert.equal(page.headers.get('x-frame-options'), 'DENY');
      assert.doesNotMatch(page.text, /(src|href)="(https?:)?\/\//);
      assert.doesNotMatch(page.text, /<script>|style="/);
    }
  });

  test('CSRF and login CSRF: forms need this browser’s binding cookie and the form’s token', async () => {
    const victim = new Browser(server.url);
    const attacker = new Browser(server.url);
    const start = await attacker.go(authorizeUrl(params()));
    const page = await attacker.go(start.location!);
    const fields = formFields(page.text, '/oauth/sign-in/start');
    // The attacker's pending request, posted from the victim's browser (no or another binding cookie).
    const forged = await victim.go('/oauth/sign-in/start', {
      form: { ...fields, identifier: 'victim@example.com' },
    });
    assert.equal(forged.status, 403);
    await victim.go(authorizeUrl(params()));
    const stillForged = await victim.go('/oauth/sign-in/start', {
      form: { ...fields, identifier: 'victim@example.com' },
    });
    assert.equal(stillForged.status, 403);
    // The right browser with a wrong token.
    const badToken = await attacker.go('/oauth/sign-in/start', {
      form: { ...fields, csrf: 'x'.repeat(43), identifier: 'a@example.com' },
    });
    assert.equal(badToken.status, 403);
    // The element's hand-over endpoint: an access token from elsewhere cannot sign the victim in.
    const theirs = await server.signIn(uniqueEmail('attacker'));
    const handover = await victim.go('/oauth/authorize/continue', {
      form: { ...fields, access_token: theirs.access_token },
    });
    assert.equal(handover.status, 403);
    assert.ok(![...victim.cookies.keys()].some((name) => name.startsWith('tessera_sso_')));
  });

  test('session fixation: a hosted session cookie set before sign-in is ignored and replaced', async () => {
    const browser = new Browser(server.url);
    const start = await browser.go(authorizeUrl(params()));
    const name = `tessera_sso_fixed`;
    browser.cookies.set(name, 'planted.value');
    const done = await signInOnHostedPages(server, browser, start.location!, uniqueEmail('fixation'));
    assert.ok(redirectParams(done.location).code);
    const set = [...browser.cookies].filter(
      ([cookie]) => cookie.startsWith('tessera_sso_') && cookie !== name,
    );
    assert.equal(set.length, 1);
    assert.notEqual(set[0]![1], 'planted.value');
    assert.match(done.headers.get('set-cookie')!, /HttpOnly; SameSite=Lax/);
  });

  test('prompt=none answers the same whether or not the login_hint is a user', async () => {
    const existing = uniqueEmail('known');
    await server.signIn(existing);
    const browser = new Browser(server.url);
    const known = await browser.go(authorizeUrl(params({ prompt: 'none', login_hint: existing })));
    const unknown = await browser.go(
      authorizeUrl(params({ prompt: 'none', login_hint: uniqueEmail('nobody') })),
    );
    assert.equal(known.status, unknown.status);
    assert.deepEqual(redirectParams(known.location), redirectParams(unknown.location));
  });

  test('consent cannot be skipped for a third-party client', async () => {
    const browser = new Browser(server.url);
    const email = uniqueEmail('skip');
    await signedInCode(browser, email);
    const silent = await browser.go(
      authorizeUrl(params({ client_id: thirdParty.client_id, prompt: 'none' })),
    );
    assert.equal(redirectParams(silent.location).error, 'consent_required');
    const start = await browser.go(authorizeUrl(params({ client_id: thirdParty.client_id })));
    assert.match(start.location!, /^\/oauth\/consent/);
    const page = await browser.go(start.location!);
    // Posting "allow" from a browser without the hosted session (another user's forged form) fails.
    const other = new Browser(server.url);
    for (const [name, value] of browser.cookies) if (name === 'tessera_authz') other.cookies.set(name, value);
    const forged = await other.go('/oauth/consent', {
      form: { ...formFields(page.text, '/oauth/consent'), decision: 'allow' },
    });
    assert.equal(forged.status, 400);
    assert.equal(forged.location, undefined);
  });
});

test('on an https issuer the hosted cookies carry the __Host- prefix (Secure, Path=/, no Domain)', async () => {
  const { cookieNames, setCookie } = await import('../../../src/modules/hosted/cookies.js');
  const names = cookieNames(true);
  assert.equal(names.binding, '__Host-tessera_authz');
  assert.match(names.hosted('p1'), /^__Host-tessera_sso_[\w-]{12}$/);
  const header = setCookie(names.binding, 'v', 60, true);
  assert.match(header, /; Path=\/;/);
  assert.match(header, /; Secure$/);
  assert.doesNotMatch(header, /Domain=/i);
  assert.equal(cookieNames(false).binding, 'tessera_authz');
});
