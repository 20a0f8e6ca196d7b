import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';

/** `json`: one object per line (production, log shippers); `pretty`: coloured lines for a terminal. */
export type LogFormat = 'json' | 'pretty';

const require = createRequire(import.meta.url);

/**
 * The pino-pretty stream, loaded on demand: it is a development dependency, absent from a
 * production install (`npm ci --omit=dev`, the container image).
 */
function prettyStream(destination: pino.DestinationStream | undefined): pino.DestinationStream {
  let pretty: (options: Record<string, unknown>) => pino.DestinationStream;
  try {
    pretty = require('pino-pretty') as typeof pretty;
  } catch (error) {
    throw new Error(
      'TESSERA_LOG_FORMAT=pretty needs pino-pretty, a development dependency: install it (npm install pino-pretty) or unset TESSERA_LOG_FORMAT',
      { cause: error },
    );
  }
  return pretty({
    colorize: destination === undefined && process.stdout.isTTY,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service',
    ...(destination ? { destination } : {}),
  });
}

/**
 * A `code` that names an error rather than holding a secret: a Node, nodemailer or SQLite error
 * code (`ECONNREFUSED`, `EAUTH`, `ERR_INVALID_URL`, `SQLITE_BUSY`: an upper-case letter first) or,
 * on a logged error, a PostgreSQL SQLSTATE (`23505`, `57P01`). One-time codes are digits only,
 * so they never pass for the first, and are never an error's own `code`.
 */
const ERROR_CODE = /^[A-Z][A-Z0-9_]{1,63}$/;
const SQLSTATE = /^[0-9A-Z]{5}$/;

function censor(value: unknown, path: string[]): unknown {
  if (path.at(-1) === 'code' && typeof value === 'string') {
    if (ERROR_CODE.test(value)) return value;
    if (path[0] === 'err' && SQLSTATE.test(value)) return value;
  }
  return '[redacted]';
}

/**
 * The service logger. Redaction is the second line of defence: code never logs a secret, and
 * these paths are censored should one ever reach a log call anyway (pretty output is formatted
 * after redaction, so it shows no more than the JSON would).
 */
export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  format: LogFormat = 'json',
): Logger {
  return pino(
    {
      level,
      base: { service: 'tessera' },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'headers.authorization',
          '*.code',
          '*.pin',
          '*.secret',
          '*.api_key_secret',
          '*.access_token',
          '*.id_token',
          '*.refresh_token',
          '*.token',
          '*.password',
          'body',
          '*.body',
          // node-postgres errors: `detail` quotes the values of the row or key that failed a
          // constraint ("Failing row contains (…)"), `where` and `internalQuery` the SQL around it.
          'err.detail',
          'err.where',
          'err.internalQuery',
          'err.aggregateErrors[*].detail',
        ],
        censor,
      },
    },
    format === 'pretty' ? prettyStream(destination) : destination,
  );
}
