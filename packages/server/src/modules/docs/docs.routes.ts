import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tessera API</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:900px;margin:2rem auto;padding:0 1rem;color:#1b1e24}
h1{margin-bottom:0} .op{border:1px solid #e3e6ec;border-radius:8px;margin:.5rem 0;padding:.5rem .75rem}
.m{display:inline-block;min-width:4.5rem;font-weight:700;font-family:ui-monospace,monospace}
.GET{color:#027a48}.POST{color:#175cd3}.PUT{color:#b54708}.PATCH{color:#6941c6}.DELETE{color:#b42318}
code,pre{font-family:ui-monospace,monospace;font-size:13px} pre{background:#f6f7f9;padding:.5rem;overflow:auto;border-radius:6px}
details summary{cursor:pointer}
</style></head><body>
<h1>Tessera HTTP API</h1>
<p>Generated from the route schemas: <a href="/openapi.json">/openapi.json</a>. Integrator guide: docs/API.md in the repository.</p>
<div id="ops">Loading…</div>
<script>
fetch('/openapi.json').then(r => r.json()).then(doc => {
  const ops = document.getElementById('ops'); ops.textContent = '';
  for (const [path, methods] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(methods)) {
    const d = document.createElement('details'); d.className = 'op';
    const s = document.createElement('summary');
    const m = document.createElement('span'); m.className = 'm ' + method.toUpperCase(); m.textContent = method.toUpperCase();
    const p = document.createElement('code'); p.textContent = path;
    s.append(m, p); d.append(s);
    const pre = document.createElement('pre'); pre.textContent = JSON.stringify({ parameters: op.parameters, requestBody: op.requestBody }, null, 2);
    d.append(pre); ops.append(d);
  }
});
</script></body></html>`;

/** GET /openapi.json (from @fastify/swagger) and a small page that lists it. */
export function docsRoutes(): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    app.get('/docs', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('text/html; charset=utf-8').send(PAGE),
    );
  };
}
