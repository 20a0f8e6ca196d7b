import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Config } from '../../config/index.js';
import type { KeyStore } from '../../keys/key-store.js';
import * as keysRepository from '../../keys/keys.repository.js';
import { rotateKeys } from '../../keys/rotation.js';

const tags = ['operator'];
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const Time = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const KeyView = Type.Object({
  kid: Type.String(),
  state: Type.Union([Type.Literal('next'), Type.Literal('active'), Type.Literal('retiring')]),
  created_at: Time,
  activate_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When a `next` key starts signing',
  }),
  activated_at: Time,
  retire_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'When a `retiring` key leaves the JWKS',
  }),
});

export interface KeysRoutesDeps {
  keys: KeyStore;
  config: Readonly<Config>;
  /** Records `key.rotated` for every project, as `tessera keys rotate` does. */
  recordRotation(kid: string, by: 'operator' | 'console'): Promise<void>;
}

/**
 * The signing keys over the operator API (issue 33), as `tessera keys list | rotate`: the keys the
 * JWKS publishes with their state and dates; a rotation publishes a new key that starts signing
 * after the pre-publication delay (TESSERA_KEY_ROTATION_DELAY unless `delay_seconds` is given).
 */
export function keysRoutes(deps: KeysRoutesDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/operator/keys',
      {
        schema: {
          tags,
          operationId: 'listSigningKeys',
          summary: 'List the signing keys the JWKS publishes, with their state and dates',
          response: { 200: Type.Object({ keys: Type.Array(KeyView) }) },
        },
      },
      async () => {
        const keys = await keysRepository.listPublished(deps.keys.db.kysely);
        return {
          keys: keys
            .filter((key) => key.status !== 'retired')
            .map((key) => ({
              kid: key.kid,
              state: key.status as 'next' | 'active' | 'retiring',
              created_at: iso(key.createdAt),
              activate_at: iso(key.activateAt),
              activated_at: iso(key.activatedAt),
              retire_at: iso(key.retireAt),
            })),
        };
      },
    );
    app.post(
      '/v1/operator/keys/rotate',
      {
        schema: {
          tags,
          operationId: 'rotateSigningKey',
          summary:
            'Publish a new signing key now; it starts signing after the pre-publication delay (caches of the JWKS catch up first)',
          body: Type.Union([
            Type.Object(
              { delay_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_592_000 })) },
              { additionalProperties: false },
            ),
            Type.Null(),
          ]),
          response: {
            200: Type.Object({
              kid: Type.String(),
              activate_at: Type.String({ format: 'date-time' }),
            }),
          },
        },
      },
      async (request) => {
        const delay = request.body?.delay_seconds ?? deps.config.keys.rotationDelay;
        const now = Date.now();
        const kid = await rotateKeys(deps.keys, deps.config, delay, now);
        await deps.recordRotation(kid, request.consoleActor ? 'console' : 'operator');
        request.log.info({ kid, delay }, 'signing key rotated over the operator API');
        return { kid, activate_at: new Date(now + delay * 1000).toISOString() };
      },
    );
  };
}
