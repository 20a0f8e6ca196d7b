import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/**
 * Scalar's options, set so that the page talks to Tessera alone (issue 30): no "Ask AI" agent
 * (it calls api.scalar.com), no "Generate MCP" (it posts the document to Scalar's proxy), no
 * developer toolbar (Share, Deploy: Scalar's registry), no API client button (client.scalar.com),
 * no telemetry, no request proxy, no web fonts from fonts.scalar.com, and every external URL
 * Scalar would default to emptied. The agent and MCP are on by default on localhost and *.test,
 * which is where developers read this page.
 */
export const SCALAR_CONFIGURATION = {
  url: '/openapi.json',
  title: 'Tessera API',
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  proxyUrl: '',
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  showToolbar: 'never',
  externalUrls: { dashboardUrl: '', registryUrl: '', proxyUrl: '', apiBaseUrl: '' },
} as const;

/**
 * The page's CSP: scripts from the origin and the one inline script (by its hash), styles from the
 * origin and inline (Scalar sets style attributes), images and fonts from the origin or data:,
 * and `connect-src 'self'`: whatever Scalar might add later cannot reach anything but Tessera.
 */
function contentSecurityPolicy(html: string): string {
  const inline = [...html.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map(
    (match) => `'sha256-${createHash('sha256').update(match[1]!).digest('base64')}'`,
  );
  return [
    "default-src 'none'",
    `script-src 'self' ${inline.join(' ')}`.trim(),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The page's own app, made on the first request for /docs: @scalar/fastify-api-reference holds
 * its 4 MB browser bundle as a string, which cost every process about 30 MB of memory from
 * start-up when it was loaded with the rest (docs/BENCHMARKS.md, "Design measurements"); most
 * processes never serve /docs.
 */
function lazyDocsApp(): () => Promise<FastifyInstance> {
  let app: Promise<FastifyInstance> | undefined;
  const build = async () => {
    const { default: apiReference } = await import('@scalar/fastify-api-reference');
    const docs = Fastify({ logger: false });
    await docs.register(apiReference, { routePrefix: '/docs', configuration: SCALAR_CONFIGURATION });
    docs.addHook('onSend', async (_request, reply, payload) => {
      const type = String(reply.getHeader('content-type') ?? '');
      if (type.startsWith('text/html') && typeof payload === 'string')
        reply.header('content-security-policy', contentSecurityPolicy(payload));
      return payload;
    });
    await docs.ready();
    return docs;
  };
  return () => {
    app ??= build().catch((error: unknown) => {
      app = undefined;
      throw error;
    });
    return app;
  };
}

/**
 * GET /openapi.json (built by @fastify/swagger from the route schemas) and GET /docs, a page that
 * renders it with Scalar. The page's script is served from the package (`/docs/js/scalar.js`),
 * never from a CDN; every Scalar feature that contacts another service is off
 * (SCALAR_CONFIGURATION) and the page's CSP allows connections to the origin alone.
 */
export function docsRoutes(): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/openapi.json',
      {
        schema: {
          operationId: 'getOpenApiDocument',
          summary: 'This OpenAPI 3.1 document',
          tags: ['operations'],
          response: {
            200: Type.Unsafe<unknown>(
              Type.Object({ openapi: Type.String() }, { additionalProperties: true }),
            ),
          },
        },
      },
      async () => app.swagger(),
    );
    const docsApp = lazyDocsApp();
    const page = async (request: FastifyRequest, reply: FastifyReply) => {
      const answer = await (await docsApp()).inject({
        method: 'GET',
        url: request.url,
        headers: { host: request.headers.host ?? 'localhost' },
      });
      for (const name of ['content-type', 'location', 'cache-control', 'content-security-policy'] as const) {
        const value = answer.headers[name];
        if (value !== undefined) reply.header(name, value);
      }
      return reply.code(answer.statusCode).send(answer.rawPayload);
    };
    for (const url of ['/docs', '/docs/', '/docs/*'])
      app.get(url, { schema: { hide: true }, logLevel: 'warn' }, page);
  };
}
