/**
 * Issue 30: a page on an origin its project does not list got `network_error` from the SDK (the
 * preflight was a 404, so the browser never sent the request). In Chromium, a page served from an
 * unlisted origin calls the real SDK against a real server and must get `origin_not_allowed`,
 * naming the page's origin; the same page on a listed origin signs in.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { bundleClient } from '../../src/modules/dev/dev.routes.js';
import { chromiumSkip, launchChromium } from '../helpers/chromium.js';
import { freePort, startServer, type TestServer } from '../helpers/harness.js';

const skip = chromiumSkip();
/** An app's page: starts an OTP sign-in with the SDK and records the outcome on `window.outcome`. */
const page = (issuer: string, apiKeyId: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>App</title></head><body><main><h1>App</h1></main>
<script type="module">
import { createTesseraClient } from '/sdk.js';
const tessera = createTesseraClient({ issuer: ${JSON.stringify(issuer)}, apiKeyId: ${JSON.stringify(apiKeyId)} });
try {
  const started = await tessera.otp.start('ada@example.com');
  window.outcome = { ok: true, channel: started.channel };
} catch (error) {
  window.outcome = { ok: false, code: error.code, detail: error.detail, status: error.status };
}
</script></body></html>`;

describe('an app on an origin its project does not list, in headless Chromium', { skip }, () => {
  let server: TestServer;
  let app: Server;
  let appOrigin: string;
  let browser: Browser;
  before(async () => {
    server = await startServer('sqlite');
    // The SDK as a browser loads it: bundled from its source, as the demo page's is.
    const sdk = await bundleClient();
    assert.ok(sdk, 'the client SDK bundles');
    const port = await freePort();
    appOrigin = `http://localhost:${port}`;
    app = createServer((request, response) => {
      if (request.url === '/sdk.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' }).end(sdk);
      } else if (request.url === '/') {
        response
          .writeHead(200, { 'content-type': 'text/html' })
          .end(page(server.url, server.project.api_key_id));
      } else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => app.listen(port, '127.0.0.1', resolve));
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    app?.close();
    await server?.close();
  });

  const outcomeAt = async (url: string) => {
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      await tab.goto(url);
      await tab.waitForFunction(() => 'outcome' in window, undefined, { timeout: 15_000 });
      return (await tab.evaluate(
        () => (window as unknown as { outcome: Record<string, unknown> }).outcome,
      )) as {
        ok: boolean;
        code?: string;
        detail?: string;
        status?: number;
        channel?: string;
      };
    } finally {
      await context.close();
    }
  };

  test('the SDK reports origin_not_allowed with the page origin, not network_error', async () => {
    const outcome = await outcomeAt(`${appOrigin}/`);
    assert.equal(outcome.ok, false);
    assert.equal(outcome.code, 'origin_not_allowed', JSON.stringify(outcome));
    assert.equal(outcome.status, 403);
    assert.match(outcome.detail ?? '', /--add-origin/);
    assert.ok(outcome.detail?.includes(appOrigin), outcome.detail);
    assert.deepEqual(server.outbox.list(), [], 'no code was sent');
  });

  test('once the origin is added, the same page starts a sign-in', async () => {
    const project = (await server.ctx.projects.byApiKeyId(server.project.api_key_id))!;
    await server.ctx.projects.update(project.api_key_id, { addOrigins: [appOrigin] });
    // Origins are cached for up to 5 s (docs/API.md, "CORS").
    const deadline = Date.now() + 15_000;
    let outcome = await outcomeAt(`${appOrigin}/`);
    while (!outcome.ok && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      outcome = await outcomeAt(`${appOrigin}/`);
    }
    assert.equal(outcome.ok, true, JSON.stringify(outcome));
    assert.equal(outcome.channel, 'email');
  });
});
