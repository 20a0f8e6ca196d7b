import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import { DeliveryError, type OtpMessage } from '../../src/modules/otp/delivery/delivery.js';
import { createDelivery } from '../../src/modules/otp/delivery/index.js';
import { describeFailure } from '../../src/modules/otp/delivery/observed.js';
import { SnsSmsDelivery } from '../../src/modules/otp/delivery/sns.js';
import { TwilioSmsDelivery } from '../../src/modules/otp/delivery/twilio.js';
import { VonageSmsDelivery } from '../../src/modules/otp/delivery/vonage.js';

const CODE = '482913';
const TO = '+447700900123';
const TWILIO_SID = `AC${'0123456789abcdef'.repeat(2)}`;
const TWILIO_TOKEN = 'twilio-auth-token-9f8e7d';
const VONAGE_SECRET = 'vonage-secret-5a4b3c';
const AWS_KEY_ID = 'AKIDEXAMPLE123';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';

let logLines: string[] = [];
const logger = pino(
  { level: 'trace', base: null, timestamp: false },
  { write: (l: string) => void logLines.push(l) },
);

beforeEach(() => {
  logLines = [];
});
afterEach(() => {
  for (const line of logLines) {
    for (const secret of [CODE, TWILIO_TOKEN, VONAGE_SECRET, AWS_SECRET, TO])
      assert.ok(!line.includes(secret), `a log line holds a secret or the number: ${line}`);
  }
});

const otp = (extra: Partial<OtpMessage> = {}): OtpMessage => ({
  to: TO,
  channel: 'sms',
  code: CODE,
  projectName: 'Acme',
  expiresInSeconds: 300,
  webOtpDomain: 'app.acme.example',
  ...extra,
});

interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A local fake provider: records each request and answers with `answer(n)` (status, body), or
 * with `drop`, reads the whole request and then destroys the connection without answering (the
 * provider took the message; its answer was lost).
 */
