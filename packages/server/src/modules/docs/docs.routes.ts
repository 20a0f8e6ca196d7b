import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

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
    await docs.register(apiReference, {
      routePrefix: '/docs',
      configuration: {
        url: '/openapi.json',
        title: 'Tessera API',
        withDefaultFonts: false,
        telemetry: false,
        hideClientButton: true,
        proxyUrl: '',
      },
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
 * never from a CDN; the default web fonts, telemetry and Scalar's request proxy are off, so the
 * page loads nothing from outside the service.
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
      for (const name of ['content-type', 'location', 'cache-control'] as const) {
        const value = answer.headers[name];
        if (value !== undefined) reply.header(name, value);
      }
      return reply.code(answer.statusCode).send(answer.rawPayload);
    };
    for (const url of ['/docs', '/docs/', '/docs/*'])
      app.get(url, { schema: { hide: true }, logLevel: 'warn' }, page);
  };
}
