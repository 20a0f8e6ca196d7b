import type { onRequestAsyncHookHandler, onRouteHookHandler, preHandlerAsyncHookHandler } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config/index.js';
import type { MasterKey } from './crypto/master-key.js';
import { ClockSkew } from './db/clock-skew.js';
import type { Db } from './db/connect.js';
import type { NoticeListener } from './db/notifications.js';
import { DatabaseOutage } from './db/outage.js';
import type { KeyStore } from './keys/key-store.js';
import { advanceKeys, rotateKeys } from './keys/rotation.js';
import { AuditLog } from './modules/audit/audit.service.js';
import type { AuditEvents } from './modules/audit/events.js';
import { AuthorizeRepository } from './modules/authorize/authorize.repository.js';
import { AuthorizeService } from './modules/authorize/authorize.service.js';
import { BiometricService } from './modules/biometric/biometric.service.js';
import { PasskeyRepository } from './modules/biometric/passkey.repository.js';
import { ChallengesRepository } from './modules/challenges/challenges.repository.js';
import { ChallengesService } from './modules/challenges/challenges.service.js';
import { ClaimsService } from './modules/claims/claims.service.js';
import { ClientsRepository } from './modules/clients/clients.repository.js';
import { ClientsService } from './modules/clients/clients.service.js';
import { DEFAULT_LIMITS, type FetchPolicy } from './modules/clients/metadata-document.js';
import { MetadataDocuments } from './modules/clients/metadata-documents.js';
import { ConsoleService } from './modules/console/console.service.js';
import { ConsoleMembersRepository } from './modules/console/console-members.repository.js';
import { DeviceRepository } from './modules/device/device.repository.js';
import { DeviceService } from './modules/device/device.service.js';
import { DeliveryHealth } from './modules/health/delivery-health.js';
import { Metrics } from './modules/metrics/metrics.js';
import type { Delivery } from './modules/otp/delivery/index.js';
import { ObservedDelivery } from './modules/otp/delivery/observed.js';
import { OtpRepository } from './modules/otp/otp.repository.js';
import { OtpService } from './modules/otp/otp.service.js';
import { PinRepository } from './modules/pin/pin.repository.js';
import { PinService } from './modules/pin/pin.service.js';
import { PinLocks } from './modules/pin/pin-locks.js';
import { serverSettings } from './modules/projects/project.js';
import { ProjectsRepository } from './modules/projects/projects.repository.js';
import { ProjectsService } from './modules/projects/projects.service.js';
import { SessionRepository } from './modules/session/session.repository.js';
import { SessionService } from './modules/session/session.service.js';
import { SignOutService } from './modules/session/sign-out.service.js';
import { SecurityNotices } from './modules/sign-in/security-notices.js';
import { SignInService } from './modules/sign-in/sign-in.service.js';
import { StepUp } from './modules/sign-in/step-up.js';
import { UsersRepository } from './modules/users/users.repository.js';
import { UsersService } from './modules/users/users.service.js';
import { RevocationList } from './modules/verify/revocation-list.js';
import { VerifyService } from './modules/verify/verify.service.js';
import { WebhooksService } from './modules/webhooks/webhooks.service.js';
import { requireBearer } from './plugins/bearer.js';
import { requireIntegrator } from './plugins/integrator.js';
import { IpLimiter } from './plugins/ip-limiter.js';
import { OriginRefusals } from './plugins/origin-refusal.js';
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
  /** How long the revocation list is trusted without a re-read, in ms (polled twice as often; default 1000). */
  revocationMaxStaleMs?: number;
  /**
   * Tests: fail an answer whose response schema would drop or change a member
   * (src/http/response-contract.ts). Never in production.
   */
  checkResponses?: boolean;
  /**
   * Benchmarks: an `onRoute` hook added before any route, so that a route can be given a hook of
   * its own (the benchmark's OTP-code header on the OTP start route alone, leaving /verify as in
   * production). Never in production.
   */
  onRoute?: onRouteHookHandler;
  /**
   * Tests: the Client ID Metadata Documents' fetch limits and resolver (a host name that resolves
   * to loopback, for DNS rebinding). The address policy itself is the configuration's.
   */
  clientMetadata?: Partial<Pick<FetchPolicy, 'timeoutMs' | 'maxBytes' | 'lookup'>>;
}

