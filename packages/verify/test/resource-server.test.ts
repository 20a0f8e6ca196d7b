// A resource server (RFC 9728 metadata, RFC 8707 audience, RFC 9728 §5.1 challenge), looped over the
// three adapters, each served over real HTTP on 127.0.0.1.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import {
  createVerifier,
  type MiddlewareOptions,
  type ProtectedResourceOptions,
  protectedResourceMetadataUrl,
  type Verifier,
} from '@tessera/verify';
import { tesseraAuth as expressAuth, tesseraProtectedResource as expressPrm } from '@tessera/verify/express';
import { tesseraAuth as fastifyAuth, tesseraProtectedResource as fastifyPrm } from '@tessera/verify/fastify';
import { tesseraAuth as honoAuth, tesseraProtectedResource as honoPrm } from '@tessera/verify/hono';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import {
  API_KEY_ID,
  assertRejects,
  type FakeIssuer,
  makeKey,
  mintAccessToken,
  NOW,
  type Running,
  running,
  type SigningKey,
  startIssuer,
} from './support.ts';

type Start = (
  verifier: Verifier,
  prm: ProtectedResourceOptions,
  options: MiddlewareOptions,
) => Promise<Running>;

// Each app serves its metadata and GET /mcp → the claims, behind the adapter's middleware.
const adapters: Record<string, Start> = {
  async express(verifier, prm, options) {
    const app = express();
    app.use(expressPrm(prm));
    app.get('/mcp', expressAuth(verifier, options), (req, res) => {
      res.json({ sub: req.tessera!.sub, aud: req.tessera!.aud });
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return running(server);
  },
  async fastify(verifier, prm, options) {
    const app = Fastify();
    await app.register(fastifyPrm(prm));
    app.get('/mcp', { preHandler: fastifyAuth(verifier, options) }, async (request) => ({
      sub: request.tessera!.sub,
      aud: request.tessera!.aud,
    }));
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    return { url, close: () => app.close() };
  },
  async hono(verifier, prm, options) {
    const app = new Hono();
    app.use(honoPrm(prm));
    app.get('/mcp', honoAuth(verifier, options), (c) =>
      c.json({ sub: c.get('tessera').sub, aud: c.get('tessera').aud }),
    );
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await once(server, 'listening');
    return running(server);
  },
};

for (const [name, start] of Object.entries(adapters)) {
  describe(`${name}: a protected resource (RFC 9728, RFC 8707)`, () => {
    let key: SigningKey;
    let idp: FakeIssuer;
    let app: Running;
    let resource = '';
    const authServer = 'https://auth.example.com/projects/pk_test_4f1c';

    before(async () => {
      key = await makeKey('key-1');
      idp = await startIssuer([key]);
      // The resource is named by its public URL; the metadata's paths follow its path alone.
      resource = 'https://mcp.example.com/mcp';
      const verifier = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, resource, now: () => NOW });
      app = await start(
        verifier,
        {
          resource,
          authorizationServers: [authServer],
          scopesSupported: ['openid', 'email'],
          resourceName: 'Test MCP',
        },
        { resourceMetadata: protectedResourceMetadataUrl(resource) },
      );
    });
    after(async () => {
      await app.close();
      await idp.close();
    });

    const get = (path: string, authorization?: string) =>
      fetch(`${app.url}${path}`, { headers: authorization ? { Authorization: authorization } : {} });

    it('serves the metadata at the path-inserted URL and at the root, JSON, cacheable, any origin', async () => {
      for (const path of [
        '/.well-known/oauth-protected-resource/mcp',
        '/.well-known/oauth-protected-resource',
      ]) {
        const response = await get(path);
        assert.equal(response.status, 200, path);
        assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
        assert.equal(response.headers.get('access-control-allow-origin'), '*');
        assert.deepEqual(await response.json(), {
          resource,
          authorization_servers: [authServer],
          bearer_methods_supported: ['header'],
          scopes_supported: ['openid', 'email'],
          resource_name: 'Test MCP',
        });
      }
      assert.equal((await get('/.well-known/oauth-protected-resource/other')).status, 404);
    });

    it('401 challenges carry resource_metadata (RFC 9728 §5.1)', async () => {
      const where = `resource_metadata="${protectedResourceMetadataUrl(resource)}"`;
      assert.equal(
        protectedResourceMetadataUrl(resource),
        `${new URL(resource).origin}/.well-known/oauth-protected-resource/mcp`,
      );
      const none = await get('/mcp');
      assert.equal(none.status, 401);
      assert.equal(none.headers.get('www-authenticate'), `Bearer realm="tessera", ${where}`);
      const bad = await get('/mcp', 'Bearer not.a.token');
      assert.equal(bad.status, 401);
      assert.match(
        bad.headers.get('www-authenticate') ?? '',
        new RegExp(`^Bearer realm="tessera", ${where.replace(/[/.?]/g, '\\$&')}, error="invalid_token"`),
      );
    });

    it('accepts a token bound to this resource and of this project', async () => {
      const token = await mintAccessToken(key, idp.issuer, {
        claims: { aud: resource, api_key_id: API_KEY_ID },
      });
      const response = await get('/mcp', `Bearer ${token}`);
      assert.equal(response.status, 200, await response.clone().text());
      assert.deepEqual(await response.json(), { sub: 'usr_8d2f0c', aud: resource });
    });

    it('refuses the project’s app tokens, tokens for another resource, and another project’s token for this resource', async () => {
      const cases = [
        { aud: API_KEY_ID },
        { aud: 'https://other.example/mcp', api_key_id: API_KEY_ID },
        { aud: resource, api_key_id: 'pk_attacker' },
        { aud: resource },
      ];
      for (const claims of cases) {
        const token = await mintAccessToken(key, idp.issuer, { claims });
        const response = await get('/mcp', `Bearer ${token}`);
        assert.equal(response.status, 401, JSON.stringify(claims));
        assert.equal((await response.json()).error, 'wrong_audience');
      }
    });
  });
}

describe('createVerifier({ resource })', () => {
  it('refuses another project’s token naming the message, and checks its options', async () => {
    const key = await makeKey('key-2');
    const idp = await startIssuer([key]);
    try {
      const resource = 'https://mcp.example.com/mcp';
      const verifier = createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, resource, now: () => NOW });
      const token = await mintAccessToken(key, idp.issuer, {
        claims: { aud: resource, api_key_id: 'pk_other' },
      });
      const err = await assertRejects(verifier.verify(token), 'wrong_audience', token);
      assert.match(err.message, /another project/);
      assert.throws(
        () => createVerifier({ issuer: idp.issuer, apiKeyId: API_KEY_ID, resource: 'https://a.example/#x' }),
        /resource/,
      );
      assert.throws(() => protectedResourceMetadataUrl('not a url'), /resource/);
    } finally {
      await idp.close();
    }
  });
});
