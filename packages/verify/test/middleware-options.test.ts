// The options every adapter shares — optional auth, a token getter, claim and scope checks, a
// custom error answer, CORS preflights — looped over Express, Fastify and Hono on real HTTP.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import {
  type ClaimRequirement,
  claimCheck,
  claimEquals,
  claimIncludes,
  createVerifier,
  type MiddlewareOptions,
  requireClaims,
  requiredScopes,
  type TesseraVerifyError,
  type Verifier,
} from '@tessera/verify';
import { tesseraAuth as expressAuth, tesseraGuard as expressGuard } from '@tessera/verify/express';
import { tesseraAuth as fastifyAuth, tesseraGuard as fastifyGuard } from '@tessera/verify/fastify';
import { tesseraAuth as honoAuth, tesseraGuard as honoGuard, type TesseraEnv } from '@tessera/verify/hono';
import express, { type Request } from 'express';
import Fastify, { type FastifyRequest } from 'fastify';
import { type Context, Hono } from 'hono';
import {
  API_KEY_ID,
  type FakeIssuer,
  makeKey,
  mintAccessToken,
  NOW,
  type Running,
  running,
  type SigningKey,
  startIssuer,
} from './support.ts';

/** One protected route: its path, the options of its tesseraAuth, and a tesseraGuard after it. */
interface Route<Req> {
  path: string;
  options: MiddlewareOptions<Req>;
  guard?: ClaimRequirement[];
}

/** What a test sees of a request, whatever the framework: its Cookie header and its path. */
interface Access<Req> {
  cookie(req: Req): string | undefined;
  path(req: Req): string;
}

// Every route answers { sub, plan } from the claims, or { sub: null } without claims, for GET and
// OPTIONS (so preflights reach the middleware).
function routes<Req>(access: Access<Req>, logged: Array<[string, string]>): Route<Req>[] {
  return [
    { path: '/plain', options: {} },
    { path: '/optional', options: { optional: true } },
    {
      path: '/cookie',
      options: {
        getToken: (req) => /(?:^|; )at=([^;]+)/.exec(access.cookie(req) ?? '')?.[1],
      },
    },
    {
      path: '/cookie-optional',
      options: {
        optional: true,
        getToken: async (req) => /(?:^|; )at=([^;]+)/.exec(access.cookie(req) ?? '')?.[1],
      },
    },
    { path: '/orders', options: { requirements: [requiredScopes('orders:read')] } },
    { path: '/orders-write', options: { requirements: requiredScopes(['orders:read', 'orders:write']) } },
    {
      path: '/pro',
      options: {
        requirements: [claimEquals('plan', 'pro'), claimIncludes('roles', 'editor'), requireClaims('tenant')],
      },
    },
    {
      path: '/strong',
      options: {
        requirements: [
          claimCheck((c) => c.authentication_method === 'PIN', 'This route needs a PIN sign-in'),
        ],
      },
    },
    { path: '/admin', options: {}, guard: [claimIncludes('roles', 'admin')] },
    { path: '/maybe-admin', options: { optional: true }, guard: [claimIncludes('roles', 'admin')] },
    {
      path: '/custom',
      options: {
        onError: (err, req) => logged.push([err.code, access.path(req)]),
        errorResponse: (err, req, answer) => ({
          status: err.status === 503 ? 503 : 418,
          headers: { ...answer.headers, 'X-Path': access.path(req) },
          body: { message: 'Please sign in', code: err.code },
        }),
      },
    },
    { path: '/strict-preflight', options: { skipPreflight: false } },
  ];
}

type Start = (verifier: Verifier, logged: Array<[string, string]>) => Promise<Running>;

const answer = (claims: { sub: string; [k: string]: unknown } | undefined) => ({
  sub: claims?.sub ?? null,
  plan: claims?.['plan'],
});

const adapters: Record<string, Start> = {
  async express(verifier, logged) {
    const app = express();
    const access: Access<Request> = { cookie: (req) => req.get('cookie'), path: (req) => req.path };
    for (const route of routes(access, logged)) {
      const chain = [
        expressAuth(verifier, route.options),
        ...(route.guard ? [expressGuard(route.guard)] : []),
      ];
      app.all(route.path, ...chain, (req, res) => {
        res.json(answer(req.tessera));
      });
    }
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return running(server);
  },

  async fastify(verifier, logged) {
    const app = Fastify();
    const access: Access<FastifyRequest> = {
      cookie: (req) => req.headers.cookie,
      path: (req) => req.url.split('?')[0]!,
    };
    for (const route of routes(access, logged)) {
      app.route({
        method: ['GET', 'OPTIONS'],
        url: route.path,
        preHandler: [
          fastifyAuth(verifier, route.options),
          ...(route.guard ? [fastifyGuard(route.guard)] : []),
        ],
        handler: async (request) => answer(request.tessera),
      });
    }
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url, close: () => app.close() };
  },

  async hono(verifier, logged) {
    const app = new Hono<TesseraEnv>();
    const access: Access<Context> = { cookie: (c) => c.req.header('cookie'), path: (c) => c.req.path };
    for (const route of routes(access, logged)) {
      const guard = route.guard ? [honoGuard(route.guard)] : [];
      app.on(['GET', 'OPTIONS'], route.path, honoAuth(verifier, route.options), ...guard, (c) =>
        c.json(answer(c.get('tessera'))),
      );
    }
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await once(server, 'listening');
    return running(server);
  },
};

