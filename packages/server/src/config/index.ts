import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { EVERY_COUNTRY, parseCountryList } from '../modules/otp/sms-countries.js';
import { parseSmsProvider, type SmsProviderConfig } from './sms-provider.js';

export type { SmsProviderConfig };

/** Thrown for a configuration value that cannot be used; `message` is one line saying what to fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface RateLimit {
  /** Requests allowed per window. */
  limit: number;
  /** Window length in seconds. */
  window: number;
}

export interface Config {
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  issuer: string;
  databaseUrl: string;
  dataDir: string;
  /** Base64 or hex of 32 bytes; absent in development means a generated key file. */
  masterKey: string | undefined;
  logLevel: string;
  /** `json` (one object per line, the default) or `pretty` (pino-pretty, for a developer's terminal). */
  logFormat: 'json' | 'pretty';
  /** /readyz also fails while OTP delivery is failing (TESSERA_READYZ_DELIVERY; see modules/health). */
  readyzDelivery: boolean;
  /**
   * Which proxies' X-Forwarded-For entries to believe: false (none), a number of hops (each
   * trusted proxy appends the address it saw, so the client is the entry that many from the
   * right), or the proxies' addresses and CIDR ranges. Never the left-most entry blindly.
   */
  trustProxy: false | number | string[];
  /** Tell users by e-mail or SMS when a device, passkey or PIN is added, or they were signed out everywhere. */
  securityNotices: boolean;
  /** Memory for /verify's verified-token cache, in bytes (TESSERA_VERIFY_CACHE_MB). */
  verifyCacheBytes: number;
  /** SQLite's page cache, in KiB (TESSERA_SQLITE_CACHE_MB). */
  sqliteCacheKiB: number;
  bodyLimit: number;
  accessTokenTtl: number;
  idTokenTtl: number;
  refreshTokenTtl: number;
  refreshGrace: number;
  clockLeeway: number;
  otp: { ttl: number; maxAttempts: number; resendInterval: number };
  rateLimits: {
    otpStartPerIdentifier: RateLimit;
    otpGuessesPerIdentifier: RateLimit;
    /** Codes per identifier from all networks together (bounds messages to one person). */
    otpStartCeiling: RateLimit;
    /** Wrong codes per identifier from all networks together: the long-term cap (NIST SP 800-63B §5.2.2). */
    otpGuessesCeiling: RateLimit;
    /** Wrong codes per identifier from one network in a day: what one network may spend of the ceiling. */
    otpGuessesPerNetworkDaily: RateLimit;
    perIp: RateLimit;
  };
  delivery: {
    mode: 'dev' | 'live';
    smtpUrl: string | undefined;
    mailFrom: string;
    smsUrl: string | undefined;
    smsToken: string | undefined;
    smsFrom: string | undefined;
    /** The SMS provider (TESSERA_SMS_PROVIDER); `http` posts to smsUrl. Undefined: no SMS. */
    smsProvider: SmsProviderConfig | undefined;
  };
  keys: {
    /** Seconds between publishing a new key and signing with it. */
    rotationDelay: number;
    /** Seconds between automatic rotations; 0 turns them off. */
    rotationPeriod: number;
  };
  webhooks: {
    backoff: number[];
    timeoutMs: number;
    /** Endpoints may be loopback, private or link-local (never in production unless set). */
    allowPrivate: boolean;
    /** Endpoints per project. */
    maxEndpoints: number;
    /** Delivery attempts per project per minute; the excess is deferred. */
    deliveriesPerMinute: number;
  };
  /** Days audit events are kept; 0 keeps them for ever. */
  auditRetentionDays: number;
  /** PostgreSQL connection pool size per instance. */
  databasePoolSize: number;
  /** PostgreSQL waits, in ms (see DatabaseTimeouts in db/postgres.ts). */
  databaseTimeouts: { connectMs: number; statementMs: number; idleMs: number };
  /** Slow or idle clients, in ms (Node's http.Server timeouts). */
  http: {
    /** The whole request, headers and body, must arrive within this. */
    requestTimeoutMs: number;
    /** The request headers must arrive within this (at most requestTimeoutMs). */
    headersTimeoutMs: number;
    /** An idle keep-alive connection is closed after this. */
    keepAliveTimeoutMs: number;
    /** A connection with no traffic either way (a stalled client) is closed after this. */
    socketTimeoutMs: number;
  };
  /** Longest graceful drain on SIGTERM/SIGINT before the process exits with status 1, in ms. */
  shutdownTimeoutMs: number;
  /**
   * Bearer token for GET /metrics. Unset: in production /metrics answers 404 (start-up warns);
   * in development and test it is open.
   */
  metricsToken: string | undefined;
  /** Limits on sending sign-in codes: SMS pumping, mail bombing (docs/OPERATIONS.md#abuse-limits). */
  otpSending: OtpSendingConfig;
  /** Serve /dev/outbox although the server listens on a non-loopback address (explicit opt-in). */
  devOutboxPublic: boolean;
  /** Create the `demo` project on first start and print its credentials. */
  demo: boolean;
  /** Serve the console at /console (TESSERA_CONSOLE; default on except in production). */
  console: boolean;
  /** The sample backend the demo page calls (examples/express-api). */
  demoApiUrl: string;
  /**
   * PostgreSQL: where the connection listening for other instances' change notices goes, when
   * not to `databaseUrl` (LISTEN needs a session: past a transaction-pooling PgBouncer).
   */
  databaseListenUrl: string | undefined;
  // Operators (projects API, start-up, workers).
  /** Bearer token of the operator API (`/v1/operator/*`); unset turns that API off (404). */
  operatorToken: string | undefined;
  /** How long start-up waits for the database to answer, in ms; 0 fails at once. */
  databaseWaitMs: number;
  /** Processes `tessera serve` runs on one port (Node's cluster); 1 runs no cluster. */
  workers: number;
}

