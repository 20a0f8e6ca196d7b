import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { badRequest } from '../../errors.js';
import { ListOf, NoContent } from '../../http/openapi.js';
import { Claims, Device, Passkey, Session, User } from '../../http/schemas.js';
import type { BiometricService } from '../biometric/biometric.service.js';
import type { ClaimsService } from '../claims/claims.service.js';
import type { DeviceService } from '../device/device.service.js';
import type { PinLocks } from '../pin/pin-locks.js';
import { type UsersService, userView } from './users.service.js';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const UserParams = Type.Object({ user_id: Id });
const tags = ['users'];
const doc = (operationId: string, summary: string) => ({ operationId, summary, tags });
const Revoked = Type.Object({
  revoked: Type.Integer(),
  devices_forgotten: Type.Optional(Type.Integer({ description: 'With forget_devices' })),
});

export interface UsersRoutesDeps {
  /** PIN state and the integrator's unlock. */
  pinLocks: PinLocks;
  users: UsersService;
  claims: ClaimsService;
  devices: DeviceService;
  biometric: BiometricService;
}

/** The integrator API over users; the integrator family authenticates and sets `request.project`. */
export function usersRoutes(deps: UsersRoutesDeps): FastifyPluginAsyncTypebox {
  const { users, claims, devices, biometric, pinLocks } = deps;
  return async (app) => {
    app.get(
      '/v1/users',
      {
        schema: {
          ...doc('findUser', 'Find a user by e-mail address or phone number'),
          response: { 200: Type.Ref(User) },
          querystring: Type.Object({ identifier: Type.Optional(Type.String({ maxLength: 320 })) }),
        },
      },
      async (request) => {
        if (!request.query.identifier) throw badRequest('query parameter identifier is required');
        return userView(await users.byIdentifier(request.project, request.query.identifier));
      },
    );
    app.get(
      '/v1/users/search',
      {
        schema: {
          ...doc('searchUsers', 'Find users by identifier prefix, user id or client_user_id'),
          response: { 200: ListOf('users', Type.Ref(User)) },
          querystring: Type.Object({
            query: Type.String({ minLength: 1, maxLength: 320 }),
            limit: Type.Optional(
              Type.String({ pattern: '^[0-9]{1,3}$', description: '1–100, 20 when absent' }),
            ),
          }),
        },
      },
      async (request) => {
        const limit = Number(request.query.limit ?? 20);
        if (limit < 1 || limit > 100) throw badRequest('limit must be a number of users from 1 to 100');
        const found = await users.search(request.project, request.query.query, limit);
        return { users: found.map(userView) };
      },
    );
    app.get(
      '/v1/users/:user_id',
      { schema: { ...doc('getUser', 'Show a user'), response: { 200: Type.Ref(User) }, params: UserParams } },
      async (request) => userView(await users.require(request.project, request.params.user_id)),
    );
    app.patch(
      '/v1/users/:user_id',
      {
        schema: {
          ...doc('updateUser', 'Set or clear the user’s client_user_id'),
          response: { 200: Type.Ref(User) },
          params: UserParams,
          body: Type.Object({ client_user_id: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]) }),
        },
      },
      async (request) =>
        userView(
          await users.setClientUserId(request.project, request.params.user_id, request.body.client_user_id),
        ),
    );
    app.delete(
      '/v1/users/:user_id',
      {
        schema: {
          ...doc('deleteUser', 'Erase a user with their sessions and credentials'),
          response: { 204: NoContent },
          params: UserParams,
        },
      },
      async (request, reply) => {
        await users.remove(request.project, request.params.user_id);
        return reply.code(204).send();
      },
    );

    // Custom claims, merged into access tokens issued afterwards.
    app.get(
      '/v1/users/:user_id/claims',
      {
        schema: {
          ...doc('getClaims', 'The user’s custom claims'),
          response: { 200: Type.Ref(Claims) },
          params: UserParams,
        },
      },
      async (request) => {
        const user = await users.require(request.project, request.params.user_id);
        return { claims: await claims.forUser(request.project.id, user.id) };
      },
    );
    app.put(
      '/v1/users/:user_id/claims',
      {
        schema: {
          ...doc('putClaims', 'Replace the user’s custom claims (merged into later access tokens)'),
          response: { 200: Type.Ref(Claims) },
          params: UserParams,
          body: Type.Object({ claims: Type.Unknown() }),
        },
      },
      async (request) => {
        const user = await users.require(request.project, request.params.user_id);
        return { claims: await claims.put(request.project.id, user.id, request.body.claims) };
      },
    );
    app.delete(
      '/v1/users/:user_id/claims',
      {
        schema: {
          ...doc('deleteClaims', 'Remove the user’s custom claims'),
          response: { 204: NoContent },
          params: UserParams,
        },
      },
      async (request, reply) => {
        const user = await users.require(request.project, request.params.user_id);
        await claims.remove(request.project.id, user.id);
        return reply.code(204).send();
      },
    );

    // Sessions.
    app.get(
      '/v1/users/:user_id/sessions',
      {
        schema: {
          ...doc('listSessions', 'List the user’s sessions'),
          response: { 200: ListOf('sessions', Type.Ref(Session)) },
          params: UserParams,
          querystring: Type.Object({
            include_revoked: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
          }),
        },
      },
      async (request) => ({
        sessions: await users.listSessions(
          request.project,
          request.params.user_id,
          request.query.include_revoked === 'true',
        ),
      }),
    );
    app.post(
      '/v1/users/:user_id/sessions/revoke',
      {
        // No body (or null) revokes every session: Fastify validates a missing body as null.
        schema: {
          ...doc(
            'revokeSessions',
            'Revoke one session of the user, or all (optionally forgetting their devices)',
          ),
          response: { 200: Revoked },
          params: UserParams,
          body: Type.Union([
            Type.Object({ session_id: Type.Optional(Id), forget_devices: Type.Optional(Type.Boolean()) }),
            Type.Null(),
          ]),
        },
      },
      async (request) => {
        if (request.body?.session_id && request.body.forget_devices)
          throw badRequest('forget_devices applies to revoking every session: leave out session_id');
        return users.revokeSessions(request.project, request.params.user_id, request.body?.session_id, {
          forgetDevices: request.body?.forget_devices === true,
        });
      },
    );
    app.delete(
      '/v1/users/:user_id/sessions/:session_id',
      {
        schema: {
          ...doc('deleteSession', 'Revoke one session'),
          response: { 204: NoContent },
          params: Type.Object({ user_id: Id, session_id: Id }),
        },
      },
      async (request, reply) => {
        await users.revokeSessions(request.project, request.params.user_id, request.params.session_id);
        return reply.code(204).send();
      },
    );

    // Devices and passkeys.
    app.get(
      '/v1/users/:user_id/devices',
      {
        schema: {
          ...doc('listUserDevices', 'List the user’s trusted devices'),
          response: { 200: ListOf('devices', Type.Ref(Device)) },
          params: UserParams,
        },
      },
      async (request) => {
        const user = await users.require(request.project, request.params.user_id);
        return { devices: await devices.list(user.id) };
      },
    );
    // Same body and rules as the user's own PATCH /v1/devices/{device_id}: a name of 1–100 characters.
    app.patch(
      '/v1/users/:user_id/devices/:device_id',
      {
        schema: {
          ...doc('renameUserDevice', 'Rename a trusted device of the user'),
          response: { 200: Type.Ref(Device) },
          params: Type.Object({ user_id: Id, device_id: Id }),
          body: Type.Object({ name: Type.String({ maxLength: 100 }) }),
        },
      },
      async (request) => {
        const user = await users.require(request.project, request.params.user_id);
        return devices.rename(user.id, request.params.device_id, request.body.name);
      },
    );
    app.delete(
      '/v1/users/:user_id/devices/:device_id',
      {
        schema: {
          ...doc('removeUserDevice', 'Remove a trusted device of the user'),
          response: { 204: NoContent },
          params: Type.Object({ user_id: Id, device_id: Id }),
        },
      },
      async (request, reply) => {
        const user = await users.require(request.project, request.params.user_id);
        await devices.remove(request.project.id, user.id, request.params.device_id);
        return reply.code(204).send();
      },
    );
    // The PIN: whether one is set and locked; the integrator's unlock (issue 33).
    app.get(
      '/v1/users/:user_id/pin',
      {
        schema: {
          ...doc('getUserPin', 'Whether the user has a PIN, and whether it is locked'),
          response: { 200: Type.Object({ set: Type.Boolean(), locked: Type.Boolean() }) },
          params: UserParams,
        },
      },
      async (request) => {
        const user = await users.require(request.project, request.params.user_id);
        const state = await pinLocks.state(user.id);
        return { set: state !== 'none', locked: state === 'locked' };
      },
    );
    app.post(
      '/v1/users/:user_id/pin/unlock',
      {
        schema: {
          ...doc('unlockUserPin', 'Unlock the user’s PIN: its count of failed attempts starts again'),
          response: {
            200: Type.Object({ unlocked: Type.Boolean({ description: 'False when it was not locked' }) }),
          },
          params: UserParams,
        },
      },
      async (request) => {
        const user = await users.require(request.project, request.params.user_id);
        return { unlocked: await pinLocks.unlockByIntegrator(request.project.id, user.id) };
      },
    );
    app.get(
      '/v1/users/:user_id/passkeys',
      {
        schema: {
          ...doc('listUserPasskeys', 'List the user’s passkeys'),
          response: { 200: ListOf('passkeys', Type.Ref(Passkey)) },
          params: UserParams,
        },
      },
      async (request) => {
        const user = await users.require(request.project, request.params.user_id);
        return { passkeys: await biometric.list(user.id) };
      },
    );
    app.delete(
      '/v1/users/:user_id/passkeys/:passkey_id',
      {
        schema: {
          ...doc('removeUserPasskey', 'Remove a passkey of the user'),
          response: { 204: NoContent },
          params: Type.Object({ user_id: Id, passkey_id: Type.String({ minLength: 1, maxLength: 1024 }) }),
        },
      },
      async (request, reply) => {
        const user = await users.require(request.project, request.params.user_id);
        await biometric.remove(request.project.id, user.id, request.params.passkey_id);
        return reply.code(204).send();
      },
    );
  };
}