for (const [name, start] of Object.entries(adapters)) {
  describe(`${name} middleware options`, () => {
    let key: SigningKey;
    let idp: FakeIssuer;
    let app: Running;
    let token: string;
    const logged: Array<[string, string]> = [];
    const call = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
      fetch(`${app.url}${path}`, { method, headers });
    const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });
    const mint = (claims: Record<string, unknown>) => mintAccessToken(key, idp.issuer, { claims });

    before(async () => {
      key = await makeKey('key-1');
      idp = await startIssuer([key]);
      const verifier = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, now: () => NOW });
      app = await start(verifier, logged);
      token = await mint({ scope: 'access orders:read', roles: ['editor'], tenant: 't_1' });
    });
    after(async () => {
      await app.close();
      await idp.close();
    });

    it('optional: no token goes through without claims', async () => {
      const response = await call('/optional');
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { sub: null });
      const basic = await call('/optional', { Authorization: 'Basic dXNlcjpwYXNz' });
      assert.deepEqual(await basic.json(), { sub: null });
    });

    it('optional: a valid token attaches the claims', async () => {
      const response = await call('/optional', bearer(token));
      assert.deepEqual(await response.json(), { sub: 'usr_8d2f0c', plan: 'pro' });
    });

    it('optional: a bad or expired token is still refused with 401', async () => {
      const tampered = await call('/optional', bearer(`${token.slice(0, -6)}AAAAAA`));
      assert.equal(tampered.status, 401);
      assert.equal((await tampered.json()).error, 'invalid_token');
      const expired = await call('/optional', bearer(await mint({ exp: NOW / 1000 - 60 })));
      assert.equal(expired.status, 401);
      assert.equal((await expired.json()).error, 'token_expired');
      const malformed = await call('/optional', { Authorization: 'Bearer "quoted"' });
      assert.equal(malformed.status, 401);
    });

    it('getToken reads the token from a cookie, and the Authorization header is then ignored', async () => {
      const ok = await call('/cookie', { Cookie: `theme=dark; at=${token}` });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { sub: 'usr_8d2f0c', plan: 'pro' });
      const headerOnly = await call('/cookie', bearer(token));
      assert.equal(headerOnly.status, 401);
      assert.equal((await headerOnly.json()).error, 'missing_token');
      const bad = await call('/cookie', { Cookie: 'at=not.a.token' });
      assert.equal(bad.status, 401);
      assert.equal((await bad.json()).error, 'invalid_token');
    });

    it('an async getToken combines with optional', async () => {
      assert.deepEqual(await (await call('/cookie-optional')).json(), { sub: null });
      const ok = await call('/cookie-optional', { Cookie: `at=${token}` });
      assert.deepEqual(await ok.json(), { sub: 'usr_8d2f0c', plan: 'pro' });
      const bad = await call('/cookie-optional', { Cookie: 'at=not.a.token' });
      assert.equal(bad.status, 401);
    });

    it('requiredScopes passes a token holding the scopes', async () => {
      const response = await call('/orders', bearer(token));
      assert.equal(response.status, 200);
    });

    it('requiredScopes answers 403 insufficient_scope naming the scopes in the challenge', async () => {
      const response = await call('/orders-write', bearer(token));
      assert.equal(response.status, 403);
      assert.equal(
        response.headers.get('www-authenticate'),
        'Bearer realm="tessera", error="insufficient_scope", error_description="The token lacks the scope orders:write", scope="orders:read orders:write"',
      );
      const body = await response.json();
      assert.equal(body.error, 'insufficient_scope');
      const plain = await call('/orders', bearer(await mint({ scope: 'access' })));
      assert.equal(plain.status, 403);
    });

    it('claimEquals, claimIncludes and requireClaims answer 403 insufficient_claims, without values', async () => {
      assert.equal((await call('/pro', bearer(token))).status, 200);
      for (const claims of [
        { plan: 'free', roles: ['editor'], tenant: 't_1' },
        { roles: ['viewer'], tenant: 't_1' },
        { roles: 'editor viewer' },
        { roles: 'editor', tenant: null },
      ]) {
        const response = await call('/pro', bearer(await mint(claims)));
        assert.equal(response.status, 403, JSON.stringify(claims));
        assert.equal(response.headers.get('www-authenticate'), null);
        const body = await response.json();
        assert.equal(body.error, 'insufficient_claims');
        assert.ok(!/free|viewer/.test(body.error_description), 'the answer does not echo claim values');
      }
      const spaced = await call('/pro', bearer(await mint({ roles: 'viewer editor', tenant: 't_2' })));
      assert.equal(spaced.status, 200, 'a space-separated string claim counts as a list');
    });

    // Issue 30: a token without the claim was told the claim "has another value".
    it('a guarded claim that is absent is said to be missing, one with another value to differ', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ plan: undefined, roles: ['editor'], tenant: 't_1' }, 'The token has no "plan" claim'],
        [{ plan: null, roles: ['editor'], tenant: 't_1' }, 'The token has no "plan" claim'],
        [{ plan: 'free', roles: ['editor'], tenant: 't_1' }, 'The token\'s "plan" claim has another value'],
        [{ plan: 'pro', tenant: 't_1' }, 'The token has no "roles" claim'],
        [
          { plan: 'pro', roles: ['viewer'], tenant: 't_1' },
          'The token\'s "roles" claim does not hold what this route requires',
        ],
        [{ plan: 'pro', roles: ['editor'] }, 'The token has no "tenant" claim'],
      ];
      for (const [claims, description] of cases) {
        const response = await call('/pro', bearer(await mint(claims)));
        assert.equal(response.status, 403, JSON.stringify(claims));
        assert.equal((await response.json()).error_description, description, JSON.stringify(claims));
      }
    });

    it('claimCheck answers with its description', async () => {
      const refused = await call('/strong', bearer(token));
      assert.equal(refused.status, 403);
      assert.equal((await refused.json()).error_description, 'This route needs a PIN sign-in');
      const pin = await call('/strong', bearer(await mint({ authentication_method: 'PIN' })));
      assert.equal(pin.status, 200);
    });

    it('tesseraGuard checks the claims of the tesseraAuth before it', async () => {
      assert.equal((await call('/admin', bearer(token))).status, 403);
      const admin = await call('/admin', bearer(await mint({ roles: ['admin'] })));
      assert.equal(admin.status, 200);
      assert.equal((await call('/admin')).status, 401);
    });

    it('tesseraGuard after an optional tesseraAuth refuses a request without a token with 401', async () => {
      const none = await call('/maybe-admin');
      assert.equal(none.status, 401);
      assert.equal((await none.json()).error, 'missing_token');
      assert.equal((await call('/maybe-admin', bearer(await mint({ roles: ['admin'] })))).status, 200);
    });

    it('errorResponse shapes the answer from the error and the request; onError sees the request', async () => {
      logged.length = 0;
      const response = await call('/custom');
      assert.equal(response.status, 418);
      assert.equal(response.headers.get('x-path'), '/custom');
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="tessera"');
      assert.deepEqual(await response.json(), { message: 'Please sign in', code: 'missing_token' });
      assert.deepEqual(logged, [['missing_token', '/custom']]);
      assert.equal((await call('/custom', bearer(token))).status, 200);
    });

    it('lets a CORS preflight through without a token, but not a bare OPTIONS', async () => {
      const preflight = await call(
        '/plain',
        { Origin: 'http://app.test', 'Access-Control-Request-Method': 'GET' },
        'OPTIONS',
      );
      assert.equal(preflight.status, 200);
      assert.deepEqual(await preflight.json(), { sub: null });
      const bare = await call('/plain', {}, 'OPTIONS');
      assert.equal(bare.status, 401);
      const strict = await call('/strict-preflight', { 'Access-Control-Request-Method': 'GET' }, 'OPTIONS');
      assert.equal(strict.status, 401, 'skipPreflight: false verifies preflights too');
    });
  });
}

