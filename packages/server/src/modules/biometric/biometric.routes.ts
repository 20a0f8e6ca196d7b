import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppHooks } from '../../plugins/request-context.js';
import type { BiometricService } from './biometric.service.js';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const Credential = Type.Object(
  { id: Type.String({ maxLength: 1024 }), response: Type.Object({}, { additionalProperties: true }) },
  { additionalProperties: true },
);

export function biometricRoutes(deps: {
  biometric: BiometricService;
  hooks: AppHooks;
}): FastifyPluginAsyncTypebox {
  const { biometric, hooks } = deps;
  return async (app) => {
    const bearer = [hooks.ipLimit('passkeys'), hooks.bearer];
    const signIn = [hooks.ipLimit('passkey-signin'), hooks.project];

    app.post('/v1/biometrics/register/start', { preHandler: bearer }, async (request) =>
      biometric.registrationOptions(request.auth),
    );
    app.post(
      '/v1/biometrics/register/complete',
      {
        schema: {
          body: Type.Object({
            challenge_id: Id,
            credential: Credential,
            name: Type.Optional(Type.String({ maxLength: 100 })),
          }),
        },
        preHandler: bearer,
      },
      async (request, reply) => reply.code(201).send(await biometric.register(request.auth, request.body)),
    );
    app.get('/v1/biometrics', { preHandler: bearer }, async (request) => ({
      passkeys: await biometric.list(request.auth.user.id),
    }));
    app.delete(
      '/v1/biometrics/:passkey_id',
      {
        schema: { params: Type.Object({ passkey_id: Type.String({ minLength: 1, maxLength: 1024 }) }) },
        preHandler: bearer,
      },
      async (request, reply) => {
        await biometric.remove(request.auth.project.id, request.auth.user.id, request.params.passkey_id);
        return reply.code(204).send();
      },
    );

    app.post(
      '/v1/auth/biometric/start',
      {
        schema: {
          body: Type.Optional(
            Type.Object({ identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })) }),
          ),
        },
        preHandler: signIn,
      },
      async (request) => biometric.authenticationOptions(request.project, request.body?.identifier),
    );
    app.post(
      '/v1/auth/biometric/complete',
      {
        schema: {
          body: Type.Object({
            challenge_id: Id,
            credential: Credential,
            getOAuthToken: Type.Optional(Type.Boolean()),
          }),
        },
        preHandler: signIn,
      },
      async (request) => biometric.signIn(request.project, request.body),
    );
  };
}
