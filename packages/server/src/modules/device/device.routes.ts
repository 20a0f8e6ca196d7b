import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ListOf, NoContent, security } from '../../http/openapi.js';
import { Device, DeviceChallenge, SignInResult } from '../../http/schemas.js';
import { clientNetwork } from '../../net/client-network.js';
import type { AppHooks } from '../../plugins/request-context.js';
import type { DeviceService } from './device.service.js';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const Signature = Type.String({ minLength: 1, maxLength: 200 });
const Register = Type.Object({
  challenge_id: Id,
  public_key: Type.Object({}, { additionalProperties: true }),
  signature: Signature,
  name: Type.Optional(Type.String({ maxLength: 100 })),
});
const tags = ['devices'];
const signInTags = ['sign-in'];
const user = security('accessToken');
const app_ = security('apiKey');

export function deviceRoutes({
  devices,
  hooks,
}: {
  devices: DeviceService;
  hooks: AppHooks;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    const bearer = { onRequest: hooks.ipLimit('devices'), preHandler: hooks.bearer };
    const signIn = { onRequest: hooks.ipLimit('device'), preHandler: hooks.project };

    // Registration and management by the signed-in user.
    app.post(
      '/v1/devices/register/start',
      {
        schema: {
          operationId: 'startDeviceRegistration',
          summary: 'Get a nonce for a new device to sign (needs a recent OTP or passkey sign-in)',
          tags: tags,
          security: user,
          response: { 200: Type.Ref(DeviceChallenge) },
        },
        ...bearer,
      },
      async (request) => devices.registrationChallenge(request.auth),
    );
    app.post(
      '/v1/devices',
      {
        schema: {
          operationId: 'registerDevice',
          summary: 'Register a trusted device: its public JWK and its signature of the nonce',
          tags: tags,
          security: user,
          body: Register,
          response: { 201: Type.Ref(Device) },
        },
        ...bearer,
      },
      async (request, reply) => reply.code(201).send(await devices.register(request.auth, request.body)),
    );
    app.get(
      '/v1/devices',
      {
        schema: {
          operationId: 'listDevices',
          summary: 'List the user’s trusted devices',
          tags: tags,
          security: user,
          response: { 200: ListOf('devices', Type.Ref(Device)) },
        },
        ...bearer,
      },
      async (request) => ({
        devices: await devices.list(request.auth.user.id),
      }),
    );
    app.patch(
      '/v1/devices/:device_id',
      {
        schema: {
          operationId: 'renameDevice',
          summary: 'Rename a trusted device',
          tags: tags,
          security: user,
          params: Type.Object({ device_id: Id }),
          body: Type.Object({ name: Type.String({ maxLength: 100 }) }),
          response: { 200: Type.Ref(Device) },
        },
        ...bearer,
      },
      async (request) => devices.rename(request.auth.user.id, request.params.device_id, request.body.name),
    );
    app.delete(
      '/v1/devices/:device_id',
      {
        schema: {
          operationId: 'removeDevice',
          summary: 'Remove a trusted device (ends the sessions it started)',
          tags: tags,
          security: user,
          params: Type.Object({ device_id: Id }),
          response: { 204: NoContent },
        },
        ...bearer,
      },
      async (request, reply) => {
        await devices.remove(request.auth.project.id, request.auth.user.id, request.params.device_id);
        return reply.code(204).send();
      },
    );

    // Sign-in by the device.
    app.post(
      '/v1/auth/device/start',
      {
        schema: {
          operationId: 'startDeviceSignIn',
          summary: 'Get a nonce for the trusted device to sign',
          tags: signInTags,
          security: app_,
          body: Type.Object({ device_id: Id }),
          response: { 200: Type.Ref(DeviceChallenge) },
        },
        ...signIn,
      },
      async (request) => devices.signInChallenge(request.project, request.body.device_id, 'device-signin'),
    );
    app.post(
      '/v1/auth/device/complete',
      {
        schema: {
          operationId: 'completeDeviceSignIn',
          summary: 'Sign in with the device’s signature of the nonce',
          tags: signInTags,
          security: app_,
          body: Type.Object({
            challenge_id: Id,
            signature: Signature,
            getOAuthToken: Type.Optional(Type.Boolean()),
          }),
          response: { 200: Type.Ref(SignInResult) },
        },
        ...signIn,
      },
      async (request) =>
        devices.signIn(
          request.project,
          request.body.challenge_id,
          request.body.signature,
          request.body.getOAuthToken === true,
          clientNetwork(request.ip),
        ),
    );
  };
}
