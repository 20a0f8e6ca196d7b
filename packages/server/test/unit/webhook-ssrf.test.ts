import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { AttemptErrors, postWebhook } from '../../src/modules/webhooks/webhooks.http.js';
import {
  embeddedIPv4,
  ipv6Bytes,
  isInternalHost,
  isPublicAddress,
  publicOnlyLookup,
} from '../../src/net/address-policy.js';

/** Addresses no production webhook may reach, one or more per refused range and per written form. */
const INTERNAL = [
  // IPv4
  '0.0.0.0',
  '0.1.2.3',
  '10.1.2.3',
  '100.64.0.1',
  '100.127.255.254',
  '127.0.0.1',
  '127.8.9.10',
  '169.254.169.254',
  '172.16.0.1',
  '172.31.255.255',
  '192.0.0.8',
  '192.0.2.10',
  '192.88.99.1',
  '192.168.0.1',
  '198.18.0.1',
  '198.19.255.255',
  '198.51.100.7',
  '203.0.113.9',
  '224.0.0.1',
  '239.255.255.250',
  '240.0.0.1',
  '255.255.255.255',
  // IPv6
  '::',
  '::1',
  '[::1]',
  'fc00::1',
  'fd12:3456::1',
  'fe80::1',
  'fe80::1%eth0',
  'febf::1',
  'fec0::1',
  'ff02::1',
  'ff0e::1',
  '100::1',
  '64:ff9b:1::1', // local-use NAT64
  '2001::1', // Teredo
  '2001:2::1', // benchmarking
  '2001:db8::1', // documentation
  '3fff::1',
  // IPv6 carrying an internal IPv4 address
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:10.0.0.5',
  '::ffff:a9fe:a9fe', // 169.254.169.254
  '::127.0.0.1',
  '::7f00:1',
  '::a00:1', // 10.0.0.1, IPv4-compatible
  '64:ff9b::7f00:1',
  '64:ff9b::127.0.0.1',
  '64:ff9b::a9fe:a9fe',
  '2002:7f00:1::',
  '2002:7f00:0001::1',
  '2002:a00:1::',
  '2002:c0a8:101::1', // 192.168.1.1
  '::ffff:0:7f00:1', // IPv4-translated
];

/** Public hosts, in every form. */
const PUBLIC = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.215.14',
  '100.63.255.255',
  '100.128.0.1',
  '172.15.255.255',
  '172.32.0.1',
  '192.0.1.1',
  '198.17.255.255',
  '198.20.0.1',
  '223.255.255.255',
  '2001:4860:4860::8888',
  '[2606:4700:4700::1111]',
  '2a00:1450:4001:80b::200e',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
  '64:ff9b::8.8.8.8', // a public host behind NAT64 (IPv6-only network with DNS64)
  '64:ff9b::808:808',
  '2002:808:808::1',
];

