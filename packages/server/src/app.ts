import formbody from '@fastify/formbody';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  LogController,
  type preHandlerAsyncHookHandler,
} from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config/index.js';
import type { MasterKey } from './crypto/master-key.js';
import { randomUUID } from './crypto/random.js';
import type { Db } from './db/connect.js';
import type { KeyStore } from './keys/key-store.js';
import { advanceKeys, HOUSEKEEPING_INTERVAL_MS, rotateKeys } from './keys/rotation.js';
import { auditRoutes } from './modules/audit/audit.routes.js';
import { AuditLog } from './modules/audit/audit.service.js';
import { biometricRoutes } from './modules/biometric/biometric.routes.js';
import { BiometricService } from './modules/biometric/biometric.service.js';
import { PasskeyRepository } from './modules/biometric/passkey.repository.js';
import { ChallengesRepository } from './modules/challenges/challenges.repository.js';
import { ChallengesService } from './modules/challenges/challenges.service.js';
import { ClaimsService } from './modules/claims/claims.service.js';
import { devRoutes } from './modules/dev/dev.routes.js';
import { DeviceRepository } from './modules/device/device.repository.js';
import { deviceRoutes } from './modules/device/device.routes.js';
import { DeviceService } from './modules/device/device.service.js';
import { docsRoutes } from './modules/docs/docs.routes.js';
import { healthRoutes } from './modules/health/health.routes.js';
import { Metrics } from './modules/metrics/metrics.js';
import { metricsRoutes } from './modules/metrics/metrics.routes.js';
import type { Delivery } from './modules/otp/delivery/index.js';
import { OtpRepository } from './modules/otp/otp.repository.js';
import { otpRoutes } from './modules/otp/otp.routes.js';
import { OtpService } from './modules/otp/otp.service.js';
import { PinRepository } from './modules/pin/pin.repository.js';
import { pinRoutes } from './modules/pin/pin.routes.js';
import { PinService } from './modules/pin/pin.service.js';
import { ProjectsRepository } from './modules/projects/projects.repository.js';
import { ProjectsService } from './modules/projects/projects.service.js';
import { introspectionRoutes } from './modules/session/introspection.routes.js';
import { oauthRoutes } from './modules/session/oauth.routes.js';
import { SessionRepository } from './modules/session/session.repository.js';
import { UsersRepository } from './modules/users/users.repository.js';
import { usersRoutes } from './modules/users/users.routes.js';
import { UsersService } from './modules/users/users.service.js';
import { RevocationList } from './modules/verify/revocation-list.js';
import { verifyRoutes } from './modules/verify/verify.routes.js';
import { VerifyService } from './modules/verify/verify.service.js';
import { webhooksRoutes } from './modules/webhooks/webhooks.routes.js';
import { WebhooksService } from './modules/webhooks/webhooks.service.js';
import { wellKnownRoutes } from './modules/wellknown/wellknown.routes.js';
import { requireBearer } from './plugins/bearer.js';
import { registerCors } from './plugins/cors.js';
import { registerErrorHandler } from './plugins/error-handler.js';
import { requireIntegrator } from './plugins/integrator.js';
import { IpLimiter } from './plugins/ip-limiter.js';
import { RateLimiter } from './plugins/rate-limiter.js';
import { limitPerIp, requireProject } from './plugins/request-context.js';
import { TokenService } from './tokens/token.service.js';

/** What buildApp needs from outside: opened storage, loaded keys, a delivery, a clock. */
export interface AppDeps {
  db: Db;
  keys: KeyStore;
  masterKey: MasterKey;
  delivery: Delivery;
  logger: Logger;
  now?: () => number;
}

/** The services and route hooks, built once and shared by the route modules. */
export interface AppContext {
  config: Readonly<Config>;
  db: Db;
  keys: KeyStore;
  delivery: Delivery;
  projects: ProjectsService;
  tokens: TokenService;
  otp: OtpService;
  verify: VerifyService;
  revocations: RevocationList;
  limiter: RateLimiter;
  ipLimiter: IpLimiter;
  users: UsersRepository;
  sessions: SessionRepository;
  audit: AuditLog;
  challenges: ChallengesService;
  challengesRepository: ChallengesRepository;
  otpRepository: OtpRepository;
  devices: DeviceService;
  pin: PinService;
  biometric: BiometricService;
  claims: ClaimsService;
  usersService: UsersService;
  webhooks: WebhooksService;
  metrics: Metrics;
  /** The clock every service uses (injected in tests). */
  now: () => number;
  hooks: {
    project: preHandlerAsyncHookHandler;
    bearer: preHandlerAsyncHookHandler;
    integrator: preHandlerAsyncHookHandler;
    ipLimit(scope: string): preHandlerAsyncHookHandler;
  };
}