/** Codes a project may send on one channel; 0 turns a budget off. */
export interface SendBudgetConfig {
  hourly: number;
  daily: number;
}

/** An integrator's CAPTCHA or app-attestation check, asked before a code is sent. */
export interface StartVerifierConfig {
  url: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  token: string | undefined;
  /** The channels whose starts need a `challenge_token`. */
  channels: ReadonlyArray<'email' | 'sms'>;
  timeoutMs: number;
}

export interface OtpSendingConfig {
  /** Per project, whatever the identifier or network: a failed delivery still counts. */
  budgets: { sms: SendBudgetConfig; email: SendBudgetConfig };
  /** SMS destination countries of projects that set none (ISO 3166-1 alpha-2, or `*` for all). */
  smsCountries: readonly string[];
  /** SMS per project and number range (country calling code + first national digits). */
  smsPrefix: RateLimit;
  /** National digits after the calling code that make up a number range. */
  smsPrefixDigits: number;
  startVerifier: StartVerifierConfig | undefined;
}

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function trustProxy(env: Env, name: string): false | number | string[] {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return false;
  const lower = raw.toLowerCase();
  if (['0', 'false', 'no', 'off'].includes(lower)) return false;
  // One proxy in front (a load balancer): its appended entry is the client.
  if (['true', 'yes', 'on'].includes(lower)) return 1;
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw);
    if (hops > 10) throw new ConfigError(`${name} must be at most 10 hops, got ${hops}`);
    return hops;
  }
  const entries = raw.split(',').map((e) => e.trim());
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const prefixOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || extra !== undefined)
      throw new ConfigError(
        `${name} must be false, a number of proxy hops, or proxy addresses/CIDR ranges separated by commas; "${entry}" is none of these`,
      );
  }
  return entries;
}

/** The specified token lifetimes in seconds (access and ID token 1 h, refresh token 30 days). */
export const TOKEN_TTL_DEFAULTS = { access: 3600, id: 3600, refresh: 30 * 86_400 } as const;
/** The shortest lifetimes the server, or a project, may set. */
export const TOKEN_TTL_MIN = { access: 30, id: 30, refresh: 60 } as const;

const MAX_RATE_LIMIT = 2_147_483_647;
const MAX_RATE_WINDOW = 10 * 365 * 86_400;

