import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  addVirtualAuthenticator,
  axeSource,
  CHROMIUM,
  launchChromium,
  runAxe,
} from '../../../server/test/helpers/chromium.js';
import { freePort, startServer, type TestServer } from '../../../server/test/helpers/harness.js';

export { CHROMIUM } from '../../../server/test/helpers/chromium.js';

/** Debian's chromium (never a download); TESSERA_CHROMIUM names another binary. */
const required = process.env.TESSERA_TEST_REQUIRE_SERVICES === '1';
/** Why the browser suites skip, or false. */
export const skipBrowser: string | false = existsSync(CHROMIUM) || required ? false : `${CHROMIUM} not found`;
if (skipBrowser) console.log(`# browser tests skipped: ${skipBrowser} (apt-get install -y chromium)`);

export const ARTEFACTS = join(process.cwd(), 'test-artifacts', 'ui');
/** The screenshots of the React components' tests (`packages/react/test`). */
export const REACT_ARTEFACTS = join(process.cwd(), 'test-artifacts', 'react');

/** Bundles a test page's script from TypeScript, as an app's bundler would. */
export async function bundle(entry: string, jsx = false): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['tessera-source'],
    write: false,
    logLevel: 'silent',
    ...(jsx && { jsx: 'automatic', define: { 'process.env.NODE_ENV': '"production"' } }),
  });
  return result.outputFiles[0]!.text;
}

/** A page's HTML: an app's page with the element, its attributes from `?attrs=` (JSON). */
function pageHtml(url: URL, apiKeyId: string, issuer: string, script: string): string {
  const attrs: Record<string, string> = {
    issuer,
    'api-key-id': apiKeyId,
    ...(JSON.parse(url.searchParams.get('attrs') ?? '{}') as Record<string, string>),
  };
  const quote = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
  const list = Object.entries(attrs)
    .map(([k, v]) => `${k}="${quote(v)}"`)
    .join(' ');
  const dir = url.searchParams.get('dir') === 'rtl' ? ' dir="rtl"' : '';
  const lang = quote(url.searchParams.get('lang') ?? 'en');
  const body =
    script !== 'page.js'
      ? `<div id="root" data-issuer="${quote(issuer)}" data-api-key-id="${quote(apiKeyId)}"></div>`
      : `<tessera-sign-in ${list}></tessera-sign-in>`;
  return `<!doctype html><html lang="${lang}"${dir}><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark">
<title>Example app: sign in</title><link rel="icon" href="data:,">
<style>body{margin:0;padding:24px 12px;font-family:system-ui,sans-serif;background:Canvas;color:CanvasText}
h1{font-size:1.25rem;text-align:center;margin:0 0 16px}${url.searchParams.get('css') ?? ''}</style></head>
<body><main><h1>Example app</h1>${body}</main><script type="module" src="/${script}"></script></body></html>`;
}

/** A project's logo, served by the app's origin (branding.logo_url). */
const LOGO =
  '<svg xmlns="http://www.w3.org/2000/svg" width="96" height="32" viewBox="0 0 96 32"><rect width="32" height="32" rx="8" fill="#0a7c5a"/><text x="40" y="22" font-family="sans-serif" font-size="16" fill="#0a7c5a">Acme</text></svg>';

export interface UiHarness {
  server: TestServer;
  /** The page's origin (localhost: passkeys need a domain). */
  origin: string;
  apiKeyId: string;
  browser: Browser;
  /** A new context (its own storage) and page; `dark` emulates the dark colour scheme. */
  open(path?: string, options?: { dark?: boolean; authenticator?: boolean }): Promise<OpenPage>;
  close(): Promise<void>;
}

export interface OpenPage {
  context: BrowserContext;
  page: Page;
  /** The virtual authenticator (CDP WebAuthn), when asked for. */
  authenticator?: { id: string; send: (method: string, params?: object) => Promise<unknown> };
}

/**
 * Starts Tessera (SQLite, development outbox) with a project for the page's origin, a small
 * server of the test pages (`/` and `/page.js`, and the `apps`: `/name` and `/name.js`) on localhost,
 * and Chromium.
 */
