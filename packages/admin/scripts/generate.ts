// Generates packages/admin/src/generated/ from the server's own OpenAPI document, built in-process
// (buildApp on an in-memory SQLite database, `GET /openapi.json` by inject: no network, no port).
//
//   npm run generate -w packages/admin            writes the files
//   npm run generate -w packages/admin -- --check exits 1 when a file differs (what the test checks)
//
// Two files: openapi.ts, the types of the integrator and operator operations (openapi-typescript,
// pinned, over the document narrowed to those operations), and operations.ts, the runtime table the
// client calls through (operation id → method and path template). The rule of what belongs to the
// admin client is `isAdminOperation` below; the test checks the client reaches every such operation.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { buildApp } from '../../server/src/app.js';
import { loadConfig } from '../../server/src/config/index.js';
import { MasterKey } from '../../server/src/crypto/master-key.js';
import { connect, migrate } from '../../server/src/db/connect.js';
import { KeyStore } from '../../server/src/keys/key-store.js';
import { createLogger } from '../../server/src/logger.js';
import { DevOutbox } from '../../server/src/modules/otp/delivery/dev-outbox.js';

export const GENERATED_DIR = fileURLToPath(new URL('../src/generated/', import.meta.url));
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
/** Security schemes of end users and apps (sign-in, the user's own account, metrics): not admin. */
const NOT_ADMIN_SCHEMES = new Set(['apiKey', 'accessToken', 'metricsToken']);

// biome-ignore lint/suspicious/noExplicitAny: the document is walked member by member
export type OpenApiDocument = any;

/**
 * The server's OpenAPI document as `GET /openapi.json` serves it, with every optional family on
 * (the operator API needs TESSERA_OPERATOR_TOKEN, the console's routes TESSERA_CONSOLE), from a
 * throwaway in-memory database.
 */
export async function buildDocument(): Promise<OpenApiDocument> {
  const masterKey = randomBytes(32).toString('base64');
  const config = loadConfig({
    TESSERA_ENV: 'test',
    TESSERA_ISSUER: 'http://localhost:8080',
    TESSERA_MASTER_KEY: masterKey,
    TESSERA_DATA_DIR: tmpdir(),
    TESSERA_DELIVERY: 'dev',
    TESSERA_LOG_LEVEL: 'silent',
    TESSERA_OPERATOR_TOKEN: randomBytes(32).toString('base64url'),
    TESSERA_CONSOLE: 'true',
  });
  const logger = createLogger('silent');
  const db = await connect('sqlite::memory:');
  try {
    await migrate(db);
    const master = MasterKey.parse(masterKey);
    const keys = new KeyStore(db, master.derive('signing-key-encryption'));
    await keys.init();
    const { app } = await buildApp(config, {
      db,
      keys,
      masterKey: master,
      delivery: new DevOutbox({}, logger),
      logger,
    });
    try {
      const response = await app.inject({ method: 'GET', url: '/openapi.json' });
      if (response.statusCode !== 200) throw new Error(`/openapi.json answered ${response.statusCode}`);
      return response.json();
    } finally {
      await app.close();
    }
  } finally {
    await db.close();
  }
}

export interface Operation {
  id: string;
  method: Uppercase<(typeof METHODS)[number]>;
  path: string;
}

/**
 * An operation of the integrator or operator API: under `/v1/`, and callable with a credential
 * other than an end user's or an app's (HTTP Basic with the API key secret, the operator token, a
 * console member's token). Sign-in, the signed-in user's own routes, `/oauth/*`, discovery and
 * public routes are not.
 */
export function isAdminOperation(path: string, op: OpenApiDocument): boolean {
  if (!path.startsWith('/v1/')) return false;
  const schemes = ((op.security ?? []) as Array<Record<string, unknown>>).flatMap((r) => Object.keys(r));
  return schemes.some((scheme) => !NOT_ADMIN_SCHEMES.has(scheme));
}