function rateLimit(env: Env, name: string, fallback: RateLimit): RateLimit {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(raw);
  if (!match)
    throw new ConfigError(`${name} must look like "LIMIT/WINDOW_SECONDS" (e.g. "5/900"), got "${raw}"`);
  const limit = Number(match[1]);
  const window = Number(match[2]);
  if (limit < 1 || window < 1) throw new ConfigError(`${name} needs a limit and a window of at least 1`);
  // A window's count is a 32-bit integer in the database; ten years is longer than any window needs.
  if (limit > MAX_RATE_LIMIT || window > MAX_RATE_WINDOW)
    throw new ConfigError(
      `${name} takes a limit of at most ${MAX_RATE_LIMIT} and a window of at most ${MAX_RATE_WINDOW} seconds, got "${raw}"`,
    );
  return { limit, window };
}

function secondsList(env: Env, name: string, fallback: number[]): number[] {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > 20 || parts.some((p) => !/^\d{1,6}$/.test(p))) {
    throw new ConfigError(
      `${name} must be a comma-separated list of up to 20 delays in seconds, e.g. "5,60,300"`,
    );
  }
  return parts.map(Number);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Checked here: pino's own error for an unknown level names no variable. */
function logLevel(env: Env, fallback: string): string {
  const raw = env.TESSERA_LOG_LEVEL;
  if (raw === undefined || raw === '') return fallback;
  if (!LOG_LEVELS.includes(raw)) {
    throw new ConfigError(`TESSERA_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
  }
  return raw;
}

function logFormat(env: Env): 'json' | 'pretty' {
  const raw = env.TESSERA_LOG_FORMAT?.trim().toLowerCase();
  if (raw === undefined || raw === '' || raw === 'json') return 'json';
  if (raw === 'pretty') return 'pretty';
  throw new ConfigError(
    `TESSERA_LOG_FORMAT must be json or pretty, got "${env.TESSERA_LOG_FORMAT?.slice(0, 40)}"`,
  );
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a URL`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return raw;
}

/**
 * A PostgreSQL URL node-postgres can open: one host (it has no multi-host failover, see
 * brianc/node-postgres#1470), and parseable. The error names the variable and the hosts, never the
 * URL (it may hold a password).
 */
function checkPostgresUrl(name: string, value: string): void {
  const authority = /^postgres(?:ql)?:\/\/([^/?#]*)/.exec(value)?.[1] ?? '';
  const hosts = authority.slice(authority.lastIndexOf('@') + 1);
  if (hosts.includes(',')) {
    throw new ConfigError(
      `${name} names several hosts (${hosts}), which node-postgres cannot fail over between: give one host — a proxy in front of the cluster (PgBouncer, HAProxy, pgpool, a managed endpoint) or a DNS name that follows the primary (docs/OPERATIONS.md, "Failing over")`,
    );
  }
  try {
    new URL(value);
  } catch {
    throw new ConfigError(
      `${name} is not a valid URL (postgres://user:password@host:port/database; percent-encode special characters in the password)`,
    );
  }
}

function databaseListenUrl(env: Env, databaseUrl: string): string | undefined {
  if (env.TESSERA_DATABASE_LISTEN_URL?.startsWith('postgres'))
    checkPostgresUrl('TESSERA_DATABASE_LISTEN_URL', env.TESSERA_DATABASE_LISTEN_URL);
  const listenUrl = url(env, 'TESSERA_DATABASE_LISTEN_URL', ['postgres:', 'postgresql:']);
  if (listenUrl && databaseUrl.startsWith('sqlite:'))
    throw new ConfigError(
      'TESSERA_DATABASE_LISTEN_URL applies to PostgreSQL only; unset it with a SQLite database',
    );
  return listenUrl;
}

// --- Limits on sending codes (SMS pumping, mail bombing), and the development outbox ---

function sendBudget(env: Env, channel: 'SMS' | 'EMAIL', fallback: SendBudgetConfig): SendBudgetConfig {
  return {
    hourly: int(env, `TESSERA_${channel}_BUDGET_HOURLY`, fallback.hourly, 0, 100_000_000),
    daily: int(env, `TESSERA_${channel}_BUDGET_DAILY`, fallback.daily, 0, 100_000_000),
  };
}

function otpSending(env: Env): OtpSendingConfig {
  const countries = parseCountryList(env.TESSERA_SMS_COUNTRIES ?? '');
  if ('error' in countries) throw new ConfigError(`TESSERA_SMS_COUNTRIES: ${countries.error}`);
  const verifierUrl = url(env, 'TESSERA_OTP_START_VERIFIER_URL', ['http:', 'https:']);
  const verifierTimeoutMs = int(env, 'TESSERA_OTP_START_VERIFIER_TIMEOUT', 5, 1, 60) * 1000;
  const channels = (env.TESSERA_OTP_START_VERIFIER_CHANNELS || 'sms,email').split(',').map((c) => c.trim());
  if (channels.some((c) => c !== 'sms' && c !== 'email')) {
    throw new ConfigError(
      `TESSERA_OTP_START_VERIFIER_CHANNELS must be sms, email or sms,email, got "${env.TESSERA_OTP_START_VERIFIER_CHANNELS?.slice(0, 40)}"`,
    );
  }
  return {
    budgets: {
      sms: sendBudget(env, 'SMS', { hourly: 200, daily: 1000 }),
      email: sendBudget(env, 'EMAIL', { hourly: 2000, daily: 20_000 }),
    },
    // Unset or empty: every country (a project may still restrict its own).
    smsCountries: countries.length > 0 ? countries : [EVERY_COUNTRY],
    smsPrefix: rateLimit(env, 'TESSERA_RATE_LIMIT_SMS_PREFIX', { limit: 10, window: 60 }),
    smsPrefixDigits: int(env, 'TESSERA_SMS_PREFIX_DIGITS', 4, 1, 12),
    startVerifier: verifierUrl
      ? {
          url: verifierUrl,
          token: env.TESSERA_OTP_START_VERIFIER_TOKEN || undefined,
          channels: [...new Set(channels as Array<'sms' | 'email'>)],
          timeoutMs: verifierTimeoutMs,
        }
      : undefined,
  };
}

/** 127.0.0.0/8, ::1 (also IPv4-mapped) and `localhost`: addresses only this machine reaches. */
function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.replace(/^::ffff:/, '');
  return isIP(v4) === 4 && v4.startsWith('127.');
}

/**
 * The development outbox shows every live code to whoever can reach the server, so it is only
 * served on a loopback address unless TESSERA_DEV_OUTBOX_PUBLIC=true says otherwise.
 */
function devOutboxPublic(env: Env, delivery: 'dev' | 'live', host: string): boolean {
  const allowed = bool(env, 'TESSERA_DEV_OUTBOX_PUBLIC', false);
  if (delivery === 'dev' && !allowed && !isLoopbackHost(host)) {
    throw new ConfigError(
      `TESSERA_HOST=${host.slice(0, 45)} is not loopback and TESSERA_DELIVERY=dev shows every code at /dev/outbox: bind 127.0.0.1 or set TESSERA_DEV_OUTBOX_PUBLIC=true`,
    );
  }
  return allowed;
}

/**
 * Reads the configuration from the environment once, validates every value and freezes it.
 * Every variable is listed in docs/CONFIGURATION.md.
 */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  return readConfig(env).config;
}

/** A `TESSERA_*` variable that nothing reads (a misspelling, usually), and the closest known name. */
export interface UnknownVariable {
  name: string;
  suggestion: string | undefined;
}

/**
 * loadConfig, and the `TESSERA_*` variables of `env` that are neither read by it nor listed in
 * KNOWN_VARIABLES (those read only in some modes, or by other code).
 */
export function readConfig(env: Env = process.env): {
  config: Readonly<Config>;
  unknown: UnknownVariable[];
} {
  const read = new Set<string>();
  const tracked = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return target[name as string];
    },
  });
  const config = parseConfig(tracked);
  const known = new Set([...KNOWN_VARIABLES, ...read]);
  const unknown = Object.keys(env)
    .filter((name) => name.startsWith('TESSERA_') && !known.has(name))
    .sort()
    .map((name) => ({ name, suggestion: closestName(name, known) }));
  return { config, unknown };
}

