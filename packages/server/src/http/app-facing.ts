import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppContext } from '../context.js';
import { grantsRoutes } from '../modules/authorize/grants.routes.js';
import { biometricRoutes } from '../modules/biometric/biometric.routes.js';
import { deviceRoutes } from '../modules/device/device.routes.js';
import { otpRoutes } from '../modules/otp/otp.routes.js';
import { pinRoutes } from '../modules/pin/pin.routes.js';
import { meRoutes } from '../modules/session/me.routes.js';
import { corsHook, preflightRoutes } from '../plugins/cors.js';
import { problemErrorHandler, problemNotFound } from '../plugins/error-handler.js';
import { documentErrors } from './openapi.js';
import { browserOrigins, notFoundUnder } from './scope.js';

/**
 * The app-facing family: what apps call, from browsers too. Sign-in routes declare the `project`
 * hook (`API_KEY_ID`), account routes the `bearer` hook (the user's access token), each after its
 * per-IP limit; both check a browser's Origin against the project's origins. Errors are problem
 * documents.
 */
export function appFacingFamily(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (scope) => {
    scope.setErrorHandler(problemErrorHandler);
    scope.addHook('onRoute', documentErrors('problem'));
    scope.addHook('onRequest', corsHook(browserOrigins(ctx, 'problem')));
    preflightRoutes(
      scope,
      [
        '/v1/auth/*',
        '/v1/devices',
        '/v1/devices/*',
        '/v1/pin',
        '/v1/biometrics',
        '/v1/biometrics/*',
        '/v1/me',
        '/v1/me/*',
      ],
      problemNotFound,
    );
    // Unknown paths under the family's prefixes answer 404 with its CORS headers. /v1/pin is one
    // path, not a prefix: its other methods get the root's 404, as /verify's do.
    await notFoundUnder(scope, ['/v1/auth/', '/v1/devices', '/v1/biometrics', '/v1/me'], problemNotFound);

    const { hooks } = ctx;
    await scope.register(otpRoutes({ otp: ctx.otp, hooks }));
    await scope.register(deviceRoutes({ devices: ctx.devices, hooks }));
    await scope.register(pinRoutes({ pin: ctx.pin, devices: ctx.devices, hooks }));
    await scope.register(biometricRoutes({ biometric: ctx.biometric, hooks }));
    await scope.register(meRoutes({ signOut: ctx.signOut, stepUp: ctx.stepUp, hooks }));
    await scope.register(
      grantsRoutes({
        repository: ctx.authorizeRepository,
        grantWithdrawn: (...args) => ctx.authorize.grantWithdrawn(...args),
        hooks,
      }),
    );
  };
}