describe('webhook address policy', () => {
  test('every internal range and written form is refused', () => {
    for (const address of INTERNAL) assert.equal(isPublicAddress(address), false, address);
  });

  test('public addresses pass, also inside IPv4-carrying IPv6 forms', () => {
    for (const address of PUBLIC) assert.equal(isPublicAddress(address), true, address);
  });

  test('what is not an address is not public', () => {
    for (const text of ['', 'localhost', 'example.com', '127.1', '1.2.3', '::g', '[::1']) {
      assert.equal(isPublicAddress(text), false, text);
    }
  });

  test('IPv6 text is read into the right bytes', () => {
    const hex = (address: string) => Buffer.from(ipv6Bytes(address)).toString('hex');
    assert.equal(hex('::'), '0'.repeat(32));
    assert.equal(hex('::1'), `${'0'.repeat(31)}1`);
    assert.equal(hex('1:2:3:4:5:6:7:8'), '00010002000300040005000600070008');
    assert.equal(hex('1::8'), '00010000000000000000000000000008');
    assert.equal(hex('fe80::1%eth0'), 'fe800000000000000000000000000001');
    assert.equal(hex('::ffff:127.0.0.1'), '00000000000000000000ffff7f000001');
    assert.equal(hex('1:2:3:4:5:6:10.0.0.1'), '0001000200030004000500060a000001');
    assert.equal(hex('64:ff9b::1.2.3.4'), '0064ff9b000000000000000001020304');
    assert.equal(embeddedIPv4(ipv6Bytes('2002:c000:204::1')), '192.0.2.4');
    assert.equal(embeddedIPv4(ipv6Bytes('2001:4860::1')), undefined);
  });

  test('URL hosts: localhost names and internal literals in any spelling the URL parser accepts', () => {
    const host = (url: string) => new URL(url).hostname;
    for (const url of [
      'https://localhost/',
      'https://LOCALHOST/',
      'https://localhost./',
      'https://localhost../',
      'https://api.localhost/',
      'https://api.localhost./',
      'https://127.1/',
      'https://127.0.0.1./',
      'https://0x7f.1/',
      'https://2130706433/',
      'https://017700000001/',
      'https://0/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:7f00:1]/',
      'https://[::127.0.0.1]/',
      'https://[2002:7f00:1::]/',
      'https://[64:ff9b::7f00:1]/',
      'https://[fd00::1]/',
      'https://[fe80::1]/',
      'https://169.254.169.254/',
      'https://100.64.0.1/',
      'https://198.18.0.1/',
    ]) {
      assert.equal(isInternalHost(host(url)), true, url);
    }
    for (const url of [
      'https://example.com/',
      'https://hooks.example.org./',
      'https://localhost.example.com/',
      'https://8.8.8.8/',
      'https://[2001:4860:4860::8888]/',
      'https://[64:ff9b::808:808]/',
    ]) {
      assert.equal(isInternalHost(host(url)), false, url);
    }
  });
});

type Answer = LookupAddress[] | NodeJS.ErrnoException;

/** A resolver answering from a table (the system resolver's stand-in). */
function resolverOf(table: Record<string, Answer>) {
  const seen: Array<{ hostname: string; all: boolean | undefined }> = [];
  const resolve = (
    hostname: string,
    options: { all?: boolean },
    callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ) => {
    seen.push({ hostname, all: options.all });
    const answer = table[hostname] ?? Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    setImmediate(() => (Array.isArray(answer) ? callback(null, answer) : callback(answer, [])));
  };
  return { resolve, seen };
}

function lookupOnce(
  lookup: ReturnType<typeof publicOnlyLookup>,
  hostname: string,
  all: boolean,
): Promise<{ err: NodeJS.ErrnoException | null; result: unknown }> {
  return new Promise((resolve) => {
    lookup(hostname, { all }, (err: NodeJS.ErrnoException | null, address: unknown, family?: number) =>
      resolve({ err, result: all ? address : { address, family } }),
    );
  });
}

