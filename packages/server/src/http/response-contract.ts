import { isDeepStrictEqual } from 'node:util';
import type { FastifyInstance } from 'fastify';

const sent = Symbol('payload before serialisation');

/** The paths at which two JSON values differ (names only: values may be secrets). */
function differences(expected: unknown, actual: unknown, path = '$'): string[] {
  if (isDeepStrictEqual(expected, actual)) return [];
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (!isObject(expected) || !isObject(actual) || Array.isArray(expected) !== Array.isArray(actual))
    return [path];
  const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
  return [...keys].flatMap((key) => differences(expected[key], actual[key], `${path}.${key}`));
}

/**
 * For tests: fails a JSON answer whose serialisation by its response schema lost or changed
 * something (a member the schema does not declare is dropped by fast-json-stringify, a value of
 * another type is coerced). Every HTTP test then checks the response schemas against what the
 * routes really send; the paths that differ go to stderr. Costs a JSON round trip per answer:
 * never on in production.
 */
export function checkResponseContract(app: FastifyInstance): void {
  app.addHook('preSerialization', (request, _reply, payload, done) => {
    (request as unknown as Record<symbol, unknown>)[sent] = payload;
    done(null, payload);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const before = (request as unknown as Record<symbol, unknown>)[sent];
    if (before === undefined || typeof payload !== 'string') return done(null, payload);
    const paths = differences(JSON.parse(JSON.stringify(before)), JSON.parse(payload));
    if (paths.length === 0) return done(null, payload);
    const message = `response schema of ${request.method} ${request.routeOptions.url} (${reply.statusCode}) does not match the answer at ${paths.join(', ')}`;
    console.error(message);
    done(new Error(message));
  });
}
