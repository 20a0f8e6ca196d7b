/**
 * Arbitrary input for the fuzz test (test/http/fuzz.test.ts), built from the app's route table as
 * `GET /openapi.json` publishes it. Bodies are generated as JSON text, so that keys such as
 * __proto__, repeated keys and nesting deeper than JSON.stringify can go are sent as generated.
 */
import fc from 'fast-check';

export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}

export interface Route {
  method: string;
  /** OpenAPI form: `/v1/users/{user_id}`. */
  path: string;
  params: string[];
  query: Record<string, JsonSchema>;
  /** The JSON body schema, when the route declares one. */
  body: JsonSchema | undefined;
}

interface Operation {
  parameters?: { in: string; name: string; schema?: JsonSchema }[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

/** The route table as the app publishes it. */
export function routesOf(openapi: { paths: Record<string, Record<string, Operation>> }): Route[] {
  const routes: Route[] = [];
  for (const [path, operations] of Object.entries(openapi.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const parameters = operation.parameters ?? [];
      routes.push({
        method: method.toUpperCase(),
        path,
        params: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: Object.fromEntries(
          parameters.filter((p) => p.in === 'query').map((p) => [p.name, p.schema ?? {}]),
        ),
        body: operation.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return routes;
}

/** Values the server knows (ids, tokens, keys), so that some input reaches past the lookups. */
export interface Known {
  strings: string[];
  /** Real ids by path parameter name (`user_id` → the other user's id, …). */
  ids: Record<string, string[]>;
  bodyLimit: number;
}

export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

const text = (value: unknown) => JSON.stringify(value) ?? 'null';

function leaves(known: Known): fc.Arbitrary<string> {
  const loneSurrogates = fc
    .array(fc.integer({ min: 0xd800, max: 0xdfff }), { minLength: 1, maxLength: 4 })
    .map((units) => String.fromCharCode(...units));
  return fc.oneof(
    fc.constantFrom(...known.strings).map(text),
    fc.string().map(text),
    fc.string({ unit: 'binary', maxLength: 40 }).map(text),
    fc.string({ unit: 'grapheme', maxLength: 20 }).map(text),
    loneSurrogates.map(text),
    fc.integer().map(text),
    fc.double().map(text),
    fc.constantFrom('1e309', '-1e309', '-0', '1e-400', '123456789012345678901234567890', '0.1e1'),
    fc.boolean().map(text),
    fc.constant('null'),
  );
}

/** Nesting from a few to thousands of levels, objects or arrays. */
const deep = (known: Known) =>
  fc
    .tuple(
      fc.oneof(
        fc.integer({ min: 2, max: 64 }),
        // Thousands of levels, still within the body limit ({"a": is 5 characters a level).
        fc.integer({ min: Math.floor(known.bodyLimit / 12), max: Math.floor(known.bodyLimit / 6) }),
        fc.integer({ min: 2, max: 20_000 }),
      ),
      fc.constantFrom('object', 'object', 'array'),
      fc.constantFrom(...PROTO_KEYS, 'a', 'a', 'a'),
    )
    .map(([depth, kind, key]) =>
      kind === 'array'
        ? `${'['.repeat(depth)}1${']'.repeat(depth)}`
        : `${`{${text(key)}:`.repeat(depth)}1${'}'.repeat(depth)}`,
    );

/** A string close to the body limit (the body may still exceed it once escaped: a 413, also checked). */
const huge = (known: Known) =>
  fc
    .tuple(
      fc.integer({ min: 1_000, max: known.bodyLimit - 64 }),
      fc.constantFrom('x', 'é', '😀', '\u0000', '"'),
    )
    .map(([bytes, unit]) =>
      text(unit.repeat(Math.max(1, Math.floor(bytes / Buffer.byteLength(text(unit)))))),
    );

/** Any JSON text, built from entries so that keys repeat and include __proto__. */
function anyJson(known: Known, depth = 3): fc.Arbitrary<string> {
  const leaf = leaves(known);
  if (depth === 0) return leaf;
  const inner = anyJson(known, depth - 1);
  const key = fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 12 }));
  return fc.oneof(
    { weight: 3, arbitrary: leaf },
    { weight: 1, arbitrary: fc.array(inner, { maxLength: 5 }).map((items) => `[${items.join(',')}]`) },
    {
      weight: 2,
      arbitrary: fc
        .array(fc.tuple(key, inner), { maxLength: 5 })
        .map((entries) => `{${entries.map(([k, v]) => `${text(k)}:${v}`).join(',')}}`),
    },
    { weight: 1, arbitrary: pollution },
  );
}

/** Objects that would add `polluted` to Object.prototype if merged or assigned carelessly. */
const pollution = fc.oneof(
  fc.constantFrom(...PROTO_KEYS).map((key) => `{${text(key)}:{"polluted":"yes"}}`),
  fc.constant('{"constructor":{"prototype":{"polluted":"yes"}}}'),
  fc.constant('{"__proto__":{"__proto__":{"polluted":"yes"}},"a":1}'),
);

/** A value that is not of the schema's type, or is of it but at its edges. */
function wrong(known: Known): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: anyJson(known, 2) },
    { weight: 1, arbitrary: deep(known) },
    { weight: 1, arbitrary: huge(known) },
  );
}

/** A value of the schema's type, most of the time, or a wrong one. */
function valueFor(schema: JsonSchema, known: Known, depth = 0): fc.Arbitrary<string> {
  const alternatives = schema.anyOf ?? schema.oneOf;
  let right: fc.Arbitrary<string>;
  if (alternatives) right = fc.oneof(...alternatives.map((s) => valueFor(s, known, depth + 1)));
  else if (schema.const !== undefined) right = fc.constant(text(schema.const));
  else if (schema.enum) right = fc.constantFrom(...schema.enum.map(text));
  else {
    const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    switch (type) {
      case 'string':
        right = fc
          .oneof(
            fc.constantFrom(...known.strings),
            fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 64, 64) }),
            fc.string({ unit: 'binary', maxLength: Math.min(schema.maxLength ?? 64, 64) }),
          )
          .map(text);
        break;
      case 'boolean':
        right = fc.boolean().map(text);
        break;
      case 'integer':
        right = fc.integer({ min: schema.minimum ?? -1e9, max: schema.maximum ?? 1e9 }).map(text);
        break;
      case 'number':
        right = fc.double({ noNaN: true, noDefaultInfinity: true }).map(text);
        break;
      case 'null':
        right = fc.constant('null');
        break;
      case 'array':
        right =
          depth > 3
            ? fc.constant('[]')
            : fc
                .array(valueFor(schema.items ?? {}, known, depth + 1), { maxLength: 4 })
                .map((items) => `[${items.join(',')}]`);
        break;
      case 'object':
        right = depth > 3 ? fc.constant('{}') : objectFor(schema, known, depth + 1);
        break;
      default:
        // No type (Type.Unknown, open objects): where deep nesting goes.
        right = fc.oneof(anyJson(known), deep(known));
    }
  }
  return fc.oneof({ weight: 3, arbitrary: right }, { weight: 1, arbitrary: wrong(known) });
}

