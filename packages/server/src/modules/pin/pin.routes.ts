import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppHooks } from '../../plugins/request-context.js';
import type { DeviceService } from '../device/device.service.js';
import type { PinService } from './pin.service.js';

const Pin = Type.String({ minLength: 1, maxLength: 32 });
const Id = Type.String({ minLength: 1, maxLength: 100 });

export function pinRoutes(deps: {
  pin: PinService;
  devices: DeviceService;
  hooks: AppHooks;
}): FastifyPluginAsyncTypebox {
  const { pin, devices, hooks } = deps;
  return async (app) => {
    const bearer = [hooks.ipLimit('pin'), hooks.bearer];
    const signIn = [hooks.ipLimit('pin-signin'), hooks.project];

    app.get('/v1/pin', { preHandler: bearer }, async (request) => pin.status(request.auth.user.id));
    app.put(
      '/v1/pin',
      { schema: { body: Type.Object({ pin: Pin, current_pin: Type.Optional(Pin) }) }, preHandler: bearer },
      async (request) => pin.set(request.auth, request.body.pin, request.body.current_pin),
    );
    app.delete(
      '/v1/pin',
      {
        schema: { body: Type.Optional(Type.Object({ current_pin: Type.Optional(Pin) })) },
        preHandler: bearer,
      },
      async (request, reply) => {
        await pin.remove(request.auth, request.body?.current_pin);
        return reply.code(204).send();
      },
    );

    app.post(
      '/v1/auth/pin/start',
      { schema: { body: Type.Object({ device_id: Id }) }, preHandler: signIn },
      async (request) => devices.signInChallenge(request.project, request.body.device_id, 'pin-signin'),
    );
    app.post(
      '/v1/auth/pin/complete',
      {
        schema: {
          body: Type.Object({
            challenge_id: Id,
            signature: Type.String({ minLength: 1, maxLength: 200 }),
            pin: Pin,
            getOAuthToken: Type.Optional(Type.Boolean()),
          }),
        },
        preHandler: signIn,
      },
      async (request) => pin.signIn(request.project, request.body),
    );
  };
}