/**
 * Every `TESSERA_*` variable Tessera reads, each documented in docs/CONFIGURATION.md (a test
 * checks both ways). Unknown ones are warned about at start, with the closest of these.
 */
export const KNOWN_VARIABLES: readonly string[] = [
  'TESSERA_ENV',
  'TESSERA_HOST',
  'TESSERA_PORT',
  'TESSERA_ISSUER',
  'TESSERA_ALLOW_HTTP_ISSUER',
  'TESSERA_TRUST_PROXY',
  'TESSERA_BODY_LIMIT',
  'TESSERA_LOG_LEVEL',
  'TESSERA_LOG_FORMAT',
  'TESSERA_READYZ_DELIVERY',
  'TESSERA_DEMO',
  'TESSERA_DEMO_API_URL',
  'TESSERA_METRICS_TOKEN',
  'TESSERA_AUDIT_RETENTION_DAYS',
  'TESSERA_SECURITY_NOTICES',
  'TESSERA_VERIFY_CACHE_MB',
  'TESSERA_SQLITE_CACHE_MB',
  'TESSERA_RATE_LIMIT_OTP_GUESSES_DAILY',
  'TESSERA_DATA_DIR',
  'TESSERA_DATABASE_URL',
  'TESSERA_DATABASE_POOL_SIZE',
  'TESSERA_MASTER_KEY',
  'TESSERA_DATABASE_CONNECT_TIMEOUT',
  'TESSERA_DATABASE_STATEMENT_TIMEOUT',
  'TESSERA_DATABASE_IDLE_TIMEOUT',
  'TESSERA_HTTP_REQUEST_TIMEOUT',
  'TESSERA_HTTP_HEADERS_TIMEOUT',
  'TESSERA_HTTP_KEEP_ALIVE_TIMEOUT',
  'TESSERA_HTTP_IDLE_TIMEOUT',
  'TESSERA_SHUTDOWN_TIMEOUT',
  'TESSERA_ACCESS_TOKEN_TTL',
  'TESSERA_ID_TOKEN_TTL',
  'TESSERA_REFRESH_TOKEN_TTL',
  'TESSERA_REFRESH_GRACE',
  'TESSERA_CLOCK_LEEWAY',
  'TESSERA_KEY_ROTATION_DELAY',
  'TESSERA_KEY_ROTATION_PERIOD',
  'TESSERA_OTP_TTL',
  'TESSERA_OTP_MAX_ATTEMPTS',
  'TESSERA_OTP_RESEND_INTERVAL',
  'TESSERA_RATE_LIMIT_OTP_START',
  'TESSERA_RATE_LIMIT_OTP_START_CEILING',
  'TESSERA_RATE_LIMIT_OTP_GUESSES',
  'TESSERA_RATE_LIMIT_OTP_GUESSES_CEILING',
  'TESSERA_RATE_LIMIT_IP',
  'TESSERA_DELIVERY',
  'TESSERA_SMTP_URL',
  'TESSERA_MAIL_FROM',
  'TESSERA_SMS_URL',
  'TESSERA_SMS_TOKEN',
  'TESSERA_SMS_FROM',
  'TESSERA_SMS_PROVIDER',
  'TESSERA_TWILIO_ACCOUNT_SID',
  'TESSERA_TWILIO_AUTH_TOKEN',
  'TESSERA_TWILIO_URL',
  'TESSERA_VONAGE_API_KEY',
  'TESSERA_VONAGE_API_SECRET',
  'TESSERA_VONAGE_URL',
  'TESSERA_SNS_REGION',
  'TESSERA_SNS_ACCESS_KEY_ID',
  'TESSERA_SNS_SECRET_ACCESS_KEY',
  'TESSERA_SNS_SESSION_TOKEN',
  'TESSERA_SNS_URL',
  'TESSERA_WEBHOOK_BACKOFF',
  'TESSERA_WEBHOOK_TIMEOUT',
  'TESSERA_WEBHOOK_ALLOW_PRIVATE',
  'TESSERA_WEBHOOK_MAX_ENDPOINTS',
  'TESSERA_WEBHOOK_DELIVERIES_PER_MINUTE',
  'TESSERA_OPERATOR_TOKEN',
  'TESSERA_CONSOLE',
  'TESSERA_DATABASE_WAIT',
  'TESSERA_WORKERS',
  // Read by the test suite, not the server.
  'TESSERA_TEST_DATABASE_URL',
  'TESSERA_TEST_LOG_LEVEL',
  'TESSERA_DATABASE_LISTEN_URL',
  'TESSERA_DEV_OUTBOX_PUBLIC',
  'TESSERA_EMAIL_BUDGET_DAILY',
  'TESSERA_EMAIL_BUDGET_HOURLY',
  'TESSERA_OTP_START_VERIFIER_CHANNELS',
  'TESSERA_OTP_START_VERIFIER_TIMEOUT',
  'TESSERA_OTP_START_VERIFIER_TOKEN',
  'TESSERA_OTP_START_VERIFIER_URL',
  'TESSERA_RATE_LIMIT_SMS_PREFIX',
  'TESSERA_SMS_BUDGET_DAILY',
  'TESSERA_SMS_BUDGET_HOURLY',
  'TESSERA_SMS_COUNTRIES',
  'TESSERA_SMS_PREFIX_DIGITS',
];