/** An object of the schema's fields (each present or not, right or wrong) plus unexpected keys. */
function objectFor(schema: JsonSchema, known: Known, depth = 0): fc.Arbitrary<string> {
  const fields = Object.entries(schema.properties ?? {}).map(([name, field]) =>
    fc.option(
      valueFor(field, known, depth).map((value) => `${text(name)}:${value}`),
      { freq: 4 },
    ),
  );
  const extra = fc.array(
    fc.tuple(fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 12 })), anyJson(known, 1)),
    { maxLength: 2 },
  );
  return fc
    .tuple(fc.tuple(...fields), extra)
    .map(([present, more]) => [
      ...present.filter((f): f is string => f !== null),
      ...more.map(([k, v]) => `${text(k)}:${v}`),
    ])
    .chain((entries) => fc.shuffledSubarray(entries, { minLength: entries.length }))
    .map((entries) => `{${entries.join(',')}}`);
}

export interface Body {
  contentType: string;
  text: string | undefined;
}

export function bodyFor(route: Route, known: Known): fc.Arbitrary<Body> {
  const json = (arbitrary: fc.Arbitrary<string>) =>
    arbitrary.map((t): Body => ({ contentType: 'application/json', text: t }));
  return fc.oneof(
    { weight: 6, arbitrary: json(route.body ? valueFor(route.body, known) : anyJson(known)) },
    { weight: 2, arbitrary: json(fc.json()) },
    {
      weight: 2,
      arbitrary: fc
        .anything()
        .map((v): Body => ({ contentType: 'application/json', text: JSON.stringify(v) })),
    },
    { weight: 1, arbitrary: json(deep(known)) },
    { weight: 1, arbitrary: json(huge(known)) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded'),
          fc.string(),
        )
        .map(([contentType, t]): Body => ({ contentType, text: t })),
    },
  );
}

