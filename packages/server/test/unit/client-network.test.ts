import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  clientNetwork,
  clientNetworks,
  sessionNetwork,
  UNRECOGNISED_NETWORK,
} from '../../src/net/client-network.js';

const clientSite = (raw: string) => clientNetworks(raw).site;

test('an IPv4 address is its own network; a port a proxy wrote with it is dropped', () => {
  assert.equal(clientNetwork('203.0.113.5'), '203.0.113.5');
  assert.equal(clientNetwork('203.0.113.5:1111'), '203.0.113.5');
  assert.equal(clientNetwork('203.0.113.5:65535'), '203.0.113.5');
});

test('an IPv6 address counts as its /64, with or without brackets and port', () => {
  const net = '2001:db8:1:2::/64';
  for (const ip of [
    '2001:db8:1:2::1',
    '2001:db8:1:2:ffff::9',
    '[2001:db8:1:2::1]',
    '[2001:db8:1:2::7]:443',
    '2001:DB8:1:2::1%eth0',
  ])
    assert.equal(clientNetwork(ip), net, ip);
  assert.equal(clientNetwork('2001:db8:1:3::1'), '2001:db8:1:3::/64');
});

test('IPv6 addresses that embed an IPv4 address count as it (mapped, 6to4, Teredo)', () => {
  assert.equal(clientNetwork('::ffff:203.0.113.5'), '203.0.113.5');
  assert.equal(clientNetwork('[::ffff:203.0.113.5]:80'), '203.0.113.5');
  // 6to4: 2002:cb00:7105::/48 is 203.0.113.5's, whichever of its 65,536 /64s.
  assert.equal(clientNetwork('2002:cb00:7105:1::1'), '203.0.113.5');
  assert.equal(clientNetwork('2002:cb00:7105:ffff::1'), '203.0.113.5');
  // Teredo: the client's address inverted in the last 32 bits (203.0.113.5 → 34ff:8efa).
  assert.equal(clientNetwork('2001:0:4136:e378:8000:63bf:34ff:8efa'), '203.0.113.5');
});

test('anything that is no IP address counts as one network, whatever its spelling', () => {
  for (const raw of [
    '203.0.113.005',
    '0xcb.0.113.5',
    'unknown',
    '_hidden',
    '',
    '203.0.113.5:port',
    '[nonsense]:80',
  ])
    assert.equal(clientNetwork(raw), UNRECOGNISED_NETWORK, raw);
});

test('clientSite: the /56 of a plain IPv6 client, none for IPv4 or embedded IPv4', () => {
  assert.equal(clientSite('2001:db8:1:2::1'), '2001:db8:1:0::/56');
  assert.equal(clientSite('2001:db8:1:ff::1'), '2001:db8:1:0::/56');
  assert.equal(clientSite('2001:db8:1:100::1'), '2001:db8:1:100::/56');
  assert.equal(clientSite('[2001:db8:1:2::1]:443'), '2001:db8:1:0::/56');
  assert.equal(clientSite('203.0.113.5'), undefined);
  assert.equal(clientSite('::ffff:203.0.113.5'), undefined);
  assert.equal(clientSite('2002:cb00:7105:1::1'), undefined);
  assert.equal(clientSite('junk'), undefined);
});

test('sessionNetwork: what a session is shown with is an IPv4 /24 or an IPv6 /48, never the address', () => {
  const shown = (raw: string) => sessionNetwork(clientNetwork(raw));
  assert.equal(shown('203.0.113.5'), '203.0.113.0/24');
  assert.equal(shown('203.0.113.5:52110'), '203.0.113.0/24');
  assert.equal(shown('::ffff:203.0.113.77'), '203.0.113.0/24');
  assert.equal(shown('2001:db8:1:2::1'), '2001:db8:1::/48');
  assert.equal(shown('[2001:db8:abcd:ff00:1:2:3:4]:443'), '2001:db8:abcd::/48');
  assert.equal(shown('fe80::1%eth0'), 'fe80::/48');
  assert.equal(shown('2001:db8:0:5::1'), '2001:db8::/48');
  for (const raw of ['unknown', '', '203.0.113.005']) assert.equal(shown(raw), null, raw);
});
