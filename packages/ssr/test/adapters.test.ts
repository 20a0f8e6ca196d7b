import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { after, before, test } from 'node:test';
import express from 'express';
import Fastify from 'fastify';
import type { TestServer } from '../../server/test/helpers/harness.js';
import { requireSession, tesseraSsr } from '../src/express.js';
import { tesseraRoutes, tesseraSession } from '../src/fastify.js';
import type { TesseraSsr } from '../src/index.js';
import { middlewareSession, readSession, routeHandlers } from '../src/next.js';
import { Browser, signIn, ssrFor, startTessera } from './support.js';

let server: TestServer;
before(async () => {
  server = await startTessera();
});
after(async () => {
  await server.close();
});

/** Signs in through `base` over real HTTP (the adapter's auth routes), as a page's script would. */
async function signInOver(base: string, identifier: string): Promise<Browser> {
  const browser = new Browser();
  const call = async (method: string, path: string, body?: unknown) => {
    const csrf = [...browser.cookies].find(([n]) => n.endsWith('-csrf'))?.[1];
    const response = await fetch(`${base}${path}`, {
      method,
      redirect: 'manual',
      headers: {
        cookie: browser.header(),
        ...(body ? { 'content-type': 'application/json', origin: 'https://app.test' } : {}),
        ...(csrf ? { 'x-csrf-token': csrf } : {}),
      },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    browser.store(response);
    return response;
  };
  await call('GET', '/auth/session');
  const started = await call('POST', '/auth/otp/start', { identifier });
  assert.equal(started.status, 200);
  const { challenge_id } = (await started.json()) as { challenge_id: string };
  const done = await call('POST', '/auth/otp/complete', { challenge_id, code: server.lastCode(identifier) });
  assert.equal(done.status, 200);
  const me = await call('GET', '/me');
  assert.equal(me.status, 200);
  assert.equal(((await me.json()) as { identifier: string }).identifier, identifier);
  return browser;
}

test('Express: auth routes, the session on req, renewal cookies on the page response, requireSession', async () => {
  const ssr = ssrFor(server);
  const app = express();
  app.use(tesseraSsr(ssr));
  app.get('/me', requireSession('/signin'), (req, res) => {
    res.json({ identifier: req.tesseraSession!.user.identifier });
  });
  const http = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  try {
    const base = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
    const browser = await signInOver(base, 'express@example.com');
    browser.cookies.delete('__Host-tessera-access');
    const renewed = await fetch(`${base}/me`, { headers: { cookie: browser.header() } });
    assert.equal(renewed.status, 200);
    assert.ok(renewed.headers.getSetCookie().some((c) => c.startsWith('__Host-tessera-refresh=')));
    const anonymous = await fetch(`${base}/me`, { redirect: 'manual', headers: { accept: 'text/html' } });
    assert.equal(anonymous.status, 303);
    assert.equal(anonymous.headers.get('location'), '/signin?redirect_to=%2Fme');
  } finally {
    http.close();
  }
});

test('Fastify: the routes plugin and the session hook', async () => {
  const ssr = ssrFor(server);
  const app = Fastify();
  await app.register(tesseraRoutes(ssr));
  app.register(async (pages) => {
    pages.addHook('onRequest', tesseraSession(ssr));
    pages.get('/me', async (request, reply) => {
      if (!request.tesseraSession) return reply.code(401).send({ error: 'not_signed_in' });
      return { identifier: request.tesseraSession.user.identifier };
    });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const browser = await signInOver(base, 'fastify@example.com');
    browser.cookies.delete('__Host-tessera-access');
    const renewed = await fetch(`${base}/me`, { headers: { cookie: browser.header() } });
    assert.equal(renewed.status, 200);
    assert.equal(renewed.headers.getSetCookie().filter((c) => c.startsWith('__Host-tessera-')).length, 2);
  } finally {
    await app.close();
  }
});

test('Next.js: route handlers, middleware renewal passed on to Server Components, readSession', async () => {
  const ssr: TesseraSsr = ssrFor(server);
  const { GET, POST } = routeHandlers(ssr);
  assert.equal((await GET(new Request('https://app.test/auth/unknown'))).status, 404);
  const browser = new Browser();
  await signIn(ssr, server, browser, 'next@example.com');
  const viaPost = await POST(
    new Request('https://app.test/auth/refresh', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        origin: 'https://app.test',
        cookie: browser.header(),
        'x-csrf-token': browser.cookies.get('__Host-tessera-csrf')!,
      },
      body: '{}',
    }),
  );
  assert.equal(viaPost.status, 200);

  browser.cookies.delete('__Host-tessera-access');
  const { session, requestHeaders, setCookies } = await middlewareSession(
    ssr,
    new Request('https://app.test/account', { headers: { cookie: browser.header() } }),
  );
  assert.equal(session?.user.identifier, 'next@example.com');
  assert.equal(setCookies.filter((c) => /^__Host-tessera-(access|refresh)=/.test(c)).length, 2);
  // What cookies() would give the Server Component rendering this request.
  const forwarded = new Browser();
  forwarded.cookies.clear();
  for (const part of requestHeaders.get('cookie')!.split('; ')) {
    const [name, value] = part.split('=') as [string, string];
    forwarded.cookies.set(name, decodeURIComponent(value));
  }
  const read = await readSession(ssr, {
    get: (name) => {
      const value = forwarded.cookies.get(name);
      return value === undefined ? undefined : { value };
    },
  });
  assert.equal(read?.user.identifier, 'next@example.com');
});