/** The longest path parameter the router takes, encoded (Fastify's maxParamLength). */
export const MAX_PARAM = 100;

export function pathFor(route: Route, known: Known): fc.Arbitrary<string> {
  const segment = (name: string) =>
    fc
      .oneof(
        // Half of the time the real id, so that input gets past the lookup.
        { weight: known.ids[name] ? 6 : 0, arbitrary: fc.constantFrom(...(known.ids[name] ?? ['-'])) },
        { weight: 2, arbitrary: fc.constantFrom(...known.strings) },
        { weight: 2, arbitrary: fc.string({ minLength: 1, maxLength: 40 }) },
        { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }) },
        { weight: 1, arbitrary: fc.integer({ min: 41, max: MAX_PARAM }).map((n) => 'x'.repeat(n)) },
      )
      .map(encodeURIComponent)
      // Longer ones are a known failure, sent on its own (KNOWN_FAILURES in fuzz.test.ts).
      .filter((encoded) => encoded.length > 0 && encoded.length <= MAX_PARAM);
  return fc
    .tuple(...route.params.map(segment))
    .map((values) =>
      route.params.reduce((path, name, i) => path.replace(`{${name}}`, values[i]!), route.path),
    );
}

export function queryFor(route: Route, known: Known): fc.Arbitrary<string> {
  const names = Object.keys(route.query);
  const value = fc.oneof(
    fc.constantFrom(...known.strings, 'true', 'false', '0', '-1', '1e309', '2026-01-01T00:00:00Z'),
    fc.string({ maxLength: 30 }),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.integer({ min: 0, max: 3000 }).map((n) => 'q'.repeat(n)),
  );
  const name =
    names.length > 0
      ? fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 10 }))
      : fc.string({ maxLength: 10 });
  return fc.array(fc.tuple(name, value), { maxLength: 6 }).map((pairs) => {
    const query = new URLSearchParams(pairs).toString();
    return query ? `?${query}` : '';
  });
}

/** The deepest nesting of brackets in a JSON text (outside strings). */
export function nesting(json: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') deepest = Math.max(deepest, ++depth);
    else if (c === '}' || c === ']') depth--;
  }
  return deepest;
}

/** Header values of any printable ASCII, in each place credentials go. */
export const garbageCredentials: fc.Arbitrary<Record<string, string>> = fc
  .tuple(fc.constantFrom('api_key_id', 'basic', 'bearer', 'authorization'), fc.string({ maxLength: 200 }))
  .map(([where, value]): Record<string, string> => {
    if (where === 'api_key_id') return { api_key_id: value };
    if (where === 'basic') return { authorization: `Basic ${Buffer.from(value).toString('base64')}` };
    if (where === 'bearer') return { authorization: `Bearer ${value}` };
    return { authorization: value };
  });
