import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';

/** Where `npm run build` puts the console (packages/console/scripts/bundle.mjs). */
const BUNDLE_DIR = fileURLToPath(new URL('../../../dist/console/', import.meta.url));

/** The console's three files, read once at start. */
export interface ConsoleBundle {
  html: string;
  js: string;
  css: string;
}

/** The console's files, or undefined when it was not built (`/console` then says how to build it). */
export function consoleBundle(dir = BUNDLE_DIR): ConsoleBundle | undefined {
  const files = ['index.html', 'console.js', 'console.css'].map((name) => `${dir}${name}`);
  if (!files.every((file) => existsSync(file))) return undefined;
  const [html, js, css] = files.map((file) => readFileSync(file, 'utf8')) as [string, string, string];
  return { html, js, css };
}

/**
 * The console's Content-Security-Policy: its own two files and calls to its own origin, nothing
 * from anywhere else, never framed. `<tessera-sign-in>` styles its shadow root with `<style>`
 * elements (as on the hosted sign-in page): the one inline allowance, for styles only.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Tessera console</title></head>
<body><h1>The console is not built</h1><p>Run <code>npm run build</code> (it bundles packages/console into
packages/server/dist/console/), then restart Tessera.</p></body></html>`;

export interface ConsolePageDeps {
  /** The console's files, when built. */
  bundle: ConsoleBundle | undefined;
  /** The service's public base URL. */
  issuer: string;
  /** The built-in console project's API key id, which the SPA signs in with. */
  consoleApiKeyId(): Promise<string>;
}

/**
 * The console's single page (issue 33) at `/console`: the same HTML for every client-side route
 * below it, its script and stylesheet under `/console/assets/`, and `/console/config.json`
 * (`{api_key_id, issuer}`) for its sign-in. Everything else the console does goes through the API.
 */
export function consolePageRoutes(deps: ConsolePageDeps): FastifyPluginAsync {
  return async (app) => {
    const page = (reply: FastifyReply) =>
      reply
        .headers({ ...HEADERS, 'cache-control': 'no-store' })
        .type('text/html; charset=utf-8')
        .code(deps.bundle ? 200 : 503)
        .send(deps.bundle?.html ?? NOT_BUILT);
    const hide = { schema: { hide: true } };

    app.get('/console/config.json', hide, async (_request, reply) =>
      reply
        .headers({ ...HEADERS, 'cache-control': 'no-store' })
        .send({ api_key_id: await deps.consoleApiKeyId(), issuer: deps.issuer }),
    );
    app.get('/console/assets/:file', hide, async (request, reply) => {
      const { file } = request.params as { file: string };
      const body =
        file === 'console.js' ? deps.bundle?.js : file === 'console.css' ? deps.bundle?.css : undefined;
      if (body === undefined) return reply.code(404).type('text/plain; charset=utf-8').send('not found');
      return reply
        .headers({ ...HEADERS, 'cache-control': 'no-cache' })
        .type(file.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8')
        .send(body);
    });
    app.get('/console', hide, async (_request, reply) => page(reply));
    app.get('/console/*', hide, async (_request, reply) => page(reply));
  };
}
