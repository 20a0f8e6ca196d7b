import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseSetCookie } from 'cookie';
import type { TestServer } from '../../server/test/helpers/harness.js';
import { cookieJar, createTesseraSsr } from '../src/index.js';
import { APP, Browser, countingFetch, getSession, post, signIn, ssrFor, startTessera } from './support.js';

let server: TestServer;
before(async () => {
  server = await startTessera();
});
after(async () => {
  await server.close();
});

describe('sign-in through the proxy', () => {
  test('OTP sign-in sets HttpOnly, Secure, SameSite=Lax __Host- cookies and never returns a token', async () => {
    const ssr = ssrFor(server);
    const browser = new Browser();
    const done = await signIn(ssr, server, browser, 'ada@example.com');
    const body = (await done.json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['csrf_token', 'user']);
    assert.equal((body.user as { identifier: string }).identifier, 'ada@example.com');
    assert.doesNotMatch(JSON.stringify(body), /eyJ|tsr_/);
    for (const name of ['__Host-tessera-access', '__Host-tessera-refresh']) {
      const cookie = parseSetCookie(browser.raw.get(name)!);
      assert.equal(cookie.httpOnly, true, name);
      assert.equal(cookie.secure, true, name);
      assert.equal(cookie.sameSite, 'lax', name);
      assert.equal(cookie.path, '/', name);
    }
    const csrf = parseSetCookie(browser.raw.get('__Host-tessera-csrf')!);
    assert.equal(csrf.httpOnly, undefined, 'scripts must be able to read the CSRF token');
    assert.equal(csrf.secure, true);

    const session = await getSession(ssr, browser);
    assert.equal(
      ((await session.json()) as { user: { identifier: string } }).user.identifier,
      'ada@example.com',
    );
  });

  test("a wrong code is a 4xx with Tessera's code, and nothing is stored", async () => {
    const ssr = ssrFor(server);
    const browser = new Browser();
    await getSession(ssr, browser);
    const started = await post(ssr, browser, '/otp/start', { identifier: 'wrong@example.com' });
    const { challenge_id } = (await started.json()) as { challenge_id: string };
    const code = server.lastCode('wrong@example.com') === '000000' ? '111111' : '000000';
    const refused = await post(ssr, browser, '/otp/complete', { challenge_id, code });
    assert.equal(refused.status, 400);
    const body = (await refused.json()) as { error: string; message: string };
    assert.equal(typeof body.error, 'string');
    assert.doesNotMatch(body.message, new RegExp(code));
    assert.equal(browser.cookies.has('__Host-tessera-refresh'), false);
  });

  test('bad input is a 400 naming the field; unknown routes 404; other paths are not handled', async () => {
    const ssr = ssrFor(server);
    const browser = new Browser();
    await getSession(ssr, browser);
    const missing = await post(ssr, browser, '/otp/complete', { challenge_id: 'x' });
    assert.equal(missing.status, 400);
    assert.deepEqual(await missing.json(), { error: 'bad_request', message: '"code" is missing or invalid' });
    const notJson = await post(ssr, browser, '/otp/start', undefined, { 'content-type': 'text/plain' });
    assert.equal(notJson.status, 415);
    const unknown = await post(ssr, browser, '/nope', {});
    assert.equal(unknown.status, 404);
    assert.equal(await ssr.handle(new Request(`${APP}/account`)), null);
  });

  test('a form post is answered with redirects, the challenge id carried to the next page', async () => {
    const ssr = ssrFor(server);
    const browser = new Browser();
    await getSession(ssr, browser);
    const form = (fields: Record<string, string>) =>
      ssr.handle(
        new Request(`${APP}/auth/otp/start`, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            origin: APP,
            cookie: browser.header(),
          },
          body: new URLSearchParams(fields),
        }),
      );
    const csrf_token = browser.cookies.get('__Host-tessera-csrf')!;
    const ok = (await form({ identifier: 'form@example.com', csrf_token, redirect_to: '/signin/code' }))!;
    assert.equal(ok.status, 303);
    assert.match(ok.headers.get('location')!, /^\/signin\/code\?challenge_id=/);
    const offsite = (await form({
      identifier: 'form@example.com',
      csrf_token,
      redirect_to: '//evil.test/x',
    }))!;
    assert.match(offsite.headers.get('location')!, /^\/\?challenge_id=/);
    const noToken = (await form({ identifier: 'form@example.com', error_to: '/signin' }))!;
    assert.equal(noToken.headers.get('location'), '/signin?error=csrf_failed');
  });
});