async function fake(
  answer: (n: number) => { status: number; body?: string; type?: string } | { drop: true },
) {
  const seen: Seen[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (c: Buffer) => chunks.push(c));
    request.on('end', () => {
      const n = seen.length;
      seen.push({
        method: request.method ?? '',
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      const reply = answer(n);
      if ('drop' in reply) {
        request.socket.destroy();
        return;
      }
      const { status, body = '', type = 'application/json' } = reply;
      response.writeHead(status, { 'content-type': type });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A failure is a DeliveryError whose message names the provider's answer and holds no secret. */
async function failsWith(promise: Promise<void>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof DeliveryError, String(error));
    assert.match(error.message, pattern);
    for (const secret of [CODE, TO, TWILIO_TOKEN, VONAGE_SECRET, AWS_SECRET])
      assert.ok(!error.message.includes(secret));
    return true;
  });
}

const EXPECTED_TEXT = `${CODE} is your Acme sign-in code. It expires in 5 minutes.\n\n@app.acme.example #${CODE}`;

describe('Twilio', () => {
  it('posts the documented form to Messages.json with Basic auth; the text ends with the WebOTP line', async () => {
    const server = await fake(() => ({ status: 201, body: '{"sid":"SM1","status":"queued"}' }));
    try {
      const twilio = new TwilioSmsDelivery(
        { accountSid: TWILIO_SID, authToken: TWILIO_TOKEN, from: '+15005550006', baseUrl: server.url },
        logger,
      );
      await twilio.send(otp());
      assert.equal(server.seen.length, 1);
      const [request] = server.seen;
      assert.equal(request!.method, 'POST');
      assert.equal(request!.path, `/2010-04-01/Accounts/${TWILIO_SID}/Messages.json`);
      assert.equal(
        request!.headers.authorization,
        `Basic ${Buffer.from(`${TWILIO_SID}:${TWILIO_TOKEN}`).toString('base64')}`,
      );
      assert.equal(request!.headers['content-type'], 'application/x-www-form-urlencoded');
      const form = new URLSearchParams(request!.body);
      assert.deepEqual([...form.keys()].sort(), ['Body', 'From', 'To']);
      assert.equal(form.get('To'), TO);
      assert.equal(form.get('From'), '+15005550006');
      assert.equal(form.get('Body'), EXPECTED_TEXT);
    } finally {
      await server.close();
    }
  });

  it('a Messaging Service SID is sent as MessagingServiceSid', async () => {
    const server = await fake(() => ({ status: 201, body: '{}' }));
    try {
      const service = `MG${'a'.repeat(32)}`;
      await new TwilioSmsDelivery(
        { accountSid: TWILIO_SID, authToken: TWILIO_TOKEN, from: service, baseUrl: server.url },
        logger,
      ).send(otp());
      const form = new URLSearchParams(server.seen[0]!.body);
      assert.equal(form.get('MessagingServiceSid'), service);
      assert.equal(form.get('From'), null);
    } finally {
      await server.close();
    }
  });

  it('an error answer is a delivery failure naming Twilio’s error code, not its message; 4xx is not retried', async () => {
    const server = await fake(() => ({
      status: 400,
      body: JSON.stringify({
        code: 21211,
        message: `The 'To' number ${TO} is not valid. Body: ${CODE}`,
        status: 400,
      }),
    }));
    try {
      const twilio = new TwilioSmsDelivery(
        { accountSid: TWILIO_SID, authToken: TWILIO_TOKEN, from: '+15005550006', baseUrl: server.url },
        logger,
      );
      await failsWith(twilio.send(otp()), /^Twilio answered 400 \(error 21211\)$/);
      assert.equal(server.seen.length, 1);
    } finally {
      await server.close();
    }
  });

  it('a rate limit (429) is retried once', async () => {
    const server = await fake((n) =>
      n === 0 ? { status: 429, body: '{"code":20429}' } : { status: 201, body: '{}' },
    );
    try {
      const twilio = new TwilioSmsDelivery(
        {
          accountSid: TWILIO_SID,
          authToken: TWILIO_TOKEN,
          from: '+15005550006',
          baseUrl: server.url,
          retryDelayMs: 0,
        },
        logger,
      );
      await twilio.send(otp());
      assert.equal(server.seen.length, 2);
    } finally {
      await server.close();
    }
  });
});

describe('Vonage', () => {
  const ok = '{"message-count":"1","messages":[{"to":"447700900123","message-id":"0A1","status":"0"}]}';

  it('posts api_key, api_secret, from, to (no +) and text to /sms/json; unicode only outside GSM', async () => {
    const server = await fake(() => ({ status: 200, body: ok }));
    try {
      const vonage = new VonageSmsDelivery(
        { apiKey: 'abc123', apiSecret: VONAGE_SECRET, from: 'Acme', baseUrl: server.url },
        logger,
      );
      await vonage.send(otp());
      await vonage.send(
        otp({ locale: 'fr', templates: { locales: { fr: { sms_text: 'Code ’{{code}}’' } } } }),
      );
      const [plain, unicode] = server.seen;
      assert.equal(plain!.method, 'POST');
      assert.equal(plain!.path, '/sms/json');
      assert.equal(plain!.headers['content-type'], 'application/x-www-form-urlencoded');
      const form = new URLSearchParams(plain!.body);
      assert.deepEqual([...form.keys()].sort(), ['api_key', 'api_secret', 'from', 'text', 'to']);
      assert.equal(form.get('api_key'), 'abc123');
      assert.equal(form.get('api_secret'), VONAGE_SECRET);
      assert.equal(form.get('from'), 'Acme');
      assert.equal(form.get('to'), '447700900123');
      assert.equal(form.get('text'), EXPECTED_TEXT);
      assert.equal(new URLSearchParams(unicode!.body).get('type'), 'unicode');
    } finally {
      await server.close();
    }
  });

  it('a refused message (200 with a non-zero status) is a failure naming the status; throttling is retried once', async () => {
    const refused = `{"message-count":"1","messages":[{"status":"6","error-text":"Unroutable ${TO} ${CODE}"}]}`;
    const server = await fake((n) =>
      n === 0
        ? { status: 200, body: '{"messages":[{"status":"1","error-text":"Throttled"}]}' }
        : { status: 200, body: refused },
    );
    try {
      const vonage = new VonageSmsDelivery(
        { apiKey: 'abc123', apiSecret: VONAGE_SECRET, from: 'Acme', baseUrl: server.url, retryDelayMs: 0 },
        logger,
      );
      await failsWith(vonage.send(otp()), /^Vonage refused the message \(status 6\)$/);
      assert.equal(server.seen.length, 2);
      // A refusal of this one message is not the provider being down (readiness ignores it)…
      const error = await vonage.send(otp()).catch((e: unknown) => e);
      assert.ok(error instanceof DeliveryError && error.rejected);
      assert.equal(describeFailure(error).rejected, true);
    } finally {
      await server.close();
    }
  });

  it('a long text sent in part (some parts 0, one throttled) is not sent again: unknown whether sent', async () => {
    const server = await fake(() => ({
      status: 200,
      body: '{"message-count":"2","messages":[{"status":"0"},{"status":"1","error-text":"Throttled"}]}',
    }));
    try {
      const vonage = new VonageSmsDelivery(
        { apiKey: 'abc123', apiSecret: VONAGE_SECRET, from: 'Acme', baseUrl: server.url, retryDelayMs: 0 },
        logger,
      );
      await unknownWhetherSent(vonage.send(otp()), 'Vonage');
      assert.equal(server.seen.length, 1);
    } finally {
      await server.close();
    }
  });
});

/** Checks an AWS Signature Version 4 the way AWS does, independently of the signer used. */
function verifySigV4(request: Seen, secret: string, region: string): void {
  const auth = request.headers.authorization ?? '';
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(
      auth,
    );
  assert.ok(match, `Authorization header shape: ${auth}`);
  const [, keyId, date, signedRegion, service, signedHeaders, signature] = match;
  assert.equal(keyId, AWS_KEY_ID);
  assert.equal(signedRegion, region);
  assert.equal(service, 'sns');
  const amzDate = String(request.headers['x-amz-date']);
  assert.match(amzDate, /^\d{8}T\d{6}Z$/);
  assert.equal(amzDate.slice(0, 8), date);
  const names = signedHeaders!.split(';');
  assert.ok(names.includes('host') && names.includes('x-amz-date'), signedHeaders);
  const sha256 = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
  const canonical = [
    request.method,
    request.path.split('?')[0],
    request.path.split('?')[1] ?? '',
    ...names.map((name) => `${name}:${String(request.headers[name]).trim().replace(/\s+/g, ' ')}`),
    '',
    signedHeaders,
    sha256(request.body),
  ].join('\n');
  const scope = `${date}/${region}/sns/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const hmac = (key: string | Buffer, data: string) =>
    createHmac('sha256', key).update(data, 'utf8').digest();
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date!), region), 'sns'), 'aws4_request');
  assert.equal(
    createHmac('sha256', key).update(toSign, 'utf8').digest('hex'),
    signature,
    'the signature verifies',
  );
}

describe('Amazon SNS', () => {
  it('posts a SigV4-signed Publish (query API form) that verifies with the secret key', async () => {
    const server = await fake(() => ({
      status: 200,
      type: 'text/xml',
      body: '<PublishResponse><PublishResult><MessageId>m-1</MessageId></PublishResult></PublishResponse>',
    }));
    try {
      const sns = new SnsSmsDelivery(
        {
          region: 'eu-west-1',
          accessKeyId: AWS_KEY_ID,
          secretAccessKey: AWS_SECRET,
          senderId: 'Acme',
          endpoint: server.url,
        },
        logger,
      );
      await sns.send(otp());
      const [request] = server.seen;
      assert.equal(request!.method, 'POST');
      assert.equal(request!.path, '/');
      assert.equal(request!.headers['content-type'], 'application/x-www-form-urlencoded; charset=utf-8');
      const form = new URLSearchParams(request!.body);
      assert.equal(form.get('Action'), 'Publish');
      assert.equal(form.get('Version'), '2010-03-31');
      assert.equal(form.get('PhoneNumber'), TO);
      assert.equal(form.get('Message'), EXPECTED_TEXT);
      assert.equal(form.get('MessageAttributes.entry.1.Name'), 'AWS.SNS.SMS.SMSType');
      assert.equal(form.get('MessageAttributes.entry.1.Value.StringValue'), 'Transactional');
      assert.equal(form.get('MessageAttributes.entry.2.Name'), 'AWS.SNS.SMS.SenderID');
      assert.equal(form.get('MessageAttributes.entry.2.Value.StringValue'), 'Acme');
      verifySigV4(request!, AWS_SECRET, 'eu-west-1');
      assert.throws(() => verifySigV4(request!, `${AWS_SECRET}x`, 'eu-west-1'), /the signature verifies/);
    } finally {
      await server.close();
    }
  });

  it('temporary credentials send their session token; an error answer names the AWS code, not its message', async () => {
    const server = await fake(() => ({
      status: 400,
      type: 'text/xml',
      body: `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidParameter</Code><Message>Invalid parameter: PhoneNumber ${TO}</Message></Error></ErrorResponse>`,
    }));
    try {
      const sns = new SnsSmsDelivery(
        {
          region: 'us-east-1',
          accessKeyId: AWS_KEY_ID,
          secretAccessKey: AWS_SECRET,
          sessionToken: 'session-tok',
          endpoint: server.url,
        },
        logger,
      );
      await failsWith(sns.send(otp()), /^Amazon SNS answered 400 \(InvalidParameter\)$/);
      assert.equal(server.seen.length, 1);
      assert.equal(server.seen[0]!.headers['x-amz-security-token'], 'session-tok');
      verifySigV4(server.seen[0]!, AWS_SECRET, 'us-east-1');
    } finally {
      await server.close();
    }
  });

  it('throttling is retried once, signed afresh', async () => {
    const server = await fake((n) =>
      n === 0
        ? {
            status: 400,
            type: 'text/xml',
            body: '<ErrorResponse><Error><Code>Throttling</Code></Error></ErrorResponse>',
          }
        : { status: 200, type: 'text/xml', body: '<PublishResponse/>' },
    );
    try {
      const sns = new SnsSmsDelivery(
        {
          region: 'us-east-1',
          accessKeyId: AWS_KEY_ID,
          secretAccessKey: AWS_SECRET,
          endpoint: server.url,
          retryDelayMs: 0,
        },
        logger,
      );
      await sns.send(otp());
      assert.equal(server.seen.length, 2);
      for (const request of server.seen) verifySigV4(request, AWS_SECRET, 'us-east-1');
    } finally {
      await server.close();
    }
  });
});

/** A port nothing listens on: connecting is refused before any byte of a request is written. */
async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/** Each adapter without an idempotency key, pointed at `url`, retrying at once. */
const adapters = {
  Twilio: (url: string) =>
    new TwilioSmsDelivery(
      {
        accountSid: TWILIO_SID,
        authToken: TWILIO_TOKEN,
        from: '+15005550006',
        baseUrl: url,
        retryDelayMs: 0,
      },
      logger,
    ),
  Vonage: (url: string) =>
    new VonageSmsDelivery(
      { apiKey: 'abc123', apiSecret: VONAGE_SECRET, from: 'Acme', baseUrl: url, retryDelayMs: 0 },
      logger,
    ),
  'Amazon SNS': (url: string) =>
    new SnsSmsDelivery(
      {
        region: 'us-east-1',
        accessKeyId: AWS_KEY_ID,
        secretAccessKey: AWS_SECRET,
        endpoint: url,
        retryDelayMs: 0,
      },
      logger,
    ),
};

/** The delivery fails as "unknown whether sent", in the error and in the log. */
async function unknownWhetherSent(promise: Promise<void>, provider: string): Promise<DeliveryError> {
  const error = await promise.then(
    () => assert.fail('the send succeeded'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof DeliveryError, String(error));
  assert.equal(error.unknown, true);
  assert.equal(error.rejected, false);
  assert.match(error.message, /unknown whether sent$/);
  assert.ok(error.message.startsWith(provider), error.message);
  assert.equal(describeFailure(error).unknown, true);
  const line = logLines.find((l) => l.includes('unknown whether sent'));
  assert.ok(line, 'no log line says "unknown whether sent"');
  assert.equal(JSON.parse(line).sent, 'unknown');
  assert.ok(!logLines.some((l) => l.includes('retrying')), 'an ambiguous failure was retried');
  return error;
}

describe('a failure after the provider may have taken the SMS (no idempotency key: never sent twice)', () => {
  for (const [provider, adapter] of Object.entries(adapters)) {
    it(`${provider}: the connection is dropped after the whole request was read → one request, unknown whether sent`, async () => {
      const server = await fake(() => ({ drop: true }));
      try {
        await unknownWhetherSent(adapter(server.url).send(otp()), provider);
        assert.equal(server.seen.length, 1, 'the provider saw the SMS twice');
      } finally {
        await server.close();
      }
    });

    it(`${provider}: a refused connection (nothing written) is retried once`, async () => {
      const error = await adapter(await refusedUrl())
        .send(otp())
        .catch((e: unknown) => e);
      assert.ok(error instanceof DeliveryError);
      assert.equal(error.message, `${provider} could not be reached`);
      assert.equal(error.unknown, false);
      assert.equal(logLines.filter((l) => l.includes('retrying once')).length, 1);
    });
  }

  it('Twilio: a 500 may have sent the SMS (error 20500) → not retried', async () => {
    const server = await fake(() => ({ status: 500, body: '{"code":20500}' }));
    try {
      const error = await unknownWhetherSent(adapters.Twilio(server.url).send(otp()), 'Twilio');
      assert.equal(error.message, 'Twilio answered 500 (error 20500); unknown whether sent');
      assert.equal(server.seen.length, 1);
    } finally {
      await server.close();
    }
  });

  it('Twilio: a 503 (error 20503, "try again") sent nothing → retried once', async () => {
    const server = await fake((n) =>
      n === 0 ? { status: 503, body: '{"code":20503}' } : { status: 201, body: '{}' },
    );
    try {
      await adapters.Twilio(server.url).send(otp());
      assert.equal(server.seen.length, 2);
    } finally {
      await server.close();
    }
  });

  it('Vonage and SNS: a 5xx is not retried (unknown whether sent)', async () => {
    const server = await fake(() => ({
      status: 500,
      type: 'text/xml',
      body: '<Error><Code>InternalError</Code></Error>',
    }));
    try {
      await unknownWhetherSent(adapters.Vonage(server.url).send(otp()), 'Vonage');
      assert.equal(server.seen.length, 1);
      logLines = [];
      const error = await unknownWhetherSent(adapters['Amazon SNS'](server.url).send(otp()), 'Amazon SNS');
      assert.equal(error.message, 'Amazon SNS answered 500 (InternalError); unknown whether sent');
      assert.equal(server.seen.length, 2);
    } finally {
      await server.close();
    }
  });
});

describe('configuration', () => {
  const base = { TESSERA_ENV: 'test', TESSERA_DELIVERY: 'live' };

  it('TESSERA_SMS_PROVIDER selects the adapter, which sends to the configured base URL', async () => {
    const server = await fake(() => ({ status: 201, body: '{}' }));
    try {
      const config = loadConfig({
        ...base,
        TESSERA_SMS_PROVIDER: 'twilio',
        TESSERA_TWILIO_ACCOUNT_SID: TWILIO_SID,
        TESSERA_TWILIO_AUTH_TOKEN: TWILIO_TOKEN,
        TESSERA_TWILIO_URL: server.url,
        TESSERA_SMS_FROM: '+15005550006',
      });
      assert.equal(config.delivery.smsProvider?.kind, 'twilio');
      const delivery = createDelivery(config.delivery, logger);
      await delivery.send(otp());
      await delivery.close();
      assert.equal(server.seen[0]!.path, `/2010-04-01/Accounts/${TWILIO_SID}/Messages.json`);
      // Without TESSERA_DELIVERY, a provider alone means live delivery.
      const live = loadConfig({
        TESSERA_ENV: 'test',
        TESSERA_SMS_PROVIDER: 'vonage',
        TESSERA_VONAGE_API_KEY: 'k',
        TESSERA_VONAGE_API_SECRET: 's',
        TESSERA_SMS_FROM: 'Acme',
      });
      assert.equal(live.delivery.mode, 'live');
    } finally {
      await server.close();
    }
  });

  it('a missing or malformed setting is refused at start, naming the variable', () => {
    assert.throws(
      () => loadConfig({ ...base, TESSERA_SMS_PROVIDER: 'carrier-pigeon' }),
      /TESSERA_SMS_PROVIDER must be http, twilio, vonage, sns/,
    );
    assert.throws(
      () => loadConfig({ ...base, TESSERA_SMS_PROVIDER: 'twilio', TESSERA_TWILIO_ACCOUNT_SID: TWILIO_SID }),
      /TESSERA_SMS_PROVIDER=twilio needs TESSERA_TWILIO_AUTH_TOKEN, TESSERA_SMS_FROM/,
    );
    assert.throws(
      () =>
        loadConfig({
          ...base,
          TESSERA_SMS_PROVIDER: 'sns',
          TESSERA_SNS_REGION: 'Europe',
          TESSERA_SNS_ACCESS_KEY_ID: 'a',
          TESSERA_SNS_SECRET_ACCESS_KEY: 'b',
        }),
      /TESSERA_SNS_REGION must be an AWS region name/,
    );
    assert.throws(
      () =>
        loadConfig({
          ...base,
          TESSERA_SMS_PROVIDER: 'vonage',
          TESSERA_VONAGE_URL: 'http://user:pw@x',
          TESSERA_VONAGE_API_KEY: 'k',
          TESSERA_VONAGE_API_SECRET: 's',
          TESSERA_SMS_FROM: 'A',
        }),
      /TESSERA_VONAGE_URL must be an http/,
    );
    assert.throws(() => loadConfig({ ...base, TESSERA_SMS_PROVIDER: 'http' }), /needs TESSERA_SMS_URL/);
  });
});
