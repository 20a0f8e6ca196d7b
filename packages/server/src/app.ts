import { createServer, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ErrorCodes } from '@tessera/core';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerFactory,
  LogController,
} from 'fastify';
import type { Config } from './config/index.js';
import { type AppContext, type AppDeps, createContext, runHousekeeping } from './context.js';
import { requestIds } from './crypto/random.js';
import { Channels } from './db/channels.js';
import type { NoticeListener } from './db/notifications.js';
import { serviceUnavailable, TesseraError } from './errors.js';
import { appFacingFamily } from './http/app-facing.js';
import { registerCommon } from './http/common.js';
import { consolePageFamily } from './http/console-page.js';
import { hostedFamily } from './http/hosted.js';
import { integratorFamily, integratorNotFound } from './http/integrator.js';
import { oauthFamily } from './http/oauth.js';
import { operationsFamily } from './http/operations.js';
import { operatorFamily } from './http/operator.js';
import { publicFamily } from './http/public.js';
import { codeUnitLengths } from './http/string-length.js';
import { httpTimeouts } from './http-timeouts.js';
import { HOUSEKEEPING_INTERVAL_MS } from './keys/rotation.js';
import { verifyFastPath } from './modules/verify/verify-fast-path.js';
import { answerClientError, rememberProblem } from './plugins/error-handler.js';
import { trackInFlight } from './plugins/in-flight.js';

/** Seconds a client is told to wait before retrying a request refused during shutdown. */
const RETRY_AFTER_CLOSING = 1;

/** Fastify's form of TESSERA_TRUST_PROXY: a hop count becomes "trust the nearest N proxies". */
function fastifyTrustProxy(
  trust: Config['trustProxy'],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return trust;
}

type Take = (request: IncomingMessage, response: ServerResponse) => boolean;

/**
 * Fastify's HTTP/1.1 server, with its timeouts set as Fastify sets them on its own, whose requests
 * go first to `first()` (once set): those it does not take go to Fastify.
 */
function serverTakingFirst(first: () => Take | undefined): FastifyServerFactory {
  return (handler, fastifyOptions) => {
    const options = fastifyOptions as {
      http?: ServerOptions;
      keepAliveTimeout?: number;
      requestTimeout?: number;
      connectionTimeout?: number;
      maxRequestsPerSocket?: number;
    };
    const server = createServer(options.http ?? {}, (request, response) => {
      if (!first()?.(request, response)) handler(request, response);
    });
    server.keepAliveTimeout = options.keepAliveTimeout ?? server.keepAliveTimeout;
    server.requestTimeout = options.requestTimeout ?? server.requestTimeout;
    server.setTimeout(options.connectionTimeout ?? 0);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    return server;
  };
}

/**
 * PostgreSQL: other instances' revocations, key changes and project changes take effect here as soon as they
 * commit, and everything is re-read whenever listening (re)starts; polling and housekeeping stay
 * as the fallback.
 */
function followNotices(app: FastifyInstance, ctx: AppContext, notices: NoticeListener): void {
  ctx.revocations.follow(notices);
  ctx.projects.follow(notices);
  const reloadKeys = () => {
    ctx.keys
      .reloadAfterChange()
      .catch((err) => app.log.warn({ err }, 'signing keys not reloaded after a change'));
  };
  notices.on(Channels.keys, reloadKeys);
  notices.onListening(reloadKeys);
  notices.start();
}

/**
 * Builds the HTTP application without listening, so tests can inject into it or listen on a
 * port of their own. Closing the app stops its timers; the caller closes the database.
 */
