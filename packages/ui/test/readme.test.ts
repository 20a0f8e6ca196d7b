import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../../server/test/helpers/chromium.js';
import { freePort, startServer, type TestServer } from '../../server/test/helpers/harness.js';
import { bundle, CHROMIUM, skipBrowser, waitForStep } from './helpers/browser.js';

// packages/ui/README.md's snippets, run as written (placeholders → this test's server) in Chromium:
// the element with its signed-in listener, the theming CSS, the messages override, and React's
// <SignIn/> and <UserButton/>. The main README shows the element and React snippets: the same text.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const README = readFileSync(join(ROOT, 'packages/ui/README.md'), 'utf8');

/** The code of the fence after `<!-- snippet: name -->` (or `<!-- ui-snippet: name -->`) in `markdown`. */
function snippet(markdown: string, name: string, marker = 'snippet'): string {
  const match = new RegExp(`<!-- ${marker}: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(markdown);
  assert.ok(match, `no snippet "${name}"`);
  return match[1]!;
}

describe('packages/ui/README.md snippets', { skip: skipBrowser }, () => {
  let tessera: TestServer;
  let browser: Browser;
  let pages: Server;
  let origin: string;
  let apiKeyId: string;
  const files = new Map<string, { type: string; body: string }>();
  const substitute = (code: string) =>
    code.replaceAll('https://auth.example.com', tessera.url).replaceAll('pk_…', apiKeyId);
  /** Bundles a snippet as an app would (written beside the fixtures, to resolve the workspace). */
  const bundleSnippet = async (name: string, code: string, jsx = false) => {
    const file = join(ROOT, 'packages/ui/test/fixtures', `.readme-${name}.${jsx ? 'tsx' : 'ts'}`);
    writeFileSync(file, code);
    try {
      return await bundle(file, jsx);
    } finally {
      rmSync(file);
    }
  };

  before(async () => {
    tessera = await startServer('sqlite', { env: { TESSERA_RATE_LIMIT_IP: '100000/60' } });
    const port = await freePort();
    origin = `http://localhost:${port}`;
    apiKeyId = (await tessera.ctx.projects.create({ name: 'Acme', origins: [origin], rpId: 'localhost' }))
      .api_key_id;
    pages = createServer((request, response) => {
      const file = files.get(request.url ?? '/');
      if (!file) return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': file.type }).end(file.body);
    });
    await new Promise<void>((resolve) => pages.listen(port, '127.0.0.1', resolve));
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    pages?.close();
    await tessera?.close();
  });

  const page = (html: string) =>
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>snippet</title><link rel="icon" href="data:,">${html}`;
  const signInByCode = async (p: Page, email: string) => {
    await waitForStep(p, 'identifier');
    await p.locator('tessera-sign-in #identifier').fill(email);
    await p.locator('tessera-sign-in button[type=submit]').click();
    await waitForStep(p, 'code');
    await p.locator('tessera-sign-in #code').fill(tessera.lastCode(email));
    await waitForStep(p, 'offers');
    await p.locator('tessera-sign-in button.continue').click();
  };

  test('the main README shows the element and React snippets as written here', () => {
    const main = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const name of ['element', 'react'])
      assert.equal(snippet(main, name, 'ui-snippet'), snippet(README, name), `README.md's "${name}" differs`);
  });

  test('element, theming and messages: the element themed, its texts replaced, signed-in handled', async () => {
    const element = substitute(snippet(README, 'element'));
    const [markup, script] = element.split('<script type="module">');
    const code = `${script!.replace('</script>', '')}\n{\n${snippet(README, 'messages')}}`;
    files.set('/element.js', { type: 'text/javascript', body: await bundleSnippet('element', code) });
    files.set('/', {
      type: 'text/html; charset=utf-8',
      body: page(
        `<style>${snippet(README, 'theming')}</style></head><body>${markup}<script type="module" src="/element.js"></script>`,
      ),
    });
    const context = await browser.newContext();
    const p = await context.newPage();
    await p.goto(origin);
    await waitForStep(p, 'identifier');
    assert.equal(await p.locator('tessera-sign-in [part~=title]').textContent(), 'Welcome to Acme');
    assert.equal(await p.locator('tessera-sign-in button[type=submit]').textContent(), 'Email me a code');
    const primary = () =>
      p.evaluate(() => {
        const root = document.querySelector('tessera-sign-in')!.shadowRoot!;
        return getComputedStyle(root.querySelector('.primary')!).backgroundColor;
      });
    assert.equal(await primary(), 'rgb(122, 31, 92)');
    await p.emulateMedia({ colorScheme: 'dark' });
    assert.equal(await primary(), 'rgb(240, 166, 212)');
    await signInByCode(p, 'readme@example.com');
    await p.waitForFunction(() => document.body.dataset.user);
    const sub = await p.evaluate(() => document.body.dataset.user);
    assert.match(sub ?? '', /^[\w-]{8,}/);
    await context.close();
  });

  test('react: <SignIn/> in French, the offers, then <UserButton/>', async () => {
    files.set('/react.js', {
      type: 'text/javascript',
      body: await bundleSnippet('react', substitute(snippet(README, 'react')), true),
    });
    files.set('/react', {
      type: 'text/html; charset=utf-8',
      body: page('</head><body><div id="root"></div><script type="module" src="/react.js"></script>'),
    });
    const context = await browser.newContext();
    const p = await context.newPage();
    await p.goto(`${origin}/react`);
    await waitForStep(p, 'identifier');
    assert.equal(await p.locator('tessera-sign-in [part~=title]').textContent(), 'Connexion à Acme');
    await signInByCode(p, 'readme-react@example.com');
    await p.getByRole('button', { name: 'readme-react@example.com' }).waitFor({ timeout: 15_000 });
    await context.close();
  });
});
