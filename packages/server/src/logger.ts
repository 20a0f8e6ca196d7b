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
        ],
        censor: '[redacted]',
      },
    },
    format === 'pretty' ? prettyStream(destination) : destination,
  );
}
