import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../app.js';
import { badRequest } from '../../errors.js';
import { userView } from './users.service.js';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const UserParams = Type.Object({ user_id: Id });

/** The integrator API over users (HTTP Basic with the API key secret). */
export function usersRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const preHandler = ctx.hooks.integrator;

    app.get(
      '/v1/users',
      {
        schema: { querystring: Type.Object({ identifier: Type.Optional(Type.String({ maxLength: 320 })) }) },
        preHandler,
      },
      async (request) => {
        if (!request.query.identifier) throw badRequest('query parameter identifier is required');
        return userView(await ctx.usersService.byIdentifier(request.project, request.query.identifier));
      },
    );
    app.get('/v1/users/:user_id', { schema: { params: UserParams }, preHandler }, async (request) =>
      userView(await ctx.usersService.require(request.project, request.params.user_id)),
    );
    app.patch(
      '/v1/users/:user_id',
      {
        schema: {
          params: UserParams,
          body: Type.Object({ client_user_id: Type.Union([Type.String({ maxLength: 255 }), Type.Null()]) }),
        },
        preHandler,
      },
      async (request) =>
        userView(
          await ctx.usersService.setClientUserId(
            request.project,
            request.params.user_id,
            request.body.client_user_id,
          ),
        ),
    );
    app.delete(
      '/v1/users/:user_id',
      { schema: { params: UserParams }, preHandler },
      async (request, reply) => {
        await ctx.usersService.remove(request.project, request.params.user_id);
        return reply.code(204).send();
      },
    );

    // Custom claims, merged into access tokens issued afterwards.
    app.get('/v1/users/:user_id/claims', { schema: { params: UserParams }, preHandler }, async (request) => {
      const user = await ctx.usersService.require(request.project, request.params.user_id);
      return { claims: await ctx.claims.forUser(request.project.id, user.id) };
    });
    app.put(
      '/v1/users/:user_id/claims',
      { schema: { params: UserParams, body: Type.Object({ claims: Type.Unknown() }) }, preHandler },
      async (request) => {
        const user = await ctx.usersService.require(request.project, request.params.user_id);
        const claims = await ctx.claims.put(request.project.id, user.id, request.body.claims);
        await ctx.audit.record({
          projectId: request.project.id,
          userId: user.id,
          type: 'claims.changed',
          data: { names: Object.keys(claims).join(',').slice(0, 500) },
        });
        return { claims };
      },
    );
    app.delete(
      '/v1/users/:user_id/claims',
      { schema: { params: UserParams }, preHandler },
      async (request, reply) => {
        const user = await ctx.usersService.require(request.project, request.params.user_id);
        await ctx.claims.remove(request.project.id, user.id);
        await ctx.audit.record({
          projectId: request.project.id,
          userId: user.id,
          type: 'claims.changed',
          data: { names: '' },
        });
        return reply.code(204).send();
      },
    );

    // Sessions.
    app.get(
      '/v1/users/:user_id/sessions',
      {
        schema: {
          params: UserParams,
          querystring: Type.Object({
            include_revoked: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
          }),
        },
        preHandler,
      },
      async (request) => ({
        sessions: await ctx.usersService.listSessions(
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
          params: UserParams,
          body: Type.Union([Type.Object({ session_id: Type.Optional(Id) }), Type.Null()]),
        },
        preHandler,
      },
      async (request) =>
        ctx.usersService.revokeSessions(request.project, request.params.user_id, request.body?.session_id),
    );
    app.delete(
      '/v1/users/:user_id/sessions/:session_id',
      { schema: { params: Type.Object({ user_id: Id, session_id: Id }) }, preHandler },
      async (request, reply) => {
        await ctx.usersService.revokeSessions(
          request.project,
          request.params.user_id,
          request.params.session_id,
        );
        return reply.code(204).send();
      },
    );

    // Devices and passkeys.
    app.get('/v1/users/:user_id/devices', { schema: { params: UserParams }, preHandler }, async (request) => {
      const user = await ctx.usersService.require(request.project, request.params.user_id);
      return { devices: await ctx.devices.list(user.id) };
    });
    // Same body and rules as the user's own PATCH /v1/devices/{device_id}: a name of 1–100 characters.
    app.patch(
      '/v1/users/:user_id/devices/:device_id',
      {
        schema: {
          params: Type.Object({ user_id: Id, device_id: Id }),
          body: Type.Object({ name: Type.String({ maxLength: 100 }) }),
        },
        preHandler,
      },
      async (request) => {
        const user = await ctx.usersService.require(request.project, request.params.user_id);
        return ctx.devices.rename(user.id, request.params.device_id, request.body.name);
      },
    );
    app.delete(
      '/v1/users/:user_id/devices/:device_id',
      { schema: { params: Type.Object({ user_id: Id, device_id: Id }) }, preHandler },
      async (request, reply) => {
        const user = await ctx.usersService.require(request.project, request.params.user_id);
        await ctx.devices.remove(request.project.id, user.id, request.params.device_id);
        return reply.code(204).send();
      },
    );
    app.get(
      '/v1/users/:user_id/passkeys',
      { schema: { params: UserParams }, preHandler },
      async (request) => {
        const user = await ctx.usersService.require(request.project, request.params.user_id);
        return { passkeys: await ctx.biometric.list(user.id) };
      },
    );
    app.delete(
      '/v1/users/:user_id/passkeys/:passkey_id',
      {
        schema: {
          params: Type.Object({ user_id: Id, passkey_id: Type.String({ minLength: 1, maxLength: 1024 }) }),
        },
        preHandler,
      },
      async (request, reply) => {
        const user = await ctx.usersService.require(request.project, request.params.user_id);
        await ctx.biometric.remove(request.project.id, user.id, request.params.passkey_id);
        return reply.code(204).send();
      },
    );
  };
}
