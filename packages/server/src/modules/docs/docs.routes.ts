import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import apiReference from '@scalar/fastify-api-reference';
import { Type } from '@sinclair/typebox';

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
    await app.register(apiReference, {
      routePrefix: '/docs',
      logLevel: 'warn',
      configuration: {
        url: '/openapi.json',
        title: 'Tessera API',
        withDefaultFonts: false,
        telemetry: false,
        hideClientButton: true,
        proxyUrl: '',
      },
    });
  };
}
