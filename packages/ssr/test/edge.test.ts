// The entries documented as edge-capable (`@tessera/ssr`, `@tessera/ssr/next`) run where there is
// no Node: Next.js middleware on the Edge runtime, Cloudflare Workers, Deno, Bun. Each is bundled
// the way an edge bundler does (esbuild, platform "neutral": a `node:` import fails the build), then
// run with `Buffer`, `process`, `require` and `global` shadowed by undefined, through a whole sign-in,
// a renewal and a logout against a real Tessera.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { TestServer } from '../../server/test/helpers/harness.js';
import type * as Ssr from '../src/index.js';
import type * as NextHelpers from '../src/next.js';
import { APP, Browser, startTessera } from './support.js';

const NODE_ONLY = ['Buffer', 'process', 'require', 'global', 'module', 'setImmediate'];

/** Bundles an entry for a runtime without Node and evaluates it with Node's globals hidden. */
async function edgeBundle<T>(entry: string): Promise<T> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL(`../src/${entry}`, import.meta.url))],
    bundle: true,
    write: false,
    platform: 'neutral',
    format: 'iife',
    globalName: '__entry',
    mainFields: ['module', 'main'],
    conditions: ['tessera-source', 'worker', 'browser'],
    // Next's own module, imported by readSession inside a Next app only.
    external: ['next/server'],
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]!.text;
  assert.doesNotMatch(code, /\bnode:/, `${entry} references a node: module`);
  const run = new Function(...NODE_ONLY, `${code}\nreturn __entry;`);
  return run(...NODE_ONLY.map(() => undefined)) as T;
}

let server: TestServer;
before(async () => {
  server = await startTessera();
});
after(async () => {
  await server.close();
});

test('@tessera/ssr and @tessera/ssr/next build and sign in without Node (edge runtimes)', async () => {
  const ssr = await edgeBundle<typeof Ssr>('index.ts');
  const next = await edgeBundle<typeof NextHelpers>('next.ts');
  const tessera = ssr.createTesseraSsr({
    issuer: server.url,
    apiKeyId: server.project.api_key_id,
    appOrigin: APP,
  });
  const { GET, POST } = next.routeHandlers(tessera);
  const browser = new Browser();
  const send = async (route: string, body?: unknown) => {
    const csrf = browser.cookies.get(tessera.cookieNames.csrf);
    const request = new Request(`${APP}/auth${route}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        origin: APP,
        'sec-fetch-site': 'same-origin',
        cookie: browser.header(),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(csrf ? { 'x-csrf-token': csrf } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const response = await (body === undefined ? GET : POST)(request);
    browser.store(response);
    return response;
  };

  // CSRF token from the platform's CSPRNG; the double-submit check compares it in constant time.
  assert.equal((await send('/session')).status, 200);
  assert.match(browser.cookies.get(tessera.cookieNames.csrf)!, /^[A-Za-z0-9_-]{43}$/);
  const forged = new Request(`${APP}/auth/logout`, {
    method: 'POST',
    headers: { origin: APP, cookie: browser.header(), 'x-csrf-token': 'A'.repeat(43) },
  });
  assert.equal((await POST(forged)).status, 403);

  const identifier = 'edge@example.com';
  const started = await send('/otp/start', { identifier });
  const { challenge_id } = (await started.json()) as { challenge_id: string };
  const signedIn = await send('/otp/complete', { challenge_id, code: server.lastCode(identifier) });
  assert.equal(signedIn.status, 200, await signedIn.clone().text());

  // The access cookie gone: middlewareSession renews with the refresh cookie (SHA-256 keyed, Web Crypto).
  browser.cookies.delete(tessera.cookieNames.access);
  const refreshBefore = browser.cookies.get(tessera.cookieNames.refresh);
  const renewed = await next.middlewareSession(
    tessera,
    new Request(`${APP}/account`, { headers: { cookie: browser.header() } }),
  );
  assert.equal(renewed.session?.user.identifier, identifier);
  const setRefresh = renewed.setCookies.find((c) => c.startsWith(`${tessera.cookieNames.refresh}=`));
  assert.ok(
    setRefresh && !setRefresh.includes(encodeURIComponent(refreshBefore!)),
    'the refresh token rotated',
  );

  const out = await send('/logout', {});
  assert.deepEqual(await out.json(), { revoked: true });
});

test('constantTimeEqual compares every byte: equal, one byte off anywhere, other lengths, non-ASCII', async () => {
  const { constantTimeEqual } = await import('../src/web-crypto.js');
  const token = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ';
  assert.equal(constantTimeEqual(token, token), true);
  for (const i of [0, 21, 42]) {
    const other = `${token.slice(0, i)}${token[i] === 'x' ? 'y' : 'x'}${token.slice(i + 1)}`;
    assert.equal(constantTimeEqual(token, other), false, `differs at ${i}`);
  }
  assert.equal(constantTimeEqual(token, token.slice(1)), false);
  assert.equal(constantTimeEqual('', ''), true);
  assert.equal(constantTimeEqual('é', 'e\u0301'), false);
  assert.equal(constantTimeEqual('é', 'é'), true);
});