/** Every admin operation of the document, in document order. */
export function adminOperations(doc: OpenApiDocument): Operation[] {
  return Object.entries(doc.paths as Record<string, OpenApiDocument>).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m] && isAdminOperation(path, item[m])).map((m) => ({
      id: String(item[m].operationId),
      method: m.toUpperCase() as Operation['method'],
      path,
    })),
  );
}

/** The document with only the admin operations (and every component: operations refer to them). */
function narrowed(doc: OpenApiDocument): OpenApiDocument {
  const paths: Record<string, OpenApiDocument> = {};
  for (const { path, method } of adminOperations(doc)) {
    paths[path] ??= {};
    paths[path][method.toLowerCase()] = doc.paths[path][method.toLowerCase()];
  }
  const { servers: _servers, ...rest } = doc;
  return { ...rest, paths };
}

const HEADER = `// Generated by packages/admin/scripts/generate.ts from the server's OpenAPI document: do not edit.
// Regenerate with \`npm run generate -w packages/admin\`; test/generated.test.ts fails when it is stale.
`;

/** The event types of `GET /v1/audit`'s `type` filter, an enum in the document. */
export function auditEventTypes(doc: OpenApiDocument): string[] {
  const parameters = (doc.paths['/v1/audit']?.get?.parameters ?? []) as OpenApiDocument[];
  const type = parameters.find((p) => p.in === 'query' && p.name === 'type');
  const schema = type?.schema ?? {};
  const values: unknown[] =
    schema.enum ?? (schema.anyOf ?? []).map((s: OpenApiDocument) => s.const ?? s.enum?.[0]);
  if (values.length === 0 || !values.every((v) => typeof v === 'string' && /^[a-z_.]+$/.test(v)))
    throw new Error('GET /v1/audit lists no event types in its type parameter');
  return values as string[];
}

/** The generated files, by name, from a document. */
export async function generatedFiles(doc: OpenApiDocument): Promise<Record<string, string>> {
  const types = astToString(await openapiTS(narrowed(doc), { alphabetize: true }));
  const ops = adminOperations(doc).sort((a, b) => a.id.localeCompare(b.id));
  const table = ops.map((o) => `  ${o.id}: { method: '${o.method}', path: '${o.path}' },`).join('\n');
  const eventTypes = auditEventTypes(doc)
    .map((type) => `  '${type}',`)
    .join('\n');
  return {
    'openapi.ts': `${HEADER}\n${types}`,
    'operations.ts': `${HEADER}import type { operations } from './openapi.js';

/** The operation ids of the integrator and operator APIs. */
export type OperationId = keyof operations;

/** How to call each operation: its method and its path template. */
export const OPERATIONS = {
${table}
} as const satisfies Record<OperationId, { method: string; path: string }>;

/** Every audit event type the service records, as \`GET /v1/audit\`'s \`type\` filter lists them. */
export const AUDIT_EVENT_TYPES = [
${eventTypes}
] as const;
`,
  };
}

/** Writes the files (or, with `check`, lists those that differ); returns the names that changed. */
export async function generate(options: { check?: boolean } = {}): Promise<string[]> {
  const files = await generatedFiles(await buildDocument());
  const changed: string[] = [];
  mkdirSync(GENERATED_DIR, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    const file = join(GENERATED_DIR, name);
    if (existsSync(file) && readFileSync(file, 'utf8') === text) continue;
    changed.push(name);
    if (!options.check) writeFileSync(file, text);
  }
  return changed;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const check = process.argv.includes('--check');
  const changed = await generate({ check });
  if (check && changed.length > 0) {
    console.error(
      `${changed.map((f) => join(dirname(GENERATED_DIR), 'generated', f)).join(', ')}: stale; run npm run generate -w packages/admin`,
    );
    process.exit(1);
  }
  console.log(changed.length === 0 ? 'generated files are up to date' : `wrote ${changed.join(', ')}`);
}
