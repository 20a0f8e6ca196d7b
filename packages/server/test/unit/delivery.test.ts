import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { type AddressInfo, createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { DeliveryError, type OtpMessage } from '../../src/modules/otp/delivery/delivery.js';
import { DevOutbox } from '../../src/modules/otp/delivery/dev-outbox.js';
import { HttpSmsDelivery } from '../../src/modules/otp/delivery/sms.js';
import { SmtpDelivery } from '../../src/modules/otp/delivery/smtp.js';

const CODE = '482913';
const SMTP_USER = 'mailer@acme.example';
// Characters that must be percent-decoded from the URL, and a string no error may echo.
const SMTP_PASS = 'pw:s3cr3t/ä@x';
const SMS_TOKEN = 'sms-token-7c1d0e5f';

/** Every log line written during one test; the code must never be among them. */
let logLines: string[] = [];
const logger = pino(
  { level: 'trace', base: null, timestamp: false },
  { write: (line: string) => void logLines.push(line) },
);

beforeEach(() => {
  logLines = [];
});

afterEach(() => {
  for (const line of logLines) {
    assert.ok(!line.includes(CODE), `log line contains the code: ${line}`);
    assert.ok(
      !line.includes(SMTP_PASS) && !line.includes(encodeURIComponent(SMTP_PASS)),
      'log line has the password',
    );
    assert.ok(!line.includes(SMS_TOKEN), 'log line contains the SMS token');
  }
});

function otp(overrides: Partial<OtpMessage> = {}): OtpMessage {
  return {
    to: 'ada@example.com',
    channel: 'email',
    code: CODE,
    projectName: 'Acme',
    expiresInSeconds: 600,
    ...overrides,
  };
}

/** Resolves to the DeliveryError `promise` rejects with, after checking it reveals no secret. */
async function deliveryError(promise: Promise<unknown>, ...secrets: string[]): Promise<DeliveryError> {
  const err = await promise.then(
    () => assert.fail('expected a DeliveryError'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof DeliveryError, `expected DeliveryError, got ${String(err)}`);
  assert.equal(err.name, 'DeliveryError');
  for (const secret of [CODE, ...secrets]) {
    assert.ok(!err.message.includes(secret), `error message reveals a secret: ${err.message}`);
  }
  // The way a handler would log it: pino's err serializer also prints the cause's message.
  logger.error({ err }, 'delivery failed');
  return err;
}

async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface ReceivedMail {
  mailFrom: string;
  rcptTo: string[];
  raw: string;
}

async function startSmtpServer(options: Partial<SMTPServerOptions> = {}) {
  const received: ReceivedMail[] = [];
  let connections = 0;
  let closes = 0;
  const server = new SMTPServer({
    authOptional: false,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onConnect(_session, callback) {
      connections++;
      callback();
    },
    onClose() {
      closes++;
    },
    onAuth(auth, _session, callback) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASS) callback(null, { user: auth.username });
      else callback(new Error('Invalid username or password'));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const { mailFrom, rcptTo } = session.envelope;
        received.push({
          mailFrom: mailFrom ? mailFrom.address : '',
          rcptTo: rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
    ...options,
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return {
    received,
    connections: () => connections,
    closes: () => closes,
    url: (pass = SMTP_PASS) =>
      `smtp://${encodeURIComponent(SMTP_USER)}:${encodeURIComponent(pass)}@127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function eventually(check: () => boolean, ms = 2000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('SmtpDelivery', () => {
  const from = 'Acme <no-reply@acme.example>';

  it('sends the code to a real SMTP server after authenticating', async () => {
    const smtp = await startSmtpServer();
    const delivery = new SmtpDelivery({ url: smtp.url(), from }, logger);
    try {
      await delivery.send(otp());
      assert.equal(smtp.received.length, 1);
      const mail = smtp.received[0]!;
      assert.equal(mail.mailFrom, 'no-reply@acme.example');
      assert.deepEqual(mail.rcptTo, ['ada@example.com']);
      assert.match(mail.raw, /^To: ada@example\.com\r$/m);
      assert.match(mail.raw, /^From: Acme <no-reply@acme\.example>\r$/m);
      assert.match(mail.raw, /^Subject: Your Acme sign-in code\r$/m);
      assert.match(mail.raw, /Content-Type: text\/plain/);
      assert.match(mail.raw, /Content-Type: text\/html/);
      assert.ok(mail.raw.includes(CODE), 'mail body lacks the code');
      assert.match(mail.raw, /expires in 10 minutes/);
      assert.match(mail.raw, /did not ask for this code, you can ignore/);
    } finally {
      await delivery.close();
      await smtp.close();
    }
  });

  it('reuses one pooled connection and closes it in close()', async () => {
    const smtp = await startSmtpServer();
    const delivery = new SmtpDelivery({ url: smtp.url(), from }, logger);
    try {
      await delivery.send(otp());
      await delivery.send(otp({ to: 'grace@example.com', expiresInSeconds: 60 }));
      assert.equal(smtp.received.length, 2);
      assert.match(smtp.received[1]!.raw, /expires in 1 minute\./);
      assert.equal(smtp.connections(), 1);
      assert.equal(smtp.closes(), 0);
      await delivery.close();
      await eventually(() => smtp.closes() === 1);
      await deliveryError(delivery.send(otp()));
    } finally {
      await delivery.close();
      await smtp.close();
    }
  });

  it('reports a wrong password without revealing it or the code', async () => {
    const smtp = await startSmtpServer();
    const wrong = 'wrong-pass-9f2c';
    const delivery = new SmtpDelivery({ url: smtp.url(wrong), from }, logger);
    try {
      const err = await deliveryError(delivery.send(otp()), wrong, SMTP_PASS, encodeURIComponent(wrong));
      assert.match(err.message, /^SMTP authentication failed/);
      assert.ok(err.cause instanceof Error, 'the nodemailer error is kept as cause');
      assert.ok(!err.message.includes('ada@example.com'));
      assert.equal(smtp.received.length, 0);
      assert.ok(logLines.every((line) => !line.includes(wrong)));
    } finally {
      await delivery.close();
      await smtp.close();
    }
  });

  it('reports a recipient the server refuses', async () => {
    const smtp = await startSmtpServer({
      onRcptTo(_address, _session, callback) {
        callback(Object.assign(new Error('No such mailbox here'), { responseCode: 550 }));
      },
    });
    const delivery = new SmtpDelivery({ url: smtp.url(), from }, logger);
    try {
      const err = await deliveryError(delivery.send(otp()), SMTP_PASS, 'ada@example.com');
      assert.equal(err.message, 'SMTP server rejected the recipient (550)');
      assert.equal(smtp.received.length, 0);
    } finally {
      await delivery.close();
      await smtp.close();
    }
  });

  it('reports an unreachable server', async () => {
    const port = await freePort();
    const delivery = new SmtpDelivery(
      { url: `smtp://${SMTP_USER}:${encodeURIComponent(SMTP_PASS)}@127.0.0.1:${port}`, from },
      logger,
    );
    try {
      const err = await deliveryError(delivery.send(otp()), SMTP_PASS);
      assert.equal(err.message, 'SMTP connection failed');
    } finally {
      await delivery.close();
    }
  });

  it('gives up on a server that never greets after timeoutMs', { timeout: 10_000 }, async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createTcpServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const delivery = new SmtpDelivery(
      { url: `smtp://u:${encodeURIComponent(SMTP_PASS)}@127.0.0.1:${port}`, from, timeoutMs: 150 },
      logger,
    );
    try {
      const err = await deliveryError(delivery.send(otp()), SMTP_PASS);
      assert.equal(err.message, 'SMTP server timed out');
    } finally {
      await delivery.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('rejects an SMS message and a recipient that is not a single address', async () => {
    const delivery = new SmtpDelivery({ url: 'smtp://127.0.0.1:1', from }, logger);
    try {
      await deliveryError(delivery.send(otp({ channel: 'sms', to: '+4917012345678' })));
      await deliveryError(delivery.send(otp({ to: 'ada@example.com, eve@evil.example' })));
    } finally {
      await delivery.close();
    }
  });

  it('fails fast on a bad URL without echoing it', () => {
    for (const url of ['not a url', `http://u:${SMTP_PASS}@host`]) {
      assert.throws(
        () => new SmtpDelivery({ url, from }, logger),
        (err: unknown) =>
          err instanceof TypeError && !err.message.includes(SMTP_PASS) && err.cause === undefined,
      );
    }
  });
});

interface SmsRequest {
  method: string | undefined;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A local SMS provider answering each request with the next status (the last one repeats). */
async function startSmsReceiver(statuses: number[], delayMs = 0) {
  const requests: SmsRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({
        method: req.method,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const status = statuses[Math.min(requests.length, statuses.length) - 1]!;
      const timer = setTimeout(() => {
        timers.delete(timer);
        res.writeHead(status, { 'content-type': 'application/json' }).end(`{"echo":"${CODE}"}`);
      }, delayMs);
      timers.add(timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/messages`,
    requests,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('HttpSmsDelivery', () => {
  const sms = (overrides: Partial<OtpMessage> = {}) =>
    otp({ channel: 'sms', to: '+4917012345678', expiresInSeconds: 300, ...overrides });

  it('posts the text as JSON with bearer token and an idempotency key', async () => {
    const receiver = await startSmsReceiver([200]);
    const delivery = new HttpSmsDelivery({ url: receiver.url, token: SMS_TOKEN, from: 'Acme' }, logger);
    try {
      await delivery.send(sms());
      assert.equal(receiver.requests.length, 1);
      const request = receiver.requests[0]!;
      assert.equal(request.method, 'POST');
      assert.equal(request.headers['authorization'], `Bearer ${SMS_TOKEN}`);
      assert.equal(request.headers['content-type'], 'application/json');
      assert.match(
        String(request.headers['idempotency-key']),
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      );
      assert.deepEqual(JSON.parse(request.body), {
        to: '+4917012345678',
        from: 'Acme',
        body: `${CODE} is your Acme sign-in code. It expires in 5 minutes.`,
      });
    } finally {
      await delivery.close();
      await receiver.close();
    }
  });

  it('sends no Authorization header and no from without token and sender', async () => {
    const receiver = await startSmsReceiver([202]);
    const delivery = new HttpSmsDelivery({ url: receiver.url }, logger);
    try {
      await delivery.send(sms());
      const request = receiver.requests[0]!;
      assert.equal(request.headers['authorization'], undefined);
      assert.deepEqual(Object.keys(JSON.parse(request.body)), ['to', 'body']);
    } finally {
      await delivery.close();
      await receiver.close();
    }
  });

  it('retries once after a 5xx with the same idempotency key', async () => {
    const receiver = await startSmsReceiver([500, 200]);
    const delivery = new HttpSmsDelivery({ url: receiver.url, token: SMS_TOKEN, retryDelayMs: 0 }, logger);
    try {
      await delivery.send(sms());
      assert.equal(receiver.requests.length, 2);
      const [first, second] = receiver.requests;
      assert.equal(first!.headers['idempotency-key'], second!.headers['idempotency-key']);
      assert.equal(first!.body, second!.body);
    } finally {
      await delivery.close();
      await receiver.close();
    }
  });

  it('gives up after the one retry when the provider keeps failing', async () => {
    const receiver = await startSmsReceiver([502]);
    const delivery = new HttpSmsDelivery({ url: receiver.url, token: SMS_TOKEN, retryDelayMs: 0 }, logger);
    try {
      const err = await deliveryError(delivery.send(sms()), SMS_TOKEN);
      assert.equal(err.message, 'SMS provider answered 502; unknown whether sent');
      assert.equal(err.unknown, true);
      assert.equal(receiver.requests.length, 2);
    } finally {
      await delivery.close();
      await receiver.close();
    }
  });

  it('does not retry a 4xx', async () => {
    const receiver = await startSmsReceiver([400, 200]);
    const delivery = new HttpSmsDelivery({ url: receiver.url, token: SMS_TOKEN, retryDelayMs: 0 }, logger);
    try {
      const err = await deliveryError(delivery.send(sms()), SMS_TOKEN, '+4917012345678');
      assert.equal(err.message, 'SMS provider answered 400');
      assert.equal(receiver.requests.length, 1);
    } finally {
      await delivery.close();
      await receiver.close();
    }
  });

  // The provider answers after 20 s and the test gives up after 10 s: only the client's own
  // timeout can end it in time (no timed assertion needed).
  it('times out a slow provider after timeoutMs', { timeout: 10_000 }, async () => {
    const receiver = await startSmsReceiver([200], 20_000);
    const delivery = new HttpSmsDelivery({ url: receiver.url, token: SMS_TOKEN, timeoutMs: 200 }, logger);
    try {
      const err = await deliveryError(delivery.send(sms()), SMS_TOKEN);
      assert.equal(err.message, 'SMS provider timed out; unknown whether sent');
      // A timeout is not retried (the provider may have taken the message). Under load the
      // request may time out before the receiver has even recorded it.
      assert.ok(receiver.requests.length <= 1, 'a timed-out request was retried');
    } finally {
      await delivery.close();
      await receiver.close();
    }
  });

  // The gateway took the request, then the connection broke before its answer: it may have sent
  // the SMS, and the same Idempotency-Key lets it drop the repeat.
  it('retries a request whose connection broke after it was written, with the same idempotency key', async () => {
    const requests: SmsRequest[] = [];
    const server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        requests.push({
          method: req.method,
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
        if (requests.length === 1) req.socket.destroy();
        else res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const delivery = new HttpSmsDelivery(
      { url: `http://127.0.0.1:${port}/sms`, token: SMS_TOKEN, retryDelayMs: 0 },
      logger,
    );
    try {
      await delivery.send(sms());
      assert.equal(requests.length, 2);
      const [first, second] = requests;
      assert.match(String(first!.headers['idempotency-key']), /^[0-9a-f-]{36}$/);
      assert.equal(first!.headers['idempotency-key'], second!.headers['idempotency-key']);
      assert.equal(first!.body, second!.body);
      const retry = logLines.find((line) => line.includes('retrying once'));
      assert.match(String(retry), /unknown whether sent, retrying once with the same idempotency key/);
    } finally {
      await delivery.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('retries once and then reports an unreachable provider', async () => {
    const port = await freePort();
    const delivery = new HttpSmsDelivery(
      { url: `http://127.0.0.1:${port}/sms`, token: SMS_TOKEN, retryDelayMs: 0 },
      logger,
    );
    const err = await deliveryError(delivery.send(sms()), SMS_TOKEN);
    assert.equal(err.message, 'SMS provider could not be reached');
    const retries = logLines.filter((line) => line.includes('retrying once'));
    assert.equal(retries.length, 1);
  });

  it('refuses an e-mail message and a URL with credentials', async () => {
    const delivery = new HttpSmsDelivery({ url: 'http://127.0.0.1:1/sms' }, logger);
    await deliveryError(delivery.send(otp()));
    assert.throws(
      () => new HttpSmsDelivery({ url: `https://user:${SMS_TOKEN}@sms.example/send` }, logger),
      (err: unknown) => err instanceof TypeError && !err.message.includes(SMS_TOKEN),
    );
  });
});

describe('DevOutbox', () => {
  it('keeps messages newest first with their creation time', async () => {
    let now = Date.parse('2025-01-02T03:04:05.000Z');
    const outbox = new DevOutbox({ now: () => new Date(now) }, logger);
    await outbox.send(otp({ to: 'first@example.com', code: '111111' }));
    now += 1000;
    await outbox.send(otp({ to: '+4917012345678', channel: 'sms', code: CODE, projectName: 'Beta' }));
    assert.deepEqual(outbox.list(), [
      {
        to: '+4917012345678',
        channel: 'sms',
        code: CODE,
        project: 'Beta',
        created_at: '2025-01-02T03:04:06.000Z',
      },
      {
        to: 'first@example.com',
        channel: 'email',
        code: '111111',
        project: 'Acme',
        created_at: '2025-01-02T03:04:05.000Z',
      },
    ]);
    outbox.list()[0]!.code = 'changed';
    assert.equal(outbox.list()[0]!.code, CODE, 'list() hands out copies');
  });

  it('drops the oldest messages beyond the limit', async () => {
    const outbox = new DevOutbox({ limit: 3 }, logger);
    for (let i = 1; i <= 5; i++) await outbox.send(otp({ to: `user${i}@example.com` }));
    assert.deepEqual(
      outbox.list().map((entry) => entry.to),
      ['user5@example.com', 'user4@example.com', 'user3@example.com'],
    );
  });

  it('keeps 100 messages by default', async () => {
    const outbox = new DevOutbox({}, logger);
    for (let i = 1; i <= 105; i++) await outbox.send(otp({ to: `user${i}@example.com` }));
    const entries = outbox.list();
    assert.equal(entries.length, 100);
    assert.equal(entries[0]!.to, 'user105@example.com');
    assert.equal(entries[99]!.to, 'user6@example.com');
  });

  it('points to /dev/outbox at warn level without logging the code', async () => {
    const outbox = new DevOutbox({}, logger);
    await outbox.send(otp());
    assert.equal(logLines.length, 1);
    const line = JSON.parse(logLines[0]!) as { level: number; msg: string };
    assert.equal(line.level, 40);
    assert.equal(line.msg, 'development delivery: code for ada@example.com is in GET /dev/outbox');
    // afterEach checks that no line carries the code.
  });

  it('rejects a limit that is not a positive integer', () => {
    assert.throws(() => new DevOutbox({ limit: 0 }, logger), TypeError);
  });
});