export async function startUiHarness(
  env: Record<string, string> = {},
  /** More pages: `/name` runs this React entry (`.tsx`), bundled as `/name.js`, in `#root`. */
  apps: Record<string, string> = {},
): Promise<UiHarness> {
  mkdirSync(ARTEFACTS, { recursive: true });
  const server = await startServer('sqlite', { env: { TESSERA_RATE_LIMIT_IP: '100000/60', ...env } });
  const port = await freePort();
  const origin = `http://localhost:${port}`;
  await server.ctx.projects.create({
    name: 'Acme',
    origins: [origin],
    rpId: 'localhost',
    smsCountries: 'FR,DE,GB,US',
  });
  const apiKeyId = (await server.ctx.projects.findByName('Acme'))!.api_key_id;
  const scripts: Record<string, Promise<string>> = {};
  const script = (name: string) => {
    const entry = apps[name] ?? fileURLToPath(new URL(`../fixtures/${name}.ts`, import.meta.url));
    scripts[name] ??= bundle(entry, name in apps);
    return scripts[name];
  };
  const pages: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', origin);
    const send = (type: string, body: string) => {
      response.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
      response.end(body);
    };
    const app = url.pathname.slice(1).replace(/\.js$/, '');
    if (url.pathname === '/page.js' || (url.pathname.endsWith('.js') && app in apps)) {
      script(url.pathname.slice(1, -3)).then(
        (body) => send('text/javascript', body),
        (error: Error) => {
          response.writeHead(500).end(error.message);
        },
      );
    } else if (url.pathname === '/axe.js') send('text/javascript', axeSource());
    else if (url.pathname === '/logo.svg') send('image/svg+xml', LOGO);
    else if (url.pathname === '/')
      send('text/html; charset=utf-8', pageHtml(url, apiKeyId, server.url, 'page.js'));
    else if (app in apps) send('text/html; charset=utf-8', pageHtml(url, apiKeyId, server.url, `${app}.js`));
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => pages.listen(port, '127.0.0.1', resolve));
  const browser = await launchChromium();
  return {
    server,
    origin,
    apiKeyId,
    browser,
    async open(path = '/', options = {}) {
      const context = await browser.newContext({
        colorScheme: options.dark ? 'dark' : 'light',
        viewport: { width: 1280, height: 900 },
      });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
      // The element's events, from the start of every load: `window.uiEvents`.
      await context.addInitScript(() => {
        const events: Array<{ type: string; detail: unknown }> = [];
        Object.assign(globalThis, { uiEvents: events });
        for (const type of ['step', 'error', 'signed-in'])
          document.addEventListener(type, (e) => events.push({ type, detail: (e as CustomEvent).detail }));
      });
      const page = await context.newPage();
      const cdp = await context.newCDPSession(page);
      // The branding read is cacheable (5 min): tests change the project between loads.
      await cdp.send('Network.enable');
      await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
      let authenticator: OpenPage['authenticator'];
      if (options.authenticator) {
        const authenticatorId = await addVirtualAuthenticator(cdp);
        authenticator = {
          id: authenticatorId,
          send: (method, params = {}) =>
            cdp.send(method as 'WebAuthn.getCredentials', { authenticatorId, ...params } as never),
        };
      }
      await page.goto(`${origin}${path}`);
      return { context, page, ...(authenticator && { authenticator }) };
    },
    async close() {
      await browser.close();
      pages.close();
      await server.close();
    },
  };
}

/** The element's shadow-DOM text of a part (`error`, `title`, …), trimmed. */
export const partText = (page: Page, part: string) =>
  page.locator(`tessera-sign-in [part~="${part}"]`).first().innerText();

/** Waits until the element shows `step`. */
export async function waitForStep(page: Page, step: string, selector = 'tessera-sign-in'): Promise<void> {
  await page.waitForFunction(
    ([s, sel]) => (document.querySelector(sel!) as unknown as { step?: string } | null)?.step === s,
    [step, selector],
    { timeout: 15_000 },
  );
}

/** Once the element's step has faded in (unless reduced motion): what axe measures and screenshots show. */
export async function settled(page: Page): Promise<void> {
  await page.evaluate(() =>
    Promise.all(
      Array.from(document.querySelectorAll('tessera-sign-in, tessera-user-button')).flatMap((e) =>
        (e.shadowRoot?.getAnimations() ?? []).map((a: Animation) => a.finished.catch(() => {})),
      ),
    ),
  );
}

/** axe-core over the page (shadow roots included): the violations, described. */
export async function axeViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.addScriptTag({ url: '/axe.js' });
  await settled(page);
  return runAxe(page);
}

/** The focused element's id inside the element's shadow root ('' when focus is elsewhere). */
export const focusedId = (page: Page) =>
  page.evaluate(() => document.querySelector('tessera-sign-in')?.shadowRoot?.activeElement?.id ?? '');

/** The newest code sent to `to`, from the development outbox. */
export const codeFor = (server: TestServer, to: string) => server.lastCode(to);