/** The known name nearest to `name` (at most 3 edits away, transpositions counting one), if any. */
function closestName(name: string, known: Iterable<string>): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    if (!candidate.startsWith('TESSERA_')) continue;
    const distance = editDistance(name, candidate);
    if (distance <= 3 && (!best || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions, adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const row = rows[i]!;
      row[j] = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        row[j] = Math.min(row[j]!, rows[i - 2]![j - 2]! + 1);
    }
  }
  return rows[a.length]![b.length]!;
}

/** The bearer token of the operator API: long enough that guessing it is hopeless. */
function operatorToken(env: Env): string | undefined {
  const raw = env.TESSERA_OPERATOR_TOKEN;
  if (raw === undefined || raw === '') return undefined;
  if (raw.length < 32 || /\s/.test(raw)) {
    throw new ConfigError(
      'TESSERA_OPERATOR_TOKEN must be at least 32 characters without spaces (e.g. `openssl rand -base64 32`)',
    );
  }
  return raw;
}

/** `TESSERA_PORT`, else `PORT` (what platforms as a service set), else 8080. */
function listenPort(env: Env): number {
  const own = env.TESSERA_PORT;
  if (own !== undefined && own !== '') return int(env, 'TESSERA_PORT', 8080, 0, 65535);
  return int(env, 'PORT', 8080, 0, 65535);
}