export function createContext(config: Readonly<Config>, deps: AppDeps): AppContext {
  const now = deps.now ?? Date.now;
  const { db, keys, masterKey } = deps;
  const projectsRepository = new ProjectsRepository(db);
  const projects = new ProjectsService(projectsRepository, now);
  const users = new UsersRepository(db);
  const sessions = new SessionRepository(db);
  const limiter = new RateLimiter(db, now);
  const ipLimiter = new IpLimiter(db, now);
  const revocations = new RevocationList(
    sessions,
    (config.accessTokenTtl + config.clockLeeway) * 1000,
    1000,
    now,
  );
  const audit = new AuditLog(
    db,
    (error) => deps.logger.error({ err: error }, 'audit event not recorded'),
    now,
  );
  const metrics = new Metrics();
  const claims = new ClaimsService(db, now);
  const webhooks = new WebhooksService(
    db,
    masterKey.derive('webhook-secret'),
    {
      backoff: config.webhooks.backoff,
      timeoutMs: config.webhooks.timeoutMs,
      allowHttp: config.env !== 'production',
    },
    deps.logger,
    now,
  );
  webhooks.onDelivery((outcome) => metrics.webhookDeliveries.inc({ outcome }));
  audit.setOutbox(webhooks);
  audit.subscribe((event) => {
    if (event.type === 'signin.succeeded' || event.type === 'signin.failed') {
      metrics.signIns.inc({
        method: String(event.data?.method ?? 'unknown'),
        outcome: event.type === 'signin.succeeded' ? 'success' : 'failure',
      });
    }
  });
  const revokedLocally = (ids: string[]) => {
    for (const id of ids) revocations.add(id);
  };
  const tokens = new TokenService(
    config,
    keys,
    sessions,
    { project: (id) => projects.byId(id) },
    masterKey.derive('refresh-successor'),
    claims,
    {
      refreshed: (session) => {
        metrics.refreshes.inc();
        return audit.record({
          projectId: session.project_id,
          userId: session.user_id,
          type: 'refresh',
          data: { session_id: session.id },
        });
      },
      revoked: (sid, reason, session) => {
        revocations.add(sid);
        // A sign-out (RFC 7009 revocation); a reused refresh token has an event of its own.
        if (reason !== 'refresh_token_reuse')
          return audit.record({
            projectId: session.project_id,
            userId: session.user_id,
            type: 'session.revoked',
            data: { session_id: sid, by: 'user' },
          });
      },
      reuseDetected: (session) => {
        metrics.reuseDetections.inc();
        return audit.record({
          projectId: session.project_id,
          userId: session.user_id,
          type: 'refresh.reuse_detected',
          data: { session_id: session.id },
        });
      },
    },
    now,
  );
  const verify = new VerifyService(config.issuer, config.clockLeeway, keys, projects, revocations, now);
  const challengesRepository = new ChallengesRepository(db);
  const challenges = new ChallengesService(challengesRepository, now);
  const otpRepository = new OtpRepository(db);
  const devices = new DeviceService(
    new DeviceRepository(db, sessions),
    users,
    challenges,
    tokens,
    limiter,
    config.rateLimits.otpStartPerIdentifier,
    audit,
    revokedLocally,
    now,
  );
  const pin = new PinService(
    new PinRepository(db),
    sessions,
    devices,
    audit,
    masterKey.derive('pin-pepper'),
    now,
  );
  // Per user, the same rules as OTP: starts per identifier, failed completes per user.
  const biometric = new BiometricService(
    new PasskeyRepository(db),
    users,
    challenges,
    tokens,
    audit,
    {
      limiter,
      starts: config.rateLimits.otpStartPerIdentifier,
      failures: config.rateLimits.otpGuessesPerIdentifier,
    },
    now,
  );
  const otp = new OtpService(
    config,
    otpRepository,
    users,
    tokens,
    limiter,
    deps.delivery,
    masterKey.derive('otp-code-mac'),
    {
      sent: (project, channel) =>
        audit.record({ projectId: project.id, type: 'otp.sent', data: { channel } }),
      signedIn: async (project, user) => {
        await pin.unlock(project.id, user.id);
        await audit.record({
          projectId: project.id,
          userId: user.id,
          type: 'signin.succeeded',
          data: { method: 'OTP' },
        });
      },
      failed: (project, reason) =>
        audit.record({ projectId: project.id, type: 'signin.failed', data: { method: 'OTP', reason } }),
    },
    now,
  );
  return {
    config,
    db,
    keys,
    delivery: deps.delivery,
    projects,
    tokens,
    otp,
    verify,
    revocations,
    limiter,
    ipLimiter,
    users,
    sessions,
    audit,
    challenges,
    challengesRepository,
    otpRepository,
    devices,
    pin,
    biometric,
    claims,
    usersService: new UsersService(db, users, sessions, audit, revokedLocally, now),
    webhooks,
    metrics,
    now,
    hooks: {
      project: requireProject(projects),
      bearer: requireBearer(verify, projects, users),
      integrator: requireIntegrator(projects),
      ipLimit: (scope) => limitPerIp(ipLimiter, scope, config.rateLimits.perIp),
    },
  };
}

