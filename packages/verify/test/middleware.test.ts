// One suite, looped over the three adapters, each served over real HTTP on 127.0.0.1.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import {
  createVerifier,
  type MiddlewareOptions,
  type TesseraVerifyError,
  type Verifier,
} from '@tessera/verify';
import { tesseraAuth as expressAuth } from '@tessera/verify/express';
import { tesseraAuth as fastifyAuth } from '@tessera/verify/fastify';
import { tesseraAuth as honoAuth } from '@tessera/verify/hono';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import {
  API_KEY_ID,
  deadUrl,
  type FakeIssuer,
  makeKey,
  mintAccessToken,
  NOW,
  NOW_S,
  type Running,
  running,
  type SigningKey,
  startIssuer,
} from './support.ts';

type Start = (verifier: Verifier, options?: MiddlewareOptions) => Promise<Running>;

// Each app exposes GET /me → the claims, behind the adapter's middleware, and GET /open without it.
const adapters: Record<string, Start> = {
  async express(verifier, options) {
    const app = express();
    app.get('/open', (_req, res) => {
      res.json({ open: true });
    });
    app.get('/me', expressAuth(verifier, options), (req, res) => {
      res.json({ sub: req.tessera!.sub, plan: req.tessera!['plan'] });
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return running(server);
  },

  async fastify(verifier, options) {
    const app = Fastify();
    app.get('/open', async () => ({ open: true }));
    app.get('/me', { preHandler: fastifyAuth(verifier, options) }, async (request) => ({
      sub: request.tessera!.sub,
      plan: request.tessera!['plan'],
    }));
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url, close: () => app.close() };
  },

  async hono(verifier, options) {
    const app = new Hono();
    app.get('/open', (c) => c.json({ open: true }));
    app.get('/me', honoAuth(verifier, options), (c) => {
      const claims = c.get('tessera');
      return c.json({ sub: claims.sub, plan: claims['plan'] });
    });
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await once(server, 'listening');
    return running(server);
  },
};

for (const [name, start] of Object.entries(adapters)) {
  describe(`${name} middleware`, () => {
    let key: SigningKey;
    let idp: FakeIssuer;
    let app: Running;
    const logged: TesseraVerifyError[] = [];
    const get = (path: string, authorization?: string) =>
      fetch(`${app.url}${path}`, { headers: authorization ? { Authorization: authorization } : {} });

    before(async () => {
      key = await makeKey('key-1');
      idp = await startIssuer([key]);
      const verifier = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, now: () => NOW });
      app = await start(verifier, { realm: 'example-api', onError: (e) => logged.push(e) });
    });
    after(async () => {
      await app.close();
      await idp.close();
    });

    it('passes a valid token and attaches the claims', async () => {
      const response = await get('/me', `Bearer ${await mintAccessToken(key, idp.issuer)}`);
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { sub: 'usr_8d2f0c', plan: 'pro' });
    });

    it('accepts the scheme in any case', async () => {
      const response = await get('/me', `bearer ${await mintAccessToken(key, idp.issuer)}`);
      assert.equal(response.status, 200);
    });

    it('leaves routes without the middleware alone', async () => {
      const response = await get('/open');
      assert.equal(response.status, 200);
    });

    it('answers 401 with a bare Bearer challenge when no token is sent (RFC 6750 §3.1)', async () => {
      for (const authorization of [undefined, 'Basic dXNlcjpwYXNz']) {
        const response = await get('/me', authorization);
        assert.equal(response.status, 401);
        assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="example-api"');
        assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
        const body = await response.json();
        assert.equal(body.error, 'missing_token');
        assert.equal(typeof body.error_description, 'string');
      }
    });

    it('answers 401 with error="invalid_token" for a bad token', async () => {
      const token = await mintAccessToken(key, idp.issuer);
      const tampered = `${token.slice(0, -6)}AAAAAA`;
      const response = await get('/me', `Bearer ${tampered}`);
      assert.equal(response.status, 401);
      const challenge = response.headers.get('www-authenticate') ?? '';
      assert.match(
        challenge,
        /^Bearer realm="example-api", error="invalid_token", error_description="[^"]+"$/,
      );
      const body = await response.json();
      assert.equal(body.error, 'invalid_token');
      assert.ok(!JSON.stringify(body).includes(tampered.split('.')[2]!), 'no token in the answer');
    });

    it('answers 401 token_expired for an expired token', async () => {
      const expired = await mintAccessToken(key, idp.issuer, { claims: { exp: NOW_S - 60 } });
      const response = await get('/me', `Bearer ${expired}`);
      assert.equal(response.status, 401);
      assert.match(response.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
      assert.deepEqual(await response.json(), {
        error: 'token_expired',
        error_description: 'The token has expired',
      });
    });

    it('answers 401 wrong_audience for a token of another API key', async () => {
      const token = await mintAccessToken(key, idp.issuer, { claims: { aud: 'pk_other' } });
      const response = await get('/me', `Bearer ${token}`);
      assert.equal(response.status, 401);
      assert.equal((await response.json()).error, 'wrong_audience');
    });

    it('answers 401 for a malformed Bearer value', async () => {
      const response = await get('/me', 'Bearer "quoted"');
      assert.equal(response.status, 401);
      assert.equal((await response.json()).error, 'invalid_token');
    });

    it('answers 503 without a challenge when the keys cannot be fetched, and reports the cause', async () => {
      const issuer = await deadUrl();
      const down = await start(createVerifier({ issuer, apiKeyId: API_KEY_ID, now: () => NOW }), {
        onError: (e) => logged.push(e),
      });
      try {
        logged.length = 0;
        const response = await fetch(`${down.url}/me`, {
          headers: { Authorization: `Bearer ${await mintAccessToken(key, issuer)}` },
        });
        assert.equal(response.status, 503);
        assert.equal(response.headers.get('www-authenticate'), null);
        assert.equal((await response.json()).error, 'jwks_unavailable');
        assert.equal(logged.length, 1);
        assert.ok(logged[0]!.cause, 'the cause reaches the log hook, not the client');
      } finally {
        await down.close();
      }
    });
  });
}