function parseConfig(env: Env): Readonly<Config> {
  const rawEnv =
    env.TESSERA_ENV ??
    (env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development');
  if (rawEnv !== 'development' && rawEnv !== 'production' && rawEnv !== 'test') {
    throw new ConfigError(`TESSERA_ENV must be development, production or test, got "${rawEnv}"`);
  }
  const production = rawEnv === 'production';
  const port = listenPort(env);
  const issuer = (url(env, 'TESSERA_ISSUER', ['http:', 'https:']) ?? `http://localhost:${port}`).replace(
    /\/+$/,
    '',
  );
  if (production && issuer.startsWith('http:') && !bool(env, 'TESSERA_ALLOW_HTTP_ISSUER', false)) {
    throw new ConfigError(
      'TESSERA_ISSUER must be https:// in production (set TESSERA_ALLOW_HTTP_ISSUER=true to override)',
    );
  }
  const dataDir = resolve(env.TESSERA_DATA_DIR || './data');
  const databaseUrl = env.TESSERA_DATABASE_URL || `sqlite:${resolve(dataDir, 'tessera.db')}`;
  if (!/^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    throw new ConfigError('TESSERA_DATABASE_URL must be sqlite:<path> or postgres://…');
  }
  if (!databaseUrl.startsWith('sqlite:')) checkPostgresUrl('TESSERA_DATABASE_URL', databaseUrl);
  const masterKey = env.TESSERA_MASTER_KEY || undefined;
  if (production && !masterKey) {
    throw new ConfigError(
      'TESSERA_MASTER_KEY is required in production (32 random bytes, base64: `openssl rand -base64 32`)',
    );
  }
  const smtpUrl = url(env, 'TESSERA_SMTP_URL', ['smtp:', 'smtps:']);
  const smsUrl = url(env, 'TESSERA_SMS_URL', ['http:', 'https:']);
  const smsProvider = parseSmsProvider(env);
  if (smsProvider && 'error' in smsProvider) throw new ConfigError(smsProvider.error);
  const deliveryRaw = env.TESSERA_DELIVERY || (smtpUrl || smsProvider ? 'live' : 'dev');
  if (deliveryRaw !== 'dev' && deliveryRaw !== 'live') {
    throw new ConfigError(`TESSERA_DELIVERY must be dev or live, got "${deliveryRaw}"`);
  }
  if (production && deliveryRaw === 'dev') {
    throw new ConfigError(
      'TESSERA_DELIVERY=dev shows sign-in codes at /dev/outbox and is refused in production',
    );
  }
  const accessTokenTtl = int(
    env,
    'TESSERA_ACCESS_TOKEN_TTL',
    TOKEN_TTL_DEFAULTS.access,
    TOKEN_TTL_MIN.access,
    86400,
  );
  const requestTimeout = int(env, 'TESSERA_HTTP_REQUEST_TIMEOUT', 30, 1, 600);
  const headersTimeout = int(env, 'TESSERA_HTTP_HEADERS_TIMEOUT', Math.min(10, requestTimeout), 1, 600);
  // Node refuses a headers timeout longer than the request timeout.
  if (headersTimeout > requestTimeout) {
    throw new ConfigError(
      `TESSERA_HTTP_HEADERS_TIMEOUT (${headersTimeout}) must not exceed TESSERA_HTTP_REQUEST_TIMEOUT (${requestTimeout})`,
    );
  }
  const host = env.TESSERA_HOST || (production ? '0.0.0.0' : '127.0.0.1');
  const config: Config = {
    env: rawEnv,
    host,
    port,
    issuer,
    databaseUrl,
    dataDir,
    masterKey,
    logLevel: logLevel(env, rawEnv === 'test' ? 'silent' : 'info'),
    logFormat: logFormat(env),
    readyzDelivery: bool(env, 'TESSERA_READYZ_DELIVERY', false),
    trustProxy: trustProxy(env, 'TESSERA_TRUST_PROXY'),
    securityNotices: bool(env, 'TESSERA_SECURITY_NOTICES', true),
    verifyCacheBytes: int(env, 'TESSERA_VERIFY_CACHE_MB', 16, 1, 1024) * 1024 * 1024,
    sqliteCacheKiB: int(env, 'TESSERA_SQLITE_CACHE_MB', 4, 1, 1024) * 1024,
    bodyLimit: int(env, 'TESSERA_BODY_LIMIT', 16 * 1024, 1024, 1024 * 1024),
    accessTokenTtl,
    idTokenTtl: int(env, 'TESSERA_ID_TOKEN_TTL', TOKEN_TTL_DEFAULTS.id, TOKEN_TTL_MIN.id, 86400),
    refreshTokenTtl: int(
      env,
      'TESSERA_REFRESH_TOKEN_TTL',
      TOKEN_TTL_DEFAULTS.refresh,
      TOKEN_TTL_MIN.refresh,
      365 * 86400,
    ),
    refreshGrace: int(env, 'TESSERA_REFRESH_GRACE', 30, 0, 120),
    clockLeeway: int(env, 'TESSERA_CLOCK_LEEWAY', 5, 0, 300),
    otp: {
      ttl: int(env, 'TESSERA_OTP_TTL', 300, 30, 3600),
      maxAttempts: int(env, 'TESSERA_OTP_MAX_ATTEMPTS', 5, 1, 20),
      resendInterval: int(env, 'TESSERA_OTP_RESEND_INTERVAL', 30, 0, 3600),
    },
    rateLimits: {
      otpStartPerIdentifier: rateLimit(env, 'TESSERA_RATE_LIMIT_OTP_START', { limit: 5, window: 900 }),
      otpGuessesPerIdentifier: rateLimit(env, 'TESSERA_RATE_LIMIT_OTP_GUESSES', { limit: 10, window: 900 }),
      otpStartCeiling: rateLimit(env, 'TESSERA_RATE_LIMIT_OTP_START_CEILING', { limit: 30, window: 3600 }),
      otpGuessesCeiling: rateLimit(env, 'TESSERA_RATE_LIMIT_OTP_GUESSES_CEILING', {
        limit: 100,
        window: 86400,
      }),
      otpGuessesPerNetworkDaily: rateLimit(env, 'TESSERA_RATE_LIMIT_OTP_GUESSES_DAILY', {
        limit: 20,
        window: 86400,
      }),
      perIp: rateLimit(env, 'TESSERA_RATE_LIMIT_IP', { limit: 60, window: 60 }),
    },
    delivery: {
      mode: deliveryRaw,
      smtpUrl,
      mailFrom: env.TESSERA_MAIL_FROM || 'Tessera <no-reply@localhost>',
      smsUrl,
      smsToken: env.TESSERA_SMS_TOKEN || undefined,
      smsFrom: env.TESSERA_SMS_FROM || undefined,
      smsProvider,
    },
    keys: {
      rotationDelay: int(env, 'TESSERA_KEY_ROTATION_DELAY', 86400, 0, 30 * 86400),
      rotationPeriod: int(env, 'TESSERA_KEY_ROTATION_PERIOD', 0, 0, 10 * 365 * 86400),
    },
    webhooks: {
      backoff: secondsList(env, 'TESSERA_WEBHOOK_BACKOFF', [5, 60, 300, 1800, 7200, 18000, 36000, 86400]),
      timeoutMs: int(env, 'TESSERA_WEBHOOK_TIMEOUT', 10, 1, 60) * 1000,
      allowPrivate: bool(env, 'TESSERA_WEBHOOK_ALLOW_PRIVATE', !production),
      maxEndpoints: int(env, 'TESSERA_WEBHOOK_MAX_ENDPOINTS', 10, 1, 1000),
      deliveriesPerMinute: int(env, 'TESSERA_WEBHOOK_DELIVERIES_PER_MINUTE', 600, 1, 1_000_000),
    },
    metricsToken: env.TESSERA_METRICS_TOKEN || undefined,
    otpSending: otpSending(env),
    devOutboxPublic: devOutboxPublic(env, deliveryRaw, host),
    auditRetentionDays: int(env, 'TESSERA_AUDIT_RETENTION_DAYS', 365, 0, 36500),
    databasePoolSize: int(env, 'TESSERA_DATABASE_POOL_SIZE', 10, 1, 1000),
    databaseTimeouts: {
      connectMs: int(env, 'TESSERA_DATABASE_CONNECT_TIMEOUT', 5, 1, 300) * 1000,
      statementMs: int(env, 'TESSERA_DATABASE_STATEMENT_TIMEOUT', 5, 1, 3600) * 1000,
      idleMs: int(env, 'TESSERA_DATABASE_IDLE_TIMEOUT', 30, 1, 3600) * 1000,
    },
    http: {
      requestTimeoutMs: requestTimeout * 1000,
      headersTimeoutMs: headersTimeout * 1000,
      keepAliveTimeoutMs: int(env, 'TESSERA_HTTP_KEEP_ALIVE_TIMEOUT', 5, 1, 600) * 1000,
      socketTimeoutMs: int(env, 'TESSERA_HTTP_IDLE_TIMEOUT', 60, 1, 3600) * 1000,
    },
    shutdownTimeoutMs: int(env, 'TESSERA_SHUTDOWN_TIMEOUT', 10, 1, 600) * 1000,
    demo: bool(env, 'TESSERA_DEMO', !production),
    console: bool(env, 'TESSERA_CONSOLE', !production),
    demoApiUrl: url(env, 'TESSERA_DEMO_API_URL', ['http:', 'https:']) ?? 'http://127.0.0.1:3001',
    databaseListenUrl: databaseListenUrl(env, databaseUrl),
    operatorToken: operatorToken(env),
    databaseWaitMs: int(env, 'TESSERA_DATABASE_WAIT', 60, 0, 3600) * 1000,
    workers: int(env, 'TESSERA_WORKERS', production ? availableParallelism() : 1, 1, 256),
  };
  return Object.freeze(config);
}