/**
 * Periodic work every instance may do at once (each step is idempotent): expired rows go, keys
 * move along their life cycle, and an automatic rotation starts when one is due.
 */
export async function runHousekeeping(ctx: AppContext, now: number): Promise<void> {
  const { config } = ctx;
  const day = 86_400_000;
  await ctx.limiter.prune();
  await ctx.otpRepository.prune(now - day);
  await ctx.challengesRepository.prune(now - day);
  await ctx.sessions.pruneExpired(now - day);
  if (config.auditRetentionDays > 0) await ctx.audit.prune(now - config.auditRetentionDays * day);
  await ctx.sessions.pruneRevocations(now - (config.accessTokenTtl + config.clockLeeway) * 1000 - 60_000);
  await ctx.webhooks.prune(now - 30 * day);
  const period = config.keys.rotationPeriod * 1000;
  if (period > 0) {
    const keys = ctx.keys.list();
    const newest = keys.filter((k) => k.status === 'active').at(-1);
    const pending = keys.some((k) => k.status === 'next');
    if (newest?.activatedAt != null && !pending && now - newest.activatedAt >= period) {
      const kid = await rotateKeys(ctx.keys, config, undefined, now);
      await recordKeyRotation(ctx.audit, await ctx.projects.list(), kid, 'automatic');
    }
  }
  await advanceKeys(ctx.db, config, now);
  await ctx.keys.reload();
}

/** A signing-key rotation concerns every project: each gets the event (and its webhooks). */
export async function recordKeyRotation(
  audit: AuditLog,
  projects: Array<{ id: string }>,
  kid: string,
  by: string,
): Promise<void> {
  for (const project of projects)
    await audit.record({ projectId: project.id, type: 'key.rotated', data: { kid, by } });
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
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // /verify is the hot path and logs nothing when it works: it skips the per-request child
    // logger (measured at about a fifth of the route's fixed cost); its rare error lines lack reqId.
    childLoggerFactory: (logger, bindings, options, rawRequest) =>
      rawRequest.url === '/verify' ? logger : logger.child(bindings, options),
    trustProxy: config.trustProxy,
    bodyLimit: config.bodyLimit,
    genReqId: () => randomUUID(),
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  registerErrorHandler(app);
  // A request without a body validates as {}: endpoints whose fields are all optional work
  // without one, and the others say which field is missing.
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.body === undefined) request.body = {};
    done();
  });
  // One access-log line per request (failures at info, successes at debug) and the metrics.
  app.addHook('onResponse', (request, reply, done) => {
    done();
    const route = request.routeOptions.url ?? 'unmatched';
    ctx.metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
    const level = reply.statusCode >= 400 ? 'info' : 'debug';
    if ((request.log as Logger).isLevelEnabled(level))
      request.log[level](
        { method: request.method, url: route, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request completed',
      );
  });
  await app.register(swagger, {
    openapi: {
      info: { title: 'Tessera', version: '0.1.0', description: 'Authentication token service' },
      servers: [{ url: config.issuer }],
    },
  });
  await registerCors(app, ctx.projects);
  await app.register(formbody, { bodyLimit: config.bodyLimit });

  await app.register(healthRoutes(ctx));
  await app.register(wellKnownRoutes(ctx));
  await app.register(verifyRoutes(ctx));
  await app.register(otpRoutes(ctx));
  await app.register(oauthRoutes(ctx));
  await app.register(deviceRoutes(ctx));
  await app.register(pinRoutes(ctx));
  await app.register(biometricRoutes(ctx));
  await app.register(introspectionRoutes(ctx));
  await app.register(usersRoutes(ctx));
  await app.register(auditRoutes(ctx));
  await app.register(webhooksRoutes(ctx));
  await app.register(metricsRoutes(ctx));
  await app.register(docsRoutes());
  if (ctx.config.delivery.mode === 'dev') await app.register(devRoutes(ctx));

  ctx.revocations.start();
  ctx.ipLimiter.start();
  ctx.webhooks.start();
  const clock = deps.now ?? Date.now;
  const housekeeping = setInterval(() => {
    runHousekeeping(ctx, clock()).catch((err) => app.log.warn({ err }, 'housekeeping failed'));
  }, HOUSEKEEPING_INTERVAL_MS);
  housekeeping.unref();
  app.addHook('onClose', async () => {
    clearInterval(housekeeping);
    ctx.revocations.stop();
    await ctx.ipLimiter.stop().catch((err) => app.log.warn({ err }, 'per-IP counts not shared at shutdown'));
    await ctx.audit.drain();
    await ctx.webhooks.stop();
    await ctx.delivery.close();
  });
  return { app, ctx };
}