describe('CSRF', () => {
  test('refuses a missing or wrong token, a foreign Origin and a cross-site fetch', async () => {
    const ssr = ssrFor(server);
    const browser = new Browser();
    await getSession(ssr, browser);
    const token = browser.cookies.get('__Host-tessera-csrf')!;
    const cases: Array<[string, Record<string, string>]> = [
      ['no token', { 'x-csrf-token': '' }],
      ['wrong token', { 'x-csrf-token': `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}` }],
      ['foreign origin', { origin: 'https://evil.test' }],
      ['null origin', { origin: 'null' }],
      ['cross-site', { 'sec-fetch-site': 'cross-site', origin: '' }],
    ];
    for (const [name, headers] of cases) {
      const init = new Headers({
        'content-type': 'application/json',
        origin: APP,
        'sec-fetch-site': 'same-origin',
        cookie: browser.header(),
        'x-csrf-token': token,
      });
      for (const [k, v] of Object.entries(headers)) v === '' ? init.delete(k) : init.set(k, v);
      const response = (await ssr.handle(
        new Request(`${APP}/auth/otp/start`, {
          method: 'POST',
          headers: init,
          body: '{"identifier":"x@example.com"}',
        }),
      ))!;
      assert.equal(response.status, 403, name);
      assert.equal(((await response.json()) as { error: string }).error, 'csrf_failed', name);
    }
    const noCookie = await post(
      ssr,
      new Browser(),
      '/otp/start',
      { identifier: 'x@example.com' },
      { 'x-csrf-token': token },
    );
    assert.equal(noCookie.status, 403);
    assert.equal(
      server.outbox.list().some((m) => m.to === 'x@example.com'),
      false,
      'no code was sent',
    );
  });

  test('a trusted second origin may post', async () => {
    const ssr = ssrFor(server, { trustedOrigins: ['https://www.app.test'] });
    const browser = new Browser();
    await getSession(ssr, browser);
    const ok = await post(
      ssr,
      browser,
      '/otp/start',
      { identifier: 'www@example.com' },
      {
        origin: 'https://www.app.test',
        'sec-fetch-site': 'same-site',
      },
    );
    assert.equal(ok.status, 200);
  });

  test('in development a refused origin is named with the one expected; in production it is not', async (t) => {
    const warn = t.mock.method(console, 'warn', () => undefined);
    const dev = ssrFor(server, { appOrigin: 'http://localhost:3000' });
    const browser = new Browser();
    await getSession(dev, browser);
    const refused = await post(
      dev,
      browser,
      '/otp/start',
      { identifier: 'dev@example.com' },
      {
        origin: 'http://127.0.0.1:3000',
      },
    );
    assert.equal(refused.status, 403);
    const { error, message } = (await refused.json()) as { error: string; message: string };
    assert.equal(error, 'csrf_failed');
    assert.match(
      message,
      /comes from http:\/\/127\.0\.0\.1:3000, but the app's origin is http:\/\/localhost:3000/,
    );
    assert.equal(warn.mock.callCount(), 1);
    assert.match(String(warn.mock.calls[0]!.arguments[0]), /127\.0\.0\.1:3000.*localhost:3000/);

    const prod = ssrFor(server);
    const other = new Browser();
    await getSession(prod, other);
    const foreign = await post(
      prod,
      other,
      '/otp/start',
      { identifier: 'x@example.com' },
      {
        origin: 'https://evil.test',
      },
    );
    assert.deepEqual(await foreign.json(), {
      error: 'csrf_failed',
      message: 'Refused: the request comes from another origin',
    });
    assert.equal(warn.mock.callCount(), 1, 'nothing logged in production');
  });
});

