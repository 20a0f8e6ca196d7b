import pino, { type Logger } from 'pino';

/**
 * The service logger. Redaction is the second line of defence: code never logs a secret, and
 * these paths are censored should one ever reach a log call anyway.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
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
    destination,
  );
}
