import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
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

export function deviceRoutes({
  devices,
  hooks,
}: {
  devices: DeviceService;
  hooks: AppHooks;
}): FastifyPluginAsyncTypebox {
  return async (app) => {
    const bearer = [hooks.ipLimit('devices'), hooks.bearer];
    const signIn = [hooks.ipLimit('device'), hooks.project];

    // Registration and management by the signed-in user.
    app.post('/v1/devices/register/start', { preHandler: bearer }, async (request) =>
      devices.registrationChallenge(request.auth),
    );
    app.post('/v1/devices', { schema: { body: Register }, preHandler: bearer }, async (request, reply) =>
      reply.code(201).send(await devices.register(request.auth, request.body)),
    );
    app.get('/v1/devices', { preHandler: bearer }, async (request) => ({
      devices: await devices.list(request.auth.user.id),
    }));
    app.patch(
      '/v1/devices/:device_id',
      {
        schema: {
          params: Type.Object({ device_id: Id }),
          body: Type.Object({ name: Type.String({ maxLength: 100 }) }),
        },
        preHandler: bearer,
      },
      async (request) => devices.rename(request.auth.user.id, request.params.device_id, request.body.name),
    );
    app.delete(
      '/v1/devices/:device_id',
      { schema: { params: Type.Object({ device_id: Id }) }, preHandler: bearer },
      async (request, reply) => {
        await devices.remove(request.auth.project.id, request.auth.user.id, request.params.device_id);
        return reply.code(204).send();
      },
    );

    // Sign-in by the device.
    app.post(
      '/v1/auth/device/start',
      { schema: { body: Type.Object({ device_id: Id }) }, preHandler: signIn },
      async (request) => devices.signInChallenge(request.project, request.body.device_id, 'device-signin'),
    );
    app.post(
      '/v1/auth/device/complete',
      {
        schema: {
          body: Type.Object({
            challenge_id: Id,
            signature: Signature,
            getOAuthToken: Type.Optional(Type.Boolean()),
          }),
        },
        preHandler: signIn,
      },
      async (request) =>
        devices.signIn(
          request.project,
          request.body.challenge_id,
          request.body.signature,
          request.body.getOAuthToken === true,
        ),
    );
  };
}
