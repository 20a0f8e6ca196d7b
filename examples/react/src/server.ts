import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { createTesseraClient, memoryKeyStore, memoryStorage } from '@tessera/client';
import { TesseraProvider } from '@tessera/react';
import { build } from 'esbuild';
import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { App } from './app.js';

export interface ExampleOptions {
  issuer: string;
  apiKeyId: string;
}

/** Bundles src/browser.tsx (React from npm) for the browser. */
export async function bundle(): Promise<string> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('./browser.tsx', import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    conditions: ['tessera-source'],
    define: { 'process.env.NODE_ENV': '"development"' },
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

const escapeJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

/** Serves the page rendered on the server (React's `renderToString`) and the bundle. */
export async function createExampleServer(options: ExampleOptions): Promise<Server> {
  const script = await bundle();
  // The server's own client never signs in: it is there so the provider can render.
  const client = createTesseraClient({
    ...options,
    storage: memoryStorage(),
    keyStore: memoryKeyStore(),
    channel: null,
  });
  return createServer((req, res) => {
    if (req.url === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(script);
      return;
    }
    if (req.url !== '/') {
      res.writeHead(404).end();
      return;
    }
    const html = renderToString(createElement(TesseraProvider, { client }, createElement(App)));
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Tessera React example</title></head>
<body><div id="root">${html}</div>
<script type="application/json" id="tessera-config">${escapeJson(options)}</script>
<script type="module" src="/app.js"></script></body></html>`);
  });
}
