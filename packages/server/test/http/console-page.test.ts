import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startServer, type TestServer } from '../helpers/harness.js';

// The console's page (issue 33): the same HTML at /console and every client-side route below it,
// its two files, config.json, a strict CSP on all of them; nothing while TESSERA_CONSOLE is off.

const BUNDLE = fileURLToPath(new URL('../../../console/scripts/bundle.mjs', import.meta.url));

describe('the console page', () => {
  let server: TestServer;
  before(async () => {
    const bundled = spawnSync(process.execPath, [BUNDLE, '--source'], { stdio: 'inherit' });
    assert.equal(bundled.status, 0, 'the console bundle was not built');
    server = await startServer('sqlite', { env: { TESSERA_CONSOLE: 'true' } });
  });
  after(() => server?.close());

  const csp = (headers: Headers) => headers.get('content-security-policy') ?? '';

  test('every client-side route answers the same page, with a CSP that allows only its own origin', async () => {
    const pages = await Promise.all(
      ['/console', '/console/', '/console/sign-in', '/console/p/pk_x/users/u_y', '/console/keys'].map(
        (path) => server.request('GET', path),
      ),
    );
    for (const page of pages) {
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.equal(page.text, pages[0]!.text);
      assert.match(page.text, /<script type="module" src="\/console\/assets\/console.js"><\/script>/);
      assert.doesNotMatch(
        page.text,
        /<script>|<style>|https?:\/\//,
        'no inline script or style, nothing from elsewhere',
      );
      assert.match(csp(page.headers), /default-src 'none'/);
      assert.match(csp(page.headers), /script-src 'self'(;|$)/);
      assert.match(csp(page.headers), /connect-src 'self'(;|$)/);
      assert.match(csp(page.headers), /frame-ancestors 'none'/);
      assert.equal(page.headers.get('x-frame-options'), 'DENY');
      assert.equal(page.headers.get('cache-control'), 'no-store');
    }
  });

  test('its script and stylesheet, and nothing else under /console/assets/', async () => {
    const js = await server.request('GET', '/console/assets/console.js');
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.ok(js.text.length > 10_000);
    const css = await server.request('GET', '/console/assets/console.css');
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type') ?? '', /^text\/css/);
    for (const path of [
      '/console/assets/index.html',
      '/console/assets/..%2Fpackage.json',
      '/console/assets/x.js',
    ]) {
      const missing = await server.request('GET', path);
      assert.equal(missing.status, 404, path);
    }
  });

  test('config.json names the console project and the issuer', async () => {
    const config = await server.request('GET', '/console/config.json');
    assert.equal(config.status, 200);
    const project = await server.ctx.console.project();
    assert.deepEqual(config.body, { api_key_id: project!.api_key_id, issuer: server.config.issuer });
  });
});

describe('the console page while TESSERA_CONSOLE is off', () => {
  test('/console is not served', async () => {
    const server = await startServer('sqlite', { env: { TESSERA_CONSOLE: 'false' } });
    try {
      for (const path of ['/console', '/console/config.json', '/console/assets/console.js'])
        assert.equal((await server.request('GET', path)).status, 404, path);
    } finally {
      await server.close();
    }
  });
});
