import { resolve } from 'node:path';

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
  trustProxy: boolean;
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
    perIp: RateLimit;
  };
  delivery: {
    mode: 'dev' | 'live';
    smtpUrl: string | undefined;
    mailFrom: string;
    smsUrl: string | undefined;
    smsToken: string | undefined;
    smsFrom: string | undefined;
  };
  keys: {
    /** Seconds between publishing a new key and signing with it. */
    rotationDelay: number;
    /** Seconds between automatic rotations; 0 turns them off. */
    rotationPeriod: number;
  };
  webhooks: { backoff: number[]; timeoutMs: number };
  /** Days audit events are kept; 0 keeps them for ever. */
  auditRetentionDays: number;
  /** PostgreSQL connection pool size per instance. */
  databasePoolSize: number;
  /** Bearer token for GET /metrics; unset leaves it open (bind it to an internal network). */
  metricsToken: string | undefined;
  /** Create the `demo` project on first start and print its credentials. */
  demo: boolean;
  /** The sample backend the demo page calls (examples/express-api). */
  demoApiUrl: string;
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

function rateLimit(env: Env, name: string, fallback: RateLimit): RateLimit {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(raw);
  if (!match)
    throw new ConfigError(`${name} must look like "LIMIT/WINDOW_SECONDS" (e.g. "5/900"), got "${raw}"`);
  const limit = Number(match[1]);
  const window = Number(match[2]);
  if (limit < 1 || window < 1) throw new ConfigError(`${name} needs a limit and a window of at least 1`);
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
 * Reads the configuration from the environment once, validates every value and freezes it.
 * Every variable is listed in docs/CONFIGURATION.md.
 */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  const rawEnv =
    env.TESSERA_ENV ??
    (env.NODE_ENV === 'production' ? 'production' : env.NODE_ENV === 'test' ? 'test' : 'development');
  if (rawEnv !== 'development' && rawEnv !== 'production' && rawEnv !== 'test') {
    throw new ConfigError(`TESSERA_ENV must be development, production or test, got "${rawEnv}"`);
  }
  const production = rawEnv === 'production';
  const port = int(env, 'TESSERA_PORT', 8080, 0, 65535);
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
  const masterKey = env.TESSERA_MASTER_KEY || undefined;
  if (production && !masterKey) {
    throw new ConfigError(
      'TESSERA_MASTER_KEY is required in production (32 random bytes, base64: `openssl rand -base64 32`)',
    );
  }
  const smtpUrl = url(env, 'TESSERA_SMTP_URL', ['smtp:', 'smtps:']);
  const smsUrl = url(env, 'TESSERA_SMS_URL', ['http:', 'https:']);
  const deliveryRaw = env.TESSERA_DELIVERY || (smtpUrl || smsUrl ? 'live' : 'dev');
  if (deliveryRaw !== 'dev' && deliveryRaw !== 'live') {
    throw new ConfigError(`TESSERA_DELIVERY must be dev or live, got "${deliveryRaw}"`);
  }
  if (production && deliveryRaw === 'dev') {
    throw new ConfigError(
      'TESSERA_DELIVERY=dev shows sign-in codes at /dev/outbox and is refused in production',
    );
  }
  const accessTokenTtl = int(env, 'TESSERA_ACCESS_TOKEN_TTL', 3600, 30, 86400);
  const config: Config = {
    env: rawEnv,
    host: env.TESSERA_HOST || (production ? '0.0.0.0' : '127.0.0.1'),
    port,
    issuer,
    databaseUrl,
    dataDir,
    masterKey,
    logLevel: logLevel(env, rawEnv === 'test' ? 'silent' : 'info'),
    trustProxy: bool(env, 'TESSERA_TRUST_PROXY', false),
    bodyLimit: int(env, 'TESSERA_BODY_LIMIT', 16 * 1024, 1024, 1024 * 1024),
    accessTokenTtl,
    idTokenTtl: int(env, 'TESSERA_ID_TOKEN_TTL', 3600, 30, 86400),
    refreshTokenTtl: int(env, 'TESSERA_REFRESH_TOKEN_TTL', 30 * 86400, 60, 365 * 86400),
    refreshGrace: int(env, 'TESSERA_REFRESH_GRACE', 10, 0, 120),
    clockLeeway: int(env, 'TESSERA_CLOCK_LEEWAY', 5, 0, 300),
    otp: {
      ttl: int(env, 'TESSERA_OTP_TTL', 300, 30, 3600),
      maxAttempts: int(env, 'TESSERA_OTP_MAX_ATTEMPTS', 5, 1, 20),
      resendInterval: int(env, 'TESSERA_OTP_RESEND_INTERVAL', 30, 0, 3600),
    },
    rateLimits: {
      otpStartPerIdentifier: rateLimit(env, 'TESSERA_RATE_LIMIT_OTP_START', { limit: 5, window: 900 }),
      otpGuessesPerIdentifier: rateLimit(env, 'TESSERA_RATE_LIMIT_OTP_GUESSES', { limit: 10, window: 900 }),
      perIp: rateLimit(env, 'TESSERA_RATE_LIMIT_IP', { limit: 60, window: 60 }),
    },
    delivery: {
      mode: deliveryRaw,
      smtpUrl,
      mailFrom: env.TESSERA_MAIL_FROM || 'Tessera <no-reply@localhost>',
      smsUrl,
      smsToken: env.TESSERA_SMS_TOKEN || undefined,
      smsFrom: env.TESSERA_SMS_FROM || undefined,
    },
    keys: {
      rotationDelay: int(env, 'TESSERA_KEY_ROTATION_DELAY', 86400, 0, 30 * 86400),
      rotationPeriod: int(env, 'TESSERA_KEY_ROTATION_PERIOD', 0, 0, 10 * 365 * 86400),
    },
    webhooks: {
      backoff: secondsList(env, 'TESSERA_WEBHOOK_BACKOFF', [5, 60, 300, 1800, 7200, 18000, 36000, 86400]),
      timeoutMs: int(env, 'TESSERA_WEBHOOK_TIMEOUT', 10, 1, 60) * 1000,
    },
    metricsToken: env.TESSERA_METRICS_TOKEN || undefined,
    auditRetentionDays: int(env, 'TESSERA_AUDIT_RETENTION_DAYS', 365, 0, 36500),
    databasePoolSize: int(env, 'TESSERA_DATABASE_POOL_SIZE', 10, 1, 1000),
    demo: bool(env, 'TESSERA_DEMO', !production),
    demoApiUrl: url(env, 'TESSERA_DEMO_API_URL', ['http:', 'https:']) ?? 'http://127.0.0.1:3001',
  };
  return Object.freeze(config);
}