export async function buildApp(
  config: Readonly<Config>,
  deps: AppDeps,
): Promise<{ app: FastifyInstance; ctx: AppContext }> {
  const ctx = createContext(config, deps);
  let fastPath: Take | undefined;
  const app = Fastify({
    // POST /verify is answered ahead of Fastify's pipeline when it can be (verify-fast-path.ts).
    serverFactory: serverTakingFirst(() => fastPath),
    loggerInstance: deps.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // /verify is the hot path and logs nothing when it works: it skips the per-request child
    // logger (docs/BENCHMARKS.md, "Design measurements"); its rare error lines lack reqId.
    childLoggerFactory: (logger, bindings, options, rawRequest) =>
      rawRequest.url === '/verify' ? logger : logger.child(bindings, options),
    trustProxy: fastifyTrustProxy(config.trustProxy),
    bodyLimit: config.bodyLimit,
    // Only log lines carry it: a per-process random prefix and a counter (crypto/random.ts).
    genReqId: requestIds(),
    forceCloseConnections: 'idle',
    // Refused in each family's own format instead (src/http/common.ts).
    return503OnClosing: false,
    // The router's own refusals (a path parameter over 100 characters, a malformed percent escape)
    // answer in the problem format without echoing the path, like every other error.
    frameworkErrors: (error, request, reply) => {
      const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      const problem = new TesseraError(
        tooLong ? 414 : 400,
        ErrorCodes.invalidRequest,
        tooLong ? 'a path parameter is longer than 100 characters' : 'the request path is not a valid URL',
      );
      rememberProblem(request, problem.code);
      (reply as FastifyReply)
        .code(problem.statusCode)
        .type('application/problem+json')
        .send(problem.toProblem());
    },
    // What Node refuses before there is a request (bad framing, huge headers, a request timeout).
    clientErrorHandler: answerClientError,
    ...httpTimeouts(config.http),
    ajv: {
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false },
      plugins: [codeUnitLengths],
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  if (deps.onRoute) app.addHook('onRoute', deps.onRoute);

  // Every family's error handler counts a database outage there instead of logging each 503.
  app.decorate('databaseOutage', ctx.outage);
  await registerCommon(app, ctx, { checkResponses: deps.checkResponses });
  // Before any route: app.close() then waits for running handlers, so storage closes after them.
  // A request that still arrives on an open connection once closing has begun is refused with a
  // 503 in its family's format (the family's error handler renders it) and Retry-After.
  // `Connection: close`: the client sends its retry on a new connection (to another instance).
  const refuseWhenClosing = () => {
    const refusal = serviceUnavailable(
      'the server is shutting down; retry the request',
      RETRY_AFTER_CLOSING,
      true,
    );
    refusal.headers.connection = 'close';
    return refusal;
  };
  const inFlight = trackInFlight(app, { refuseWhenClosing });
  // Route families: each an encapsulated scope with its own CORS, authentication and error format.
  await app.register(publicFamily(ctx));
  await app.register(appFacingFamily(ctx));
  await app.register(oauthFamily(ctx));
  await app.register(hostedFamily(ctx));
  await app.register(integratorFamily(ctx));
  await integratorNotFound(app);
  await app.register(operationsFamily(ctx));
  await app.register(operatorFamily(ctx));
  if (config.console) await app.register(consolePageFamily(ctx));

  fastPath = verifyFastPath({
    verify: ctx.verify,
    metrics: ctx.metrics,
    logger: deps.logger,
    bodyLimit: config.bodyLimit,
    inFlight,
    refuseWhenClosing,
    outage: ctx.outage,
    replay: (request, body) =>
      app.inject({
        method: 'POST',
        url: request.url ?? '/verify',
        headers: request.headers,
        payload: body,
        remoteAddress: request.socket.remoteAddress ?? '127.0.0.1',
      }),
  });

  // The console's sign-in is a project of its own, made once (any instance or worker may race).
  // Not fatal: /console/config.json makes it when it is still missing.
  if (config.console)
    await ctx.console
      .ensureProject(deps.logger)
      .catch((err) => deps.logger.error({ err }, 'the console project could not be made; retried on use'));
  ctx.revocations.start();
  if (ctx.notices) followNotices(app, ctx, ctx.notices);
  ctx.ipLimiter.start();
  ctx.webhooks.start();
  const clock = deps.now ?? Date.now;
  const housekeeping = setInterval(() => {
    runHousekeeping(ctx, clock()).catch((err) => app.log.warn({ err }, 'housekeeping failed'));
  }, HOUSEKEEPING_INTERVAL_MS);
  housekeeping.unref();
  app.addHook('onClose', async () => {
    clearInterval(housekeeping);
    ctx.outage.stop();
    ctx.revocations.stop();
    await ctx.notices?.close();
    // While storage is still open: the per-IP counts not shared yet, and the writes running beside
    // answers already given (OTP refunds, audit events). Each is bounded by the statement timeout;
    // waited for together, a stalled database costs one bound, not three in turn.
    await Promise.all([
      ctx.ipLimiter.stop().catch((err) => app.log.warn({ err }, 'per-IP counts not shared at shutdown')),
      ctx.otp.drain(),
      ctx.audit.drain(),
    ]);
    await ctx.webhooks.stop();
    await ctx.delivery.close();
  });
  return { app, ctx };
}
