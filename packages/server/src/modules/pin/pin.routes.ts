import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { NoContent, security } from '../../http/openapi.js';
import { DeviceChallenge, SignInResult } from '../../http/schemas.js';
import { clientNetwork } from '../../net/client-network.js';
import type { AppHooks } from '../../plugins/request-context.js';
import type { DeviceService } from '../device/device.service.js';
import type { PinService } from './pin.service.js';

const Pin = Type.String({ minLength: 1, maxLength: 32 });
const Id = Type.String({ minLength: 1, maxLength: 100 });
const Status = Type.Object({
  pin_set: Type.Boolean(),
  locked: Type.Boolean(),
  attempts_left: Type.Integer(),
});
const tags = ['pin'];
const signInTags = ['sign-in'];
const user = security('accessToken');
const app_ = security('apiKey');

export function pinRoutes(deps: {
  pin: PinService;
  devices: DeviceService;
  hooks: AppHooks;
}): FastifyPluginAsyncTypebox {
  const { pin, devices, hooks } = deps;
  return async (app) => {
    const bearer = { onRequest: hooks.ipLimit('pin'), preHandler: hooks.bearer };
    const signIn = { onRequest: hooks.ipLimit('pin-signin'), preHandler: hooks.project };

    app.get(
      '/v1/pin',
      {
        schema: {
          operationId: 'getPinStatus',
          summary: 'Whether the user has a PIN, and whether it is locked',
          tags: tags,
          security: user,
          response: { 200: Status },
        },
        ...bearer,
      },
      async (request) => pin.status(request.auth.user.id),
    );
    app.put(
      '/v1/pin',
      {
        schema: {
          operationId: 'setPin',
          summary: 'Set or change the PIN (changing it needs the current one)',
          tags: tags,
          security: user,
          body: Type.Object({ pin: Pin, current_pin: Type.Optional(Pin) }),
          response: { 200: Type.Object({ pin_set: Type.Literal(true) }) },
        },
        ...bearer,
      },
      async (request) => pin.set(request.auth, request.body.pin, request.body.current_pin),
    );
    app.delete(
      '/v1/pin',
      {
        schema: {
          operationId: 'removePin',
          summary: 'Remove the PIN',
          tags: tags,
          security: user,
          body: Type.Optional(Type.Object({ current_pin: Type.Optional(Pin) })),
          response: { 204: NoContent },
        },
        ...bearer,
      },
      async (request, reply) => {
        await pin.remove(request.auth, request.body?.current_pin);
        return reply.code(204).send();
      },
    );

    app.post(
      '/v1/auth/pin/start',
      {
        schema: {
          operationId: 'startPinSignIn',
          summary: 'Get a nonce for the trusted device to sign, for a PIN sign-in',
          tags: signInTags,
          security: app_,
          body: Type.Object({ device_id: Id }),
          response: { 200: Type.Ref(DeviceChallenge) },
        },
        ...signIn,
      },
      async (request) => devices.signInChallenge(request.project, request.body.device_id, 'pin-signin'),
    );
    app.post(
      '/v1/auth/pin/complete',
      {
        schema: {
          operationId: 'completePinSignIn',
          summary: 'Sign in with the device’s signature and the PIN',
          tags: signInTags,
          security: app_,
          body: Type.Object({
            challenge_id: Id,
            signature: Type.String({ minLength: 1, maxLength: 200 }),
            pin: Pin,
            getOAuthToken: Type.Optional(Type.Boolean()),
          }),
          response: { 200: Type.Ref(SignInResult) },
        },
        ...signIn,
      },
      async (request) => pin.signIn(request.project, request.body, clientNetwork(request.ip)),
    );
  };
}