describe('middleware option checks', () => {
  const verifier = createVerifier({ issuer: 'https://auth.example.com', apiKeyId: API_KEY_ID });
  it('refuses invalid options at start', () => {
    assert.throws(() => expressAuth(verifier, { optional: 'yes' as unknown as boolean }), /"optional"/);
    assert.throws(() => fastifyAuth(verifier, { getToken: 'cookie' as never }), /"getToken"/);
    assert.throws(() => honoAuth(verifier, { requirements: ['admin' as never] }), /"requirements"/);
    assert.throws(() => expressAuth(verifier, { errorResponse: {} as never }), /"errorResponse"/);
    assert.throws(() => expressGuard([]), /at least one requirement/);
    assert.throws(() => requiredScopes(''), /scope/);
    assert.throws(() => requiredScopes(['a"b']), /scope/);
    assert.throws(() => claimEquals('', 'x'), /claim name/);
    assert.throws(() => claimIncludes('roles'), /at least one value/);
    assert.throws(() => requireClaims(), /at least one claim/);
  });

  it('a requirement throws a TesseraVerifyError with status 403', () => {
    const err = (() => {
      try {
        requiredScopes('a b')({ scope: 'a' } as never);
      } catch (e) {
        return e as TesseraVerifyError;
      }
      return undefined;
    })();
    assert.equal(err?.code, 'insufficient_scope');
    assert.equal(err?.status, 403);
    assert.equal(err?.scope, 'a b');
  });
});
