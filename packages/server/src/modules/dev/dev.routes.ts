import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { type Delivery, DevOutbox } from '../otp/delivery/index.js';
import type { ProjectsService } from '../projects/projects.service.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
};

/** The demo app's files (examples/web/public in a checkout); none in an installed package. */
function demoFiles(): Map<string, { body: Buffer; type: string }> {
  const dir = fileURLToPath(new URL('../../../../../examples/web/public/', import.meta.url));
  const files = new Map<string, { body: Buffer; type: string }>();
  if (!existsSync(dir)) return files;
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (type) files.set(name, { body: readFileSync(`${dir}${name}`), type });
  }
  return files;
}

const CLIENT_ENTRY = fileURLToPath(new URL('../../../../client/src/index.ts', import.meta.url));
const UI_ENTRY = fileURLToPath(new URL('../../../../ui/src/index.ts', import.meta.url));

/**
 * The client SDK and the sign-in element (`@tessera/ui`, which defines `<tessera-sign-in>`)
 * bundled for the demo page as one module, built once from their TypeScript sources with esbuild
 * (a development dependency: without it, or outside a checkout, the demo is not served).
 */
export async function bundleClient(): Promise<Buffer | undefined> {
  if (!existsSync(CLIENT_ENTRY) || !existsSync(UI_ENTRY)) return undefined;
  try {
    const esbuild = await import('esbuild');
    const result = await esbuild.build({
      stdin: {
        contents: `export * from ${JSON.stringify(CLIENT_ENTRY)};\nimport ${JSON.stringify(UI_ENTRY)};\n`,
        resolveDir: fileURLToPath(new URL('.', import.meta.url)),
        loader: 'ts',
      },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      conditions: ['tessera-source'],
      write: false,
      sourcemap: 'inline',
      logLevel: 'silent',
    });
    return Buffer.from(result.outputFiles[0]!.contents);
  } catch {
    return undefined;
  }
}

export interface DevRoutesDeps {
  delivery: Delivery;
  projects: Pick<ProjectsService, 'findByName'>;
  issuer: string;
  /** The sample API the demo page calls (TESSERA_DEMO_API_URL). */
  demoApiUrl: string;
}

const OutboxEntry = Type.Object(
  { to: Type.String(), channel: Type.String(), code: Type.String() },
  { additionalProperties: true },
);
/** The demo page's files: not part of the API. */
const hide = { schema: { hide: true } };

/**
 * Development only (TESSERA_DELIVERY=dev): the outbox of codes and the demo page. The outbox is in
 * the OpenAPI document only where it exists (tag `development`); the demo's files never are.
 */
export function devRoutes(deps: DevRoutesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    const outbox = deps.delivery;
    if (outbox instanceof DevOutbox) {
      app.get(
        '/dev/outbox',
        {
          schema: {
            operationId: 'listDevOutbox',
            summary: 'Codes sent, newest first (development only: never in production)',
            tags: ['development'],
            response: { 200: Type.Array(OutboxEntry) },
          },
        },
        async (_request, reply) => reply.header('cache-control', 'no-store').send(outbox.list()),
      );
    }

    const files = demoFiles();
    if (files.size === 0) return;
    let client: Promise<Buffer | undefined> | undefined;
    app.get('/demo/tessera-client.js', hide, async (_request, reply) => {
      client ??= bundleClient();
      const body = await client;
      if (!body) return reply.callNotFound();
      return reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(body);
    });
    app.get('/demo', hide, async (_request, reply) => reply.redirect('/demo/'));
    // In development the server's root leads to the demo (it answered 404).
    app.get('/', hide, async (_request, reply) => reply.redirect('/demo/'));
    app.get('/demo/config.json', hide, async () => {
      const demo = await deps.projects.findByName('demo');
      return {
        api_key_id: demo?.api_key_id ?? null,
        issuer: deps.issuer,
        sample_api: deps.demoApiUrl,
      };
    });
    app.get<{ Params: { file?: string } }>('/demo/:file', hide, async (request, reply) => {
      const file = files.get(request.params.file || 'index.html');
      if (!file) return reply.callNotFound();
      return reply.type(file.type).header('cache-control', 'no-cache').send(file.body);
    });
  };
}
