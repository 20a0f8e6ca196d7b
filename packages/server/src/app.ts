import formbody from '@fastify/formbody';
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
import { advanceKeys } from './keys/rotation.js';
import { AuditLog } from './modules/audit/audit.service.js';
import { biometricRoutes } from './modules/biometric/biometric.routes.js';
import { BiometricService } from './modules/biometric/biometric.service.js';
import { PasskeyRepository } from './modules/biometric/passkey.repository.js';
import { ChallengesRepository } from './modules/challenges/challenges.repository.js';
import { ChallengesService } from './modules/challenges/challenges.service.js';
import { devRoutes } from './modules/dev/dev.routes.js';
import { DeviceRepository } from './modules/device/device.repository.js';
import { deviceRoutes } from './modules/device/device.routes.js';
import { DeviceService } from './modules/device/device.service.js';
import { healthRoutes } from './modules/health/health.routes.js';
import type { Delivery } from './modules/otp/delivery/index.js';
import { OtpRepository } from './modules/otp/otp.repository.js';
import { otpRoutes } from './modules/otp/otp.routes.js';
import { OtpService } from './modules/otp/otp.service.js';
import { PinRepository } from './modules/pin/pin.repository.js';
import { pinRoutes } from './modules/pin/pin.routes.js';
import { PinService } from './modules/pin/pin.service.js';
import { ProjectsRepository } from './modules/projects/projects.repository.js';
import { ProjectsService } from './modules/projects/projects.service.js';
import { oauthRoutes } from './modules/session/oauth.routes.js';
import { SessionRepository } from './modules/session/session.repository.js';
import { UsersRepository } from './modules/users/users.repository.js';
import { RevocationList } from './modules/verify/revocation-list.js';
import { verifyRoutes } from './modules/verify/verify.routes.js';
import { VerifyService } from './modules/verify/verify.service.js';
import { wellKnownRoutes } from './modules/wellknown/wellknown.routes.js';
import { requireBearer } from './plugins/bearer.js';
import { registerCors } from './plugins/cors.js';
import { registerErrorHandler } from './plugins/error-handler.js';
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
  users: UsersRepository;
  sessions: SessionRepository;
  audit: AuditLog;
  challenges: ChallengesService;
  devices: DeviceService;
  pin: PinService;
  biometric: BiometricService;
  hooks: {
    project: preHandlerAsyncHookHandler;
    bearer: preHandlerAsyncHookHandler;
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
  const tokens = new TokenService(
    config,
    keys,
    sessions,
    { user: (id) => users.findById(id), project: (id) => projectsRepository.findById(id) },
    masterKey.derive('refresh-successor'),
    undefined,
    {
      revoked: (sid) => revocations.add(sid),
      reuseDetected: (session) =>
        void audit.record({
          projectId: session.project_id,
          userId: session.user_id,
          type: 'refresh.reuse_detected',
          data: { session_id: session.id },
        }),
    },
    now,
  );
  const verify = new VerifyService(config.issuer, config.clockLeeway, keys, projects, revocations, now);
  const challenges = new ChallengesService(new ChallengesRepository(db), now);
  const devices = new DeviceService(
    new DeviceRepository(db),
    users,
    challenges,
    tokens,
    limiter,
    config.rateLimits.otpStartPerIdentifier,
    audit,
    (ids) => {
      for (const id of ids) revocations.add(id);
    },
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
  const biometric = new BiometricService(new PasskeyRepository(db), users, challenges, tokens, audit, now);
  const otp = new OtpService(
    config,
    new OtpRepository(db),
    users,
    tokens,
    limiter,
    deps.delivery,
    masterKey.derive('otp-code-mac'),
    {
      sent: (project, channel) =>
        void audit.record({ projectId: project.id, type: 'otp.sent', data: { channel } }),
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
        void audit.record({ projectId: project.id, type: 'signin.failed', data: { method: 'OTP', reason } }),
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
    users,
    sessions,
    audit,
    challenges,
    devices,
    pin,
    biometric,
    hooks: {
      project: requireProject(projects),
      bearer: requireBearer(verify, projects, users),
      ipLimit: (scope) => limitPerIp(limiter, scope, config.rateLimits.perIp),
    },
  };
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
    trustProxy: config.trustProxy,
    bodyLimit: config.bodyLimit,
    genReqId: () => randomUUID(),
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  registerErrorHandler(app);
  // One access-log line per request: failures at info, successes at debug (cheap when off).
  app.addHook('onResponse', async (request, reply) => {
    const level = reply.statusCode >= 400 ? 'info' : 'debug';
    if (!(request.log as Logger).isLevelEnabled(level)) return;
    request.log[level](
      {
        method: request.method,
        url: request.routeOptions.url ?? request.url.split('?')[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request completed',
    );
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
  if (ctx.config.delivery.mode === 'dev') await app.register(devRoutes(ctx));

  ctx.revocations.start();
  const housekeeping = setInterval(() => {
    Promise.all([
      ctx.limiter.prune(),
      advanceKeys(ctx.db, config, (deps.now ?? Date.now)()).then(() => ctx.keys.reload()),
    ]).catch((err) => app.log.warn({ err }, 'housekeeping failed'));
  }, 60_000);
  housekeeping.unref();
  app.addHook('onClose', async () => {
    clearInterval(housekeeping);
    ctx.revocations.stop();
    await ctx.delivery.close();
  });
  return { app, ctx };
}