/** The services and route hooks, built once and shared by the route modules. */
export interface AppContext {
  config: Readonly<Config>;
  db: Db;
  keys: KeyStore;
  /** The delivery as given (the development outbox's routes read it). */
  delivery: Delivery;
  /** This instance's view of delivery, from its own attempts (readiness). */
  deliveryHealth: DeliveryHealth;
  projects: ProjectsService;
  tokens: TokenService;
  session: SessionService;
  signIn: SignInService;
  signOut: SignOutService;
  stepUp: StepUp;
  otp: OtpService;
  verify: VerifyService;
  revocations: RevocationList;
  /** PostgreSQL: other instances' change notices (started and closed by buildApp). */
  notices: NoticeListener | undefined;
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
  /** OAuth clients of the projects (issue 31). */
  clients: ClientsService;
  /** The authorization code flow and the hosted pages' sessions (issue 31). */
  authorize: AuthorizeService;
  authorizeRepository: AuthorizeRepository;
  metrics: Metrics;
  /** Database outages, logged once each; readiness reads it (db/outage.ts). */
  outage: DatabaseOutage;
  /** Refusals of browser origins a project does not list: the answer, and a rate-limited warning. */
  originRefusals: OriginRefusals;
  /** The clock every service uses (injected in tests). */
  now: () => number;
  /** The console's members and sign-in (issue 33). */
  console: ConsoleService;
  /** PIN state and locks (the integrator's unlock). */
  pinLocks: PinLocks;
  hooks: {
    project: preHandlerAsyncHookHandler;
    bearer: preHandlerAsyncHookHandler;
    /**
     * The userinfo endpoint's Bearer check: also tokens bound to the issuer or to the endpoint
     * itself (RFC 8707), and calls from the origins of the token's OAuth client.
     */
    userinfoBearer: preHandlerAsyncHookHandler;
    integrator: preHandlerAsyncHookHandler;
    ipLimit(scope: string): onRequestAsyncHookHandler;
  };
}