describe('HTML form sign-in', () => {
  const form = (
    ssr: ReturnType<typeof ssrFor>,
    browser: Browser,
    route: string,
    fields: Record<string, string>,
  ) =>
    ssr.handle(
      new Request(`${APP}/auth${route}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          origin: APP,
          cookie: browser.header(),
        },
        body: new URLSearchParams({ csrf_token: browser.cookies.get('__Host-tessera-csrf')!, ...fields }),
      }),
    ) as Promise<Response>;

  test('a wrong code goes back to error_to with the challenge id, and the right code then signs in', async () => {
    const ssr = ssrFor(server);
    const browser = new Browser();
    await getSession(ssr, browser);
    const identifier = 'typo@example.com';
    const started = await form(ssr, browser, '/otp/start', { identifier, redirect_to: '/signin/code' });
    const challenge = new URL(started.headers.get('location')!, APP).searchParams.get('challenge_id')!;
    const code = server.lastCode(identifier);
    const wrong = code === '000000' ? '111111' : '000000';
    const fields = { challenge_id: challenge, redirect_to: '/account', error_to: '/signin/code' };
    const refused = await form(ssr, browser, '/otp/complete', { ...fields, code: wrong });
    assert.equal(refused.status, 303);
    assert.equal(
      refused.headers.get('location'),
      `/signin/code?challenge_id=${encodeURIComponent(challenge)}&error=invalid_code`,
    );
    const signedIn = await form(ssr, browser, '/otp/complete', { ...fields, code });
    assert.equal(signedIn.status, 303);
    assert.equal(signedIn.headers.get('location'), '/account');
    browser.store(signedIn);
    assert.ok(browser.cookies.get('__Host-tessera-refresh'));
  });
});

describe('renewal', () => {
  test('concurrent requests with one expired access cookie renew once and share the successor', async () => {
    const counting = countingFetch();
    const ssr = ssrFor(server, { fetch: counting.fetch });
    const browser = new Browser();
    await signIn(ssr, server, browser, 'burst@example.com');
    const refresh = browser.cookies.get('__Host-tessera-refresh')!;
    browser.cookies.delete('__Host-tessera-access'); // as the browser does once Max-Age is over
    const jars = Array.from({ length: 5 }, () => cookieJar(browser.header()));
    const sessions = await Promise.all(jars.map((jar) => ssr.getSession(jar)));
    assert.equal(counting.calls.get('/oauth/token'), 1);
    assert.ok(sessions.every((s) => s?.user.identifier === 'burst@example.com'));
    const successors = new Set(jars.map((jar) => jar.get('__Host-tessera-refresh')));
    assert.equal(successors.size, 1);
    assert.notEqual([...successors][0], refresh);

    // A request still carrying the old cookie just after: answered from the memo, not by Tessera.
    const late = cookieJar(browser.header());
    assert.ok(await ssr.getSession(late));
    assert.equal(counting.calls.get('/oauth/token'), 1);
    assert.equal(late.get('__Host-tessera-refresh'), [...successors][0]);

    // The successor works: the session was not taken for a reuse and revoked.
    const next = cookieJar(`__Host-tessera-refresh=${encodeURIComponent([...successors][0]!)}`);
    assert.ok(await ssrFor(server).getSession(next));
  });

  test('an access token close to expiry is renewed; a fresh one is not', async () => {
    const counting = countingFetch();
    const browser = new Browser();
    await signIn(ssrFor(server), server, browser, 'margin@example.com');
    const fresh = ssrFor(server, { fetch: counting.fetch });
    assert.ok(await fresh.getSession(cookieJar(browser.header())));
    assert.equal(counting.calls.get('/oauth/token'), undefined);
    const eager = ssrFor(server, { fetch: counting.fetch, renewMarginSeconds: 7200 });
    const jar = cookieJar(browser.header());
    assert.ok(await eager.getSession(jar));
    assert.equal(counting.calls.get('/oauth/token'), 1);
    assert.notEqual(jar.get('__Host-tessera-access'), browser.cookies.get('__Host-tessera-access'));
  });

  test('a read-only adapter never renews (the rotated token could not be stored)', async () => {
    const counting = countingFetch();
    const browser = new Browser();
    await signIn(ssrFor(server), server, browser, 'readonly@example.com');
    browser.cookies.delete('__Host-tessera-access');
    const ssr = ssrFor(server, { fetch: counting.fetch });
    const session = await ssr.getSession({ get: (name) => browser.cookies.get(name) });
    assert.equal(session, null);
    assert.equal(counting.calls.get('/oauth/token'), undefined);
  });

  test('a revoked session clears the cookies; POST /refresh then answers 401', async () => {
    const ssr = ssrFor(server);
    const browser = new Browser();
    await signIn(ssr, server, browser, 'revoked@example.com');
    const revoke = await server.request('POST', '/oauth/revoke', {
      body: { token: browser.cookies.get('__Host-tessera-refresh'), client_id: server.project.api_key_id },
    });
    assert.equal(revoke.status, 200);
    browser.cookies.delete('__Host-tessera-access');
    const refused = await post(ssr, browser, '/refresh', {});
    assert.equal(refused.status, 401);
    assert.equal(browser.cookies.has('__Host-tessera-refresh'), false);
  });
});

describe('logout', () => {
  test('revokes the session at Tessera and clears the cookies', async () => {
    const ssr = ssrFor(server);
    const browser = new Browser();
    await signIn(ssr, server, browser, 'bye@example.com');
    const refresh = browser.cookies.get('__Host-tessera-refresh')!;
    const access = browser.cookies.get('__Host-tessera-access')!;
    const out = await post(ssr, browser, '/logout', {});
    assert.deepEqual(await out.json(), { revoked: true });
    assert.equal(browser.cookies.has('__Host-tessera-refresh'), false);
    assert.equal(browser.cookies.has('__Host-tessera-access'), false);
    const verify = await server.request('POST', '/verify', {
      body: { oauth_token: { access_token: access } },
    });
    assert.equal(verify.body.success, false);
    const grant = await server.request('POST', '/oauth/token', {
      body: { grant_type: 'refresh_token', refresh_token: refresh, client_id: server.project.api_key_id },
    });
    assert.equal(grant.status, 400);
  });
});

describe('options', () => {
  const base = { issuer: 'https://auth.test', apiKeyId: 'pk_x' };
  test('refuse plain http off localhost, and insecure cookies anywhere but http://localhost', () => {
    assert.throws(() => createTesseraSsr({ ...base, appOrigin: 'http://shop.example' }), /https/);
    assert.throws(
      () => createTesseraSsr({ ...base, appOrigin: 'https://shop.example', insecureLocalhostCookies: true }),
      /localhost/,
    );
    assert.throws(() => createTesseraSsr({ ...base, appOrigin: 'https://shop.example/path' }), /origin only/);
    assert.throws(
      () => createTesseraSsr({ ...base, appOrigin: 'https://shop.example', basePath: 'auth' }),
      /basePath/,
    );
  });

  // Regression: `timeout: 0` was accepted and every call to Tessera was abandoned at once.
  test('timeout must be a whole number of milliseconds from 1 to 120000; the error names the option and the range', () => {
    const options = { ...base, appOrigin: 'https://shop.example' };
    for (const timeout of [0, -1, Number.NaN, 1.5, Number.POSITIVE_INFINITY, 120_001, 1e12, '5000']) {
      assert.throws(
        () => createTesseraSsr({ ...options, timeout: timeout as number }),
        (error: unknown) =>
          error instanceof TypeError &&
          /^"timeout" must be a whole number of milliseconds from 1 to 120000/.test(error.message),
        `timeout ${String(timeout)} was accepted`,
      );
    }
    for (const timeout of [1, 10_000, 120_000, undefined]) createTesseraSsr({ ...options, timeout });
  });

  test('insecure localhost mode drops Secure and the __Host- prefix, and says so in the names', async () => {
    const ssr = ssrFor(server, { appOrigin: 'http://localhost:3000', insecureLocalhostCookies: true });
    assert.deepEqual(ssr.cookieNames, {
      access: 'tessera-access',
      refresh: 'tessera-refresh',
      csrf: 'tessera-csrf',
    });
    const jar = cookieJar('');
    ssr.csrfToken(jar);
    const cookie = parseSetCookie(jar.setCookies()[0]!);
    assert.equal(cookie.secure, undefined);
    assert.equal(cookie.sameSite, 'lax');
  });
});
