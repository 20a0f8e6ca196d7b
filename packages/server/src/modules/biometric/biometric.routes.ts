import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ListOf, NoContent, security } from '../../http/openapi.js';
import { Passkey, PasskeyCeremony, SignInResult } from '../../http/schemas.js';
import { clientNetwork } from '../../net/client-network.js';
import type { AppHooks } from '../../plugins/request-context.js';
import type { BiometricService } from './biometric.service.js';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const Credential = Type.Object(
  { id: Type.String({ maxLength: 1024 }), response: Type.Object({}, { additionalProperties: true }) },
  { additionalProperties: true },
);
const tags = ['passkeys'];
const signInTags = ['sign-in'];
const user = security('accessToken');
const app_ = security('apiKey');

export function biometricRoutes(deps: {
  biometric: BiometricService;
  hooks: AppHooks;
}): FastifyPluginAsyncTypebox {
  const { biometric, hooks } = deps;
  return async (app) => {
    const bearer = { onRequest: hooks.ipLimit('passkeys'), preHandler: hooks.bearer };
    const signIn = { onRequest: hooks.ipLimit('passkey-signin'), preHandler: hooks.project };

    app.post(
      '/v1/biometrics/register/start',
      {
        schema: {
          operationId: 'startPasskeyRegistration',
          summary: 'WebAuthn creation options for a new passkey (needs a recent OTP or passkey sign-in)',
          tags: tags,
          security: user,
          response: { 200: Type.Ref(PasskeyCeremony) },
        },
        ...bearer,
      },
      async (request) => biometric.registrationOptions(request.auth),
    );
    app.post(
      '/v1/biometrics/register/complete',
      {
        schema: {
          operationId: 'registerPasskey',
          summary: 'Register the passkey the browser created',
          tags: tags,
          security: user,
          body: Type.Object({
            challenge_id: Id,
            credential: Credential,
            name: Type.Optional(Type.String({ maxLength: 100 })),
          }),
          response: { 201: Type.Ref(Passkey) },
        },
        ...bearer,
      },
      async (request, reply) => reply.code(201).send(await biometric.register(request.auth, request.body)),
    );
    app.get(
      '/v1/biometrics',
      {
        schema: {
          operationId: 'listPasskeys',
          summary: 'List the user’s passkeys',
          tags: tags,
          security: user,
          response: { 200: ListOf('passkeys', Type.Ref(Passkey)) },
        },
        ...bearer,
      },
      async (request) => ({
        passkeys: await biometric.list(request.auth.user.id),
      }),
    );
    app.delete(
      '/v1/biometrics/:passkey_id',
      {
        schema: {
          operationId: 'removePasskey',
          summary: 'Remove a passkey (ends the sessions it started)',
          tags: tags,
          security: user,
          params: Type.Object({ passkey_id: Type.String({ minLength: 1, maxLength: 1024 }) }),
          response: { 204: NoContent },
        },
        ...bearer,
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
          operationId: 'startPasskeySignIn',
          summary: 'WebAuthn request options for a passkey sign-in',
          tags: signInTags,
          security: app_,
          body: Type.Optional(
            Type.Object({ identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })) }),
          ),
          response: { 200: Type.Ref(PasskeyCeremony) },
        },
        ...signIn,
      },
      async (request) =>
        biometric.authenticationOptions(request.project, request.body?.identifier, clientNetwork(request.ip)),
    );
    app.post(
      '/v1/auth/biometric/complete',
      {
        schema: {
          operationId: 'completePasskeySignIn',
          summary: 'Sign in with the passkey assertion (user verification required)',
          tags: signInTags,
          security: app_,
          body: Type.Object({
            challenge_id: Id,
            credential: Credential,
            getOAuthToken: Type.Optional(Type.Boolean()),
          }),
          response: { 200: Type.Ref(SignInResult) },
        },
        ...signIn,
      },
      async (request) => biometric.signIn(request.project, request.body, clientNetwork(request.ip)),
    );
  };
}