export function createContext(config: Readonly<Config>, deps: AppDeps): AppContext {
  const now = deps.now ?? Date.now;
  const { db, keys, masterKey } = deps;
  const projectsRepository = new ProjectsRepository(db);
  const projects = new ProjectsService(projectsRepository, now, serverSettings(config));
  const originRefusals = new OriginRefusals(now, new URL(config.issuer).origin);
  const users = new UsersRepository(db);
  // A batched statement that fails as a whole is retried item by item, which may all succeed: the
  // failure itself is logged, or a batch that always fails would only show as slower writes.
  const batchFailed =
    (what: string) =>
    (error: unknown, size: number): void =>
      deps.logger.warn(
        { err: error, size },
        `a batch of ${what} failed as a whole; retrying them one by one`,
      );
  // The leeway /verify allows is what a skew may reach before tokens are refused elsewhere.
  const clockSkew = new ClockSkew(Math.max(1, config.clockLeeway) * 1000, now, {
    skewed: (skewMs, thresholdMs) =>
      deps.logger.warn(
        { skewSeconds: skewMs / 1000, thresholdSeconds: thresholdMs / 1000 },
        `this instance's clock is ${Math.abs(skewMs / 1000).toFixed(1)} s ${skewMs > 0 ? 'ahead of' : 'behind'} the database's (more than TESSERA_CLOCK_LEEWAY): other instances may refuse its tokens as not yet valid, and refresh retries may be taken for reuse; synchronize the clocks (NTP)`,
      ),
    recovered: (skewMs) =>
      deps.logger.info(
        { skewSeconds: skewMs / 1000 },
        "this instance's clock agrees with the database's again",
      ),
  });
  const sessions = new SessionRepository(db, {
    onDatabaseClock: (databaseMs, roundTripMs) => clockSkew.sample(databaseMs, roundTripMs),
    onBatchFailed: batchFailed('refresh grants'),
    // A rotation that committed after its grant answered 503: its retry is kept from "reuse".
    onLateRotation: (count, error) =>
      error === undefined
        ? deps.logger.warn(
            { count },
            'refresh rotations committed after their answer was lost; their retries are answered within the grace window from now',
          )
        : deps.logger.error(
            { err: error, count },
            'refresh rotations committed after their answer was lost and could not be re-stamped; a retry of them may be taken for reuse',
          ),
  });
  const limiter = new RateLimiter(db, now);
  const revocations = new RevocationList(
    sessions,
    (config.accessTokenTtl + config.clockLeeway) * 1000,
    deps.revocationMaxStaleMs ?? 1000,
    now,
  );
  const audit = new AuditLog(
    db,
    (error) => deps.logger.error({ err: error }, 'audit event not recorded'),
    now,
    batchFailed('audit events'),
  );
  const metrics = new Metrics();
  metrics.watchDatabase(db);
  const outage = new DatabaseOutage(() => db.ping(), deps.logger, { now });
  // SQLite: a write that commits ends a storage-full episode.
  db.onBatchCommit?.(() => outage.wrote());
  metrics.watchClockSkew(clockSkew);
  const ipLimiter = new IpLimiter(db, now, undefined, undefined, {
    syncFailed: (error, streak) => {
      metrics.ipLimitSyncFailures.inc();
      // The first failure of a run, then about once a minute while it lasts (a sync a second).
      if (streak === 1 || streak % 60 === 0)
        deps.logger.warn(
          { err: error, failedSyncs: streak },
          'per-IP counts not shared with other instances: each limits on its own counts until the database answers',
        );
    },
    syncRecovered: (failed) => deps.logger.info({ failedSyncs: failed }, 'per-IP counts shared again'),
  });
  // Every provider's messages go through here: counted, timed, failures logged with their codes.
  const delivery = new ObservedDelivery(deps.delivery, deps.logger);
  const deliveryHealth = new DeliveryHealth(now);
  metrics.countDeliveries(delivery);
  delivery.onAttempt((attempt) => deliveryHealth.record(attempt));
  const claims = new ClaimsService(db, audit, now);
  const webhooks = new WebhooksService(
    db,
    masterKey.derive('webhook-secret'),
    { ...config.webhooks, allowHttp: config.env !== 'production' },
    deps.logger,
    now,
  );
  audit.setOutbox(webhooks);
  metrics.subscribeTo({ audit, webhooks });
  const tokens = new TokenService(config, keys, claims, now);
  const verify = new VerifyService(
    config.issuer,
    config.clockLeeway,
    keys,
    projects,
    revocations,
    now,
    config.verifyCacheBytes,
  );
  const session = new SessionService({
    config,
    repository: sessions,
    minter: tokens,
    projects,
    successorKey: masterKey.derive('refresh-successor'),
    audit,
    revocations,
    accessTokens: verify,
    now,
  });
  const pinRepository = new PinRepository(db);
  const stepUp = new StepUp(sessions, now);
  const notices = new SecurityNotices(
    delivery,
    config.securityNotices,
    (error) => deps.logger.warn({ err: error }, 'security notice not sent'),
    now,
  );
  const pinLocks = new PinLocks(pinRepository, audit);
  const signIn = new SignInService({
    users,
    sessions: session,
    audit,
    pinLocks,
    now,
  });
  const challengesRepository = new ChallengesRepository(db);
  const challenges = new ChallengesService(challengesRepository, now);
  const otpRepository = new OtpRepository(db);
  const devices = new DeviceService(
    new DeviceRepository(db),
    users,
    challenges,
    signIn,
    session,
    limiter,
    config.rateLimits.otpStartPerIdentifier,
    audit,
    stepUp,
    notices,
    now,
  );
  const pin = new PinService(
    pinRepository,
    stepUp,
    devices,
    signIn,
    audit,
    masterKey.derive('pin-pepper'),
    notices,
    now,
  );
  // Per user, the same rules as OTP: starts per identifier, failed completes per user.
  const biometric = new BiometricService(
    new PasskeyRepository(db),
    users,
    challenges,
    signIn,
    session,
    audit,
    {
      limiter,
      starts: config.rateLimits.otpStartPerIdentifier,
      startCeiling: config.rateLimits.otpStartCeiling,
      failures: config.rateLimits.otpGuessesPerIdentifier,
    },
    masterKey.derive('passkey-decoy'),
    stepUp,
    notices,
    now,
  );
  const signOut = new SignOutService({ db, sessions: session, audit, notices, now });
  const otp = new OtpService(
    config,
    otpRepository,
    users,
    signIn,
    limiter,
    delivery,
    masterKey.derive('otp-code-mac'),
    audit,
    now,
    (error) => deps.logger.warn({ err: error }, 'guess budget not given back after a sign-in'),
  );
  metrics.countOtpSends(otp);
  // Client ID Metadata Documents are fetched under the webhooks' address policy.
  const documents = new MetadataDocuments(
    {
      allowHttp: config.env !== 'production',
      allowPrivate: config.webhooks.allowPrivate,
      ...DEFAULT_LIMITS,
      ...deps.clientMetadata,
    },
    now,
  );
  const clients = new ClientsService(
    new ClientsRepository(db.kysely),
    {
      revokeClientSessions: async (clientId, reason) =>
        session.ended(await sessions.revokeClientSessions(clientId, reason, now())),
    },
    now,
    documents,
    audit,
  );
  const authorizeRepository = new AuthorizeRepository(db.kysely);
  const authorize = new AuthorizeService({
    config,
    repository: authorizeRepository,
    clients,
    projects,
    sessions,
    claims,
    minter: tokens,
    revoke: async (ids, reason) => {
      for (const id of ids) if (await sessions.revoke(id, reason, now())) session.ended([id]);
    },
    ended: (ids) => session.ended(ids),
    csrfKey: masterKey.derive('oauth-csrf'),
    audit,
    now,
  });
  const consoleService = new ConsoleService(
    new ConsoleMembersRepository(db),
    projects,
    users,
    verify,
    config.issuer,
    now,
  );
  return {
    config,
    db,
    keys,
    console: consoleService,
    pinLocks,
    delivery: deps.delivery,
    deliveryHealth,
    projects,
    tokens,
    session,
    signIn,
    signOut,
    stepUp,
    otp,
    verify,
    revocations,
    notices: db.listen?.(config.databaseListenUrl),
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
    usersService: new UsersService(db, users, sessions, audit, (ids) => session.ended(ids), signOut, now),
    webhooks,
    clients,
    authorize,
    authorizeRepository,
    metrics,
    outage,
    originRefusals,
    now,
    hooks: {
      project: requireProject(projects, originRefusals),
      bearer: requireBearer(verify, projects, users, originRefusals),
      userinfoBearer: requireBearer(verify, projects, users, originRefusals, {
        resources: [config.issuer, `${config.issuer}/oauth/userinfo`],
        clientOrigins: async (clientId, project) => {
          const client = await clients.resolve(clientId, project).catch(() => undefined);
          return (client?.redirect_uris ?? []).flatMap((uri) => {
            const origin = URL.canParse(uri) ? new URL(uri).origin : 'null';
            return origin === 'null' ? [] : [origin];
          });
        },
      }),
      integrator: requireIntegrator(projects, config.console ? consoleService : undefined),
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
  await ctx.authorizeRepository.prune(now);
  await ctx.clients.expireUnused();
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
  by: AuditEvents['key.rotated']['by'],
): Promise<void> {
  for (const project of projects)
    await audit.record({ projectId: project.id, type: 'key.rotated', data: { kid, by } });
}