describe('connect-time lookup', () => {
  const { resolve, seen } = resolverOf({
    'public.test': [
      { address: '93.184.215.14', family: 4 },
      { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
    ],
    'loopback.test': [{ address: '127.0.0.1', family: 4 }],
    'mapped.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
    'nat64.test': [{ address: '64:ff9b::a9fe:a9fe', family: 6 }],
    'mixed.test': [
      { address: '93.184.215.14', family: 4 },
      { address: '10.0.0.5', family: 4 },
    ],
    'v6-internal.test': [
      { address: '93.184.215.14', family: 4 },
      { address: 'fd00::5', family: 6 },
    ],
    'empty.test': [],
  });
  const lookup = publicOnlyLookup(resolve);

  test('a public name resolves, in both call shapes of net.connect', async () => {
    const all = await lookupOnce(lookup, 'public.test', true);
    assert.equal(all.err, null);
    assert.equal((all.result as LookupAddress[]).length, 2);
    const one = await lookupOnce(lookup, 'public.test', false);
    assert.deepEqual(one, { err: null, result: { address: '93.184.215.14', family: 4 } });
    // Every address is asked for, whatever the caller's shape, so none escapes the check.
    assert.ok(seen.every((s) => s.all === true));
  });

  test('a name with any internal address, of either family, is refused without naming it', async () => {
    for (const name of [
      'loopback.test',
      'mapped.test',
      'nat64.test',
      'mixed.test',
      'v6-internal.test',
      'empty.test',
    ]) {
      for (const all of [true, false]) {
        const { err } = await lookupOnce(lookup, name, all);
        assert.equal(err?.code, 'ERR_ADDRESS_NOT_ALLOWED', `${name} all=${all}`);
        assert.doesNotMatch(err.message, /\d+\.\d+|::|test/);
      }
    }
  });

  test("the resolver's own failure passes through", async () => {
    const { err } = await lookupOnce(lookup, 'unknown.test', false);
    assert.equal(err?.code, 'ENOTFOUND');
  });
});

describe('postWebhook over real sockets', () => {
  let receiver: Server;
  let port: number;
  const hits: string[] = [];
  before(async () => {
    receiver = createServer((request, response) => {
      hits.push(request.url ?? '');
      request.resume();
      if (request.url === '/redirect') {
        response.writeHead(307, { location: `http://127.0.0.1:${port}/target` }).end();
      } else if (request.url === '/slow') {
        setTimeout(() => response.writeHead(204).end(), 2000).unref();
      } else {
        response.writeHead(204).end();
      }
    });
    await new Promise<void>((done) => receiver.listen(0, '127.0.0.1', done));
    port = (receiver.address() as AddressInfo).port;
  });
  after(async () => {
    receiver.closeAllConnections();
    await new Promise((done) => receiver.close(done));
  });

  const post = (url: string, allowPrivate: boolean, timeoutMs = 2000) =>
    postWebhook(url, {
      headers: { 'content-type': 'application/json' },
      body: '{}',
      timeoutMs,
      allowPrivate,
      lookup: publicOnlyLookup(
        resolverOf({ 'receiver.test': [{ address: '127.0.0.1', family: 4 }] }).resolve,
      ),
    });

  test('private targets allowed: the receiver gets the POST', async () => {
    hits.length = 0;
    assert.deepEqual(await post(`http://127.0.0.1:${port}/ok`, true), { status: 204, error: null });
    assert.deepEqual(hits, ['/ok']);
  });

  test('private targets refused: a literal and a name resolving to loopback never connect', async () => {
    hits.length = 0;
    for (const url of [
      `http://127.0.0.1:${port}/literal`,
      `http://[::ffff:7f00:1]:${port}/mapped`,
      `http://localhost:${port}/name`,
      `http://receiver.test:${port}/resolved`,
    ]) {
      assert.deepEqual(await post(url, false), { status: null, error: AttemptErrors.notAllowed }, url);
    }
    assert.deepEqual(hits, []);
  });

  test('a redirect is a failed attempt and is not followed', async () => {
    hits.length = 0;
    const attempt = await post(`http://127.0.0.1:${port}/redirect`, true);
    assert.equal(attempt.status, 307);
    assert.equal(attempt.error, 'endpoint answered 307 (redirects are not followed)');
    assert.deepEqual(hits, ['/redirect']);
  });

  test('errors say what happened, never where', async () => {
    assert.deepEqual(await post(`http://127.0.0.1:${port}/slow`, true, 200), {
      status: null,
      error: AttemptErrors.timedOut,
    });
    // A closed port: refused, reported without address or port.
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));
    assert.deepEqual(await post(`http://127.0.0.1:${closedPort}/`, true), {
      status: null,
      error: AttemptErrors.failed,
    });
    assert.deepEqual(await post(`http://unknown.test:${port}/`, false), {
      status: null,
      error: AttemptErrors.notFound,
    });
  });
});
